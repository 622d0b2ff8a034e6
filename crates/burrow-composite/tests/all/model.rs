//! Property test: random operations on a composite agree with a naive model that keeps one StateBackend per mount.
//!
//! The model shares no code with the composite: it routes by scanning the
//! prefixes, and answers ls, glob and grep by listing every file of every
//! part, dropping the shadowed ones and filtering the rest in one sorted
//! list. Operations also write straight into a part (both the composite's
//! and the model's copy), which is how shadowed files come to exist.

use std::collections::{BTreeMap, BTreeSet};

use burrow_backend::{Backend, ErrorKind, Glob, GrepQuery, Result, VPath, text};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;
use proptest::prelude::*;

use crate::support::{composite, ctx, p};

const PREFIXES: &[&str] = &["/m", "/m/n", "/x/y"];
const PATHS: &[&str] = &[
    "/a.txt",
    "/m",
    "/m/a.txt",
    "/m/b.rs",
    "/m/n",
    "/m/n/a.txt",
    "/m/n/s/c.rs",
    "/m/s/d.rs",
    "/x",
    "/x/y",
    "/x/y/e.txt",
    "/x/z.rs",
    "/q/r.rs",
    "/n/a.txt",
    "/s/c.rs",
];
const DIRS: &[&str] = &[
    "/", "/m", "/m/n", "/m/s", "/x", "/x/y", "/q", "/missing", "/a.txt",
];
const PATTERNS: &[&str] = &[
    "*.txt",
    "**/*.rs",
    "**",
    "m/*",
    "m/n/*.txt",
    "/m/**",
    "*/a.txt",
    "x/y/*",
    "{m,x}/**/*.txt",
    "n/*",
    "s/*.rs",
];
const INCLUDES: &[Option<&str>] = &[None, Some("*.rs"), Some("m/**"), Some("n/*"), Some("*/*/*")];
const TEXTS: &[&str] = &[
    "needle\nhay\n",
    "x1\r\nneedle again\r\n",
    "",
    "a\nb\nneedle",
    "hay only\n",
];

#[derive(Debug, Clone)]
enum Op {
    Write(usize, usize),
    /// Straight into part `.0` (0 = default) at a path of that part.
    Raw(usize, usize, usize),
    Delete(usize),
    Edit(usize),
    Read(usize),
    Ls(usize, usize),
    Glob(usize, usize, usize),
    Grep(usize, usize, usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let path = 0..PATHS.len();
    let dir = 0..DIRS.len();
    prop_oneof![
        3 => (path.clone(), 0..TEXTS.len()).prop_map(|(a, b)| Op::Write(a, b)),
        3 => (0..=PREFIXES.len(), path.clone(), 0..TEXTS.len()).prop_map(|(a, b, c)| Op::Raw(a, b, c)),
        1 => path.clone().prop_map(Op::Delete),
        1 => path.clone().prop_map(Op::Edit),
        1 => path.prop_map(Op::Read),
        2 => (dir.clone(), 0..6usize).prop_map(|(a, b)| Op::Ls(a, b)),
        2 => (0..PATTERNS.len(), dir.clone(), 0..6usize).prop_map(|(a, b, c)| Op::Glob(a, b, c)),
        2 => (0..2usize, 0..INCLUDES.len(), dir, 0..6usize).prop_map(|(a, b, c, d)| Op::Grep(a, b, c, d)),
    ]
}

/// The naive model: one StateBackend per part, prefixes scanned on every call.
struct Model {
    parts: Vec<(VPath, StateBackend)>,
}

impl Model {
    fn new() -> Self {
        let mut parts = vec![(VPath::root(), StateBackend::new())];
        parts.extend(PREFIXES.iter().map(|m| (p(m), StateBackend::new())));
        Model { parts }
    }

    fn owner(&self, path: &VPath) -> usize {
        (1..self.parts.len())
            .filter(|&i| path.starts_with(&self.parts[i].0))
            .max_by_key(|&i| self.parts[i].0.as_str().len())
            .unwrap_or(0)
    }

    fn inner(&self, path: &VPath) -> (usize, VPath) {
        let i = self.owner(path);
        (i, path.strip_prefix(&self.parts[i].0).unwrap())
    }

    fn is_mount(&self, path: &VPath) -> bool {
        self.parts[1..].iter().any(|(m, _)| m == path)
    }

    fn above_mount(&self, path: &VPath) -> bool {
        self.parts[1..]
            .iter()
            .any(|(m, _)| m != path && m.starts_with(path))
    }

