//! Uploads of a resumed run (ADR 0296): `Uploads::from_folder` lists what `/uploads` holds (described from its bytes as at upload, folders left out), on a StateBackend and a real SQLite file, none without the folder, and a resumed agent's every request lists them; a deleted upload is no longer listed.

use std::sync::{Arc, Mutex};

use burrow_backend::Backend;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::uploads::{Uploads, upload_file, with_uploads};
use burrow_sqlite::StoreBackend;
use burrow_state::StateBackend;

use super::support::{ctx, p};

async fn the_folder_is_the_list(backend: &dyn Backend) {
    // Nothing uploaded yet: no folder, no uploads, no error.
    let none = Uploads::from_folder(backend, &ctx()).await.unwrap();
    assert!(none.files().is_empty());
    assert_eq!(none.listing(), None);

    let csv = upload_file(backend, &ctx(), "report.csv", b"a,b\n1,2\n3,4\n")
        .await
        .unwrap();
    let bin = upload_file(backend, &ctx(), "blob", &[0, 159, 146, 150])
        .await
        .unwrap();
    // A folder under /uploads is not an upload.
    backend
        .write(&ctx(), &p("/uploads/sub/x.txt"), "x")
        .await
        .unwrap();
    let found = Uploads::from_folder(backend, &ctx()).await.unwrap();
    assert_eq!(found.files(), vec![bin.clone(), csv.clone()]);

    backend.delete(&ctx(), &p("/uploads/blob")).await.unwrap();
    let after = Uploads::from_folder(backend, &ctx()).await.unwrap();
    assert_eq!(after.files(), vec![csv]);
}

#[tokio::test]
async fn the_uploads_folder_is_listed_on_a_state_backend() {
    the_folder_is_the_list(&StateBackend::new()).await;
}

#[tokio::test]
async fn the_uploads_folder_is_listed_in_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let backend = StoreBackend::open(dir.path().join("w.db")).unwrap();
    the_folder_is_the_list(&backend).await;
}

#[tokio::test]
async fn a_resumed_agent_lists_the_earlier_uploads_in_every_request() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    // The first run's upload, made by another `Uploads` (another process).
    Uploads::new()
        .upload(backend.as_ref(), &ctx(), "data.csv", b"a,b\n1,2\n")
        .await
        .unwrap();
    let systems = Arc::new(Mutex::new(Vec::new()));
    let seen = systems.clone();
    let model = ScriptedModel::new(move |request| {
        seen.lock().unwrap().push(request.system.to_owned());
        Ok(ScriptedResponse::text("still here"))
    });
    let uploads = Uploads::from_folder(backend.as_ref(), &ctx())
        .await
        .unwrap();
    let agent = with_uploads(Agent::new(Arc::new(model)), uploads);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go on").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let system = systems.lock().unwrap()[0].clone();
    assert!(
        system.contains("## Uploaded files\n")
            && system.contains("- /uploads/data.csv (8 bytes, 2 lines, text/csv)"),
        "{system}"
    );
}
