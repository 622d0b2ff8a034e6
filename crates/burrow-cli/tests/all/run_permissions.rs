//! `burrow run --settings` and `burrow mcp --settings` with permission rules through the binary: a denied folder is unreadable by read_file and absent from ls, glob and grep, over its parent and over "/", each mode, on each backend; several settings files layered; path rules over a Docker sandbox refused; Read and Edit rules over the artifact workspace as `/artifacts/KIND/ID`.

use serde_json::{Value, json};

use super::support::{burrow_in, json_lines, script};

/// The backends of the test: (label, the `--backend` arguments) over files in `dir`.
fn backends(dir: &std::path::Path) -> Vec<(&'static str, Vec<String>)> {
    let mut out = vec![(
        "state",
        vec![format!("state:{}", dir.join("ws.json").display())],
    )];
    #[cfg(feature = "fs")]
    {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        out.push(("fs", vec![format!("fs:{}", dir.join("ws").display())]));
    }
    #[cfg(feature = "sqlite")]
    out.push((
        "sqlite",
        vec![format!("sqlite:{}", dir.join("ws.db").display())],
    ));
    #[cfg(all(feature = "composite", feature = "sqlite"))]
    out.push((
        "composite",
        vec![
            format!("state:{}", dir.join("default.json").display()),
            format!(
                "/other={}",
                format!("sqlite:{}", dir.join("other.db").display())
            ),
        ],
    ));
    out
}

fn backend_args(specs: &[String]) -> Vec<&str> {
    specs
        .iter()
        .flat_map(|s| ["--backend", s.as_str()])
        .collect()
}

/// Puts `text` at `path` with `burrow write`.
fn put(dir: &std::path::Path, specs: &[String], path: &str, text: &str) {
    let mut args = backend_args(specs);
    args.extend(["write", path, "-"]);
    burrow_in(dir, &args, text.as_bytes()).assert_code(0);
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

#[test]
fn a_denied_folder_is_unreadable_and_unlisted_by_every_tool_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"deny": ["Read(/secrets)", "Read(*.env)"]}}).to_string(),
    )
    .unwrap();
    for (label, specs) in backends(dir.path()) {
        put(dir.path(), &specs, "/secrets/key.txt", "needle secret\n");
        put(dir.path(), &specs, "/app/.env", "needle env\n");
        put(dir.path(), &specs, "/app/main.rs", "needle main\n");
        let model = script(
            dir.path(),
            &format!("{label}.jsonl"),
            &[
                json!({"tool_calls": [
                    call("r", "read_file", json!({"file_path": "/secrets/key.txt"})),
                    call("e", "read_file", json!({"file_path": "/app/.env"})),
                    call("ls", "ls", json!({"path": "/"})),
                    call("ls2", "ls", json!({"path": "/app"})),
                    call("g", "glob", json!({"pattern": "**"})),
                    call("g2", "glob", json!({"pattern": "*", "path": "/secrets"})),
                    call("s", "grep", json!({"pattern": "needle", "output_mode": "content"})),
                    call("w", "write_file", json!({"file_path": "/secrets/new.txt", "content": "x"})),
                ]}),
                json!({"text": "done"}),
            ],
        );
        let mut args = backend_args(&specs);
        args.extend([
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
        ]);
        let run = burrow_in(dir.path(), &args, b"");
        run.assert_code(0);
        let events = json_lines(&run);
        let result = |id: &str| {
            events
                .iter()
                .find(|e| e["type"] == "tool_result" && e["id"] == id)
                .unwrap_or_else(|| panic!("{label}: no result of {id}: {events:?}"))
                .clone()
        };
        for id in ["r", "e", "g2", "w"] {
            let r = result(id);
            assert_eq!(r["is_error"], true, "{label} {id}: {r}");
            let content = r["content"].as_str().unwrap();
            assert!(
                content.contains("permission rule Read("),
                "{label} {id}: {content}"
            );
            assert!(!content.contains("needle"), "{label} {id}: {content}");
        }
        for id in ["ls", "ls2", "g", "s"] {
            let r = result(id);
            assert_eq!(r["is_error"], false, "{label} {id}: {r}");
            let content = r["content"].as_str().unwrap();
            assert!(!content.contains("secret"), "{label} {id}: {content}");
            assert!(!content.contains(".env"), "{label} {id}: {content}");
        }
        assert!(result("ls").to_string().contains("app"), "{label}");
        assert!(result("s").to_string().contains("needle main"), "{label}");
        // Outside the run the file is still there and was never changed.
        let mut cat = backend_args(&specs);
        cat.extend(["cat", "/secrets/key.txt"]);
        let out = burrow_in(dir.path(), &cat, b"");
        out.assert_code(0);
        assert_eq!(out.out(), "needle secret\n", "{label}");
        let mut missing = backend_args(&specs);
        missing.extend(["--json", "read", "/secrets/new.txt"]);
        burrow_in(dir.path(), &missing, b"").assert_json_error(1, "not_found");
    }
}

