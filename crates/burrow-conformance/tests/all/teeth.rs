//! The suite has teeth: a backend with one deliberate flaw fails the scenario about it, and the flawless one passes.
//!
//! Each mutant wraps `StateBackend` and breaks one sentence of the contract
//! the way real backends have broken it (a CRLF-blind edit, a walk-order
//! glob, a read-modify-write edit across an await, ...).

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ErrorKind, ExecuteResponse, FileContext, GlobResult,
    GrepQuery, GrepResult, Limits, LineWindow, Listing, Result, Sandbox, VPath, WriteResult, text,
};
use burrow_conformance::{Ctx, Fixture, Pass, find};
use burrow_state::StateBackend;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flaw {
    None,
    /// Edits ignore CRLF: "\n" in old never matches a CRLF file.
    CrlfBlindEdit,
    /// `truncated` is set when the listing is exactly at the limit.
    TruncatedAtLimit,
    /// glob returns a directory's files before a sibling file sorting earlier by bytes.
    WalkOrderGlob,
    /// edit reads, awaits, then writes: concurrent edits lose updates.
    ReadModifyWriteEdit,
    /// A write past the max file size stores the first bytes, then refuses.
    PartialWriteWhenTooLarge,
    /// grep skips hidden files, as ripgrep does by default.
    GrepSkipsHidden,
    /// ls reports one fixed modified_at: a replace never moves it.
    FrozenModifiedAt,
    /// A backslash in a name is taken as a separator (`C:\x` becomes `C:/x`).
    BackslashIsSeparator,
    /// edit reads, blocks the thread a moment (no await), then writes: only
    /// tasks on two threads at once lose updates.
    BlockingReadModifyWriteEdit,
    /// A bad grep pattern is refused with a sentence of its own, not the compiler's reason.
    GrepRefusalWithoutReason,
    /// A command killed at its timeout returns 124 with some output but no note.
    TimeoutWithoutNote,
}

struct Mutant {
    inner: StateBackend,
    flaw: Flaw,
}

fn limits() -> Limits {
    Limits {
        max_file_size: 4096,
        max_results: 100,
    }
}

#[async_trait]
impl Backend for Mutant {
    fn capabilities(&self) -> Capabilities {
        let mut caps = self.inner.capabilities();
        caps.exec = true;
        caps
    }

    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        Some(self)
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let mut listing = self.inner.ls(ctx, dir, limit).await?;
        if self.flaw == Flaw::TruncatedAtLimit && listing.entries.len() == limit {
            listing.truncated = true;
        }
        if self.flaw == Flaw::FrozenModifiedAt {
            for entry in &mut listing.entries {
                if entry.modified_at.is_some() {
                    entry.modified_at = Some("2026-01-01T00:00:00Z".to_owned());
                }
            }
        }
        Ok(listing)
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.inner.read(ctx, path, offset, limit).await
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.inner.read_bytes(ctx, path).await
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        if self.flaw == Flaw::BackslashIsSeparator && path.as_str().contains('\\') {
            let path = VPath::parse(&path.as_str().replace('\\', "/"))?;
            return self.inner.write_bytes(ctx, &path, bytes).await;
        }
        let max = limits().max_file_size as usize;
        if self.flaw == Flaw::PartialWriteWhenTooLarge && bytes.len() > max {
            self.inner.write_bytes(ctx, path, &bytes[..max]).await?;
            return Err(Error::too_large(path, bytes.len() as u64, max as u64));
        }
        self.inner.write_bytes(ctx, path, bytes).await
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        match self.flaw {
            Flaw::CrlfBlindEdit => {
                let bytes = self.inner.read_bytes(ctx, path).await?;
                let text = text::decode_text(path, &bytes)?;
                let count = text.matches(old).count();
                if count == 0 {
                    return Err(Error::invalid_argument("not found"));
                }
                self.inner
                    .write(
                        ctx,
                        path,
                        &text.replacen(old, new, if all { count } else { 1 }),
                    )
                    .await?;
                Ok(text::edit_result(path, count))
            }
            Flaw::ReadModifyWriteEdit => {
                let bytes = self.inner.read_bytes(ctx, path).await?;
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                let (out, count) = text::apply_edit(path, &bytes, old, new, all)?;
                self.inner.write_bytes(ctx, path, &out).await?;
                Ok(text::edit_result(path, count))
            }
            Flaw::BlockingReadModifyWriteEdit => {
                let bytes = self.inner.read_bytes(ctx, path).await?;
                std::thread::sleep(Duration::from_millis(2));
                let (out, count) = text::apply_edit(path, &bytes, old, new, all)?;
                self.inner.write_bytes(ctx, path, &out).await?;
                Ok(text::edit_result(path, count))
            }
            _ => self.inner.edit(ctx, path, old, new, all).await,
        }
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.inner.delete(ctx, path).await
    }

    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.inner.make_dir(ctx, path, parents).await
    }

    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.inner.delete_tree(ctx, path).await
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let mut found = self.inner.glob(ctx, pattern, under, limit).await?;
        if self.flaw == Flaw::WalkOrderGlob {
            found
                .files
                .sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        }
        Ok(found)
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let result = self.inner.grep(ctx, query, under, limit).await;
        let mut result = match result {
            Err(e)
                if self.flaw == Flaw::GrepRefusalWithoutReason
                    && e.kind() == ErrorKind::InvalidArgument =>
            {
                return Err(Error::invalid_argument(
                    "the grep pattern was refused here.",
                ));
            }
            other => other?,
        };
        if self.flaw == Flaw::GrepSkipsHidden {
            result.matches.retain(|m| !m.path.contains("/."));
        }
        Ok(result)
    }
}

