//! The layer's own scenarios: hidden paths refused and filtered (with exact truncation), locked paths unchanged, trees with covered paths kept whole.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, Limits, VPath};
use burrow_permissions::{PathRules, PermissionBackend};
use burrow_state::StateBackend;

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

fn ctx() -> FileContext {
    FileContext::default()
}

/// A StateBackend holding `files` (each holding "needle <path>"), and the layer over it with `rules`.
async fn setup(
    files: &[&str],
    rules: &[&str],
    limits: Limits,
) -> (StateBackend, PermissionBackend) {
    let state = StateBackend::with_limits(limits);
    for f in files {
        state
            .write(&ctx(), &p(f), &format!("needle {f}\n"))
            .await
            .unwrap();
    }
    let layer = PermissionBackend::new(
        Arc::new(state.clone()),
        PathRules::from_strings(rules).unwrap(),
    );
    (state, layer)
}

const TREE: &[&str] = &[
    "/.env",
    "/app/.env",
    "/app/main.rs",
    "/app/prod.env",
    "/notes.md",
    "/secrets/a.txt",
    "/secrets/deep/b.txt",
    "/zeta.txt",
];

#[tokio::test]
async fn a_hidden_path_is_refused_to_every_operation_naming_the_rule() {
    let (state, layer) = setup(
        TREE,
        &["Read(/secrets/**)", "Read(.env)"],
        Limits::default(),
    )
    .await;
    let before = state.files();
    for path in [
        "/secrets/a.txt",
        "/secrets/deep",
        "/app/.env",
        "/secrets/missing.txt",
    ] {
        let path = p(path);
        let refusals = [
            layer.read(&ctx(), &path, 0, 10).await.unwrap_err(),
            layer.read_bytes(&ctx(), &path).await.unwrap_err(),
            layer.write(&ctx(), &path, "x").await.unwrap_err(),
            layer.write_bytes(&ctx(), &path, b"x").await.unwrap_err(),
            layer
                .edit(&ctx(), &path, "needle", "pin", false)
                .await
                .unwrap_err(),
            layer.delete(&ctx(), &path).await.unwrap_err(),
            layer.delete_tree(&ctx(), &path).await.unwrap_err(),
            layer.make_dir(&ctx(), &path, true).await.unwrap_err(),
            layer.ls(&ctx(), &path, 10).await.unwrap_err(),
            layer.glob(&ctx(), "**", &path, 10).await.unwrap_err(),
            layer
                .grep(&ctx(), &GrepQuery::regex("needle"), &path, 10)
                .await
                .unwrap_err(),
        ];
        for e in refusals {
            assert_eq!(
                e.kind(),
                ErrorKind::PermissionDenied,
                "{path}: {}",
                e.message()
            );
            assert!(
                e.message().contains("permission rule Read("),
                "{}",
                e.message()
            );
            assert!(e.message().starts_with(path.as_str()), "{}", e.message());
            assert_eq!(
                e.message().matches(". ").count(),
                0,
                "one sentence: {}",
                e.message()
            );
        }
    }
    assert_eq!(state.files(), before, "a refused mutation changes nothing");
}