#[test]
fn a_bad_permission_rule_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"deny": ["Read(~/.ssh)"]}}).to_string(),
    )
    .unwrap();
    let model = script(dir.path(), "s.jsonl", &[json!({"text": "done"})]);
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let run = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
        ],
        b"",
    );
    run.assert_code(2);
    assert!(run.stderr.contains("\"Read(~/.ssh)\""), "{}", run.stderr);
    assert!(!dir.path().join("ws.json").exists(), "nothing was opened");
}

/// Runs `burrow --json run go` on a fresh state workspace with `permissions` and one model turn of `calls`.
fn run_with(
    permissions: Value,
    calls: Vec<Value>,
) -> (super::support::Run, Vec<Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, json!({ "permissions": permissions }).to_string()).unwrap();
    let state = format!("state:{}", dir.path().join("ws.json").display());
    put(
        dir.path(),
        std::slice::from_ref(&state),
        "/docs/a.md",
        "alpha\n",
    );
    let model = script(
        dir.path(),
        "s.jsonl",
        &[json!({ "tool_calls": calls }), json!({"text": "done"})],
    );
    let run = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
        ],
        b"",
    );
    let events = json_lines(&run);
    (run, events, dir)
}

fn result_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {events:?}"))
}

#[test]
fn tool_rules_deny_naming_the_rule_and_ask_pauses_the_run() {
    let (run, events, _dir) = run_with(
        json!({"deny": ["write_file"]}),
        vec![call(
            "w",
            "write_file",
            json!({"file_path": "/b.md", "content": "x"}),
        )],
    );
    run.assert_code(0);
    let r = result_of(&events, "w");
    assert_eq!(r["is_error"], true, "{r}");
    let content = r["content"].as_str().unwrap();
    assert!(
        content.contains("(denied by the permission rule write_file)"),
        "withheld, naming the rule: {content}"
    );

    let (run, events, _dir) = run_with(
        json!({"ask": ["Edit(/docs/**)"]}),
        vec![call(
            "e",
            "edit_file",
            json!({"file_path": "/docs/a.md", "old_string": "alpha", "new_string": "beta"}),
        )],
    );
    run.assert_code(3);
    let end = events.iter().find(|e| e["type"] == "run_ended").unwrap();
    assert_eq!(end["outcome"], "paused", "{end}");
}

#[test]
fn modes_from_default_mode() {
    // acceptEdits: an ask rule on an edit runs without approval.
    let (run, events, _dir) = run_with(
        json!({"ask": ["Edit"], "defaultMode": "acceptEdits"}),
        vec![call(
            "w",
            "write_file",
            json!({"file_path": "/b.md", "content": "x"}),
        )],
    );
    run.assert_code(0);
    assert_eq!(result_of(&events, "w")["is_error"], false);
    // dontAsk: what is not allowed is refused; what is allowed runs.
    let (run, events, _dir) = run_with(
        json!({"allow": ["Read(/docs/**)"], "defaultMode": "dontAsk"}),
        vec![
            call("r", "read_file", json!({"file_path": "/docs/a.md"})),
            call(
                "w",
                "write_file",
                json!({"file_path": "/b.md", "content": "x"}),
            ),
        ],
    );
    run.assert_code(0);
    assert_eq!(result_of(&events, "r")["is_error"], false);
    assert_eq!(result_of(&events, "w")["is_error"], true);
    // plan: nothing that changes anything runs, reads do.
    let (run, events, _dir) = run_with(
        json!({"defaultMode": "plan"}),
        vec![
            call("r", "read_file", json!({"file_path": "/docs/a.md"})),
            call(
                "w",
                "write_file",
                json!({"file_path": "/b.md", "content": "x"}),
            ),
        ],
    );
    run.assert_code(0);
    assert_eq!(result_of(&events, "r")["is_error"], false);
    let w = result_of(&events, "w");
    assert_eq!(w["is_error"], true);
    assert!(w["content"].as_str().unwrap().contains("plan mode"), "{w}");
    // bypassPermissions: ask rules allow, deny still holds.
    let (run, events, _dir) = run_with(
        json!({"ask": ["Edit"], "deny": ["Read(/docs/**)"], "defaultMode": "bypassPermissions"}),
        vec![
            call(
                "w",
                "write_file",
                json!({"file_path": "/b.md", "content": "x"}),
            ),
            call("r", "read_file", json!({"file_path": "/docs/a.md"})),
        ],
    );
    run.assert_code(0);
    assert_eq!(result_of(&events, "w")["is_error"], false);
    assert_eq!(result_of(&events, "r")["is_error"], true);
}

