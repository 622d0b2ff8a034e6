//! Random trees, random deny rules, random reads, listings, globs, greps, writes and deletes: nothing a deny rule covers ever appears or changes, and pages stay exact.
//!
//! The rules are drawn from forms with an independent oracle written out
//! here (a literal directory, a name at any depth, a suffix), so the
//! property checks the layer's matching as well as its filtering: every
//! answer is compared with the inner backend's complete answer minus what
//! the oracle hides, cut at the limit, with `truncated` exactly when more remain.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, VPath};
use burrow_permissions::{PathRules, PermissionBackend};
use burrow_state::StateBackend;
use proptest::prelude::*;

const SEGMENTS: &[&str] = &["a", "b", "s", "deep", ".env", "x.env", "n.txt"];

/// A rule and the oracle that says what it hides.
#[derive(Debug, Clone)]
enum RuleForm {
    /// `Read(/dir)` or `Read(/dir/)`: the directory and everything beneath.
    Dir(String, bool),
    /// `Read(/dir/**)`: everything beneath the directory, not the directory.
    Beneath(String),
    /// `Read(name)` or `Read(**/name)`: any path with a segment `name`.
    Name(String, bool),
    /// `Read(*.env)`: any path with a segment ending in ".env".
    EnvSuffix,
    /// `Edit(/dir/**)`: everything beneath the directory is locked, not hidden.
    Lock(String),
}

impl RuleForm {
    fn text(&self) -> String {
        match self {
            RuleForm::Dir(d, false) => format!("Read({d})"),
            RuleForm::Dir(d, true) => format!("Read({d}/)"),
            RuleForm::Beneath(d) => format!("Read({d}/**)"),
            RuleForm::Name(n, false) => format!("Read({n})"),
            RuleForm::Name(n, true) => format!("Read(**/{n})"),
            RuleForm::EnvSuffix => "Read(*.env)".to_owned(),
            RuleForm::Lock(d) => format!("Edit({d}/**)"),
        }
    }

    /// True when the rule refuses changing `path`: it hides it or locks it.
    fn locks(&self, path: &str) -> bool {
        match self {
            RuleForm::Lock(d) => path.starts_with(&format!("{d}/")),
            _ => self.hides(path),
        }
    }

    fn hides(&self, path: &str) -> bool {
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        match self {
            RuleForm::Dir(d, _) => path == d || path.starts_with(&format!("{d}/")),
            RuleForm::Beneath(d) => path.starts_with(&format!("{d}/")),
            RuleForm::Name(n, _) => segments.any(|s| s == n),
            RuleForm::EnvSuffix => segments.any(|s| s.ends_with(".env")),
            RuleForm::Lock(_) => false,
        }
    }
}

fn segment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(SEGMENTS)
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..4).prop_map(|s| format!("/{}", s.join("/")))
}