    /// Every visible file, composite path -> bytes.
    async fn visible(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for (i, (prefix, b)) in self.parts.iter().enumerate() {
            let all = b
                .glob(&ctx(), "**", &VPath::root(), usize::MAX)
                .await
                .unwrap();
            for f in all.files {
                let outer = p(&f.path).under_prefix(prefix);
                if self.owner(&outer) == i && !self.above_mount(&outer) && !self.is_mount(&outer) {
                    let bytes = b.read_bytes(&ctx(), &p(&f.path)).await.unwrap();
                    out.insert(outer.to_string(), bytes);
                }
            }
        }
        out
    }

    /// The directories of the composite: mount points, their ancestors, and every visible file's ancestors.
    fn dirs(&self, files: &BTreeMap<String, Vec<u8>>) -> BTreeSet<String> {
        let mut dirs: BTreeSet<String> = BTreeSet::from(["/".to_owned()]);
        for (m, _) in &self.parts[1..] {
            dirs.insert(m.to_string());
            dirs.extend(m.ancestors().iter().map(VPath::to_string));
        }
        for f in files.keys() {
            dirs.extend(p(f).ancestors().iter().map(VPath::to_string));
        }
        dirs
    }
}

/// What a call returned, reduced to what both sides must agree on.
#[derive(Debug, PartialEq)]
enum Seen {
    Err(ErrorKind),
    Done,
    Lines(Vec<String>),
    Entries(Vec<(String, bool, Option<u64>)>, bool),
    Files(Vec<String>, bool),
    Matches(Vec<(String, u64, String)>, bool),
}

fn seen<T>(r: Result<T>, f: impl FnOnce(T) -> Seen) -> Seen {
    match r {
        Ok(v) => f(v),
        Err(e) => Seen::Err(e.kind()),
    }
}

async fn on_composite(c: &CompositeBackend, parts: &[StateBackend], op: &Op) -> Seen {
    let cx = ctx();
    match op {
        Op::Write(a, t) => seen(c.write(&cx, &p(PATHS[*a]), TEXTS[*t]).await, |_| Seen::Done),
        Op::Raw(part, a, t) => seen(
            parts[*part].write(&cx, &p(PATHS[*a]), TEXTS[*t]).await,
            |_| Seen::Done,
        ),
        Op::Delete(a) => seen(c.delete(&cx, &p(PATHS[*a])).await, |_| Seen::Done),
        Op::Edit(a) => seen(
            c.edit(&cx, &p(PATHS[*a]), "needle", "pin", true).await,
            |_| Seen::Done,
        ),
        Op::Read(a) => seen(c.read(&cx, &p(PATHS[*a]), 0, 100).await, |w| {
            Seen::Lines(w.lines)
        }),
        Op::Ls(d, limit) => seen(c.ls(&cx, &p(DIRS[*d]), *limit).await, |l| {
            Seen::Entries(
                l.entries
                    .into_iter()
                    .map(|e| (e.path, e.is_dir, e.size))
                    .collect(),
                l.truncated,
            )
        }),
        Op::Glob(g, d, limit) => seen(c.glob(&cx, PATTERNS[*g], &p(DIRS[*d]), *limit).await, |r| {
            Seen::Files(r.files.into_iter().map(|f| f.path).collect(), r.truncated)
        }),
        Op::Grep(q, i, d, limit) => seen(
            c.grep(&cx, &query(*q, *i), &p(DIRS[*d]), *limit).await,
            |r| {
                Seen::Matches(
                    r.matches
                        .into_iter()
                        .map(|m| (m.path, m.line_number, m.line))
                        .collect(),
                    r.truncated,
                )
            },
        ),
    }
}

fn query(q: usize, include: usize) -> GrepQuery {
    let base = if q == 0 {
        GrepQuery::fixed("needle")
    } else {
        GrepQuery::regex("^[a-z]+$")
    };
    match INCLUDES[include] {
        Some(g) => base.with_include(g),
        None => base,
    }
}

async fn on_model(m: &Model, op: &Op) -> Seen {
    let cx = ctx();
    match op {
        Op::Write(a, t) => {
            let path = p(PATHS[*a]);
            if m.is_mount(&path) || m.above_mount(&path) {
                return Seen::Err(ErrorKind::IsADirectory);
            }
            let (i, inner) = m.inner(&path);
            seen(m.parts[i].1.write(&cx, &inner, TEXTS[*t]).await, |_| {
                Seen::Done
            })
        }
        Op::Raw(part, a, t) => seen(
            m.parts[*part].1.write(&cx, &p(PATHS[*a]), TEXTS[*t]).await,
            |_| Seen::Done,
        ),
        Op::Delete(a) => {
            let path = p(PATHS[*a]);
            if m.is_mount(&path) {
                return Seen::Err(ErrorKind::InvalidPath);
            }
            if m.above_mount(&path) {
                return Seen::Err(ErrorKind::DirectoryNotEmpty);
            }
            let (i, inner) = m.inner(&path);
            seen(m.parts[i].1.delete(&cx, &inner).await, |_| Seen::Done)
        }
        Op::Edit(a) | Op::Read(a) => {
            let path = p(PATHS[*a]);
            if m.is_mount(&path) || m.above_mount(&path) {
                return Seen::Err(ErrorKind::IsADirectory);
            }
            let (i, inner) = m.inner(&path);
            if matches!(op, Op::Edit(_)) {
                seen(
                    m.parts[i].1.edit(&cx, &inner, "needle", "pin", true).await,
                    |_| Seen::Done,
                )
            } else {
                seen(m.parts[i].1.read(&cx, &inner, 0, 100).await, |w| {
                    Seen::Lines(w.lines)
                })
            }
        }
        Op::Ls(d, limit) => {
            let dir = p(DIRS[*d]);
            let files = m.visible().await;
            let dirs = m.dirs(&files);
            if files.contains_key(dir.as_str()) {
                return Seen::Err(ErrorKind::NotADirectory);
            }
            if !dirs.contains(dir.as_str()) {
                return Seen::Err(ErrorKind::NotFound);
            }
            let child = |s: &str| p(s).parent().is_some_and(|parent| parent == dir);
            let mut entries: Vec<(String, bool, Option<u64>)> = dirs
                .iter()
                .filter(|d| child(d))
                .map(|d| (d.clone(), true, None))
                .chain(
                    files
                        .iter()
                        .filter(|(f, _)| child(f))
                        .map(|(f, b)| (f.clone(), false, Some(b.len() as u64))),
                )
                .collect();
            entries.sort();
            page(entries, *limit, Seen::Entries)
        }
        Op::Glob(g, d, limit) => {
            let under = p(DIRS[*d]);
            let glob = Glob::new(PATTERNS[*g]).unwrap();
            let files = m.visible().await;
            if files.contains_key(under.as_str()) {
                return Seen::Err(ErrorKind::NotADirectory);
            }
            let hits: Vec<String> = files
                .keys()
                .filter(|f| {
                    p(f).relative_to(&under)
                        .is_some_and(|rel| !rel.is_empty() && glob.is_match(rel))
                })
                .cloned()
                .collect();
            page(hits, *limit, Seen::Files)
        }
        Op::Grep(q, i, d, limit) => {
            let under = p(DIRS[*d]);
            let query = query(*q, *i);
            let grep = burrow_backend::CompiledGrep::new(&query).unwrap();
            let files = m.visible().await;
            let mut hits = Vec::new();
            for (path, bytes) in &files {
                let Some(rel) = p(path).relative_to(&under).map(str::to_owned) else {
                    continue;
                };
                let rel = if rel.is_empty() {
                    p(path).name().to_owned()
                } else {
                    rel
                };
                if !grep.includes(&rel) || !text::is_searchable_text(bytes) {
                    continue;
                }
                let content = std::str::from_utf8(bytes).unwrap();
                for (n, line) in text::lines(content).enumerate() {
                    if grep.is_match(line) {
                        hits.push((path.clone(), n as u64 + 1, line.to_owned()));
                    }
                }
            }
            page(hits, *limit, Seen::Matches)
        }
    }
}

fn page<T>(mut all: Vec<T>, limit: usize, f: impl FnOnce(Vec<T>, bool) -> Seen) -> Seen {
    let truncated = all.len() > limit;
    all.truncate(limit);
    f(all, truncated)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn composite_agrees_with_a_model_per_mount(ops in proptest::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let (c, default, mounts) = composite(PREFIXES);
            let mut parts = vec![default];
            parts.extend(mounts);
            let model = Model::new();
            // Start from files that mounts shadow, in every part that can hold some.
            let idx = |path: &str| PATHS.iter().position(|q| *q == path).unwrap();
            let seed = [
                Op::Raw(0, idx("/x"), 0),
                Op::Raw(0, idx("/m/a.txt"), 0),
                Op::Raw(0, idx("/m/n/a.txt"), 3),
                Op::Raw(1, idx("/n/a.txt"), 1),
                Op::Raw(1, idx("/a.txt"), 3),
                Op::Raw(2, idx("/s/c.rs"), 0),
            ];
            for (n, op) in seed.iter().chain(&ops).enumerate() {
                let got = on_composite(&c, &parts, op).await;
                let want = on_model(&model, op).await;
                prop_assert_eq!(got, want, "op {} {:?}", n, op);
            }
            Ok(())
        })?;
    }
}