#[tokio::test]
async fn a_hidden_path_never_appears_in_a_listing_or_a_match() {
    let (_, layer) = setup(TREE, &["Read(/secrets)", "Read(*.env)"], Limits::default()).await;
    let root = layer.ls(&ctx(), &p("/"), 100).await.unwrap();
    let names: Vec<&str> = root.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(names, ["/app", "/notes.md", "/zeta.txt"]);
    assert!(!root.truncated);
    let app = layer.ls(&ctx(), &p("/app"), 100).await.unwrap();
    let names: Vec<&str> = app.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(names, ["/app/main.rs"]);
    let globbed = layer.glob(&ctx(), "**", &p("/"), 100).await.unwrap();
    let paths: Vec<&str> = globbed.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["/app/main.rs", "/notes.md", "/zeta.txt"]);
    let grepped = layer
        .grep(&ctx(), &GrepQuery::regex("needle"), &p("/"), 100)
        .await
        .unwrap();
    let paths: Vec<&str> = grepped.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["/app/main.rs", "/notes.md", "/zeta.txt"]);
    // Reads of what is visible go on.
    assert_eq!(
        layer
            .read(&ctx(), &p("/app/main.rs"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["needle /app/main.rs"]
    );
}

/// Hidden results sorting first do not make a short page, and `truncated` is exact.
#[tokio::test]
async fn filtering_fills_the_page_and_keeps_truncated_exact() {
    let mut files: Vec<String> = (0..40).map(|i| format!("/d/a{i:02}.env")).collect();
    files.extend(["/d/b1.txt", "/d/b2.txt", "/d/b3.txt"].map(String::from));
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    let (_, layer) = setup(&refs, &["Read(*.env)"], Limits::default()).await;
    for (limit, expect, truncated) in [
        (2, vec!["/d/b1.txt", "/d/b2.txt"], true),
        (3, vec!["/d/b1.txt", "/d/b2.txt", "/d/b3.txt"], false),
        (10, vec!["/d/b1.txt", "/d/b2.txt", "/d/b3.txt"], false),
        (0, vec![], true),
    ] {
        let ls = layer.ls(&ctx(), &p("/d"), limit).await.unwrap();
        let got: Vec<&str> = ls.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            (got, ls.truncated),
            (expect.clone(), truncated),
            "ls limit {limit}"
        );
        let glob = layer.glob(&ctx(), "*", &p("/d"), limit).await.unwrap();
        let got: Vec<&str> = glob.files.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            (got, glob.truncated),
            (expect.clone(), truncated),
            "glob limit {limit}"
        );
        let grep = layer
            .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/d"), limit)
            .await
            .unwrap();
        let got: Vec<&str> = grep.matches.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            (got, grep.truncated),
            (expect, truncated),
            "grep limit {limit}"
        );
    }
}

/// An inner backend that caps answers below what was asked cannot be paged
/// further: the page ends where its answer did and says truncated (ADR 0311).
#[tokio::test]
async fn a_capped_inner_backend_ends_the_page_truncated() {
    let limits = Limits {
        max_results: 3,
        ..Limits::default()
    };
    let files = ["/a.env", "/b.env", "/c.env", "/d.txt"];
    let (_, layer) = setup(&files, &["Read(*.env)"], limits).await;
    let ls = layer.ls(&ctx(), &p("/"), 3).await.unwrap();
    assert!(ls.entries.is_empty());
    assert!(ls.truncated, "more exist beyond the inner cap");
}