/// Only the timeout scenario's command is scripted: enough to show its check has teeth.
#[async_trait]
impl Sandbox for Mutant {
    async fn execute(
        &self,
        _ctx: &FileContext,
        command: &str,
        _timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        if !command.contains("sleep 30") {
            return Err(Error::invalid_argument("the mutant runs no such command"));
        }
        let output = match self.flaw {
            Flaw::TimeoutWithoutNote => "killed\n",
            _ => "before\n\n[command timed out after 1 s and was killed]",
        };
        Ok(ExecuteResponse {
            output: output.to_owned(),
            exit_code: Some(124),
            truncated: false,
        })
    }
}

/// Runs scenario `name` on a fresh mutant with `flaw`; Ok(true) when it passed.
async fn passes(name: &str, flaw: Flaw) -> bool {
    let scenario = find(name).unwrap_or_else(|| panic!("no scenario {name}"));
    let fixture = Fixture::new(Arc::new(Mutant {
        inner: StateBackend::with_limits(limits()),
        flaw,
    }));
    let cx: Ctx = fixture.ctx();
    match (scenario.run)(fixture.backend().as_ref(), &cx).await {
        Ok(Pass::Passed) => true,
        Ok(Pass::Skipped(reason)) => panic!("{name} skipped on the mutant: {reason}"),
        Err(e) => {
            eprintln!("{name} on {flaw:?}: {e}");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_flaw_is_caught_by_its_scenario() {
    for (flaw, scenario) in [
        (Flaw::CrlfBlindEdit, "edit_crlf_preserves_endings"),
        (Flaw::TruncatedAtLimit, "limits_ls_truncation"),
        (Flaw::WalkOrderGlob, "glob_sorted_by_full_path"),
        (
            Flaw::ReadModifyWriteEdit,
            "concurrency_edits_lose_no_update",
        ),
        (
            Flaw::PartialWriteWhenTooLarge,
            "limits_write_past_max_size_is_too_large",
        ),
        (Flaw::GrepSkipsHidden, "grep_searches_hidden_files"),
        (
            Flaw::FrozenModifiedAt,
            "write_replace_moves_modified_at_forward",
        ),
        (Flaw::BackslashIsSeparator, "paths_vpath_parsing_rules"),
        (
            Flaw::BlockingReadModifyWriteEdit,
            "concurrency_edits_lose_no_update",
        ),
        (
            Flaw::BlockingReadModifyWriteEdit,
            "concurrency_replace_all_edits_all_land",
        ),
        (
            Flaw::GrepRefusalWithoutReason,
            "grep_bad_regex_is_invalid_argument",
        ),
        (
            Flaw::TimeoutWithoutNote,
            "sandbox_timeout_exits_124_with_note",
        ),
    ] {
        assert!(
            passes(scenario, Flaw::None).await,
            "{scenario} fails on the flawless backend"
        );
        assert!(
            !passes(scenario, flaw).await,
            "{scenario} does not catch {flaw:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_says_what_was_expected_and_what_came_back() {
    let scenario = find("edit_crlf_preserves_endings").unwrap();
    let fixture = Fixture::new(Arc::new(Mutant {
        inner: StateBackend::new(),
        flaw: Flaw::CrlfBlindEdit,
    }));
    let cx = fixture.ctx();
    let err = (scenario.run)(fixture.backend().as_ref(), &cx)
        .await
        .unwrap_err();
    assert!(err.location().file().ends_with("crlf.rs"), "{err}");
    assert!(err.message().contains("invalid_argument"), "{err}");
}

#[test]
fn model_check_catches_a_flaw_and_shows_the_sequence() {
    let flawless = burrow_conformance::check_against_model(
        || async {
            Fixture::new(Arc::new(Mutant {
                inner: StateBackend::with_limits(limits()),
                flaw: Flaw::None,
            }))
        },
        100,
    );
    assert!(flawless.is_ok(), "{flawless:?}");
    let err = burrow_conformance::check_against_model(
        || async {
            Fixture::new(Arc::new(Mutant {
                inner: StateBackend::with_limits(limits()),
                flaw: Flaw::TruncatedAtLimit,
            }))
        },
        1000,
    )
    .unwrap_err();
    assert!(err.message().contains("smallest sequence found"), "{err}");
    assert!(err.message().contains("Ls("), "{err}");
}