#[test]
fn permission_mode_overrides_default_mode_and_deny_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"ask": ["Edit"], "deny": ["Read(/docs/**)"], "defaultMode": "dontAsk"}})
            .to_string(),
    )
    .unwrap();
    let state = format!("state:{}", dir.path().join("ws.json").display());
    put(
        dir.path(),
        std::slice::from_ref(&state),
        "/docs/a.md",
        "alpha\n",
    );
    let model = script(
        dir.path(),
        "s.jsonl",
        &[
            json!({"tool_calls": [
                call("w", "write_file", json!({"file_path": "/b.md", "content": "x"})),
                call("r", "read_file", json!({"file_path": "/docs/a.md"})),
            ]}),
            json!({"text": "done"}),
        ],
    );
    let args = |mode: &str| -> Vec<String> {
        [
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            mode,
        ]
        .map(String::from)
        .to_vec()
    };
    let run = burrow_in(
        dir.path(),
        &args("bypassPermissions")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        b"",
    );
    run.assert_code(0);
    let events = json_lines(&run);
    assert_eq!(
        result_of(&events, "w")["is_error"],
        false,
        "bypass allows the ask rule"
    );
    assert_eq!(
        result_of(&events, "r")["is_error"],
        true,
        "deny holds in bypass"
    );
    // An unknown mode is a configuration error: nothing runs.
    let run = burrow_in(
        dir.path(),
        &args("auto").iter().map(String::as_str).collect::<Vec<_>>(),
        b"",
    );
    run.assert_code(2);
    assert!(run.stderr.contains("\"auto\""), "{}", run.stderr);
}

/// An ask rule pauses the run; approving resumes it in another process and
/// the call runs once, without being asked again.
#[cfg(feature = "sqlite")]
#[test]
fn an_approved_ask_resumes_and_runs_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"ask": ["Edit(/docs/**)"]}}).to_string(),
    )
    .unwrap();
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let session = super::support::session_spec(dir.path());
    let model = script(
        dir.path(),
        "s.jsonl",
        &[
            json!({"tool_calls": [call("w", "write_file", json!({"file_path": "/docs/b.md", "content": "approved\n"}))]}),
            json!({"text": "done"}),
        ],
    );
    let paused = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
            "--session",
            &session,
            "--thread",
            "t",
        ],
        b"",
    );
    paused.assert_code(3);
    let events = json_lines(&paused);
    let request = events
        .iter()
        .find(|e| e["type"] == "request")
        .unwrap_or_else(|| panic!("{events:?}"));
    let request_id = request["request_id"].as_str().unwrap();
    // The resumed segment's model answers from here on (a scripted model starts its file anew).
    script(dir.path(), "s.jsonl", &[json!({"text": "done"})]);
    let answered = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "thread",
            "answer",
            "t",
            "--request",
            request_id,
            "yes",
            "--approve",
            "--session",
            &session,
        ],
        b"",
    );
    answered.assert_code(0);
    let events = json_lines(&answered);
    assert!(
        events.iter().all(|e| e["type"] != "request"),
        "approved once, not asked again: {events:?}"
    );
    let cat = burrow_in(dir.path(), &["--backend", &state, "cat", "/docs/b.md"], b"");
    cat.assert_code(0);
    assert_eq!(cat.out(), "approved\n");
}

/// The folder the mode tests put their files in on a backend: under the
/// composite's mount, so the rules are decided across it.
fn base(label: &str) -> &'static str {
    if label == "composite" { "/other" } else { "" }
}

/// `burrow --json run go` on `specs` with the permissions `permissions`, one model turn of `calls`, and `extra` flags.
fn run_on(
    dir: &std::path::Path,
    specs: &[String],
    name: &str,
    permissions: Value,
    calls: Vec<Value>,
    extra: &[&str],
) -> (super::support::Run, Vec<Value>) {
    let settings = dir.join(format!("{name}.settings.json"));
    std::fs::write(&settings, json!({ "permissions": permissions }).to_string()).unwrap();
    let model = script(
        dir,
        &format!("{name}.jsonl"),
        &[json!({ "tool_calls": calls }), json!({"text": "done"})],
    );
    let mut args = backend_args(specs);
    args.extend([
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        settings.to_str().unwrap(),
    ]);
    args.extend(extra);
    let run = burrow_in(dir, &args, b"");
    let events = json_lines(&run);
    (run, events)
}

/// What `burrow cat path` prints on `specs`, `None` when it fails.
fn cat(dir: &std::path::Path, specs: &[String], path: &str) -> Option<String> {
    let mut args = backend_args(specs);
    args.extend(["cat", path]);
    let out = burrow_in(dir, &args, b"");
    (out.code == 0).then(|| out.out().to_owned())
}

fn write(id: &str, path: &str) -> Value {
    call(
        id,
        "write_file",
        json!({"file_path": path, "content": "x\n"}),
    )
}