#[tokio::test]
async fn a_locked_path_can_be_read_but_not_changed() {
    let (state, layer) = setup(
        TREE,
        &["Edit(/secrets/**)", "Write(/notes.md)"],
        Limits::default(),
    )
    .await;
    let before = state.files();
    assert_eq!(
        layer
            .read(&ctx(), &p("/secrets/a.txt"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["needle /secrets/a.txt"]
    );
    assert_eq!(
        layer
            .ls(&ctx(), &p("/secrets"), 10)
            .await
            .unwrap()
            .entries
            .len(),
        2
    );
    let attempts = [
        layer
            .write(&ctx(), &p("/secrets/new.txt"), "x")
            .await
            .unwrap_err(),
        layer
            .edit(&ctx(), &p("/secrets/a.txt"), "needle", "pin", false)
            .await
            .unwrap_err(),
        layer
            .delete(&ctx(), &p("/secrets/a.txt"))
            .await
            .unwrap_err(),
        layer
            .delete_tree(&ctx(), &p("/secrets/deep"))
            .await
            .unwrap_err(),
        layer
            .make_dir(&ctx(), &p("/secrets/x/y"), true)
            .await
            .unwrap_err(),
        layer.write(&ctx(), &p("/notes.md"), "x").await.unwrap_err(),
        layer
            .write(&ctx(), &p("/notes.md/under"), "x")
            .await
            .unwrap_err(),
    ];
    for e in attempts {
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{}", e.message());
        assert!(e.message().contains("permission rule"), "{}", e.message());
    }
    assert_eq!(state.files(), before);
    layer
        .write(&ctx(), &p("/zeta.txt"), "changed\n")
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_tree_that_holds_a_covered_path_removes_nothing() {
    for rules in [
        &["Read(*.env)"][..],
        &["Edit(/app/prod.env)"][..],
        &["Read(deep)"][..],
    ] {
        let (state, layer) = setup(TREE, rules, Limits::default()).await;
        let before = state.files();
        let under = if rules[0].contains("deep") {
            "/secrets"
        } else {
            "/app"
        };
        let e = layer.delete_tree(&ctx(), &p(under)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{rules:?}");
        assert!(e.message().starts_with(under), "{}", e.message());
        assert!(e.message().contains(rules[0]), "{}", e.message());
        assert_eq!(state.files(), before, "{rules:?}");
    }
    // A tree the rules cannot reach is deleted, and so is one they do not touch.
    let (state, layer) = setup(TREE, &["Read(/secrets/**)"], Limits::default()).await;
    layer.delete_tree(&ctx(), &p("/app")).await.unwrap();
    let (_, layer2) = setup(TREE, &["Read(*.env)"], Limits::default()).await;
    layer2.delete_tree(&ctx(), &p("/secrets")).await.unwrap();
    assert!(state.files().keys().all(|k| !k.starts_with("/app/")));
}

/// A sandbox over a StateBackend that records the commands it is asked to
/// run: the one way to show that a refused command never reaches the sandbox.
struct RecordingSandbox {
    files: StateBackend,
    ran: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Backend for RecordingSandbox {
    fn capabilities(&self) -> burrow_backend::Capabilities {
        self.files.capabilities().with_exec(true)
    }
    async fn ls(
        &self,
        c: &FileContext,
        d: &VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::Listing> {
        self.files.ls(c, d, l).await
    }
    async fn read(
        &self,
        c: &FileContext,
        p: &VPath,
        o: usize,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::LineWindow> {
        self.files.read(c, p, o, l).await
    }
    async fn read_bytes(&self, c: &FileContext, p: &VPath) -> burrow_backend::Result<Vec<u8>> {
        self.files.read_bytes(c, p).await
    }
    async fn write_bytes(
        &self,
        c: &FileContext,
        p: &VPath,
        b: &[u8],
    ) -> burrow_backend::Result<burrow_backend::WriteResult> {
        self.files.write_bytes(c, p, b).await
    }
    async fn edit(
        &self,
        c: &FileContext,
        p: &VPath,
        o: &str,
        n: &str,
        a: bool,
    ) -> burrow_backend::Result<burrow_backend::EditResult> {
        self.files.edit(c, p, o, n, a).await
    }
    async fn delete(&self, c: &FileContext, p: &VPath) -> burrow_backend::Result<()> {
        self.files.delete(c, p).await
    }
    async fn glob(
        &self,
        c: &FileContext,
        g: &str,
        u: &VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::GlobResult> {
        self.files.glob(c, g, u, l).await
    }
    async fn grep(
        &self,
        c: &FileContext,
        q: &GrepQuery,
        u: &VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::GrepResult> {
        self.files.grep(c, q, u, l).await
    }
    fn as_sandbox(&self) -> Option<&dyn burrow_backend::Sandbox> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl burrow_backend::Sandbox for RecordingSandbox {
    async fn execute(
        &self,
        _: &FileContext,
        command: &str,
        _: Option<std::time::Duration>,
    ) -> burrow_backend::Result<burrow_backend::ExecuteResponse> {
        self.ran.lock().unwrap().push(command.to_owned());
        Ok(burrow_backend::ExecuteResponse {
            output: "ran\n".into(),
            exit_code: Some(0),
            truncated: false,
        })
    }
}

#[tokio::test]
async fn commands_are_refused_while_a_path_rule_holds_and_never_reach_the_sandbox() {
    let sandbox = Arc::new(RecordingSandbox {
        files: StateBackend::new(),
        ran: Default::default(),
    });
    let guarded = PermissionBackend::new(
        sandbox.clone(),
        PathRules::from_strings(["Read(.env)"]).unwrap(),
    );
    let e = guarded
        .as_sandbox()
        .unwrap()
        .execute(&ctx(), "cat .env", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(e.message().contains("Read(.env)"), "{}", e.message());
    assert!(sandbox.ran.lock().unwrap().is_empty());
    // No path rule: the sandbox runs the command.
    let open = PermissionBackend::new(sandbox.clone(), PathRules::default());
    let out = open
        .as_sandbox()
        .unwrap()
        .execute(&ctx(), "true", None)
        .await
        .unwrap();
    assert_eq!(out.output, "ran\n");
    assert_eq!(*sandbox.ran.lock().unwrap(), ["true"]);
    // A backend that runs no commands stays one.
    let (_, layer) = setup(TREE, &["Read(.env)"], Limits::default()).await;
    assert!(layer.as_sandbox().is_none());
}
