//! Uploads: text, CSV, PNG and empty files stored under /uploads with the seed's metadata, unsafe names and over-size files refused before anything is written, on a StateBackend and a real SQLite file, and the list in every request's instructions.

use std::sync::{Arc, Mutex};

use burrow_backend::{Backend, ErrorKind};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::uploads::{Uploads, upload_file, with_uploads};
use burrow_sqlite::StoreBackend;
use burrow_state::StateBackend;
use burrow_types::UploadedFile;

use super::support::{ctx, p};

/// The first bytes of a 1x1 PNG: the signature and the IHDR chunk.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89,
];

async fn stores_each_kind_with_its_metadata(backend: &dyn Backend) {
    let csv = upload_file(backend, &ctx(), "report.csv", b"a,b\n1,2\n3,4\n")
        .await
        .unwrap();
    assert_eq!(
        csv,
        UploadedFile {
            path: "/uploads/report.csv".into(),
            original_name: "report.csv".into(),
            size: 12,
            line_count: Some(3),
            mime_type: "text/csv".into(),
            encoding: Some("utf-8".into()),
        }
    );
    let text = upload_file(backend, &ctx(), "notes", "é\r\nno newline".as_bytes())
        .await
        .unwrap();
    assert_eq!(
        (text.line_count, text.mime_type.as_str(), text.size),
        (Some(2), "text/plain", 14)
    );
    let png = upload_file(backend, &ctx(), "pixel.bin", PNG)
        .await
        .unwrap();
    assert_eq!(
        (png.line_count, png.encoding, png.mime_type.as_str()),
        (None, None, "image/png"),
        "the content says PNG whatever the name"
    );
    let empty = upload_file(backend, &ctx(), "empty.txt", b"")
        .await
        .unwrap();
    assert_eq!(
        (empty.size, empty.line_count, empty.mime_type.as_str()),
        (0, Some(0), "text/plain")
    );
    let nul = upload_file(backend, &ctx(), "data.dat", b"a\0b")
        .await
        .unwrap();
    assert_eq!((nul.line_count, nul.encoding), (None, None));
    for (path, bytes) in [
        ("/uploads/report.csv", &b"a,b\n1,2\n3,4\n"[..]),
        ("/uploads/pixel.bin", PNG),
        ("/uploads/empty.txt", b""),
    ] {
        assert_eq!(backend.read_bytes(&ctx(), &p(path)).await.unwrap(), bytes);
    }
}

#[tokio::test]
async fn each_kind_is_stored_with_its_metadata_on_a_state_backend() {
    stores_each_kind_with_its_metadata(&StateBackend::new()).await;
}

#[tokio::test]
async fn each_kind_is_stored_with_its_metadata_in_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let backend = StoreBackend::open(dir.path().join("w.db")).unwrap();
    stores_each_kind_with_its_metadata(&backend).await;
}

#[tokio::test]
async fn unsafe_names_are_refused_and_nothing_is_written() {
    let backend = StateBackend::new();
    for name in [
        "../escape.txt",
        "a/b.txt",
        "..",
        ".",
        "",
        "back\\slash",
        "tab\there",
        " padded ",
        &"x".repeat(256),
    ] {
        let e = upload_file(&backend, &ctx(), name, b"x").await.unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidPath,
            "{name:?}: {}",
            e.message()
        );
        assert!(
            e.message().starts_with("The upload name"),
            "{}",
            e.message()
        );
    }
    let left = backend.glob(&ctx(), "*", &p("/"), 10).await.unwrap();
    assert!(left.files.is_empty(), "{:?}", left.files);
}

#[tokio::test]
async fn an_upload_over_the_size_limit_is_refused_before_anything_is_written() {
    let backend = StateBackend::with_limits(burrow_backend::Limits {
        max_file_size: 8,
        ..burrow_backend::Limits::default()
    });
    let e = upload_file(&backend, &ctx(), "big.txt", b"123456789")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooLarge);
    assert!(e.message().contains("9 bytes"), "{}", e.message());
    let left = backend.glob(&ctx(), "*", &p("/"), 10).await.unwrap();
    assert!(left.files.is_empty());
}

#[tokio::test]
async fn every_request_lists_the_uploads() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let uploads = Uploads::new();
    uploads
        .upload(backend.as_ref(), &ctx(), "report.csv", b"a,b\n1,2\n")
        .await
        .unwrap();
    uploads
        .upload(backend.as_ref(), &ctx(), "pixel.png", PNG)
        .await
        .unwrap();
    uploads
        .upload(backend.as_ref(), &ctx(), "report.csv", b"a,b\n1,2\n3,4\n")
        .await
        .unwrap();
    let systems = Arc::new(Mutex::new(Vec::new()));
    let seen = systems.clone();
    let model = ScriptedModel::new(move |request| {
        seen.lock().unwrap().push(request.system.to_owned());
        Ok(ScriptedResponse::text("read them"))
    });
    let agent = with_uploads(Agent::new(Arc::new(model)), uploads);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "summarise my files").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let system = systems.lock().unwrap()[0].clone();
    assert!(
        system.contains(
            "## Uploaded files\nThe user uploaded these files into the workspace; open them with read_file (text) when the task needs them:\n\
             - /uploads/pixel.png (33 bytes, binary, image/png)\n\
             - /uploads/report.csv (12 bytes, 3 lines, text/csv)"
        ),
        "{system}"
    );
}
