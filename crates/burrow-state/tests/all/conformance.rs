//! The shared conformance suite, run against a fresh, empty StateBackend per scenario, and the model check of the model itself.
//!
//! The suite's generated `model_equivalence` compares a backend with
//! `StateBackend`; here that would compare StateBackend with itself, so it is
//! left out (`no_model_check`) and `model_equivalence` below compares
//! StateBackend with an independent reference: a plain map from path to bytes
//! with the contract's tree rules written out directly.

use std::collections::BTreeMap;
use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, Limits, VPath};
use burrow_conformance::{Fixture, StoreAccess};
use burrow_state::StateBackend;
use burrow_types::{FileData, FilesDocument};
use proptest::prelude::*;

/// A store whose max_results is low enough for the suite to exceed it, so
/// `limits_max_results_caps_every_listing` runs instead of skipping; it lends
/// the suite its files document (`files` / `from_files`) as store access.
async fn make_fixture() -> Fixture {
    let limits = Limits {
        max_results: 200,
        ..Limits::default()
    };
    let backend = Arc::new(StateBackend::with_limits(limits));
    Fixture::new(backend.clone()).with_store(StateStore { backend, limits })
}

/// The store access of a StateBackend: its files document.
struct StateStore {
    backend: Arc<StateBackend>,
    limits: Limits,
}

impl StoreAccess for StateStore {
    /// A StateBackend loaded from a document holding only this file (loading
    /// does not check the max file size, reading does).
    fn plant(&self, path: &VPath, bytes: &[u8]) -> std::io::Result<Arc<dyn Backend>> {
        let stamp = "2026-01-01T00:00:00Z".to_owned();
        let doc: FilesDocument = [(
            path.as_str().to_owned(),
            FileData::from_bytes(bytes, stamp.clone(), stamp),
        )]
        .into_iter()
        .collect();
        let planted = StateBackend::from_files_with_limits(doc, self.limits)
            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        Ok(Arc::new(planted))
    }

    fn created_at(&self, path: &VPath) -> Option<String> {
        self.backend
            .files()
            .get(path.as_str())
            .map(|data| data.created_at.clone())
    }
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
    skips = {
        host_fifo_is_never_opened: "a StateBackend holds no special files (the fixture lends no host access)",
    },
    no_model_check,
);

