//! `cargo xtask tidy`: cheap checks that keep the house rules and the docs true.
//!
//! Each check walks the tree and returns violations (a file and what is wrong with it);
//! nothing is fixed automatically. The rules are those of the common brief and
//! docs/ARCHITECTURE.md:
//! - every `.rs` file under `crates/`, `xtask/` and `tests/` starts with a `//!` line
//!   (files under a `fixtures` folder are test data and exempt);
//! - every crate manifest inherits version, edition, rust-version and license from the
//!   workspace, inherits or disables `publish`, and has `[lints] workspace = true`;
//! - every crate under `crates/` has a heading in the Code Map of docs/ARCHITECTURE.md;
//! - no library crate (every crate under `crates/` but the `burrow-agent-cli` binary) depends
//!   on `anyhow`;
//! - a crate's integration tests form one binary, `tests/all.rs`, whose modules live
//!   in `tests/all/`;
//! - no test under a crate's `tests/` prints a skip and returns (`"SKIP `, `skipping`):
//!   a test that needs a real part calls `burrow_testkit::require` (ADR 0051);
//! - the README's feature tables list exactly the facade's and the CLI's features and
//!   mark exactly their defaults ([`readme`]).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::manifest::{Manifest, inherits};

/// Crates allowed to depend on `anyhow`: binaries, not libraries.
const ANYHOW_ALLOWED: &[&str] = &["burrow-agent-cli"];

/// Folders never scanned for `.rs` files.
const SKIPPED_DIRS: &[&str] = &["target", "fixtures", "node_modules"];

/// One broken rule: the file it is in (relative to the workspace root) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub file: PathBuf,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// Runs every check and prints the violations; true when there are none.
pub fn run(root: &Path) -> anyhow::Result<bool> {
    let violations = check(root)?;
    if violations.is_empty() {
        println!("tidy: no violations");
        return Ok(true);
    }
    for violation in &violations {
        println!("{violation}");
    }
    println!("tidy: {} violation(s)", violations.len());
    Ok(false)
}

/// Every violation in the workspace at `root`, in a stable order.
pub fn check(root: &Path) -> anyhow::Result<Vec<Violation>> {
    let mut out = Vec::new();
    let crates = crate_dirs(root)?;
    doc_headers(root, &mut out)?;
    for dir in &crates {
        manifest_rules(root, dir, &mut out)?;
        test_layout(root, dir, &mut out)?;
        no_silent_skips(root, dir, &mut out)?;
    }
    code_map(root, &crates, &mut out)?;
    readme::feature_tables(root, &mut out)?;
    Ok(out)
}

/// The crate directories: every folder under `crates/` with a Cargo.toml, then `xtask/`.
fn crate_dirs(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    let crates = root.join("crates");
    if crates.is_dir() {
        for entry in sorted_entries(&crates)? {
            if entry.join("Cargo.toml").is_file() {
                dirs.push(entry);
            }
        }
    }
    let xtask = root.join("xtask");
    if xtask.join("Cargo.toml").is_file() {
        dirs.push(xtask);
    }
    Ok(dirs)
}

/// True for a crate directly under `crates/` (a library unless it is a known binary).
fn is_library_crate(root: &Path, dir: &Path, package: Option<&str>) -> bool {
    let under_crates = dir.parent() == Some(root.join("crates").as_path());
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    under_crates
        && !ANYHOW_ALLOWED.contains(&name)
        && !package.is_some_and(|p| ANYHOW_ALLOWED.contains(&p))
}

fn doc_headers(root: &Path, out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for top in ["crates", "xtask", "tests"] {
        collect_rs_files(&root.join(top), &mut files)?;
    }
    for file in files {
        let bytes = fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        if !first_line.starts_with(b"//!") {
            out.push(violation(
                root,
                &file,
                "first line must be a `//!` doc comment saying what the file is for",
            ));
        }
    }
    Ok(())
}

/// What a test that skipped by returning early printed.
const SKIP_MARKERS: &[&str] = &["\"SKIP ", "eprintln!(\"skipping", "println!(\"skipping"];