#[test]
fn each_mode_decides_through_the_binary_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (label, specs) in backends(dir.path()) {
        let b = base(label);
        let doc = format!("{b}/docs/a.md");
        put(dir.path(), &specs, &doc, "alpha\n");
        let read = || call("r", "read_file", json!({"file_path": doc}));
        let run = |mode: &str, permissions: Value, calls: Vec<Value>, extra: &[&str]| {
            run_on(
                dir.path(),
                &specs,
                &format!("{label}-{mode}"),
                permissions,
                calls,
                extra,
            )
        };
        let is_error = |events: &[Value], id: &str| result_of(events, id)["is_error"].clone();

        // default: an ask rule pauses the run (exit 3) before the call runs.
        let (out, events) = run(
            "default",
            json!({"ask": [format!("Edit({b}/docs/**)")]}),
            vec![write("w", &format!("{b}/docs/asked.md"))],
            &[],
        );
        out.assert_code(3);
        let end = events.iter().find(|e| e["type"] == "run_ended").unwrap();
        assert_eq!(end["outcome"], "paused", "{label}: {end}");
        assert_eq!(
            cat(dir.path(), &specs, &format!("{b}/docs/asked.md")),
            None,
            "{label}"
        );

        // acceptEdits: the same ask rule on an edit runs without approval.
        let (out, events) = run(
            "accept",
            json!({"ask": [format!("Edit({b}/docs/**)")], "defaultMode": "acceptEdits"}),
            vec![write("w", &format!("{b}/docs/accepted.md"))],
            &[],
        );
        out.assert_code(0);
        assert_eq!(is_error(&events, "w"), false, "{label}");
        assert_eq!(
            cat(dir.path(), &specs, &format!("{b}/docs/accepted.md")).as_deref(),
            Some("x\n"),
            "{label}"
        );

        // plan: reads run, nothing that changes anything does.
        let (out, events) = run(
            "plan",
            json!({"defaultMode": "plan"}),
            vec![read(), write("w", &format!("{b}/planned.md"))],
            &[],
        );
        out.assert_code(0);
        assert_eq!(is_error(&events, "r"), false, "{label}");
        assert_eq!(is_error(&events, "w"), true, "{label}");
        // Not offered at all: the model is told it has no such tool, and why.
        let w = result_of(&events, "w")["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            w.contains("no tool named \"write_file\" (plan mode"),
            "{label}: {w}"
        );
        assert_eq!(
            cat(dir.path(), &specs, &format!("{b}/planned.md")),
            None,
            "{label}"
        );

        // bypassPermissions (from --permission-mode): no approval asked, deny still holds.
        let (out, events) = run(
            "bypass",
            json!({"ask": ["Edit"], "deny": [format!("Read({b}/docs)")]}),
            vec![write("w", &format!("{b}/bypassed.md")), read()],
            &["--permission-mode", "bypassPermissions"],
        );
        out.assert_code(0);
        assert_eq!(is_error(&events, "w"), false, "{label}");
        let r = result_of(&events, "r");
        assert_eq!(r["is_error"], true, "{label}: {r}");
        assert!(
            !r["content"].as_str().unwrap().contains("alpha"),
            "{label}: {r}"
        );
        assert!(
            cat(dir.path(), &specs, &format!("{b}/bypassed.md")).is_some(),
            "{label}"
        );

        // dontAsk: what is allowed runs, everything else is refused.
        let (out, events) = run(
            "dontask",
            json!({"allow": [format!("Read({b}/docs/**)")], "defaultMode": "dontAsk"}),
            vec![read(), write("w", &format!("{b}/refused.md"))],
            &[],
        );
        out.assert_code(0);
        assert_eq!(is_error(&events, "r"), false, "{label}");
        assert_eq!(is_error(&events, "w"), true, "{label}");
        assert_eq!(
            cat(dir.path(), &specs, &format!("{b}/refused.md")),
            None,
            "{label}"
        );
    }
}

/// An ask rule pauses the run on each backend; `burrow thread answer
/// --approve` resumes it in another process and the call runs once there.
#[cfg(feature = "sqlite")]
#[test]
fn an_approved_ask_resumes_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let session = super::support::session_spec(dir.path());
    for (label, specs) in backends(dir.path()) {
        let b = base(label);
        let target = format!("{b}/docs/{label}.md");
        let thread = format!("t-{label}");
        let (out, events) = run_on(
            dir.path(),
            &specs,
            label,
            json!({"ask": [format!("Edit({b}/docs/**)")]}),
            vec![write("w", &target)],
            &["--session", &session, "--thread", &thread],
        );
        out.assert_code(3);
        let request = events
            .iter()
            .find(|e| e["type"] == "request")
            .unwrap_or_else(|| panic!("{label}: {events:?}"));
        let request_id = request["request_id"].as_str().unwrap().to_owned();
        assert_eq!(
            cat(dir.path(), &specs, &target),
            None,
            "{label}: not before approval"
        );
        script(
            dir.path(),
            &format!("{label}.jsonl"),
            &[json!({"text": "done"})],
        );
        let mut args = backend_args(&specs);
        args.extend([
            "--json",
            "thread",
            "answer",
            &thread,
            "--request",
            &request_id,
            "yes",
            "--approve",
            "--session",
            &session,
        ]);
        let answered = burrow_in(dir.path(), &args, b"");
        answered.assert_code(0);
        let events = json_lines(&answered);
        assert!(
            events.iter().all(|e| e["type"] != "request"),
            "{label}: approved once, not asked again: {events:?}"
        );
        assert_eq!(
            cat(dir.path(), &specs, &target).as_deref(),
            Some("x\n"),
            "{label}"
        );
    }
}

/// Path rules over a real Docker sandbox (`burrow_testkit::Part::Docker`).
#[cfg(feature = "docker")]
mod docker {
    use super::*;