/// One operation of a model sequence.
#[derive(Debug, Clone)]
enum Op {
    Write(&'static str, &'static str),
    Delete(&'static str),
    Read(&'static str),
    Ls(&'static str),
    Edit(&'static str, &'static str, &'static str, bool),
}

const PATHS: &[&str] = &[
    "/", "/a", "/b", "/a/b", "/a/c.txt", "/a/b/c", "/b/a.txt", "/a-b",
];
const TEXTS: &[&str] = &["", "x", "a\nb\n", "aaa", "hello a\n", "b\na\nb"];
const OLDS: &[&str] = &["a", "b", "x", "\n"];
const NEWS: &[&str] = &["b", "", "A", "zz"];

fn op() -> impl Strategy<Value = Op> {
    let path = proptest::sample::select(PATHS);
    prop_oneof![
        (path.clone(), proptest::sample::select(TEXTS)).prop_map(|(p, t)| Op::Write(p, t)),
        path.clone().prop_map(Op::Delete),
        path.clone().prop_map(Op::Read),
        path.clone().prop_map(Op::Ls),
        (
            path,
            proptest::sample::select(OLDS),
            proptest::sample::select(NEWS),
            any::<bool>()
        )
            .prop_map(|(p, o, n, a)| Op::Edit(p, o, n, a)),
    ]
}

/// The reference: files by path; a directory is any proper prefix of a file's path.
#[derive(Default)]
struct Reference(BTreeMap<String, Vec<u8>>);

type Answer = Result<String, ErrorKind>;

impl Reference {
    fn is_dir(&self, p: &str) -> bool {
        p == "/" || self.0.keys().any(|k| k.starts_with(&format!("{p}/")))
    }

    fn ancestor_is_file(&self, p: &str) -> bool {
        let mut at = p;
        while let Some(i) = at.rfind('/') {
            at = &at[..i];
            if !at.is_empty() && self.0.contains_key(at) {
                return true;
            }
        }
        false
    }

    fn apply(&mut self, op: &Op) -> Answer {
        match *op {
            Op::Write(p, t) => {
                if self.is_dir(p) {
                    Err(ErrorKind::IsADirectory)
                } else if self.ancestor_is_file(p) {
                    Err(ErrorKind::NotADirectory)
                } else {
                    self.0.insert(p.to_owned(), t.as_bytes().to_vec());
                    Ok("written".into())
                }
            }
            Op::Delete(p) => {
                if p == "/" {
                    Err(ErrorKind::InvalidPath)
                } else if self.0.remove(p).is_some() {
                    Ok("deleted".into())
                } else if self.is_dir(p) {
                    Err(ErrorKind::DirectoryNotEmpty)
                } else {
                    Err(ErrorKind::NotFound)
                }
            }
            Op::Read(p) => match self.0.get(p) {
                Some(b) => Ok(String::from_utf8_lossy(b).into_owned()),
                None if self.is_dir(p) => Err(ErrorKind::IsADirectory),
                None => Err(ErrorKind::NotFound),
            },
            Op::Ls(p) => {
                if self.0.contains_key(p) {
                    return Err(ErrorKind::NotADirectory);
                }
                if !self.is_dir(p) {
                    return Err(ErrorKind::NotFound);
                }
                let prefix = if p == "/" {
                    "/".to_owned()
                } else {
                    format!("{p}/")
                };
                let mut entries = BTreeMap::new();
                for (k, v) in &self.0 {
                    if let Some(rest) = k.strip_prefix(&prefix) {
                        let (name, is_dir) = match rest.find('/') {
                            Some(i) => (&rest[..i], true),
                            None => (rest, false),
                        };
                        let size = if is_dir { None } else { Some(v.len()) };
                        entries.insert(format!("{prefix}{name}"), size);
                    }
                }
                Ok(format!("{entries:?}"))
            }
            Op::Edit(p, old, new, all) => {
                // The arguments are checked before the file is looked at.
                if old.is_empty() || old == new {
                    return Err(ErrorKind::InvalidArgument);
                }
                let Some(bytes) = self.0.get(p) else {
                    return Err(if self.is_dir(p) {
                        ErrorKind::IsADirectory
                    } else {
                        ErrorKind::NotFound
                    });
                };
                let text = String::from_utf8_lossy(bytes).into_owned();
                let count = text.matches(old).count();
                if count == 0 || (count > 1 && !all) {
                    return Err(ErrorKind::InvalidArgument);
                }
                let replaced = if all {
                    text.replace(old, new)
                } else {
                    text.replacen(old, new, 1)
                };
                self.0.insert(p.to_owned(), replaced.into_bytes());
                Ok(format!("{count}"))
            }
        }
    }
}

async fn on_state(b: &StateBackend, ctx: &FileContext, op: &Op) -> Answer {
    let path = |p: &str| VPath::parse(p).map_err(|e| e.kind());
    match *op {
        Op::Write(p, t) => b
            .write(ctx, &path(p)?, t)
            .await
            .map(|_| "written".to_owned())
            .map_err(|e| e.kind()),
        Op::Delete(p) => b
            .delete(ctx, &path(p)?)
            .await
            .map(|()| "deleted".to_owned())
            .map_err(|e| e.kind()),
        Op::Read(p) => b
            .read_bytes(ctx, &path(p)?)
            .await
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .map_err(|e| e.kind()),
        Op::Ls(p) => {
            let listing = b.ls(ctx, &path(p)?, 1000).await.map_err(|e| e.kind())?;
            let entries: BTreeMap<String, Option<usize>> = listing
                .entries
                .iter()
                .map(|e| (e.path.clone(), e.size.map(|s| s as usize)))
                .collect();
            Ok(format!("{entries:?}"))
        }
        Op::Edit(p, old, new, all) => b
            .edit(ctx, &path(p)?, old, new, all)
            .await
            .map(|r| format!("{}", r.occurrences.unwrap_or(0)))
            .map_err(|e| e.kind()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random operation sequences give the same answers on StateBackend (the model
    /// every other backend is compared with) as on the plain reference map.
    #[test]
    fn model_equivalence(ops in proptest::collection::vec(op(), 1..24)) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let state = StateBackend::new();
        let ctx = FileContext::for_tenant("model");
        let mut reference = Reference::default();
        for (i, op) in ops.iter().enumerate() {
            let got = rt.block_on(on_state(&state, &ctx, op));
            let want = reference.apply(op);
            prop_assert_eq!(got, want, "step {} ({:?}) of {:?}", i, op, ops);
        }
    }
}
