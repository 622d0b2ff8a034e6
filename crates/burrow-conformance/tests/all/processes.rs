//! The multi-process helpers have teeth: edits from several processes of a host-file backend that locks lose nothing, and of one that does not lock are caught.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, FileContext, GlobResult, GrepQuery, GrepResult,
    LineWindow, Listing, Result, VPath, WriteResult, text,
};
use burrow_conformance::processes::{
    check_every_slot, edit_my_slots, editor_role, initial_text, run_editor_processes,
};
use burrow_state::StateBackend;

const DIR_VAR: &str = "BURROW_TEETH_PROCESS_DIR";

/// One file on the host, shared by processes; `locks` says whether an edit holds
/// an exclusive lock on it for its read-modify-write.
struct HostFile {
    file: PathBuf,
    locks: bool,
}

fn unsupported() -> Error {
    Error::invalid_argument("the host-file backend only reads, writes and edits")
}

#[async_trait]
impl Backend for HostFile {
    fn capabilities(&self) -> Capabilities {
        StateBackend::new().capabilities()
    }
    async fn ls(&self, _: &FileContext, _: &VPath, _: usize) -> Result<Listing> {
        Err(unsupported())
    }
    async fn read(&self, _: &FileContext, _: &VPath, _: usize, _: usize) -> Result<LineWindow> {
        Err(unsupported())
    }
    async fn read_bytes(&self, _: &FileContext, _: &VPath) -> Result<Vec<u8>> {
        std::fs::read(&self.file).map_err(|e| Error::failure("read", e))
    }
    async fn write_bytes(
        &self,
        _: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        std::fs::write(&self.file, bytes).map_err(|e| Error::failure("write", e))?;
        Ok(WriteResult::written(path.as_str()))
    }
    async fn edit(
        &self,
        _: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        let io = |e| Error::failure("edit", e);
        let mut file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.file)
            .map_err(io)?;
        if self.locks {
            file.lock().map_err(io)?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        // Widen the window between read and write, as a slow store would.
        std::thread::sleep(Duration::from_millis(2));
        let (out, count) = text::apply_edit(path, &bytes, old, new, all)?;
        file.rewind().map_err(io)?;
        file.set_len(0).map_err(io)?;
        file.write_all(&out).map_err(io)?;
        Ok(text::edit_result(path, count))
    }
    async fn delete(&self, _: &FileContext, _: &VPath) -> Result<()> {
        Err(unsupported())
    }
    async fn glob(&self, _: &FileContext, _: &str, _: &VPath, _: usize) -> Result<GlobResult> {
        Err(unsupported())
    }
    async fn grep(
        &self,
        _: &FileContext,
        _: &GrepQuery,
        _: &VPath,
        _: usize,
    ) -> Result<GrepResult> {
        Err(unsupported())
    }
}

/// Both roles of one test: the editors edit; the parent sets up, runs them and checks.
/// An editor of a flawed backend may see a half-written file and fail its edit; the
/// parent then reports that editor's failure.
fn edits_from_processes(test: &str, locks: bool) -> std::result::Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = FileContext::for_tenant("processes");
    let path = VPath::parse("/shared.txt").unwrap();
    if let Some(editor) = editor_role() {
        let file = PathBuf::from(std::env::var(DIR_VAR).unwrap()).join("shared.txt");
        let b = HostFile { file, locks };
        rt.block_on(edit_my_slots(&b, &ctx, &path, editor)).unwrap();
        return Ok(());
    }
    let dir = tempfile::tempdir().unwrap();
    let b = HostFile {
        file: dir.path().join("shared.txt"),
        locks,
    };
    rt.block_on(b.write(&ctx, &path, &initial_text())).unwrap();
    run_editor_processes(test, &[(DIR_VAR, dir.path().to_str().unwrap())])
        .map_err(|e| e.message().to_owned())?;
    rt.block_on(check_every_slot(&b, &ctx, &path))
        .map_err(|e| e.message().to_owned())
}

#[test]
fn a_locking_backend_loses_no_update_across_processes() {
    edits_from_processes(
        "all::processes::a_locking_backend_loses_no_update_across_processes",
        true,
    )
    .unwrap();
}

#[test]
fn an_unlocked_read_modify_write_across_processes_is_caught() {
    let outcome = edits_from_processes(
        "all::processes::an_unlocked_read_modify_write_across_processes_is_caught",
        false,
    );
    if editor_role().is_none() {
        let err = outcome.unwrap_err();
        assert!(
            err.contains("lost") || err.contains("editor"),
            "the flaw shows as a lost update or a failed editor: {err}"
        );
    }
}