    /// A run (and `burrow mcp`) whose Read or Edit deny rules a sandbox's
    /// commands would walk past refuses to start, naming the rule, whether
    /// the sandbox is the default backend or a mount; tool rules alone run,
    /// and decide `execute` calls in the container.
    #[test]
    fn path_rules_over_a_sandbox_refuse_to_start_and_tool_rules_run() {
        let image = burrow_testkit::require(burrow_testkit::Part::Docker);
        let dir = tempfile::tempdir().unwrap();
        let sandbox = format!("docker:{image}");
        let mounted = vec![
            format!("state:{}", dir.path().join("ws.json").display()),
            format!("/box={sandbox}"),
        ];
        for (rule, specs) in [
            ("Read(/secrets)", vec![sandbox.clone()]),
            ("Edit(*.lock)", vec![sandbox.clone()]),
            ("Read(.env)", mounted),
        ] {
            let (out, events) = run_on(
                dir.path(),
                &specs,
                "refused",
                json!({"deny": [rule]}),
                vec![call("x", "execute", json!({"command": "echo ran"}))],
                &[],
            );
            out.assert_code(2);
            assert!(
                out.stderr.contains(&format!(
                    "permission rule {rule} cannot be enforced inside the sandbox docker:"
                )),
                "{rule}: {}",
                out.stderr
            );
            assert!(events.is_empty(), "{rule}: nothing ran: {events:?}");
            let settings = dir.path().join("refused.settings.json");
            let mut args = backend_args(&specs);
            args.extend(["mcp", "--settings", settings.to_str().unwrap()]);
            let mcp = burrow_in(dir.path(), &args, b"");
            mcp.assert_code(2);
            assert!(mcp.stderr.contains(rule), "{rule}: {}", mcp.stderr);
        }
        // Tool rules are decided per call: the allowed command runs in the container.
        let (out, events) = run_on(
            dir.path(),
            std::slice::from_ref(&sandbox),
            "tools",
            json!({"deny": ["Bash(cat:*)"]}),
            vec![
                call(
                    "ok",
                    "execute",
                    json!({"command": "echo ran in $(uname -s)"}),
                ),
                call("no", "execute", json!({"command": "cat /etc/passwd"})),
            ],
            &[],
        );
        out.assert_code(0);
        let ok = result_of(&events, "ok");
        assert_eq!(ok["is_error"], false, "{ok}");
        assert!(
            ok["content"].as_str().unwrap().contains("ran in Linux"),
            "{ok}"
        );
        let no = result_of(&events, "no");
        assert_eq!(no["is_error"], true, "{no}");
        let text = no["content"].as_str().unwrap();
        assert!(
            text.contains("Bash(cat:*)") && !text.contains("root:"),
            "{text}"
        );
    }
}

/// Writes `value` as the settings file `name` in `dir`; its path as text.
fn settings_file(dir: &std::path::Path, name: &str, value: Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A PostToolUse hook on write_file that creates `marker`.
fn marker_hook(marker: &std::path::Path) -> Value {
    json!({"PostToolUse": [{"matcher": "write_file", "hooks": [
        {"type": "command", "command": format!("touch '{}'", marker.display())}
    ]}]})
}

#[test]
fn several_settings_files_layer_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let specs = std::slice::from_ref(&state);
    put(dir.path(), specs, "/secrets/k.txt", "needle\n");
    put(dir.path(), specs, "/docs/a.md", "alpha\n");
    let (one, two) = (dir.path().join("ran-one"), dir.path().join("ran-two"));
    let first = settings_file(
        dir.path(),
        "one.json",
        json!({"hooks": marker_hook(&one),
               "permissions": {"deny": ["Read(/secrets)"], "defaultMode": "plan"}}),
    );
    let second = settings_file(
        dir.path(),
        "two.json",
        json!({"hooks": marker_hook(&two),
               "permissions": {"deny": ["Edit(/docs/**)"], "defaultMode": "acceptEdits"}}),
    );
    let model = script(
        dir.path(),
        "s.jsonl",
        &[
            json!({"tool_calls": [
                write("w", "/b.md"),
                write("d", "/docs/a.md"),
                call("r", "read_file", json!({"file_path": "/secrets/k.txt"})),
                call("ls", "ls", json!({"path": "/"})),
            ]}),
            json!({"text": "done"}),
        ],
    );
    let run = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &first,
            "--settings",
            &second,
        ],
        b"",
    );
    run.assert_code(0);
    let events = json_lines(&run);
    // The later defaultMode wins: acceptEdits, not plan, so the write runs,
    // and both files' hooks ran after it.
    assert_eq!(result_of(&events, "w")["is_error"], false, "{events:?}");
    assert!(one.exists() && two.exists(), "both files' hooks ran");
    // Both files' deny rules hold.
    let d = result_of(&events, "d");
    assert_eq!(d["is_error"], true, "{d}");
    assert!(
        d["content"].as_str().unwrap().contains("Edit(/docs/**)"),
        "{d}"
    );
    let r = result_of(&events, "r");
    assert_eq!(r["is_error"], true, "{r}");
    assert!(
        r["content"].as_str().unwrap().contains("Read(/secrets)"),
        "{r}"
    );
    assert!(
        !result_of(&events, "ls")["content"]
            .as_str()
            .unwrap()
            .contains("secrets")
    );
    assert_eq!(
        cat(dir.path(), specs, "/docs/a.md").as_deref(),
        Some("alpha\n")
    );
    // A bad second file runs nothing, naming it.
    let bad = settings_file(dir.path(), "bad.json", json!(["not", "an", "object"]));
    let run = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &first,
            "--settings",
            &bad,
        ],
        b"",
    );
    run.assert_code(2);
    assert!(run.stderr.contains("bad.json"), "{}", run.stderr);
}

