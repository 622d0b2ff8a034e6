//! Binary artifacts (ADK's shape) over real backends: the same scenarios on the state backend, a folder, a SQLite file and the object store, each with a second handle where one exists (a second folder handle, a second SQLite connection).

use std::sync::Arc;

use burrow_artifacts::binary::MAX_NAME_BYTES;
use burrow_artifacts::{ArtifactErrorKind, BinaryArtifacts};
use burrow_backend::{Backend, FileContext, VPath};
use serde_json::{Map, Value, json};

/// Two handles on one store (the same handle twice where there is no other) and what keeps it alive.
struct Fixture {
    one: Arc<dyn Backend>,
    two: Arc<dyn Backend>,
    _guard: Option<tempfile::TempDir>,
}

fn artifacts(backend: &Arc<dyn Backend>) -> BinaryArtifacts {
    BinaryArtifacts::new(
        Arc::clone(backend),
        FileContext::default(),
        VPath::parse("/outputs").unwrap(),
    )
}

fn meta(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Bytes that are not text: NULs, invalid UTF-8, every byte value.
fn binary(seed: u8) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).collect();
    bytes.extend([0, 0xff, 0xfe, seed, 0xc3, 0x28]);
    bytes
}

async fn versions_count_from_zero_and_each_loads_as_saved(fx: &Fixture) {
    let a = artifacts(&fx.one);
    assert_eq!(
        a.list_versions("chart.png").await.unwrap(),
        Vec::<u64>::new()
    );
    for n in 0..3u8 {
        let v = a
            .save_artifact(
                "chart.png",
                &binary(n),
                "image/png",
                meta(json!({"n": n, "by": "agent"})),
            )
            .await
            .unwrap();
        assert_eq!(v, u64::from(n));
    }
    assert_eq!(a.list_versions("chart.png").await.unwrap(), vec![0, 1, 2]);
    for n in 0..3u8 {
        let loaded = a.load_artifact("chart.png", Some(n.into())).await.unwrap();
        assert_eq!(loaded.bytes, binary(n));
        assert_eq!(loaded.info.version, u64::from(n));
        assert_eq!(loaded.info.name, "chart.png");
        assert_eq!(loaded.info.mime_type, "image/png");
        assert_eq!(loaded.info.size, binary(n).len() as u64);
        assert_eq!(loaded.info.metadata, meta(json!({"n": n, "by": "agent"})));
    }
    let latest = a.load_artifact("chart.png", None).await.unwrap();
    assert_eq!(latest.info.version, 2);
    assert_eq!(latest.bytes, binary(2));
    // The other handle sees the same versions, and its save takes the next number.
    let b = artifacts(&fx.two);
    assert_eq!(b.list_versions("chart.png").await.unwrap(), vec![0, 1, 2]);
    let v = b
        .save_artifact("chart.png", b"", "application/octet-stream", Map::new())
        .await
        .unwrap();
    assert_eq!(v, 3);
    let empty = a.load_artifact("chart.png", None).await.unwrap();
    assert_eq!((empty.info.version, empty.bytes.len()), (3, 0));
    // Names are separate.
    assert_eq!(
        a.save_artifact("report.pdf", b"%PDF", "application/pdf", Map::new())
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        a.list_names().await.unwrap(),
        vec!["chart.png".to_owned(), "report.pdf".to_owned()]
    );
}

async fn missing_names_and_versions_are_not_found(fx: &Fixture) {
    let a = artifacts(&fx.one);
    let none = a.load_artifact("nothing.bin", None).await.unwrap_err();
    assert_eq!(none.kind(), &ArtifactErrorKind::NotFound, "{none}");
    a.save_artifact("one.bin", b"1", "application/octet-stream", Map::new())
        .await
        .unwrap();
    let past = a.load_artifact("one.bin", Some(1)).await.unwrap_err();
    assert_eq!(past.kind(), &ArtifactErrorKind::NotFound, "{past}");
    assert_eq!(past.message(), "one.bin has no saved version 1.");
    assert_eq!(a.list_names().await.unwrap(), vec!["one.bin".to_owned()]);
}

async fn bad_names_mime_types_and_sizes_are_refused_and_write_nothing(fx: &Fixture) {
    let a = artifacts(&fx.one);
    let long = "n".repeat(MAX_NAME_BYTES + 1);
    for name in [
        "",
        ".",
        "..",
        "a/b",
        "../up",
        "a\\b",
        "a\0b",
        "line\nbreak",
        " padded",
        long.as_str(),
    ] {
        let e = a
            .save_artifact(name, b"x", "text/plain", Map::new())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            &ArtifactErrorKind::InvalidArgument,
            "{name:?}: {e}"
        );
        assert!(
            e.message()
                .ends_with("give one plain file name such as report.pdf.")
        );
        let e = a.load_artifact(name, None).await.unwrap_err();
        assert_eq!(
            e.kind(),
            &ArtifactErrorKind::InvalidArgument,
            "{name:?}: {e}"
        );
        let e = a.list_versions(name).await.unwrap_err();
        assert_eq!(
            e.kind(),
            &ArtifactErrorKind::InvalidArgument,
            "{name:?}: {e}"
        );
    }
    for mime in ["", "png", "image/", "/png", "image/png\n"] {
        let e = a
            .save_artifact("ok.bin", b"x", mime, Map::new())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            &ArtifactErrorKind::InvalidArgument,
            "{mime:?}: {e}"
        );
    }
    let big_meta = meta(json!({"notes": "m".repeat(70 * 1024)}));
    let e = a
        .save_artifact("ok.bin", b"x", "text/plain", big_meta)
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), ArtifactErrorKind::TooLarge { .. }),
        "{e}"
    );
    let limit = fx.one.capabilities().limits.max_file_size;
    let too_big = vec![7u8; usize::try_from(limit).unwrap() + 1];
    let e = a
        .save_artifact("ok.bin", &too_big, "application/octet-stream", Map::new())
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), ArtifactErrorKind::TooLarge { .. }),
        "{e}"
    );
    assert!(!e.message().contains("/tmp"), "no host path: {e}");
    // Nothing was written: not even the folder.
    let root = fx
        .one
        .ls(&FileContext::default(), &VPath::root(), 100)
        .await
        .unwrap();
    assert!(root.entries.is_empty(), "{:?}", root.entries);
    assert!(a.list_names().await.unwrap().is_empty());
}

