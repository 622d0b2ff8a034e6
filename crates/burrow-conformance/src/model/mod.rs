//! Property test: random operation sequences over a small path alphabet give the same results on the backend as on `StateBackend`, the model.
//!
//! The alphabet is small on purpose ("a", "a/b", "a.txt", ...), so files
//! collide with directories, prefixes with siblings, and edits with binary
//! content. Results are compared whole, after leaving out what a backend may
//! legitimately answer differently: `modified_at`, and (through the model's
//! overlay) the directories a backend with `empty_dirs` keeps. A refusal is
//! compared by kind; a failure is never a legitimate answer.

mod overlay;

use std::fmt;

use burrow_backend::{
    Backend, EditResult, ErrorKind, GlobResult, GrepQuery, GrepResult, LineWindow, Listing, Result,
    VPath, WriteResult,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use crate::fixture::Fixture;
use crate::outcome::{ScenarioError, show};
use crate::run::runtime;
use overlay::Model;

/// How many random sequences the generated `model_equivalence` test tries.
pub const MODEL_CASES: u32 = 64;

const PATHS: &[&str] = &[
    "a", "b", "a.txt", "a/b", "a/c.txt", "a/b/c", "b/a.txt", "c.md", "a-b",
];
const TEXTS: &[&str] = &[
    "",
    "x",
    "a\nb\n",
    "a\r\nb\r\n",
    "hello world\n",
    "é🦀\n",
    "a\nb",
    "b\na\nb\n",
    "aaa",
];
const BYTES: &[&[u8]] = &[b"\xff\xfe", b"a\0b\n", b"ok\n", b"\xc3", b"a\nb\n"];
const OLDS: &[&str] = &["a", "b", "\n", "a\nb", "x", "é"];
const NEWS: &[&str] = &["b", "", "c\nd", "A", "xx", "b\r\n"];
const GLOBS: &[&str] = &[
    "*",
    "**",
    "*.txt",
    "/*",
    "a/*",
    "a/**",
    "*.{txt,md}",
    "?",
    "b/*.txt",
    "/a/b/*",
];
const GREPS: &[&str] = &[
    "a", "^b", "x|é", "", "A", "b$", "a.b", "^[^#]*", "\\s*", "x*",
];
const INCLUDES: &[Option<&str>] = &[None, Some("*.txt"), Some("a/**"), Some("/*")];
const LIMITS: &[usize] = &[0, 1, 2, 3, 1000];

/// One operation of a random sequence; paths are relative to the fixture's root ("" is the root).
#[derive(Debug, Clone)]
enum Op {
    Write(&'static str, &'static str),
    WriteBytes(&'static str, &'static [u8]),
    Edit {
        path: &'static str,
        old: &'static str,
        new: &'static str,
        all: bool,
    },
    Delete(&'static str),
    DeleteTree(&'static str),
    /// `make_dir(path, parents)`; drawn on every backend, answered Unsupported by the model where the capability is off.
    MakeDir(&'static str, bool),
    Read {
        path: &'static str,
        offset: usize,
        limit: usize,
    },
    ReadBytes(&'static str),
    Ls(&'static str, usize),
    Glob {
        pattern: &'static str,
        under: &'static str,
        limit: usize,
    },
    Grep {
        pattern: &'static str,
        fixed: bool,
        ignore_case: bool,
        include: Option<&'static str>,
        under: &'static str,
        limit: usize,
    },
}

/// What one operation answered, with what may legitimately differ left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Observed {
    Done,
    Written(WriteResult),
    Edited(EditResult),
    Window(LineWindow),
    Bytes(Vec<u8>),
    Listing(Listing),
    Globbed(GlobResult),
    Grepped(GrepResult),
    Refused(ErrorKind),
}

fn op() -> impl Strategy<Value = Op> {
    let path = || prop::sample::select(PATHS);
    let dir = || prop::sample::select([&[""][..], PATHS].concat());
    let limit = || prop::sample::select(LIMITS);
    prop_oneof![
        4 => (path(), prop::sample::select(TEXTS)).prop_map(|(p, t)| Op::Write(p, t)),
        1 => (path(), prop::sample::select(BYTES)).prop_map(|(p, b)| Op::WriteBytes(p, b)),
        3 => (path(), prop::sample::select(OLDS), prop::sample::select(NEWS), any::<bool>()).prop_map(
            |(path, old, new, all)| Op::Edit { path, old, new: if old == new { "zz" } else { new }, all }
        ),
        2 => path().prop_map(Op::Delete),
        1 => path().prop_map(Op::DeleteTree),
        2 => (path(), any::<bool>()).prop_map(|(p, parents)| Op::MakeDir(p, parents)),
        2 => (path(), 0usize..4, limit()).prop_map(|(path, offset, limit)| Op::Read { path, offset, limit }),
        1 => path().prop_map(Op::ReadBytes),
        2 => (dir(), limit()).prop_map(|(d, l)| Op::Ls(d, l)),
        2 => (prop::sample::select(GLOBS), dir(), limit()).prop_map(|(pattern, under, limit)| Op::Glob { pattern, under, limit }),
        2 => (prop::sample::select(GREPS), any::<bool>(), any::<bool>(), prop::sample::select(INCLUDES), dir(), limit())
            .prop_map(|(pattern, fixed, ignore_case, include, under, limit)| Op::Grep { pattern, fixed, ignore_case, include, under, limit }),
    ]
}

/// Checks `cases` random operation sequences on fixtures from `make` against the model.
///
/// Each case gets a fresh fixture and a fresh model with the backend's
/// limits. On a disagreement proptest shrinks the sequence, and the error
/// shows the smallest one found with both answers. `BURROW_MODEL_CASES`
/// overrides `cases`.
pub fn check_against_model<F, Fut>(make: F, cases: u32) -> Result<(), ScenarioError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture>,
{
    let cases = std::env::var("BURROW_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    let rt = runtime()?;
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 1024,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = prop::collection::vec(op(), 1..24);
    let result = runner.run(&strategy, |ops| {
        rt.block_on(run_case(&make, &ops))
            .map_err(TestCaseError::fail)
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, ops)) => Err(ScenarioError::new(format!(
            "the backend and the model (StateBackend) disagree: {reason}\nsmallest sequence found:\n{}",
            Steps(&ops)
        ))),
        Err(TestError::Abort(reason)) => Err(ScenarioError::new(format!(
            "the model check gave up: {reason}"
        ))),
    }
}

/// A sequence of operations, one per line.
struct Steps<'a>(&'a [Op]);

impl fmt::Display for Steps<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.0.iter().enumerate() {
            writeln!(f, "  {i:>2}. {op:?}")?;
        }
        Ok(())
    }
}

/// Runs `ops` on a fresh fixture and a fresh model, comparing every answer and the final tree.
async fn run_case<F, Fut>(make: &F, ops: &[Op]) -> std::result::Result<(), String>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture>,
{
    let fixture = make().await;
    let b = fixture.backend().as_ref();
    let cx = fixture.ctx();
    let mut model = Model::new(
        cx.caps.limits,
        cx.caps.empty_dirs,
        cx.caps.make_dir,
        cx.ctx.clone(),
        &cx.root,
    )
    .await
    .map_err(|e| e.message().to_owned())?;
    let at = |rel: &str| cx.root.join(rel).map_err(|e| e.message().to_owned());
    for (i, op) in ops.iter().enumerate() {
        let (got, want) = match *op {
            Op::Write(p, text) => {
                let p = at(p)?;
                (
                    observe(b.write(&cx.ctx, &p, text).await, Observed::Written),
                    model.write(&p, text.as_bytes()).await,
                )
            }
            Op::WriteBytes(p, bytes) => {
                let p = at(p)?;
                (
                    observe(b.write_bytes(&cx.ctx, &p, bytes).await, Observed::Written),
                    model.write(&p, bytes).await,
                )
            }
            Op::Edit {
                path,
                old,
                new,
                all,
            } => {
                let p = at(path)?;
                (
                    observe(b.edit(&cx.ctx, &p, old, new, all).await, Observed::Edited),
                    model.edit(&p, old, new, all).await,
                )
            }
            Op::Delete(p) => {
                let p = at(p)?;
                (
                    observe(b.delete(&cx.ctx, &p).await, |()| Observed::Done),
                    model.delete(&p).await,
                )
            }
            Op::DeleteTree(p) => {
                let p = at(p)?;
                (
                    observe(b.delete_tree(&cx.ctx, &p).await, |()| Observed::Done),
                    model.delete_tree(&p).await,
                )
            }
            Op::MakeDir(p, parents) => {
                let p = at(p)?;
                (
                    observe(b.make_dir(&cx.ctx, &p, parents).await, |()| Observed::Done),
                    model.make_dir(&p, parents).await,
                )
            }
            Op::Read {
                path,
                offset,
                limit,
            } => {
                let p = at(path)?;
                (
                    observe(b.read(&cx.ctx, &p, offset, limit).await, Observed::Window),
                    model.read(&p, offset, limit).await,
                )
            }
            Op::ReadBytes(p) => {
                let p = at(p)?;
                (
                    observe(b.read_bytes(&cx.ctx, &p).await, Observed::Bytes),
                    model.read_bytes(&p).await,
                )
            }
            Op::Ls(d, limit) => {
                let d = at(d)?;
                let root_fix = |r: Result<Listing>| match r {
                    Err(e) if e.kind() == ErrorKind::NotFound && d == cx.root => {
                        Ok(Listing::default())
                    }
                    other => other,
                };
                (
                    observe(root_fix(b.ls(&cx.ctx, &d, limit).await), Observed::Listing),
                    root_fix(model.ls(&d, limit).await).map(Observed::Listing),
                )
            }
            Op::Glob {
                pattern,
                under,
                limit,
            } => {
                let u = at(under)?;
                (
                    observe(b.glob(&cx.ctx, pattern, &u, limit).await, Observed::Globbed),
                    model.glob(pattern, &u, limit).await,
                )
            }
            Op::Grep {
                pattern,
                fixed,
                ignore_case,
                include,
                under,
                limit,
            } => {
                let u = at(under)?;
                let query = GrepQuery {
                    pattern: pattern.to_owned(),
                    fixed_strings: fixed,
                    ignore_case,
                    include: include.map(str::to_owned),
                };
                (
                    observe(b.grep(&cx.ctx, &query, &u, limit).await, Observed::Grepped),
                    model.grep(&query, &u, limit).await,
                )
            }
        };
        let got = got?;
        let want = normalise(want.unwrap_or_else(|e| Observed::Refused(e.kind())));
        if got != want {
            return Err(format!(
                "step {i} {op:?}:\n   backend: {}\n     model: {}",
                show(&got),
                show(&want)
            ));
        }
    }
    compare_trees(b, &cx, &model).await
}

/// The backend's answer, normalised; a failure (broken storage) ends the case.
fn observe<T>(
    result: Result<T>,
    wrap: impl FnOnce(T) -> Observed,
) -> std::result::Result<Observed, String> {
    match result {
        Ok(v) => Ok(normalise(wrap(v))),
        Err(e) if !e.is_refusal() => Err(format!(
            "the backend failed (not a refusal): {:?}",
            e.message()
        )),
        Err(e) => Ok(Observed::Refused(e.kind())),
    }
}

/// Leaves out `modified_at`, which backends may report or not.
fn normalise(observed: Observed) -> Observed {
    match observed {
        Observed::Listing(mut l) => {
            l.entries.iter_mut().for_each(|e| e.modified_at = None);
            Observed::Listing(l)
        }
        Observed::Globbed(mut g) => {
            g.files.iter_mut().for_each(|e| e.modified_at = None);
            Observed::Globbed(g)
        }
        other => other,
    }
}

/// Every file beneath the root, with its bytes, must be the same on both.
async fn compare_trees(
    b: &dyn Backend,
    cx: &crate::Ctx,
    model: &Model,
) -> std::result::Result<(), String> {
    let got = observe(
        b.glob(&cx.ctx, "**", &cx.root, 1000).await,
        Observed::Globbed,
    )?;
    let want = normalise(
        model
            .glob("**", &cx.root, 1000)
            .await
            .unwrap_or_else(|e| Observed::Refused(e.kind())),
    );
    if got != want {
        return Err(format!(
            "final files:\n   backend: {}\n     model: {}",
            show(&got),
            show(&want)
        ));
    }
    if let Observed::Globbed(found) = got {
        for file in found.files {
            let path = VPath::parse(&file.path).map_err(|e| e.message().to_owned())?;
            let got = observe(b.read_bytes(&cx.ctx, &path).await, Observed::Bytes)?;
            let want = model
                .read_bytes(&path)
                .await
                .unwrap_or_else(|e| Observed::Refused(e.kind()));
            if got != want {
                return Err(format!(
                    "final bytes of {path}:\n   backend: {}\n     model: {}",
                    show(&got),
                    show(&want)
                ));
            }
        }
    }
    Ok(())
}