/// The run's record keeps every settings file: a resumed run decides and
/// hooks by all of them without --settings being given again.
#[cfg(feature = "sqlite")]
#[test]
fn a_resumed_run_keeps_all_its_settings_files() {
    let dir = tempfile::tempdir().unwrap();
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let session = super::support::session_spec(dir.path());
    let marker = dir.path().join("ran-one");
    let first = settings_file(
        dir.path(),
        "one.json",
        json!({"hooks": marker_hook(&marker)}),
    );
    let second = settings_file(
        dir.path(),
        "two.json",
        json!({"permissions": {"ask": ["Edit(/late/**)"], "deny": ["Read(/secrets)"]}}),
    );
    let model = script(
        dir.path(),
        "s.jsonl",
        &[
            json!({"tool_calls": [write("w", "/late/a.md")]}),
            json!({"text": "done"}),
        ],
    );
    let paused = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &first,
            "--settings",
            &second,
            "--session",
            &session,
            "--thread",
            "t",
        ],
        b"",
    );
    paused.assert_code(3);
    assert!(!marker.exists(), "the asked call has not run");
    let events = json_lines(&paused);
    let request = events.iter().find(|e| e["type"] == "request").unwrap();
    let request_id = request["request_id"].as_str().unwrap().to_owned();
    script(
        dir.path(),
        "s.jsonl",
        &[
            json!({"tool_calls": [
                call("r", "read_file", json!({"file_path": "/secrets/k.txt"}))
            ]}),
            json!({"text": "done"}),
        ],
    );
    put(
        dir.path(),
        std::slice::from_ref(&state),
        "/secrets/k.txt",
        "needle\n",
    );
    let answered = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "thread",
            "answer",
            "t",
            "--request",
            &request_id,
            "yes",
            "--approve",
            "--session",
            &session,
        ],
        b"",
    );
    answered.assert_code(0);
    let events = json_lines(&answered);
    assert!(
        marker.exists(),
        "the first file's hook ran in the resumed process"
    );
    let r = result_of(&events, "r");
    assert_eq!(r["is_error"], true, "the second file's deny holds: {r}");
    assert!(
        r["content"].as_str().unwrap().contains("Read(/secrets)"),
        "{r}"
    );
    assert_eq!(
        cat(dir.path(), std::slice::from_ref(&state), "/late/a.md").as_deref(),
        Some("x\n")
    );
}

/// The memory tool reads through the same workspace, so a Read deny rule holds
/// for its `view` as for `read_file`: the denied folder is refused naming the
/// rule and absent from the listing of /memories.
#[test]
fn a_read_deny_rule_holds_for_the_memory_tool_s_view() {
    let dir = tempfile::tempdir().unwrap();
    let specs = vec![format!("state:{}", dir.path().join("ws.json").display())];
    put(
        dir.path(),
        &specs,
        "/memories/private/key.md",
        "needle private\n",
    );
    put(dir.path(), &specs, "/memories/notes.md", "needle notes\n");
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"deny": ["Read(/memories/private)"]}}).to_string(),
    )
    .unwrap();
    let model = script(
        dir.path(),
        "m.jsonl",
        &[
            json!({"tool_calls": [
                call("v", "memory", json!({"command": "view", "path": "/memories/private/key.md"})),
                call("d", "memory", json!({"command": "view", "path": "/memories"})),
                call("n", "memory", json!({"command": "view", "path": "/memories/notes.md"}))]}),
            json!({"text": "done"}),
        ],
    );
    let mut args = backend_args(&specs);
    args.extend([
        "--json",
        "run",
        "go",
        "--memory",
        "--model",
        &model,
        "--settings",
        settings.to_str().unwrap(),
    ]);
    let run = burrow_in(dir.path(), &args, b"");
    run.assert_code(0);
    let events = json_lines(&run);
    let result = |id: &str| super::support::tool_result(&events, id);
    let denied = result("v");
    assert_eq!(denied["is_error"], true, "{denied}");
    let text = denied["content"].as_str().unwrap();
    assert!(
        text.contains("permission rule Read(/memories/private)") && !text.contains("needle"),
        "{text}"
    );
    let listed = result("d");
    assert_eq!(listed["is_error"], false, "{listed}");
    let text = listed["content"].as_str().unwrap();
    assert!(
        text.contains("notes.md") && !text.contains("private"),
        "{text}"
    );
    let notes = result("n");
    assert_eq!(notes["is_error"], false, "{notes}");
    assert!(notes["content"].as_str().unwrap().contains("needle notes"));
}