fn rule() -> impl Strategy<Value = RuleForm> {
    prop_oneof![
        (path(), any::<bool>()).prop_map(|(d, slash)| RuleForm::Dir(d, slash)),
        path().prop_map(RuleForm::Beneath),
        (segment(), any::<bool>()).prop_map(|(n, deep)| RuleForm::Name(n.to_owned(), deep)),
        Just(RuleForm::EnvSuffix),
        path().prop_map(RuleForm::Lock),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Ls(usize, usize),
    Glob(usize, &'static str, usize),
    Grep(usize, usize),
    Read(usize),
    /// Write a file at a random path (new or existing).
    Write(String),
    /// Delete one of the stored files.
    Delete(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let pattern = prop::sample::select(&["**", "*", "*.env", "**/*.txt", "a/**", "/a/*"][..]);
    prop_oneof![
        (any::<usize>(), 0..8usize).prop_map(|(d, l)| Op::Ls(d, l)),
        (any::<usize>(), pattern, 0..8usize).prop_map(|(d, g, l)| Op::Glob(d, g, l)),
        (any::<usize>(), 0..8usize).prop_map(|(d, l)| Op::Grep(d, l)),
        any::<usize>().prop_map(Op::Read),
        path().prop_map(Op::Write),
        any::<usize>().prop_map(Op::Delete),
    ]
}

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

/// The expected page: `all` (the inner's complete answer) without what is hidden, cut at `limit`.
fn expected(all: Vec<String>, limit: usize, hidden: &dyn Fn(&str) -> bool) -> (Vec<String>, bool) {
    let mut visible: Vec<String> = all.into_iter().filter(|x| !hidden(x)).collect();
    let truncated = visible.len() > limit;
    visible.truncate(limit);
    (visible, truncated)
}

async fn check(files: Vec<String>, rules: Vec<RuleForm>, ops: Vec<Op>) {
    let ctx = FileContext::default();
    let inner = StateBackend::new();
    for f in &files {
        // A path whose parent is already a file is refused; the tree is what remains.
        let _ = inner.write(&ctx, &p(f), &format!("needle {f}\n")).await;
    }
    let texts: Vec<String> = rules.iter().map(RuleForm::text).collect();
    let layer = PermissionBackend::new(
        Arc::new(inner.clone()),
        PathRules::from_strings(&texts).unwrap(),
    );
    let hidden = |path: &str| rules.iter().any(|r| r.hides(path));
    let locked = |path: &str| rules.iter().any(|r| r.locks(path));
    let big = 10_000;
    for op in ops {
        // The tree as it is now: writes and deletes change it as the ops go.
        let stored: Vec<String> = inner.files().keys().cloned().collect();
        let mut dirs: Vec<String> = vec!["/".to_owned()];
        for f in &stored {
            for a in p(f).ancestors() {
                dirs.push(a.as_str().to_owned());
            }
        }
        dirs.sort();
        dirs.dedup();
        match op {
            Op::Ls(d, limit) => {
                let dir = p(&dirs[d % dirs.len()]);
                let got = layer.ls(&ctx, &dir, limit).await;
                if hidden(dir.as_str()) {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::PermissionDenied);
                    continue;
                }
                let got = got.unwrap();
                let all = inner
                    .ls(&ctx, &dir, big)
                    .await
                    .unwrap()
                    .entries
                    .into_iter()
                    .map(|e| e.path)
                    .collect();
                let paths = got.entries.into_iter().map(|e| e.path).collect();
                assert_eq!(
                    (paths, got.truncated),
                    expected(all, limit, &hidden),
                    "ls {dir} {limit}"
                );
            }
            Op::Glob(d, pattern, limit) => {
                let dir = p(&dirs[d % dirs.len()]);
                let got = layer.glob(&ctx, pattern, &dir, limit).await;
                if hidden(dir.as_str()) {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::PermissionDenied);
                    continue;
                }
                let got = got.unwrap();
                let all = inner
                    .glob(&ctx, pattern, &dir, big)
                    .await
                    .unwrap()
                    .files
                    .into_iter()
                    .map(|e| e.path)
                    .collect();
                let paths = got.files.into_iter().map(|e| e.path).collect();
                assert_eq!(
                    (paths, got.truncated),
                    expected(all, limit, &hidden),
                    "glob {pattern} {dir} {limit}"
                );
            }
            Op::Grep(d, limit) => {
                let dir = p(&dirs[d % dirs.len()]);
                let query = GrepQuery::fixed("needle");
                let got = layer.grep(&ctx, &query, &dir, limit).await;
                if hidden(dir.as_str()) {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::PermissionDenied);
                    continue;
                }
                let got = got.unwrap();
                let all = inner
                    .grep(&ctx, &query, &dir, big)
                    .await
                    .unwrap()
                    .matches
                    .into_iter()
                    .map(|m| m.path)
                    .collect();
                let paths = got.matches.into_iter().map(|m| m.path).collect();
                assert_eq!(
                    (paths, got.truncated),
                    expected(all, limit, &hidden),
                    "grep {dir} {limit}"
                );
            }
            Op::Read(f) => {
                if stored.is_empty() {
                    continue;
                }
                let file = p(&stored[f % stored.len()]);
                let got = layer.read(&ctx, &file, 0, 10).await;
                if hidden(file.as_str()) {
                    let e = got.unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
                    assert!(!e.message().contains("needle"));
                } else {
                    let line = &got.unwrap().lines[0];
                    assert!(line.starts_with(&format!("needle {file}")), "{line}");
                }
            }
            Op::Write(path) => {
                let file = p(&path);
                let before = inner.files().get(&path).cloned();
                let got = layer
                    .write(&ctx, &file, &format!("needle {path} v2\n"))
                    .await;
                if locked(&path) {
                    let e = got.unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "write {path}");
                    assert!(!e.message().contains("needle"));
                    assert_eq!(inner.files().get(&path).cloned(), before, "write {path}");
                } else if let Err(e) = got {
                    // Refused for another reason (its parent is a file, it exists): never by a rule.
                    assert_ne!(e.kind(), ErrorKind::PermissionDenied, "write {path}: {e}");
                }
            }
            Op::Delete(f) => {
                if stored.is_empty() {
                    continue;
                }
                let path = &stored[f % stored.len()];
                let got = layer.delete(&ctx, &p(path)).await;
                if locked(path) {
                    assert_eq!(got.unwrap_err().kind(), ErrorKind::PermissionDenied);
                    assert!(inner.files().contains_key(path), "delete {path}");
                } else {
                    got.unwrap();
                    assert!(!inner.files().contains_key(path), "delete {path}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn nothing_a_deny_rule_covers_ever_appears(
        files in prop::collection::vec(path(), 0..16),
        rules in prop::collection::vec(rule(), 1..4),
        ops in prop::collection::vec(op(), 1..24),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(check(files, rules, ops));
    }
}
