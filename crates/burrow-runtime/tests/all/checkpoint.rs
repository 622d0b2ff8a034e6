//! Checkpoints' file pre-images: a batch's changed paths read from its calls, captured through the backend and restored byte for byte (a created file removed, a deleted file and a deleted tree back), re-runnable after a restore cut short, on a StateBackend, a folder, a SQLite file and a composite of them.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind};
use burrow_composite::CompositeBackend;
use burrow_fs::FsBackend;
use burrow_runtime::checkpoint::{self, FileImage, Retention};
use burrow_runtime::message::ToolCall;
use burrow_sqlite::StoreBackend;
use burrow_state::StateBackend;
use serde_json::{Value, json};

use super::support::{ctx, p};

/// Bytes no text decoder keeps as they are: NUL, CRLF, a lone CR, invalid UTF-8.
const BINARY: &[u8] = b"\x00\x01\r\n\r\xff\xfe tail";

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

/// The batch the tests run: rewrite one file, create one, delete one, delete
/// a tree, run a command, and read (which changes nothing).
fn batch(root: &str) -> Vec<ToolCall> {
    vec![
        call(
            "c1",
            "write_file",
            json!({"file_path": format!("{root}/a.txt"), "content": "new"}),
        ),
        call(
            "c2",
            "write_file",
            json!({"file_path": format!("{root}/created.txt"), "content": "x"}),
        ),
        call(
            "c3",
            "delete_path",
            json!({"path": format!("{root}/gone.bin")}),
        ),
        call(
            "c4",
            "delete_path",
            json!({"path": format!("{root}/tree"), "recursive": true}),
        ),
        call(
            "c5",
            "read_file",
            json!({"file_path": format!("{root}/a.txt")}),
        ),
        call("c6", "execute", json!({"command": "make"})),
        call(
            "c7",
            "edit_file",
            json!({"file_path": format!("{root}/a.txt"), "old_string": "n", "new_string": "m"}),
        ),
    ]
}

async fn bytes(backend: &dyn Backend, path: &str) -> Result<Vec<u8>, ErrorKind> {
    backend
        .read_bytes(&ctx(), &p(path))
        .await
        .map_err(|e| e.kind())
}

/// Seeds `root`, captures the batch's pre-images, makes its changes, and restores them.
async fn restores_bytes_exactly(backend: &dyn Backend, root: &str) {
    let c = ctx();
    let a = "before\r\nline two\n".as_bytes();
    backend
        .write_bytes(&c, &p(&format!("{root}/a.txt")), a)
        .await
        .unwrap();
    backend
        .write_bytes(&c, &p(&format!("{root}/gone.bin")), BINARY)
        .await
        .unwrap();
    backend
        .write_bytes(&c, &p(&format!("{root}/tree/x.txt")), b"x")
        .await
        .unwrap();
    backend
        .write_bytes(&c, &p(&format!("{root}/tree/sub/y.bin")), BINARY)
        .await
        .unwrap();

    let effects = checkpoint::changed_paths(&batch(root));
    let images = checkpoint::capture(backend, &c, &effects.paths)
        .await
        .unwrap();
    assert_eq!(images.len(), 5, "{images:?}");
    assert!(
        images
            .iter()
            .any(|i| i.path == format!("{root}/created.txt") && i.bytes.is_none()),
        "a file the batch creates is recorded absent: {images:?}"
    );

    // The batch runs.
    backend
        .write(&c, &p(&format!("{root}/a.txt")), "new")
        .await
        .unwrap();
    backend
        .write(&c, &p(&format!("{root}/created.txt")), "x")
        .await
        .unwrap();
    backend
        .delete(&c, &p(&format!("{root}/gone.bin")))
        .await
        .unwrap();
    backend
        .delete_tree(&c, &p(&format!("{root}/tree")))
        .await
        .unwrap();

    checkpoint::restore(backend, &c, &images).await.unwrap();
    let check = || async {
        assert_eq!(bytes(backend, &format!("{root}/a.txt")).await.unwrap(), a);
        assert_eq!(
            bytes(backend, &format!("{root}/gone.bin")).await.unwrap(),
            BINARY
        );
        assert_eq!(
            bytes(backend, &format!("{root}/tree/x.txt")).await.unwrap(),
            b"x"
        );
        assert_eq!(
            bytes(backend, &format!("{root}/tree/sub/y.bin"))
                .await
                .unwrap(),
            BINARY
        );
        assert_eq!(
            bytes(backend, &format!("{root}/created.txt")).await,
            Err(ErrorKind::NotFound),
            "the file the batch created is removed"
        );
    };
    check().await;
    // A second restore (a rewind run again) leaves the same files.
    checkpoint::restore(backend, &c, &images).await.unwrap();
    check().await;
}