/// Flags test files that print a skip (and so return early and pass).
fn no_silent_skips(root: &Path, dir: &Path, out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let mut files = Vec::new();
    collect_rs_files(&dir.join("tests"), &mut files)?;
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default();
        if let Some(marker) = SKIP_MARKERS.iter().find(|m| text.contains(**m)) {
            out.push(violation(
                root,
                &file,
                &format!(
                    "prints a skip ({marker}...): a test that needs a real part calls \
                     burrow_testkit::require(Part::X) and lives in the part's module, so the \
                     runner reports it as skipped instead of passed"
                ),
            ));
        }
    }
    Ok(())
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for path in sorted_entries(dir)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
                collect_rs_files(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn manifest_rules(root: &Path, dir: &Path, out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let path = dir.join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let manifest = Manifest::parse(&text);
    let mut complain = |message: String| out.push(violation(root, &path, &message));

    match manifest.section("package") {
        None => complain("no [package] section".into()),
        Some(package) => {
            for key in ["version", "edition", "rust-version", "license"] {
                if !inherits(package, key) {
                    complain(format!("[package] must use `{key}.workspace = true`"));
                }
            }
            if !inherits(package, "publish") && package.get("publish") != Some("false") {
                complain(
                    "[package] must use `publish.workspace = true` (or `publish = false`)".into(),
                );
            }
        }
    }
    let lints_inherited = manifest
        .section("lints")
        .is_some_and(|lints| lints.get("workspace") == Some("true"));
    if !lints_inherited {
        complain("must have `[lints]` with `workspace = true`".into());
    }

    if is_library_crate(root, dir, manifest.package_name()) {
        for section in &manifest.sections {
            if let Some(what) = anyhow_dependency(&section.header, &section.entries) {
                complain(format!(
                    "library crate depends on anyhow ({what} in [{}]); return burrow's own error types instead",
                    section.header
                ));
            }
        }
    }

    for test in manifest.sections_named("test") {
        if test.get_str("name") != Some("all") {
            complain(format!(
                "[[test]] `{}`: integration tests are modules of the one `all` binary (tests/all.rs)",
                test.get_str("name").unwrap_or("?")
            ));
        }
    }
    Ok(())
}

/// Describes how a `[dependencies]`-like section pulls in anyhow, if it does.
fn anyhow_dependency(header: &str, entries: &[(String, String)]) -> Option<String> {
    let normal_deps =
        |h: &str| h == "dependencies" || (h.starts_with("target.") && h.ends_with(".dependencies"));
    if let Some(table) = header.strip_suffix(".anyhow")
        && normal_deps(table)
    {
        return Some("a [dependencies.anyhow] table".into());
    }
    if !normal_deps(header) {
        return None;
    }
    for (key, value) in entries {
        let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
        if key == "anyhow" || key.starts_with("anyhow.") {
            return Some(format!("`{key} = {value}`"));
        }
        if compact.contains("package=\"anyhow\"") {
            return Some(format!("`{key}`, renamed from anyhow"));
        }
    }
    None
}

fn test_layout(root: &Path, dir: &Path, out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let tests = dir.join("tests");
    if !tests.is_dir() {
        return Ok(());
    }
    let mut has_all = false;
    for path in sorted_entries(&tests)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !path.is_file() || !name.ends_with(".rs") {
            continue;
        }
        if name == "all.rs" {
            has_all = true;
        } else {
            out.push(violation(
                root,
                &path,
                "a second integration test binary: make it a module of tests/all.rs (tests/all/<name>.rs)",
            ));
        }
    }
    if !has_all && tests.join("all").is_dir() {
        out.push(violation(
            root,
            &tests.join("all"),
            "tests/all/ holds test modules but tests/all.rs, which declares them, is missing",
        ));
    }
    Ok(())
}

fn code_map(root: &Path, crates: &[PathBuf], out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let doc = root.join("docs").join("ARCHITECTURE.md");
    let text = match fs::read_to_string(&doc) {
        Ok(text) => text,
        Err(_) => {
            out.push(violation(
                root,
                &doc,
                "missing (it holds the code map every crate must appear in)",
            ));
            return Ok(());
        }
    };
    let mapped = code_map_headings(&text);
    if mapped.is_empty() {
        out.push(violation(
            root,
            &doc,
            "no `## Code Map` section with `### crate` headings",
        ));
    }
    for dir in crates {
        if dir.parent() != Some(root.join("crates").as_path()) {
            continue;
        }
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if !mapped.iter().any(|m| m == name) {
            out.push(violation(
                root,
                &doc,
                &format!(
                    "crate `{name}` (crates/{name}) has no `### {name}` heading in the Code Map"
                ),
            ));
        }
    }
    Ok(())
}

/// The crate names of the `###` headings under `## Code Map`: the first word of each,
/// backticks and a leading `crates/` or trailing `/` removed.
fn code_map_headings(text: &str) -> Vec<String> {
    let mut in_map = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(title) = line.strip_prefix("## ") {
            in_map = title.trim().eq_ignore_ascii_case("code map");
        } else if line.starts_with("# ") {
            in_map = false;
        } else if in_map && let Some(title) = line.strip_prefix("### ") {
            let word = title.replace('`', "");
            let word = word.split_whitespace().next().unwrap_or_default();
            let word = word.strip_prefix("crates/").unwrap_or(word);
            names.push(word.trim_end_matches('/').to_string());
        }
    }
    names
}

fn sorted_entries(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        entries.push(entry?.path());
    }
    entries.sort();
    Ok(entries)
}

fn violation(root: &Path, file: &Path, message: &str) -> Violation {
    Violation {
        file: file.strip_prefix(root).unwrap_or(file).to_path_buf(),
        message: message.to_string(),
    }
}

mod readme;
#[cfg(test)]
mod tests;