/// `--artifacts` in plan mode: the artifact tools are offered and decided as
/// the file tools are (ADR 0365): the reading ones, annotated read-only, run;
/// the changing ones are not offered.
#[cfg(all(feature = "artifacts", feature = "sqlite"))]
#[test]
fn plan_mode_runs_the_reading_artifact_tools_and_withholds_the_changing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = dir.path().join("kinds");
    std::fs::create_dir(&kinds).unwrap();
    let schema = json!({"type": "object", "required": ["title"],
        "properties": {"title": {"type": "string"}}, "additionalProperties": false});
    std::fs::write(kinds.join("plan.schema.json"), schema.to_string()).unwrap();
    std::fs::write(kinds.join("plan.md"), "# {{title}}\n").unwrap();
    let model = script(
        dir.path(),
        "m.jsonl",
        &[
            json!({"tool_calls": [
                call("l", "list_artifacts", json!({})),
                call("c", "create_artifact", json!({"kind": "plan", "snapshot": {"title": "x"}}))]}),
            json!({"text": "done"}),
        ],
    );
    let session = super::support::session_spec(dir.path());
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let run = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--artifacts",
            "kinds",
            "--session",
            &session,
            "--thread",
            "t1",
            "--permission-mode",
            "plan",
        ],
        b"",
    );
    run.assert_code(0);
    let events = json_lines(&run);
    let result = |id: &str| super::support::tool_result(&events, id);
    let listed = result("l");
    assert_eq!(listed["is_error"], false, "{listed}");
    assert_eq!(listed["content"], "There are no artifacts.");
    let created = result("c");
    assert_eq!(created["is_error"], true, "{created}");
    assert!(
        created["content"].as_str().unwrap().starts_with(
            "There is no tool named \"create_artifact\" (plan mode offers no tool that changes anything)"
        ),
        "{created}"
    );
    let shown = burrow_in(
        dir.path(),
        &[
            "--json",
            "artifact",
            "list",
            "--session",
            &session,
            "--artifacts",
            "kinds",
        ],
        b"",
    );
    shown.assert_code(0);
    assert_eq!(shown.json()["artifacts"], json!([]), "nothing was created");
}

/// `burrow --json run go --artifacts kinds` on thread `thread` of the SQLite
/// session in `dir`, with the settings `settings` (none when `Null`) and one
/// model turn of `calls`; the kinds plan and secret.
#[cfg(all(feature = "artifacts", feature = "sqlite"))]
fn artifact_run(
    dir: &std::path::Path,
    thread: &str,
    settings: Value,
    calls: Vec<Value>,
) -> (super::support::Run, Vec<Value>) {
    let kinds = dir.join("kinds");
    if !kinds.exists() {
        std::fs::create_dir(&kinds).unwrap();
        let schema = json!({"type": "object", "required": ["title"],
            "properties": {"title": {"type": "string"}}, "additionalProperties": false});
        for kind in ["plan", "secret"] {
            std::fs::write(
                kinds.join(format!("{kind}.schema.json")),
                schema.to_string(),
            )
            .unwrap();
        }
    }
    let model = script(
        dir,
        &format!("{thread}.jsonl"),
        &[json!({ "tool_calls": calls }), json!({"text": "done"})],
    );
    let session = super::support::session_spec(dir);
    let state = format!("state:{}", dir.join("ws.json").display());
    let file = dir.join(format!("{thread}.settings.json"));
    let mut args = vec![
        "--backend",
        &state,
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--artifacts",
        "kinds",
        "--session",
        &session,
        "--thread",
        thread,
    ];
    if !settings.is_null() {
        std::fs::write(&file, settings.to_string()).unwrap();
        args.extend(["--settings", file.to_str().unwrap()]);
    }
    let run = burrow_in(dir, &args, b"");
    let events = json_lines(&run);
    (run, events)
}

