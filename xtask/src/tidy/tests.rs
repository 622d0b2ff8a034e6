//! Tests of tidy's checks over small workspaces written to a temporary folder.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Violation, check, code_map_headings};

/// A temporary workspace tree, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new() -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("xtask-tidy-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Tree(dir)
    }

    fn write(&self, rel: &str, text: &str) -> &Self {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        self
    }

    fn remove(&self, rel: &str) -> &Self {
        fs::remove_file(self.0.join(rel)).unwrap();
        self
    }

    fn root(&self) -> &Path {
        &self.0
    }

    /// `(file, message)` pairs, for compact assertions.
    fn violations(&self) -> Vec<(String, String)> {
        check(self.root())
            .unwrap()
            .into_iter()
            .map(|Violation { file, message }| (file.display().to_string(), message))
            .collect()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn good_manifest(name: &str, deps: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion.workspace = true\nedition.workspace = true\n\
         rust-version.workspace = true\nlicense.workspace = true\npublish.workspace = true\n\n\
         [dependencies]\n{deps}\n\n[lints]\nworkspace = true\n"
    )
}

const ARCH: &str = "# Architecture\n\n## Code Map\n\n### `burrow-types`\n\ntext\n\n\
                    ### `crates/burrow-cli/`\n\n### `burrow-docker` (planned)\n\n## Cross-Cutting Concerns\n\n### `burrow-state`\n";

/// A workspace that breaks no rule.
fn clean_tree() -> Tree {
    let tree = Tree::new();
    tree.write("docs/ARCHITECTURE.md", ARCH)
        .write(
            "crates/burrow-types/Cargo.toml",
            &good_manifest("burrow-types", "serde = \"1\""),
        )
        .write(
            "crates/burrow-types/src/lib.rs",
            "//! Types.\npub struct A;\n",
        )
        .write(
            "crates/burrow-types/tests/all.rs",
            "//! Test binary.\nmod json;\n",
        )
        .write("crates/burrow-types/tests/all/json.rs", "//! JSON tests.\n")
        .write(
            "crates/burrow-types/tests/fixtures/data.rs",
            "not a doc header: test data\n",
        )
        .write(
            "crates/burrow-cli/Cargo.toml",
            &good_manifest("burrow-agent-cli", "anyhow.workspace = true"),
        )
        .write(
            "crates/burrow-cli/src/main.rs",
            "//! The binary.\nfn main() {}\n",
        )
        .write(
            "xtask/Cargo.toml",
            &good_manifest("xtask", "anyhow = \"1\"")
                .replace("publish.workspace = true", "publish = false"),
        )
        .write("xtask/src/main.rs", "//! xtask.\nfn main() {}\n")
        .write("target/debug/build/out.rs", "generated, never scanned\n");
    tree
}

#[test]
fn a_clean_tree_has_no_violations() {
    assert_eq!(clean_tree().violations(), Vec::<(String, String)>::new());
}

#[test]
fn a_test_that_prints_a_skip_is_flagged() {
    let tree = clean_tree();
    tree.write(
        "crates/burrow-types/tests/all/s3.rs",
        "//! x\nfn t() { eprintln!(\"SKIP t: no server\"); }\n",
    );
    let flagged = tree.violations();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(
        flagged[0].1.contains("burrow_testkit::require"),
        "{flagged:?}"
    );
}

#[test]
fn a_file_without_a_doc_header_is_flagged_wherever_it_is() {
    let tree = clean_tree();
    tree.write("crates/burrow-types/src/json.rs", "// plain comment\n")
        .write(
            "crates/burrow-types/benches/b.rs",
            "\n//! header on the second line\n",
        )
        .write("tests/cross.rs", "fn main() {}\n")
        .write("xtask/src/x.rs", "");
    let flagged: Vec<String> = tree.violations().into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        flagged,
        [
            "crates/burrow-types/benches/b.rs",
            "crates/burrow-types/src/json.rs",
            "xtask/src/x.rs",
            "tests/cross.rs",
        ]
        .map(|f| f.replace('/', std::path::MAIN_SEPARATOR_STR))
    );
}

