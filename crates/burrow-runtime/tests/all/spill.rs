//! Large results: saved under /.burrow/large_results/ in the backend and replaced by a preview and the path.

use std::sync::Arc;

use burrow_backend::Backend;
use burrow_runtime::tools::ToolConfig;
use serde_json::json;

use super::support::{CountingHook, Mode, Wrapped, content, ctx, ok, p, state_with, toolset_with};

fn small(threshold: usize, preview: usize) -> ToolConfig {
    let mut config = ToolConfig::default();
    config.large_result_chars = threshold;
    config.preview_chars = preview;
    config
}

/// The path named in a spilled result.
fn spill_path(text: &str) -> String {
    let start = text.find("/.burrow/large_results/").expect("a spill path");
    let rest = &text[start..];
    rest[..rest.find(".txt").unwrap() + 4].to_owned()
}

#[tokio::test]
async fn a_large_result_is_saved_whole_and_previewed() {
    let lines: String = (1..=500).map(|i| format!("match number {i}\n")).collect();
    let backend = Arc::new(state_with(&[("/big.txt", lines.as_bytes())]).await);
    let args = json!({"pattern": "match", "output_mode": "content"});

    let mut roomy = ToolConfig::default();
    roomy.max_grep_lines = 1000;
    let whole = ok(
        &toolset_with(backend.clone(), roomy.clone()),
        "grep",
        args.clone(),
    )
    .await;
    assert!(whole.chars().count() < 80_000 && !whole.contains("large_results"));

    let mut tight = small(5_000, 1_000);
    tight.max_grep_lines = 1000;
    let tools = toolset_with(backend.clone(), tight);
    let text = ok(&tools, "grep", args.clone()).await;
    let path = spill_path(&text);
    assert!(path.starts_with("/.burrow/large_results/grep-"), "{path}");
    // The saved file holds exactly what would have been returned.
    assert_eq!(content(backend.as_ref(), &path).await, whole);
    // The preview is whole lines from the start, within the preview budget, then the note.
    let preview = &text[..text.find("\n...\n").unwrap()];
    assert!(preview.chars().count() <= 1_000);
    assert!(whole.starts_with(preview));
    assert!(preview.ends_with(&whole[..preview.len()].lines().last().unwrap().to_string()));
    assert!(
        text.contains(&format!("{} characters", whole.chars().count())),
        "{text}"
    );
    assert!(text.contains("read_file"), "{text}");
    // The model can page through the saved result.
    let first = ok(&tools, "read_file", json!({"file_path": path, "limit": 2})).await;
    assert!(
        first.starts_with("     1\t/big.txt:1:match number 1\n     2\t/big.txt:2:match number 2"),
        "{first}"
    );
    // The same result again is saved under the same name.
    assert_eq!(spill_path(&ok(&tools, "grep", args).await), path);
}

#[tokio::test]
async fn at_the_threshold_nothing_is_saved() {
    let backend = Arc::new(state_with(&[("/a.txt", b"x\n")]).await);
    let exact = "/a.txt".len();
    let tools = toolset_with(backend.clone(), small(exact, 10));
    assert_eq!(ok(&tools, "glob", json!({"pattern": "*"})).await, "/a.txt");
    let listing = backend.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(listing.entries.len(), 1, "no /.burrow directory was made");
}

#[tokio::test]
async fn a_refused_save_still_previews_and_says_why() {
    let lines: String = (1..=100).map(|i| format!("match {i}\n")).collect();
    let state = state_with(&[("/big.txt", lines.as_bytes())]).await;
    let backend = Arc::new(Wrapped::new(state, Mode::ReadOnly, false));
    let tools = toolset_with(backend, small(200, 50));
    let text = ok(
        &tools,
        "grep",
        json!({"pattern": "match", "output_mode": "content"}),
    )
    .await;
    assert!(
        text.contains("could not be saved (this workspace is read-only)"),
        "{text}"
    );
    assert!(!text.contains("/.burrow/large_results/"), "{text}");
}