async fn concurrent_saves_never_overwrite_each_other(fx: &Fixture) {
    let saves = (0..16u8).map(|n| {
        let a = artifacts(if n % 2 == 0 { &fx.one } else { &fx.two });
        tokio::spawn(async move {
            let v = a
                .save_artifact(
                    "race.bin",
                    &binary(n),
                    "application/octet-stream",
                    meta(json!({"saver": n})),
                )
                .await
                .unwrap();
            (v, n)
        })
    });
    let mut got: Vec<(u64, u8)> = futures::future::join_all(saves)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    got.sort_unstable();
    let versions: Vec<u64> = got.iter().map(|(v, _)| *v).collect();
    assert_eq!(
        versions,
        (0..16).collect::<Vec<_>>(),
        "each save its own number"
    );
    let a = artifacts(&fx.one);
    assert_eq!(
        a.list_versions("race.bin").await.unwrap(),
        (0..16).collect::<Vec<_>>()
    );
    for (v, n) in got {
        let loaded = a.load_artifact("race.bin", Some(v)).await.unwrap();
        assert_eq!(
            loaded.bytes,
            binary(n),
            "version {v} holds saver {n}'s bytes"
        );
        assert_eq!(loaded.info.metadata, meta(json!({"saver": n})));
    }
}

/// A save that died after claiming its number (the folder made, no record
/// written): the number is spent, the version is neither listed nor loaded,
/// and the next save takes the number after it.
async fn a_save_that_died_after_its_claim_spends_its_number(fx: &Fixture) {
    let a = artifacts(&fx.one);
    for n in 0..2u8 {
        a.save_artifact(
            "torn.bin",
            &binary(n),
            "application/octet-stream",
            Map::new(),
        )
        .await
        .unwrap();
    }
    fx.one
        .make_dir(
            &FileContext::default(),
            &VPath::parse("/outputs/torn.bin/2").unwrap(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(a.list_versions("torn.bin").await.unwrap(), vec![0, 1]);
    assert_eq!(
        a.load_artifact("torn.bin", None)
            .await
            .unwrap()
            .info
            .version,
        1
    );
    let e = a.load_artifact("torn.bin", Some(2)).await.unwrap_err();
    assert_eq!(e.kind(), &ArtifactErrorKind::NotFound, "{e}");
    let v = a
        .save_artifact("torn.bin", b"after", "text/plain", Map::new())
        .await
        .unwrap();
    assert_eq!(v, 3);
    assert_eq!(a.list_versions("torn.bin").await.unwrap(), vec![0, 1, 3]);
    let latest = a.load_artifact("torn.bin", None).await.unwrap();
    assert_eq!((latest.info.version, latest.bytes), (3, b"after".to_vec()));
}

macro_rules! binary_suite {
    ($make:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn versions_count_from_zero_and_each_loads_as_saved() {
            super::versions_count_from_zero_and_each_loads_as_saved(&$make()).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn missing_names_and_versions_are_not_found() {
            super::missing_names_and_versions_are_not_found(&$make()).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn bad_names_mime_types_and_sizes_are_refused_and_write_nothing() {
            super::bad_names_mime_types_and_sizes_are_refused_and_write_nothing(&$make()).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_saves_never_overwrite_each_other() {
            super::concurrent_saves_never_overwrite_each_other(&$make()).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_save_that_died_after_its_claim_spends_its_number() {
            super::a_save_that_died_after_its_claim_spends_its_number(&$make()).await;
        }
    };
}

mod state {
    use super::*;

    fn make() -> Fixture {
        let one: Arc<dyn Backend> = Arc::new(burrow_state::StateBackend::new());
        Fixture {
            two: Arc::clone(&one),
            one,
            _guard: None,
        }
    }

    binary_suite!(make);
}

mod fs {
    use super::*;

    fn make() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let one: Arc<dyn Backend> = Arc::new(burrow_fs::FsBackend::open(dir.path()).unwrap());
        let two: Arc<dyn Backend> = Arc::new(burrow_fs::FsBackend::open(dir.path()).unwrap());
        Fixture {
            one,
            two,
            _guard: Some(dir),
        }
    }

    binary_suite!(make);
}

mod sqlite {
    use super::*;

    fn make() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("files.db");
        let one: Arc<dyn Backend> = Arc::new(burrow_sqlite::StoreBackend::open(&path).unwrap());
        let two: Arc<dyn Backend> = Arc::new(burrow_sqlite::StoreBackend::open(&path).unwrap());
        Fixture {
            one,
            two,
            _guard: Some(dir),
        }
    }

    binary_suite!(make);
}

mod object_store {
    use super::*;

    fn make() -> Fixture {
        let one: Arc<dyn Backend> = Arc::new(burrow_object_store::ObjectStoreBackend::in_memory());
        Fixture {
            two: Arc::clone(&one),
            one,
            _guard: None,
        }
    }

    binary_suite!(make);
}