/// `Read(...)` and `Edit(...)` deny rules reach the artifact workspace, each
/// artifact named `/artifacts/KIND/ID` (ADR 0395): a hidden artifact is
/// refused to `read_artifact` naming the rule and absent from
/// `list_artifacts` (the store behind the rules filters it, below the
/// tools), a locked one refuses `edit_artifact` and `archive_artifact` and
/// stays readable, a create of a locked kind is refused; nothing changes.
#[cfg(all(feature = "artifacts", feature = "sqlite"))]
#[test]
fn deny_rules_reach_the_artifact_tools_as_artifacts_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (run, events) = artifact_run(
        dir.path(),
        "made",
        Value::Null,
        vec![
            call(
                "p",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "open plan"}}),
            ),
            call(
                "s",
                "create_artifact",
                json!({"kind": "secret", "snapshot": {"title": "the secret"}}),
            ),
        ],
    );
    run.assert_code(0);
    for id in ["p", "s"] {
        assert_eq!(result_of(&events, id)["is_error"], false, "{events:?}");
    }
    let deny = json!({"permissions": {"deny": [
        "Read(/artifacts/secret/**)", "Edit(/artifacts/plan/plan-1)"]}});
    let (run, events) = artifact_run(
        dir.path(),
        "denied",
        deny,
        vec![
            call("l", "list_artifacts", json!({})),
            call("rs", "read_artifact", json!({"id": "secret-2"})),
            call(
                "es",
                "edit_artifact",
                json!({"id": "secret-2", "base_version": 1,
                "patch": [{"op": "replace", "path": "/title", "value": "x"}]}),
            ),
            call("rp", "read_artifact", json!({"id": "plan-1"})),
            call(
                "ep",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 1,
                "patch": [{"op": "replace", "path": "/title", "value": "x"}]}),
            ),
            call(
                "ap",
                "archive_artifact",
                json!({"id": "plan-1", "base_version": 1}),
            ),
            call(
                "cs",
                "create_artifact",
                json!({"kind": "secret", "snapshot": {"title": "another"}}),
            ),
            call(
                "cp",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "new plan"}}),
            ),
        ],
    );
    run.assert_code(0);
    let text = |id: &str| {
        let r = result_of(&events, id);
        (
            r["is_error"].as_bool().unwrap(),
            r["content"].as_str().unwrap().to_owned(),
        )
    };
    let (err, listed) = text("l");
    assert!(!err, "{listed}");
    assert!(
        listed.contains("plan-1") && !listed.contains("secret"),
        "{listed}"
    );
    for (id, rule) in [
        ("rs", "Read(/artifacts/secret/**)"),
        ("es", "Read(/artifacts/secret/**)"),
        ("ep", "Edit(/artifacts/plan/plan-1)"),
        ("ap", "Edit(/artifacts/plan/plan-1)"),
        ("cs", "Read(/artifacts/secret/**)"),
    ] {
        let (err, said) = text(id);
        assert!(err, "{id}: {said}");
        assert!(
            said.contains(&format!("denied by the permission rule {rule}")),
            "{id}: {said}"
        );
    }
    let (err, read) = text("rp");
    assert!(!err && read.contains("open plan"), "{read}");
    let (err, created) = text("cp");
    assert!(
        !err,
        "a rule naming one plan leaves new plans alone: {created}"
    );
    // Nothing the rules cover changed: the person's listing shows every artifact as it was.
    let session = super::support::session_spec(dir.path());
    let shown = burrow_in(
        dir.path(),
        &[
            "--json",
            "artifact",
            "list",
            "--session",
            &session,
            "--artifacts",
            "kinds",
        ],
        b"",
    );
    shown.assert_code(0);
    let versions: Vec<(String, u64)> = shown.json()["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_owned(),
                a["version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("plan-1".to_owned(), 1),
            ("plan-3".to_owned(), 1),
            ("secret-2".to_owned(), 1)
        ],
        "{}",
        shown.out()
    );
}

/// An `ask` rule over artifacts pauses a changing artifact tool's call for
/// approval (exit 3), as it does a file tool's; `acceptEdits` runs it.
#[cfg(all(feature = "artifacts", feature = "sqlite"))]
#[test]
fn an_ask_rule_over_artifacts_pauses_their_changes() {
    let dir = tempfile::tempdir().unwrap();
    let create = || {
        vec![call(
            "c",
            "create_artifact",
            json!({"kind": "plan", "snapshot": {"title": "asked"}}),
        )]
    };
    let ask = json!({"permissions": {"ask": ["Edit(/artifacts/**)"]}});
    let (run, events) = artifact_run(dir.path(), "asked", ask, create());
    run.assert_code(3);
    let request = events
        .iter()
        .find(|e| e["type"] == "request")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(request["kind"], "approval", "{request}");
    assert_eq!(request["tool_name"], "create_artifact", "{request}");
    // Approved, the resumed run makes it (its model answers anew from its script).
    script(dir.path(), "asked.jsonl", &[json!({"text": "done"})]);
    let session = super::support::session_spec(dir.path());
    let state = format!("state:{}", dir.path().join("ws.json").display());
    let answered = burrow_in(
        dir.path(),
        &[
            "--backend",
            &state,
            "--json",
            "thread",
            "answer",
            "asked",
            "--request",
            request["request_id"].as_str().unwrap(),
            "yes",
            "--approve",
            "--session",
            &session,
        ],
        b"",
    );
    answered.assert_code(0);
    let shown = burrow_in(
        dir.path(),
        &[
            "--json",
            "artifact",
            "show",
            "plan-1",
            "--session",
            &session,
            "--artifacts",
            "kinds",
        ],
        b"",
    );
    shown.assert_code(0);
    assert_eq!(
        shown.json()["artifact"]["snapshot"]["title"],
        "asked",
        "{}",
        shown.out()
    );
    let accept = json!({"permissions": {"ask": ["Edit(/artifacts/**)"],
        "defaultMode": "acceptEdits"}});
    let (run, events) = artifact_run(dir.path(), "accepted", accept, create());
    run.assert_code(0);
    let created = result_of(&events, "c");
    assert_eq!(created["is_error"], false, "{created}");
    // Reading is not asked.
    let (run, _) = artifact_run(
        dir.path(),
        "read",
        json!({"permissions": {"ask": ["Edit(/artifacts/**)"]}}),
        vec![call("l", "list_artifacts", json!({}))],
    );
    run.assert_code(0);
}