/// A restore cut short after its first images, then run again whole, ends as one run whole.
async fn a_restore_cut_short_is_finished_by_running_it_again(backend: &dyn Backend, root: &str) {
    let c = ctx();
    backend
        .write_bytes(&c, &p(&format!("{root}/one")), b"1")
        .await
        .unwrap();
    backend
        .write_bytes(&c, &p(&format!("{root}/two")), BINARY)
        .await
        .unwrap();
    let paths = vec![
        format!("{root}/one"),
        format!("{root}/two"),
        format!("{root}/three"),
    ];
    let images = checkpoint::capture(backend, &c, &paths).await.unwrap();
    backend
        .write(&c, &p(&format!("{root}/one")), "changed")
        .await
        .unwrap();
    backend
        .delete(&c, &p(&format!("{root}/two")))
        .await
        .unwrap();
    backend
        .write(&c, &p(&format!("{root}/three")), "made")
        .await
        .unwrap();

    checkpoint::restore(backend, &c, &images[..1])
        .await
        .unwrap();
    assert_eq!(bytes(backend, &format!("{root}/one")).await.unwrap(), b"1");
    assert_eq!(
        bytes(backend, &format!("{root}/two")).await,
        Err(ErrorKind::NotFound)
    );

    checkpoint::restore(backend, &c, &images).await.unwrap();
    assert_eq!(bytes(backend, &format!("{root}/one")).await.unwrap(), b"1");
    assert_eq!(
        bytes(backend, &format!("{root}/two")).await.unwrap(),
        BINARY
    );
    assert_eq!(
        bytes(backend, &format!("{root}/three")).await,
        Err(ErrorKind::NotFound)
    );
}

/// The images `current` reads undo a restore: a rewind's redo.
async fn current_images_undo_a_restore(backend: &dyn Backend, root: &str) {
    let c = ctx();
    backend
        .write_bytes(&c, &p(&format!("{root}/f")), b"old")
        .await
        .unwrap();
    let before = checkpoint::capture(backend, &c, &[format!("{root}/f"), format!("{root}/g")])
        .await
        .unwrap();
    backend
        .write(&c, &p(&format!("{root}/f")), "newer")
        .await
        .unwrap();
    backend
        .write(&c, &p(&format!("{root}/g")), "made")
        .await
        .unwrap();
    let redo = checkpoint::current(backend, &c, &before).await.unwrap();
    checkpoint::restore(backend, &c, &before).await.unwrap();
    assert_eq!(
        bytes(backend, &format!("{root}/g")).await,
        Err(ErrorKind::NotFound)
    );
    checkpoint::restore(backend, &c, &redo).await.unwrap();
    assert_eq!(
        bytes(backend, &format!("{root}/f")).await.unwrap(),
        b"newer"
    );
    assert_eq!(bytes(backend, &format!("{root}/g")).await.unwrap(), b"made");
}

async fn every_case(backend: &dyn Backend, root: &str) {
    restores_bytes_exactly(backend, &format!("{root}/r")).await;
    a_restore_cut_short_is_finished_by_running_it_again(backend, &format!("{root}/s")).await;
    current_images_undo_a_restore(backend, &format!("{root}/u")).await;
}

#[tokio::test]
async fn on_a_state_backend() {
    every_case(&StateBackend::new(), "").await;
}

#[tokio::test]
async fn on_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    every_case(&FsBackend::open(dir.path()).unwrap(), "").await;
}

#[tokio::test]
async fn on_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    every_case(&StoreBackend::open(dir.path().join("w.db")).unwrap(), "").await;
}

#[tokio::test]
async fn on_a_composite_across_its_mounts() {
    let dir = tempfile::tempdir().unwrap();
    let composite = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount(
            "/m",
            Arc::new(StoreBackend::open(dir.path().join("m.db")).unwrap()),
        )
        .build()
        .unwrap();
    every_case(&composite, "").await;
    every_case(&composite, "/m").await;
}

#[test]
fn a_batch_names_its_changed_paths_once_and_records_execute() {
    let effects = checkpoint::changed_paths(&batch("/w"));
    assert_eq!(
        effects.paths,
        ["/w/a.txt", "/w/created.txt", "/w/gone.bin", "/w/tree"]
    );
    assert_eq!(effects.execute_calls, ["c6"]);
    let meta = effects.metadata();
    assert_eq!(meta["execute_calls"], json!(["c6"]));
    assert_eq!(meta["execute_not_captured"], json!(true));
    assert_eq!(
        meta["tools"],
        json!([
            "write_file",
            "write_file",
            "delete_path",
            "delete_path",
            "execute",
            "edit_file"
        ])
    );

    let reads = checkpoint::changed_paths(&[
        call("r", "read_file", json!({"file_path": "/a"})),
        call("b", "write_file", json!({"file_path": "../escape"})),
        call("n", "write_file", json!("not an object")),
    ]);
    assert!(reads.paths.is_empty(), "{reads:?}");
    assert!(!reads.metadata().contains_key("execute_calls"));
}

#[test]
fn retention_keeps_the_newest_twenty_or_as_set() {
    let ids: Vec<String> = (0..25).map(|i| format!("cp{i}")).collect();
    let dropped = Retention::default().dropped(&ids);
    assert_eq!(dropped.len(), 5);
    assert_eq!(dropped.last().map(String::as_str), Some("cp4"));
    assert_eq!(Retention::new(3).dropped(&ids).len(), 22);
    assert_eq!(
        Retention::new(0).dropped(&ids).len(),
        24,
        "the newest always stays"
    );
    assert!(Retention::new(30).dropped(&ids).is_empty());
}

#[test]
fn created_at_is_rfc3339_in_utc() {
    assert_eq!(checkpoint::rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(
        checkpoint::rfc3339(1_796_299_200_123),
        "2026-12-03T12:00:00.123Z"
    );
    assert_eq!(
        checkpoint::rfc3339(951_782_400_000),
        "2000-02-29T00:00:00.000Z"
    );
    let image = FileImage {
        path: "/a".into(),
        bytes: None,
    };
    assert_eq!(
        serde_json::to_value(&image).unwrap(),
        json!({"path": "/a", "bytes": null})
    );
}