#[test]
fn a_manifest_that_does_not_inherit_is_flagged_per_key() {
    let tree = clean_tree();
    let manifest = good_manifest("burrow-types", "")
        .replace("\nversion.workspace = true", "\nversion = \"0.2.0\"")
        .replace("license.workspace = true", "license = { workspace = true }")
        .replace(
            "[lints]\nworkspace = true",
            "[lints.clippy]\nunwrap_used = \"deny\"",
        );
    tree.write("crates/burrow-types/Cargo.toml", &manifest);
    let messages: Vec<String> = tree.violations().into_iter().map(|(_, m)| m).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("`version.workspace = true`"));
    assert!(messages[1].contains("`[lints]` with `workspace = true`"));
}

#[test]
fn anyhow_is_refused_in_library_dependencies_only() {
    let tree = clean_tree();
    let with = |deps: &str| good_manifest("burrow-types", deps);
    for deps in [
        "anyhow.workspace = true",
        "anyhow = \"1\"",
        "oops = { package = \"anyhow\", version = \"1\" }",
    ] {
        tree.write("crates/burrow-types/Cargo.toml", &with(deps));
        let found = tree.violations();
        assert_eq!(found.len(), 1, "{deps}: {found:?}");
        assert!(found[0].1.contains("depends on anyhow"), "{found:?}");
    }
    tree.write(
        "crates/burrow-types/Cargo.toml",
        &format!(
            "{}\n[target.'cfg(unix)'.dependencies.anyhow]\nversion = \"1\"\n",
            with("")
        ),
    );
    assert_eq!(tree.violations().len(), 1);
    // Tests may use anyhow; so may the CLI binary (in the clean tree) and xtask.
    tree.write(
        "crates/burrow-types/Cargo.toml",
        &format!(
            "{}\n[dev-dependencies]\nanyhow.workspace = true\n",
            with("")
        ),
    );
    assert_eq!(tree.violations(), Vec::<(String, String)>::new());
}

#[test]
fn every_crate_needs_a_code_map_heading() {
    let tree = clean_tree();
    // burrow-state is mentioned only under another section, which does not count.
    tree.write(
        "crates/burrow-state/Cargo.toml",
        &good_manifest("burrow-state", ""),
    )
    .write("crates/burrow-state/src/lib.rs", "//! State.\n");
    let found = tree.violations();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].0,
        format!("docs{}ARCHITECTURE.md", std::path::MAIN_SEPARATOR)
    );
    assert!(found[0].1.contains("`burrow-state`"));

    tree.remove("docs/ARCHITECTURE.md");
    let found = tree.violations();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.starts_with("missing"));
}

#[test]
fn code_map_headings_accept_backticks_paths_and_notes() {
    assert_eq!(
        code_map_headings(ARCH),
        ["burrow-types", "burrow-cli", "burrow-docker"]
    );
}

#[test]
fn integration_tests_are_one_binary() {
    let tree = clean_tree();
    tree.write(
        "crates/burrow-types/tests/extra.rs",
        "//! A second binary.\n",
    );
    let found = tree.violations();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].0.ends_with("extra.rs"));

    tree.remove("crates/burrow-types/tests/extra.rs")
        .remove("crates/burrow-types/tests/all.rs");
    let found = tree.violations();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("tests/all.rs"));

    tree.write("crates/burrow-types/tests/all.rs", "//! Test binary.\n");
    tree.write(
        "crates/burrow-types/Cargo.toml",
        &format!(
            "{}\n[[test]]\nname = \"slow\"\npath = \"tests/slow.rs\"\n",
            good_manifest("burrow-types", "")
        ),
    );
    let found = tree.violations();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("[[test]] `slow`"));
}