#[tokio::test]
async fn a_saved_result_counts_as_a_change() {
    let lines: String = (1..=100).map(|i| format!("match {i}\n")).collect();
    let backend = Arc::new(state_with(&[("/big.txt", lines.as_bytes())]).await);
    let hook = Arc::new(CountingHook::default());
    let tools = toolset_with(backend, small(200, 50)).with_after_change(hook.clone());
    ok(&tools, "grep", json!({"pattern": "match 1$"})).await;
    assert_eq!(hook.count(), 0, "a small read-only result is no change");
    ok(
        &tools,
        "grep",
        json!({"pattern": "match", "output_mode": "content"}),
    )
    .await;
    assert_eq!(hook.count(), 1);
}

#[tokio::test]
async fn read_file_pages_instead_of_saving() {
    let lines: String = (1..=300).map(|i| format!("line {i}\n")).collect();
    let backend = Arc::new(state_with(&[("/a.txt", lines.as_bytes())]).await);
    let tools = toolset_with(backend.clone(), small(500, 100));
    let text = ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    assert!(!text.contains("large_results"), "{text}");
    assert!(text.chars().count() < 700, "{text}");
    let next = text
        .rsplit("offset=")
        .next()
        .unwrap()
        .trim_end_matches(".)");
    let next: usize = next.parse().unwrap();
    let shown = text.lines().filter(|l| l.contains('\t')).count();
    assert_eq!(next, shown);
    assert!(backend.ls(&ctx(), &p("/.burrow"), 10).await.is_err());
}

#[tokio::test]
async fn saved_results_stay_out_of_later_searches() {
    let lines: String = (1..=100).map(|i| format!("match {i}\n")).collect();
    let backend = Arc::new(state_with(&[("/big.txt", lines.as_bytes())]).await);
    let tools = toolset_with(backend.clone(), small(200, 50));
    let text = ok(
        &tools,
        "grep",
        json!({"pattern": "match", "output_mode": "content"}),
    )
    .await;
    let path = spill_path(&text);
    // The saved file holds "match" on every line, yet a later search of the
    // workspace finds only the agent's own file.
    let files = ok(&tools, "grep", json!({"pattern": "match 7$"})).await;
    assert_eq!(files, "/big.txt");
    let found = ok(&tools, "glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(found, "/big.txt");
    // Searching inside the directory, or the file itself, still finds it.
    let inside = ok(
        &tools,
        "glob",
        json!({"pattern": "*.txt", "path": "/.burrow/large_results"}),
    )
    .await;
    assert_eq!(inside, path);
    let hit = ok(&tools, "grep", json!({"pattern": "match 7$", "path": path})).await;
    assert_eq!(hit, path);
}

#[tokio::test]
async fn only_the_newest_saved_results_stay() {
    let backend = Arc::new(state_with(&[]).await);
    let mut config = small(100, 20);
    config.max_large_results = 3;
    let tools = toolset_with(backend.clone(), config);
    let mut saved = Vec::new();
    for n in 0..6 {
        let lines: String = (0..40).map(|i| format!("{n} line {i}\n")).collect();
        backend
            .write(&ctx(), &p(&format!("/f{n}.txt")), &lines)
            .await
            .unwrap();
        let text = ok(
            &tools,
            "grep",
            json!({"pattern": "line", "output_mode": "content", "path": format!("/f{n}.txt")}),
        )
        .await;
        saved.push(spill_path(&text));
    }
    let listing = backend
        .ls(&ctx(), &p("/.burrow/large_results"), 100)
        .await
        .unwrap();
    let kept: Vec<&str> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    // The last one saved is always kept.
    assert!(kept.contains(&saved[5].as_str()), "{kept:?}");
}

#[tokio::test]
async fn read_file_uses_the_configured_read_limit() {
    let lines: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let backend = Arc::new(state_with(&[("/a.txt", lines.as_bytes())]).await);
    let mut config = ToolConfig::default();
    config.read_limit = 5;
    let tools = toolset_with(backend, config);
    let text = ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    assert_eq!(
        text.lines().filter(|l| l.contains('\t')).count(),
        5,
        "{text}"
    );
    assert!(text.contains("offset=5"), "{text}");
    let more = ok(
        &tools,
        "read_file",
        json!({"file_path": "/a.txt", "limit": 7}),
    )
    .await;
    assert_eq!(
        more.lines().filter(|l| l.contains('\t')).count(),
        7,
        "{more}"
    );
}
