//! Edits from 4 processes sharing one ObjectStoreBackend store on the S3 test server lose no update (`burrow_conformance::processes`).
//!
//! The test plays two roles: started by the test runner it is the parent, which
//! writes the shared file to a fresh bucket, re-runs this binary as 4 editor
//! processes on that bucket (each edits 50 slots, retrying Conflict) and checks
//! every slot; started as an editor it opens the same bucket and prefix and edits.
//!
//! The local-folder store (`ObjectStoreBackend::local`) has no cross-process
//! variant: `LocalFileSystem` cannot update-if-unchanged, so its conditional puts
//! are off and, as its docs say, the last writer wins across processes.

/// The tests need the S3 test server, so they live in a module named `s3`.
mod s3 {
    use burrow_backend::{Backend, FileContext, VPath};
    use burrow_conformance::processes::{
        check_every_slot, edit_my_slots, editor_role, initial_text, run_editor_processes,
    };
    use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

    use super::super::common::{fresh_bucket, s3_builder, s3_endpoint};

    /// The bucket the editors open, set by the parent.
    const BUCKET_VAR: &str = "BURROW_OBJECT_STORE_PROCESSES_BUCKET";

    fn ctx() -> FileContext {
        FileContext::for_tenant("processes").with_run_id("processes")
    }

    fn path() -> VPath {
        VPath::parse("/shared/slots.txt").unwrap()
    }

    /// The backend every process opens: one bucket, one key prefix.
    fn open(endpoint: &str, bucket: &str) -> ObjectStoreBackend {
        let url = format!("s3://{bucket}/processes");
        ObjectStoreBackend::from_s3_builder(
            s3_builder(endpoint),
            &url,
            ObjectStoreOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn edits_from_processes_lose_no_update() {
        let endpoint = s3_endpoint();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let _entered = rt.enter();
        if let Some(editor) = editor_role() {
            let bucket = std::env::var(BUCKET_VAR).unwrap();
            let b = open(&endpoint, &bucket);
            return rt
                .block_on(edit_my_slots(&b, &ctx(), &path(), editor))
                .unwrap();
        }
        let bucket = fresh_bucket(&endpoint);
        let b = open(&endpoint, &bucket);
        rt.block_on(b.write(&ctx(), &path(), &initial_text()))
            .unwrap();
        run_editor_processes(
            "all::processes::s3::edits_from_processes_lose_no_update",
            &[(BUCKET_VAR, &bucket)],
        )
        .unwrap();
        rt.block_on(check_every_slot(&b, &ctx(), &path())).unwrap();
    }
}
