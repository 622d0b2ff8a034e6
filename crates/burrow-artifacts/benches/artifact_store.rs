//! Artifact store cost per applied change: a one-field JSON Patch on a 100 KB artifact (validation, revision, head and event in one commit), on memory and SQLite.
//!
//! `cargo bench -p burrow-artifacts --bench artifact_store`. One iteration is one
//! `submit` of a `replace` of one field, against the head version (so every change
//! applies). The runtime is multi-threaded with one worker, so SQLite takes the
//! `block_in_place` path an application's runtime takes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burrow_artifacts::conformance::kinds;
use burrow_artifacts::{Actor, ArtifactStore, Change, MemoryArtifactStore, SqliteArtifactStore};
use burrow_runtime::session::Scope;
use serde_json::{Map, Value, json};

fn main() {
    divan::main();
}

struct Bench {
    rt: tokio::runtime::Runtime,
    store: Arc<dyn ArtifactStore>,
    id: String,
    version: AtomicU64,
    _dir: Option<tempfile::TempDir>,
}

/// A `record` of 1,000 fields of 100 characters: about 100 KB as JSON.
fn snapshot() -> Value {
    let mut fields = Map::new();
    for i in 0..1000 {
        fields.insert(format!("field{i:04}"), Value::String("x".repeat(100)));
    }
    Value::Object(fields)
}

impl Bench {
    fn new(store: Arc<dyn ArtifactStore>, dir: Option<tempfile::TempDir>) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let snapshot = snapshot();
        assert!(serde_json::to_vec(&snapshot).unwrap().len() >= 100_000);
        let created = rt
            .block_on(store.submit(
                &Scope::new("bench", "ws"),
                &Actor::person("bench"),
                Change::Create {
                    kind: "record".into(),
                    snapshot,
                },
            ))
            .unwrap();
        Self {
            rt,
            store,
            id: created.artifact.id,
            version: AtomicU64::new(1),
            _dir: dir,
        }
    }

    fn edit(&self) {
        let base = self.version.load(Ordering::Relaxed);
        let patch = serde_json::from_value(json!([
            {"op": "replace", "path": "/field0500", "value": format!("edit {base}")}
        ]))
        .unwrap();
        let done = self
            .rt
            .block_on(self.store.submit(
                &Scope::new("bench", "ws"),
                &Actor::person("bench"),
                Change::Patch {
                    id: self.id.clone(),
                    base_version: base,
                    patch,
                    summary: None,
                },
            ))
            .unwrap();
        self.version.store(done.artifact.version, Ordering::Relaxed);
    }
}

#[divan::bench(sample_count = 100, sample_size = 10)]
fn one_field_patch_of_100kb_memory(bencher: divan::Bencher) {
    let bench = Bench::new(Arc::new(MemoryArtifactStore::new(kinds())), None);
    bencher.bench_local(|| bench.edit());
}

#[divan::bench(sample_count = 100, sample_size = 10)]
fn one_field_patch_of_100kb_sqlite(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteArtifactStore::open(dir.path().join("bench.db"), kinds()).unwrap();
    let bench = Bench::new(Arc::new(store), Some(dir));
    bencher.bench_local(|| bench.edit());
}
