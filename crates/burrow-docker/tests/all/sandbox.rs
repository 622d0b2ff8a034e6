//! Sandbox behaviour beyond the shared suite: exit codes, timeouts that leave no process, output caps, exact bytes and names, links leading out, engine faults.

use std::time::{Duration, Instant};

use super::support::{self, Removal, exec_argv};
use burrow_backend::{
    Backend, ErrorKind, FileContext, GrepQuery, Sandbox, TIMEOUT_EXIT_CODE, VPath,
};

fn p(path: &str) -> VPath {
    VPath::parse(path).unwrap()
}

fn cx() -> FileContext {
    FileContext::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_and_timeouts_leave_no_process() {
    let sandbox = support::sandbox("sandbox-exec").await;
    let _removal = Removal(sandbox.id().to_owned());
    for (command, code) in [
        ("true", 0),
        ("exit 3", 3),
        ("kill -9 $$", 137),
        ("no-such-command", 127),
    ] {
        let r = sandbox.execute(&cx(), command, None).await.unwrap();
        assert_eq!(r.exit_code, Some(code), "{command}: {:?}", r.output);
    }
    // A process tree with a nested shell, background jobs and a subshell.
    let started = Instant::now();
    let r = sandbox
        .execute(
            &cx(),
            "sh -c 'sleep 301 & sleep 302' & (sleep 303; echo never) & echo started; sleep 304",
            Some(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(TIMEOUT_EXIT_CODE));
    assert!(r.output.starts_with("started\n"), "{:?}", r.output);
    assert!(r.output.contains("timed out"), "{:?}", r.output);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the timeout took {:?}",
        started.elapsed()
    );
    let (_, ps) = exec_argv(&sandbox, &["ps", "-o", "pid,args"]).await;
    for n in 301..=304 {
        assert!(
            !ps.contains(&format!("sleep {n}")),
            "sleep {n} survived the timeout:\n{ps}"
        );
    }
    // The sandbox works after a timeout.
    let r = sandbox
        .execute(&cx(), "echo still here", None)
        .await
        .unwrap();
    assert_eq!((r.output.as_str(), r.exit_code), ("still here\n", Some(0)));
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_cap_is_configurable_and_floods_stay_bounded() {
    let sandbox =
        support::sandbox_with(support::options("sandbox-cap").with_output_cap(1000)).await;
    let _removal = Removal(sandbox.id().to_owned());
    let r = sandbox
        .execute(&cx(), "yes | head -c 50000000", None)
        .await
        .unwrap();
    assert!(r.truncated);
    assert_eq!(r.exit_code, Some(0));
    assert!(
        r.output.starts_with(&"y\n".repeat(500)),
        "{:?}",
        &r.output[..50]
    );
    assert!(r.output.len() < 1000 + 200, "{} bytes", r.output.len());
    let r = sandbox
        .execute(&cx(), "head -c 1000 /dev/zero | tr '\\0' x", None)
        .await
        .unwrap();
    assert!(!r.truncated);
    assert_eq!(r.output, "x".repeat(1000));
    let r = sandbox
        .execute(&cx(), "yes", Some(Duration::from_secs(1)))
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(TIMEOUT_EXIT_CODE));
    assert!(r.truncated);
    let (_, ps) = exec_argv(&sandbox, &["ps", "-o", "args"]).await;
    assert!(
        !ps.lines().any(|l| l.trim() == "yes"),
        "yes survived:\n{ps}"
    );
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_and_awkward_names_round_trip() {
    let sandbox = support::sandbox("sandbox-bytes").await;
    let _removal = Removal(sandbox.id().to_owned());
    let every_byte: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let names = [
        "/bin/all bytes.bin",
        "/quotes/it's \"quoted\" `back` $(x).txt",
        "/new\nline/fi\nle.txt",
        "/-rf --no-preserve-root",
        "/glob/*?[a].txt",
        "/tab\there/\u{1f980} ünïcödé.txt",
    ];
    for name in names {
        let path = p(name);
        sandbox
            .write_bytes(&cx(), &path, &every_byte)
            .await
            .unwrap();
        let back = sandbox.read_bytes(&cx(), &path).await.unwrap();
        assert!(back == every_byte, "{name:?} did not round-trip");
    }
    // The same bytes, seen from inside the container (the name as an argv element).
    let real = sandbox.container_path(&p(names[1]));
    let (code, sum) = exec_argv(&sandbox, &["md5sum", &real]).await;
    let (_, want) = exec_argv(
        &sandbox,
        &[
            "sh",
            "-c",
            "md5sum < \"$1\"",
            "x",
            &sandbox.container_path(&p(names[0])),
        ],
    )
    .await;
    assert_eq!(code, 0, "{sum}");
    assert_eq!(
        sum.split_whitespace().next(),
        want.split_whitespace().next()
    );
    // A command writes a file with a newline in its name; the file tools see it exactly.
    let r = sandbox
        .execute(
            &cx(),
            "mkdir -p made && printf 'needle\\n' > \"made/a\nb c.txt\"",
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{:?}", r.output);
    let listing = sandbox.ls(&cx(), &p("/made"), 10).await.unwrap();
    let listed: Vec<&str> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(listed, ["/made/a\nb c.txt"]);
    assert_eq!(listing.entries[0].size, Some(7));
    let hits = sandbox
        .grep(&cx(), &GrepQuery::fixed("needle"), &VPath::root(), 10)
        .await
        .unwrap();
    assert_eq!(hits.matches.len(), 1);
    assert_eq!(hits.matches[0].path, "/made/a\nb c.txt");
    let found = sandbox
        .glob(&cx(), "*.bin", &VPath::root(), 10)
        .await
        .unwrap();
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].size, Some(every_byte.len() as u64));
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_leading_out_of_the_work_dir_are_refused() {
    let sandbox = support::sandbox("sandbox-links").await;
    let _removal = Removal(sandbox.id().to_owned());
    sandbox
        .write(&cx(), &p("/inside/target.txt"), "inside\n")
        .await
        .unwrap();
    let r = sandbox
        .execute(
            &cx(),
            "ln -s /etc etc && ln -s /etc/passwd passwd && ln -s ../../etc/passwd climb && ln -s inside/target.txt ok && ln -s inside okdir",
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{:?}", r.output);
    for path in ["/etc/passwd", "/passwd", "/climb"] {
        let err = sandbox.read(&cx(), &p(path), 0, 10).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::PermissionDenied,
            "{path}: {}",
            err.message()
        );
        assert!(!err.message().contains("/workspace"), "{}", err.message());
        let err = sandbox.write(&cx(), &p(path), "x").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{path}");
    }
    assert_eq!(
        sandbox.ls(&cx(), &p("/etc"), 10).await.unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    let err = sandbox
        .write(&cx(), &p("/etc/planted"), "x")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    let (_, etc) = exec_argv(&sandbox, &["ls", "/etc"]).await;
    assert!(!etc.contains("planted"));
    // Links that stay inside are followed.
    let window = sandbox.read(&cx(), &p("/ok"), 0, 10).await.unwrap();
    assert_eq!(window.lines, ["inside"]);
    let window = sandbox
        .read(&cx(), &p("/okdir/target.txt"), 0, 10)
        .await
        .unwrap();
    assert_eq!(window.lines, ["inside"]);
    // Listings, glob and grep pass the outward links by.
    let names: Vec<String> = sandbox
        .ls(&cx(), &VPath::root(), 100)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(names, ["/inside", "/ok", "/okdir"]);
    let hits = sandbox
        .grep(&cx(), &GrepQuery::regex("root"), &VPath::root(), 10)
        .await
        .unwrap();
    assert!(hits.matches.is_empty(), "{:?}", hits.matches);
    // Deleting a link removes the link, never its target.
    sandbox.delete(&cx(), &p("/passwd")).await.unwrap();
    let (code, _) = exec_argv(&sandbox, &["test", "-s", "/etc/passwd"]).await;
    assert_eq!(code, 0);
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_lose_nothing() {
    let sandbox = std::sync::Arc::new(support::sandbox("sandbox-edits").await);
    let _removal = Removal(sandbox.id().to_owned());
    let path = p("/counter.txt");
    let body: String = (0..32).map(|i| format!("line {i}\n")).collect();
    sandbox.write(&cx(), &path, &body).await.unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let sandbox = sandbox.clone();
            let path = path.clone();
            tokio::spawn(async move {
                sandbox
                    .edit(
                        &cx(),
                        &path,
                        &format!("line {i}\n"),
                        &format!("edited {i}\n"),
                        false,
                    )
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let text = String::from_utf8(sandbox.read_bytes(&cx(), &path).await.unwrap()).unwrap();
    let want: String = (0..32).map(|i| format!("edited {i}\n")).collect();
    assert_eq!(text, want);
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_killed_from_outside_fails_clearly() {
    let sandbox = support::sandbox("sandbox-killed").await;
    let _removal = Removal(sandbox.id().to_owned());
    let id = sandbox.id().to_owned();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let status = tokio::process::Command::new("docker")
            .args(["kill", &id])
            .output()
            .await;
        status.map(|o| o.status.success())
    });
    let started = Instant::now();
    let err = sandbox
        .execute(&cx(), "echo begun; sleep 60", Some(Duration::from_secs(90)))
        .await
        .unwrap_err();
    assert!(killer.await.unwrap().unwrap(), "docker kill failed");
    assert!(!err.is_refusal(), "{}", err.message());
    assert!(
        err.message().contains("stopped") || err.message().contains("not running"),
        "{}",
        err.message()
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    // Every later operation fails too, quickly, and says why.
    let err = sandbox.execute(&cx(), "true", None).await.unwrap_err();
    assert!(
        !err.is_refusal() && err.message().contains("not running"),
        "{}",
        err.message()
    );
    sandbox.close().await.unwrap();
    let err = sandbox.read(&cx(), &p("/x"), 0, 1).await.unwrap_err();
    assert!(err.message().contains("closed"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_dir_is_configurable_and_commands_get_env() {
    let options = support::options("sandbox-env")
        .with_work_dir("/home/agent/work")
        .with_env("GREETING", "hello 'there' \"you\"")
        .with_user("1234:1234");
    let sandbox = support::sandbox_with(options).await;
    let _removal = Removal(sandbox.id().to_owned());
    sandbox.write(&cx(), &p("/notes/a.txt"), "x").await.unwrap();
    let r = sandbox
        .execute(
            &cx(),
            "pwd; echo \"$GREETING\"; id -u; ls -ln notes | tail -1 | awk '{print $3}'; touch ok",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        r.output, "/home/agent/work\nhello 'there' \"you\"\n1234\n1234\n",
        "{:?}",
        r.output
    );
    assert_eq!(r.exit_code, Some(0));
    sandbox.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_defaults_hold_inside_the_container() {
    let sandbox = support::sandbox("sandbox-secure").await;
    let _removal = Removal(sandbox.id().to_owned());
    let r = sandbox
        .execute(&cx(), "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; ls /sys/class/net; cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null", None)
        .await
        .unwrap();
    let out = r.output;
    assert!(out.contains("CapEff:\t0000000000000000"), "{out:?}");
    assert!(out.contains("CapBnd:\t0000000000000000"), "{out:?}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out:?}");
    let interfaces: Vec<&str> = out
        .lines()
        .filter(|l| !l.contains(':') && !l.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(interfaces, ["lo"], "{out:?}");
    assert!(out.lines().any(|l| l == "512"), "pids limit: {out:?}");
    sandbox.close().await.unwrap();
}
