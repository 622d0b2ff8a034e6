//! The scenarios themselves: each sentence of `ArtifactStore`'s `# Behavior`, as plain async functions over a [`Fixture`].

use std::sync::Arc;

use json_patch::Patch;
use serde_json::{Value, json};

use super::{Fixture, Outcome, ScenarioError, ensure, refused};
use crate::change::Change;
use crate::error::ArtifactErrorKind;
use crate::store::{Actor, ArtifactStore, Committed, EventKind, ProposalStatus};

fn alice() -> Actor {
    Actor::person("alice")
}

fn agent() -> Actor {
    Actor::agent("assistant", "run-1")
}

fn patch(ops: Value) -> Result<Patch, ScenarioError> {
    serde_json::from_value(ops).map_err(|e| ScenarioError::new(format!("a bad test patch: {e}")))
}

fn note(text: &str) -> Value {
    json!({"title": "Notes", "text": text, "tags": ["a", "b"]})
}

async fn create(fx: &Fixture, kind: &str, snapshot: Value) -> Result<Committed, ScenarioError> {
    Ok(fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Create {
                kind: kind.to_owned(),
                snapshot,
            },
        )
        .await?)
}

async fn apply_patch(
    fx: &Fixture,
    id: &str,
    base: u64,
    ops: Value,
) -> Result<Result<Committed, crate::ArtifactError>, ScenarioError> {
    let patch = patch(ops)?;
    Ok(fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Patch {
                id: id.to_owned(),
                base_version: base,
                patch,
                summary: None,
            },
        )
        .await)
}

fn edit(id: &str, base: u64, field: &str, old: &str, new: &str) -> Change {
    Change::EditText {
        id: id.to_owned(),
        base_version: base,
        field: field.to_owned(),
        old: old.to_owned(),
        new: new.to_owned(),
        summary: Some("an edit".to_owned()),
    }
}

/// The head is unchanged at `version` with `snapshot`, and the log has `events` events.
async fn unchanged(
    fx: &Fixture,
    id: &str,
    version: u64,
    snapshot: &Value,
    events: usize,
) -> Outcome {
    let head = fx.store().get(&fx.scope(), id).await?;
    ensure(
        head.version == version && head.snapshot == *snapshot,
        || {
            format!(
                "a refused change moved {id} to v{} {}",
                head.version, head.snapshot
            )
        },
    )?;
    let history = fx.store().history(&fx.scope(), id).await?;
    ensure(history.len() as u64 == version, || {
        format!(
            "a refused change wrote a revision: {} revisions",
            history.len()
        )
    })?;
    let log = fx.store().events(&fx.scope(), 0, 1000).await?;
    ensure(log.len() == events, || {
        format!("a refused change wrote an event: {} events", log.len())
    })
}

/// A patch op on a fresh note: the new head has `want` at version 2.
async fn patch_op(fx: &Fixture, ops: Value, want: Value) -> Outcome {
    let c = create(fx, "note", note("hello")).await?;
    let done = apply_patch(fx, &c.artifact.id, 1, ops).await??;
    ensure(done.artifact.version == 2, || {
        format!("a patch made v{}", done.artifact.version)
    })?;
    ensure(done.artifact.snapshot == want, || {
        format!("the patched snapshot is {}", done.artifact.snapshot)
    })?;
    let read = fx.store().get(&fx.scope(), &c.artifact.id).await?;
    ensure(read == done.artifact, || {
        "a read after the patch differs from what the patch returned".to_owned()
    })
}

pub(super) async fn create_and_read(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("hello")).await?;
    let a = &c.artifact;
    ensure(
        a.id == "note-1" && a.version == 1 && a.kind == "note",
        || format!("the create made {} v{} of {}", a.id, a.version, a.kind),
    )?;
    ensure(
        a.created_by == alice() && a.updated_by == alice() && !a.archived,
        || format!("the create's attribution is {:?}", a),
    )?;
    let read = fx.store().get(&fx.scope(), "note-1").await?;
    ensure(read == *a, || format!("read {read:?}, created {a:?}"))?;
    let rev = fx.store().revision(&fx.scope(), "note-1", 1).await?;
    ensure(
        rev.version == 1 && rev.op == "create" && rev.snapshot == note("hello"),
        || format!("revision 1 is {rev:?}"),
    )?;
    let second = create(fx, "list", json!({"items": {}})).await?;
    ensure(second.artifact.id == "list-2", || {
        format!("the second create's id is {}", second.artifact.id)
    })
}

pub(super) async fn create_refuses_unknown_kinds_and_invalid_snapshots(fx: &Fixture) -> Outcome {
    let s = fx.store();
    let unknown = s
        .submit(
            &fx.scope(),
            &alice(),
            Change::Create {
                kind: "memo".into(),
                snapshot: json!({}),
            },
        )
        .await;
    refused(unknown, "a create of an unknown kind", |k| {
        *k == ArtifactErrorKind::UnknownKind
    })?;
    let invalid = s
        .submit(
            &fx.scope(),
            &alice(),
            Change::Create {
                kind: "note".into(),
                snapshot: json!({"title": "t", "text": 5}),
            },
        )
        .await;
    let e = refused(
        invalid,
        "an invalid create",
        |k| matches!(k, ArtifactErrorKind::Validation { paths } if paths == &["/text".to_owned()]),
    )?;
    ensure(e.message().contains("/text"), || {
        format!("the refusal does not name the path: {}", e.message())
    })?;
    let big = "x".repeat(s.kinds().max_snapshot_bytes() + 1);
    let too_large = s
        .submit(
            &fx.scope(),
            &alice(),
            Change::Create {
                kind: "note".into(),
                snapshot: json!({"title": "t", "text": big}),
            },
        )
        .await;
    refused(too_large, "an oversized create", |k| {
        matches!(k, ArtifactErrorKind::TooLarge { .. })
    })?;
    let listed = s.list(&fx.scope(), None, true).await?;
    let log = s.events(&fx.scope(), 0, 100).await?;
    ensure(listed.is_empty() && log.is_empty(), || {
        format!(
            "refused creates left {} artifacts and {} events",
            listed.len(),
            log.len()
        )
    })
}

pub(super) async fn patch_add(fx: &Fixture) -> Outcome {
    patch_op(
        fx,
        json!([{"op": "add", "path": "/tags/1", "value": "new"}, {"op": "add", "path": "/count", "value": 3}]),
        json!({"title": "Notes", "text": "hello", "tags": ["a", "new", "b"], "count": 3}),
    )
    .await
}

pub(super) async fn patch_remove(fx: &Fixture) -> Outcome {
    patch_op(
        fx,
        json!([{"op": "remove", "path": "/tags/0"}]),
        json!({"title": "Notes", "text": "hello", "tags": ["b"]}),
    )
    .await
}

pub(super) async fn patch_replace(fx: &Fixture) -> Outcome {
    patch_op(
        fx,
        json!([{"op": "replace", "path": "/title", "value": "Plan"}]),
        json!({"title": "Plan", "text": "hello", "tags": ["a", "b"]}),
    )
    .await
}

pub(super) async fn patch_move(fx: &Fixture) -> Outcome {
    patch_op(
        fx,
        json!([{"op": "move", "from": "/tags/0", "path": "/tags/1"}]),
        json!({"title": "Notes", "text": "hello", "tags": ["b", "a"]}),
    )
    .await
}

pub(super) async fn patch_copy(fx: &Fixture) -> Outcome {
    patch_op(
        fx,
        json!([{"op": "copy", "from": "/title", "path": "/tags/-"}]),
        json!({"title": "Notes", "text": "hello", "tags": ["a", "b", "Notes"]}),
    )
    .await
}

pub(super) async fn patch_test_passes_and_fails(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("hello")).await?;
    let id = &c.artifact.id;
    let passed = apply_patch(
        fx,
        id,
        1,
        json!([{"op": "test", "path": "/title", "value": "Notes"}, {"op": "replace", "path": "/text", "value": "bye"}]),
    )
    .await??;
    ensure(passed.artifact.snapshot["text"] == "bye", || {
        format!(
            "a passing test did not let the patch apply: {}",
            passed.artifact.snapshot
        )
    })?;
    let failed = apply_patch(
        fx,
        id,
        2,
        json!([{"op": "replace", "path": "/text", "value": "never"}, {"op": "test", "path": "/title", "value": "Other"}]),
    )
    .await?;
    refused(failed, "a patch whose test fails", |k| {
        *k == ArtifactErrorKind::Patch
    })?;
    unchanged(fx, id, 2, &passed.artifact.snapshot, 2).await
}

pub(super) async fn a_patch_that_cannot_apply_changes_nothing(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("hello")).await?;
    let r = apply_patch(
        fx,
        &c.artifact.id,
        1,
        json!([{"op": "replace", "path": "/title", "value": "x"}, {"op": "remove", "path": "/missing"}]),
    )
    .await?;
    let e = refused(r, "a patch removing a missing path", |k| {
        *k == ArtifactErrorKind::Patch
    })?;
    ensure(e.message().contains("/missing"), || {
        format!("the refusal does not name the path: {}", e.message())
    })?;
    unchanged(fx, &c.artifact.id, 1, &note("hello"), 1).await
}

pub(super) async fn a_patched_snapshot_is_validated(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("hello")).await?;
    let r = apply_patch(
        fx,
        &c.artifact.id,
        1,
        json!([{"op": "add", "path": "/tags/0", "value": 7}]),
    )
    .await?;
    refused(
        r,
        "a patch breaking the schema",
        |k| matches!(k, ArtifactErrorKind::Validation { paths } if paths == &["/tags/0".to_owned()]),
    )?;
    unchanged(fx, &c.artifact.id, 1, &note("hello"), 1).await
}

pub(super) async fn text_edit_replaces_the_one_occurrence(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one two three")).await?;
    let done = fx
        .store()
        .submit(
            &fx.scope(),
            &agent(),
            edit(&c.artifact.id, 1, "/text", "two", "2"),
        )
        .await?;
    ensure(done.artifact.snapshot["text"] == "one 2 three", || {
        format!("the edit made {}", done.artifact.snapshot)
    })?;
    ensure(
        done.artifact.updated_by == agent() && done.artifact.created_by == alice(),
        || format!("the edit's attribution is {:?}", done.artifact),
    )?;
    ensure(
        done.revision.op == "edit_text" && done.revision.summary.as_deref() == Some("an edit"),
        || format!("the edit's revision is {:?}", done.revision),
    )
}

pub(super) async fn text_edit_not_found(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one two three")).await?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 1, "/text", "four", "4"),
        )
        .await;
    let e = refused(r, "an edit whose anchor is absent", |k| {
        *k == ArtifactErrorKind::Edit { occurrences: 0 }
    })?;
    ensure(e.message().contains("not found"), || e.message().to_owned())?;
    unchanged(fx, &c.artifact.id, 1, &note("one two three"), 1).await
}

pub(super) async fn text_edit_ambiguous(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("la la la")).await?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 1, "/text", "la", "lo"),
        )
        .await;
    let e = refused(r, "an edit whose anchor repeats", |k| {
        *k == ArtifactErrorKind::Edit { occurrences: 3 }
    })?;
    ensure(e.message().contains("ambiguous: it occurs 3 times"), || {
        e.message().to_owned()
    })?;
    unchanged(fx, &c.artifact.id, 1, &note("la la la"), 1).await
}

pub(super) async fn text_edit_keeps_crlf(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("a\r\nb\r\nc\r\n")).await?;
    let done = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 1, "/text", "a\nb", "x\ny\nz"),
        )
        .await?;
    ensure(
        done.artifact.snapshot["text"] == "x\r\ny\r\nz\r\nc\r\n",
        || format!("the CRLF edit made {:?}", done.artifact.snapshot["text"]),
    )?;
    let lf = create(fx, "note", note("a\nb\n")).await?;
    let done = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&lf.artifact.id, 1, "/text", "a\r\nb", "p\r\nq"),
        )
        .await?;
    ensure(done.artifact.snapshot["text"] == "p\nq\n", || {
        format!("the LF edit made {:?}", done.artifact.snapshot["text"])
    })
}

pub(super) async fn text_edit_on_a_non_string_is_refused(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("x")).await?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 1, "/tags", "a", "b"),
        )
        .await;
    refused(r, "a text edit of an array", |k| {
        *k == ArtifactErrorKind::InvalidState
    })?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 1, "text", "x", "y"),
        )
        .await;
    refused(r, "a text edit with a bad pointer", |k| {
        *k == ArtifactErrorKind::InvalidArgument
    })?;
    unchanged(fx, &c.artifact.id, 1, &note("x"), 1).await
}

pub(super) async fn archive_then_no_more_changes(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("x")).await?;
    let id = c.artifact.id.clone();
    let done = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Archive {
                id: id.clone(),
                base_version: 1,
            },
        )
        .await?;
    ensure(
        done.artifact.archived && done.artifact.version == 2 && done.revision.patch.is_empty(),
        || format!("the archive made {:?}", done.artifact),
    )?;
    let read = fx.store().get(&fx.scope(), &id).await?;
    ensure(read.archived && read.snapshot == note("x"), || {
        format!("an archived artifact reads as {read:?}")
    })?;
    let r = fx
        .store()
        .submit(&fx.scope(), &alice(), edit(&id, 2, "/text", "x", "y"))
        .await;
    refused(r, "an edit of an archived artifact", |k| {
        *k == ArtifactErrorKind::InvalidState
    })?;
    unchanged(fx, &id, 2, &note("x"), 2).await
}

pub(super) async fn revert_is_a_new_revision(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("v1")).await?;
    let id = c.artifact.id.clone();
    fx.store()
        .submit(&fx.scope(), &alice(), edit(&id, 1, "/text", "v1", "v2"))
        .await?;
    fx.store()
        .submit(&fx.scope(), &alice(), edit(&id, 2, "/text", "v2", "v3"))
        .await?;
    let done = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Revert {
                id: id.clone(),
                base_version: 3,
                to_version: 1,
            },
        )
        .await?;
    ensure(
        done.artifact.version == 4 && done.artifact.snapshot == note("v1"),
        || format!("the revert made {:?}", done.artifact),
    )?;
    let history = fx.store().history(&fx.scope(), &id).await?;
    let versions: Vec<u64> = history.iter().map(|r| r.version).collect();
    ensure(
        versions == [1, 2, 3, 4] && history[3].op == "revert",
        || format!("the history after a revert is {versions:?}"),
    )?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Revert {
                id: id.clone(),
                base_version: 4,
                to_version: 9,
            },
        )
        .await;
    refused(r, "a revert to a missing version", |k| {
        *k == ArtifactErrorKind::NotFound
    })?;
    Ok(())
}

pub(super) async fn a_stale_base_is_a_conflict_and_changes_nothing(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one")).await?;
    let id = c.artifact.id.clone();
    let v2 = fx
        .store()
        .submit(&fx.scope(), &agent(), edit(&id, 1, "/text", "one", "two"))
        .await?;
    let r = fx
        .store()
        .submit(&fx.scope(), &alice(), edit(&id, 1, "/text", "one", "uno"))
        .await;
    let e = refused(r, "an edit from a stale base", |k| {
        matches!(k, ArtifactErrorKind::Conflict { head: 2, changes_since }
            if changes_since.len() == 1 && changes_since[0].version == 2 && changes_since[0].actor == agent())
    })?;
    ensure(e.message().contains("version 2, not 1"), || {
        e.message().to_owned()
    })?;
    unchanged(fx, &id, 2, &v2.artifact.snapshot, 2).await
}

pub(super) async fn a_base_ahead_of_the_head_is_refused(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one")).await?;
    let r = fx
        .store()
        .submit(
            &fx.scope(),
            &alice(),
            edit(&c.artifact.id, 5, "/text", "one", "two"),
        )
        .await;
    refused(r, "an edit from a future base", |k| {
        *k == ArtifactErrorKind::InvalidArgument
    })?;
    unchanged(fx, &c.artifact.id, 1, &note("one"), 1).await
}

pub(super) async fn a_proposal_changes_nothing_until_applied(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("draft")).await?;
    let id = c.artifact.id.clone();
    let p = fx
        .store()
        .propose(
            &fx.scope(),
            &agent(),
            edit(&id, 1, "/text", "draft", "final"),
            "it is done",
        )
        .await?;
    ensure(
        p.id == 1 && p.status == ProposalStatus::Pending && p.rationale == "it is done",
        || format!("the proposal is {p:?}"),
    )?;
    unchanged(fx, &id, 1, &note("draft"), 2).await?;
    let pending = fx.store().proposals(&fx.scope(), true).await?;
    ensure(pending.len() == 1, || {
        format!("{} pending proposals", pending.len())
    })?;
    let done = fx.store().apply_proposal(&fx.scope(), &alice(), 1).await?;
    ensure(
        done.artifact.version == 2
            && done.artifact.snapshot["text"] == "final"
            && done.revision.proposal == Some(1)
            && done.revision.actor == agent(),
        || format!("applying the proposal made {:?}", done.revision),
    )?;
    let p = fx.store().proposal(&fx.scope(), 1).await?;
    ensure(
        p.status
            == ProposalStatus::Applied {
                by: alice(),
                artifact: id.clone(),
                version: 2,
            },
        || format!("the applied proposal reads {:?}", p.status),
    )?;
    let again = fx.store().apply_proposal(&fx.scope(), &alice(), 1).await;
    refused(again, "applying a proposal twice", |k| {
        *k == ArtifactErrorKind::InvalidState
    })?;
    let created = fx
        .store()
        .propose(
            &fx.scope(),
            &agent(),
            Change::Create {
                kind: "note".into(),
                snapshot: note("new"),
            },
            "a new note",
        )
        .await?;
    let listed = fx.store().list(&fx.scope(), None, true).await?;
    ensure(listed.len() == 1, || {
        "a proposed create made an artifact before it was applied".to_owned()
    })?;
    let made = fx
        .store()
        .apply_proposal(&fx.scope(), &alice(), created.id)
        .await?;
    ensure(
        made.artifact.version == 1 && made.artifact.created_by == agent(),
        || format!("the applied create made {:?}", made.artifact),
    )
}

pub(super) async fn a_proposal_is_rejected(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("draft")).await?;
    let p = fx
        .store()
        .propose(
            &fx.scope(),
            &agent(),
            edit(&c.artifact.id, 1, "/text", "draft", "x"),
            "why not",
        )
        .await?;
    let r = fx
        .store()
        .reject_proposal(&fx.scope(), &alice(), p.id, Some("keep the draft"))
        .await?;
    ensure(
        r.status
            == ProposalStatus::Rejected {
                by: alice(),
                reason: Some("keep the draft".into()),
            },
        || format!("the rejected proposal reads {:?}", r.status),
    )?;
    unchanged(fx, &c.artifact.id, 1, &note("draft"), 3).await?;
    let log = fx.store().events(&fx.scope(), 2, 10).await?;
    ensure(
        log.len() == 1 && log[0].kind == EventKind::Rejected { proposal: p.id },
        || format!("the rejection's event is {log:?}"),
    )?;
    let after = fx.store().apply_proposal(&fx.scope(), &alice(), p.id).await;
    refused(after, "applying a rejected proposal", |k| {
        *k == ArtifactErrorKind::InvalidState
    })?;
    let pending = fx.store().proposals(&fx.scope(), true).await?;
    let all = fx.store().proposals(&fx.scope(), false).await?;
    ensure(pending.is_empty() && all.len() == 1, || {
        format!("{} pending, {} in all", pending.len(), all.len())
    })
}

pub(super) async fn a_proposal_against_a_moved_head_conflicts(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one two")).await?;
    let id = c.artifact.id.clone();
    let p = fx
        .store()
        .propose(
            &fx.scope(),
            &agent(),
            edit(&id, 1, "/text", "one", "1"),
            "digits",
        )
        .await?;
    let moved = fx
        .store()
        .submit(&fx.scope(), &alice(), edit(&id, 1, "/text", "two", "2"))
        .await?;
    let r = fx.store().apply_proposal(&fx.scope(), &alice(), p.id).await;
    refused(r, "applying a proposal against a moved head", |k| {
        matches!(k, ArtifactErrorKind::Conflict { head: 2, .. })
    })?;
    let still = fx.store().proposal(&fx.scope(), p.id).await?;
    ensure(still.status == ProposalStatus::Pending, || {
        format!("a conflicting apply left the proposal {:?}", still.status)
    })?;
    unchanged(fx, &id, 2, &moved.artifact.snapshot, 3).await
}

pub(super) async fn an_invalid_proposal_is_refused(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("one")).await?;
    let r = fx
        .store()
        .propose(
            &fx.scope(),
            &agent(),
            edit(&c.artifact.id, 1, "/text", "zzz", "y"),
            "r",
        )
        .await;
    refused(r, "a proposal that cannot apply", |k| {
        matches!(k, ArtifactErrorKind::Edit { .. })
    })?;
    let all = fx.store().proposals(&fx.scope(), false).await?;
    ensure(all.is_empty(), || {
        "a refused proposal was recorded".to_owned()
    })?;
    unchanged(fx, &c.artifact.id, 1, &note("one"), 1).await
}

pub(super) async fn the_event_log_is_gap_free(fx: &Fixture) -> Outcome {
    let c = create(fx, "note", note("a b c")).await?;
    let id = c.artifact.id.clone();
    let s = fx.store();
    s.submit(&fx.scope(), &alice(), edit(&id, 1, "/text", "a", "A"))
        .await?;
    let _ = s
        .submit(&fx.scope(), &alice(), edit(&id, 1, "/text", "b", "B"))
        .await;
    let _ = s
        .submit(&fx.scope(), &alice(), edit(&id, 2, "/text", "zzz", "B"))
        .await;
    let p = s
        .propose(
            &fx.scope(),
            &agent(),
            edit(&id, 2, "/text", "b", "B"),
            "caps",
        )
        .await?;
    s.apply_proposal(&fx.scope(), &alice(), p.id).await?;
    s.submit(
        &fx.scope(),
        &alice(),
        Change::Archive {
            id: id.clone(),
            base_version: 3,
        },
    )
    .await?;
    let log = s.events(&fx.scope(), 0, 100).await?;
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    ensure(seqs == [1, 2, 3, 4, 5], || {
        format!("the log's seqs are {seqs:?}")
    })?;
    let versions: Vec<Option<u64>> = log
        .iter()
        .map(|e| match &e.kind {
            EventKind::Changed { version, .. } => Some(*version),
            _ => None,
        })
        .collect();
    ensure(
        versions == [Some(1), Some(2), None, Some(3), Some(4)],
        || format!("the log's versions are {versions:?}"),
    )?;
    let page = s.events(&fx.scope(), 2, 2).await?;
    let seqs: Vec<u64> = page.iter().map(|e| e.seq).collect();
    ensure(seqs == [3, 4], || {
        format!("a page after 2 of 2 is {seqs:?}")
    })
}

/// How many times two edits race.
const ROUNDS: u64 = 40;

pub(super) async fn concurrent_edits_from_one_base_apply_once(fx: &Fixture) -> Outcome {
    for round in 0..ROUNDS {
        let c = create(fx, "note", note("start")).await?;
        let id = c.artifact.id.clone();
        let scope = fx.scope();
        let stores: [Arc<dyn ArtifactStore>; 2] = [fx.shared(), fx.sibling()];
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let mut tasks = Vec::new();
        for (i, store) in stores.into_iter().enumerate() {
            let (id, scope, barrier) = (id.clone(), scope.clone(), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                // Both edits start together, each on its own worker thread.
                barrier.wait().await;
                store
                    .submit(
                        &scope,
                        &Actor::person(format!("p{i}")),
                        edit(&id, 1, "/text", "start", &format!("by {i}")),
                    )
                    .await
            }));
        }
        let mut applied = 0;
        let mut conflicts = 0;
        for t in tasks {
            match t.await {
                Ok(Ok(_)) => applied += 1,
                Ok(Err(e)) if matches!(e.kind(), ArtifactErrorKind::Conflict { head: 2, .. }) => {
                    conflicts += 1
                }
                Ok(Err(e)) => return Err(e.into()),
                Err(e) => return Err(ScenarioError::new(format!("an edit task failed: {e}"))),
            }
        }
        ensure(applied == 1 && conflicts == 1, || {
            format!("round {round}: {applied} applied, {conflicts} conflicts")
        })?;
        let head = fx.sibling().get(&scope, &id).await?;
        let history = fx.store().history(&scope, &id).await?;
        ensure(head.version == 2 && history.len() == 2, || {
            format!(
                "round {round}: head v{}, {} revisions",
                head.version,
                history.len()
            )
        })?;
    }
    let log = fx.store().events(&fx.scope(), 0, 100).await?;
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (1..=2 * ROUNDS).collect();
    ensure(seqs == want, || {
        format!("the log after the rounds is {seqs:?}")
    })
}

pub(super) async fn list_filters_by_kind_and_archived(fx: &Fixture) -> Outcome {
    let a = create(fx, "note", note("a")).await?;
    create(fx, "list", json!({"items": {}})).await?;
    create(fx, "note", note("c")).await?;
    fx.store()
        .submit(
            &fx.scope(),
            &alice(),
            Change::Archive {
                id: a.artifact.id.clone(),
                base_version: 1,
            },
        )
        .await?;
    let ids = |v: Vec<crate::Versioned>| v.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let s = fx.store();
    let all = ids(s.list(&fx.scope(), None, true).await?);
    let live = ids(s.list(&fx.scope(), None, false).await?);
    let notes = ids(s.list(&fx.scope(), Some("note"), false).await?);
    let none = ids(s.list(&fx.scope(), Some("memo"), true).await?);
    ensure(all == ["list-2", "note-1", "note-3"], || {
        format!("all: {all:?}")
    })?;
    ensure(live == ["list-2", "note-3"], || format!("live: {live:?}"))?;
    ensure(notes == ["note-3"], || format!("notes: {notes:?}"))?;
    ensure(none.is_empty(), || format!("memo: {none:?}"))
}

pub(super) async fn missing_things_are_not_found(fx: &Fixture) -> Outcome {
    let s = fx.store();
    let nf = |k: &ArtifactErrorKind| *k == ArtifactErrorKind::NotFound;
    refused(
        s.get(&fx.scope(), "note-9").await,
        "get of a missing artifact",
        nf,
    )?;
    refused(
        s.history(&fx.scope(), "note-9").await,
        "history of a missing artifact",
        nf,
    )?;
    refused(s.proposal(&fx.scope(), 4).await, "a missing proposal", nf)?;
    refused(
        s.apply_proposal(&fx.scope(), &alice(), 4).await,
        "applying a missing proposal",
        nf,
    )?;
    refused(
        s.reject_proposal(&fx.scope(), &alice(), 4, None).await,
        "rejecting a missing proposal",
        nf,
    )?;
    refused(
        s.submit(&fx.scope(), &alice(), edit("note-9", 1, "/text", "a", "b"))
            .await,
        "an edit of a missing artifact",
        nf,
    )?;
    let c = create(fx, "note", note("a")).await?;
    refused(
        s.revision(&fx.scope(), &c.artifact.id, 2).await,
        "a missing version",
        nf,
    )?;
    Ok(())
}

pub(super) async fn workspaces_are_separate(fx: &Fixture) -> Outcome {
    create(fx, "note", note("a")).await?;
    let other = burrow_runtime::session::Scope::new("t", "other");
    let s = fx.store();
    let listed = s.list(&other, None, true).await?;
    let log = s.events(&other, 0, 10).await?;
    ensure(listed.is_empty() && log.is_empty(), || {
        "another workspace sees this one's artifacts".to_owned()
    })?;
    let c = s
        .submit(
            &other,
            &alice(),
            Change::Create {
                kind: "note".into(),
                snapshot: note("b"),
            },
        )
        .await?;
    ensure(c.artifact.id == "note-1" && c.seq == 1, || {
        format!(
            "another workspace's first create is {} at seq {}",
            c.artifact.id, c.seq
        )
    })
}

pub(super) async fn history_replays_to_the_head(fx: &Fixture) -> Outcome {
    let c = create(
        fx,
        "record",
        json!({"a": 1, "list": [1, 2, 3], "text": "x\ny"}),
    )
    .await?;
    let id = c.artifact.id.clone();
    let s = fx.store();
    let steps = [
        json!([{"op": "add", "path": "/b", "value": {"c": true}}]),
        json!([{"op": "move", "from": "/list/0", "path": "/list/-"}]),
        json!([{"op": "copy", "from": "/b", "path": "/d"}, {"op": "remove", "path": "/a"}]),
    ];
    for (i, ops) in steps.into_iter().enumerate() {
        apply_patch(fx, &id, i as u64 + 1, ops).await??;
    }
    s.submit(&fx.scope(), &alice(), edit(&id, 4, "/text", "y", "z"))
        .await?;
    s.submit(
        &fx.scope(),
        &alice(),
        Change::Revert {
            id: id.clone(),
            base_version: 5,
            to_version: 2,
        },
    )
    .await?;
    let history = s.history(&fx.scope(), &id).await?;
    let head = s.get(&fx.scope(), &id).await?;
    let Some(first) = history.first() else {
        return Err(ScenarioError::new("the history is empty"));
    };
    let mut doc = first.snapshot.clone();
    for r in &history[1..] {
        json_patch::patch(&mut doc, &r.patch).map_err(|e| {
            ScenarioError::new(format!(
                "revision {}'s patch does not replay: {e}",
                r.version
            ))
        })?;
        ensure(doc == r.snapshot, || {
            format!(
                "replaying to v{} gives {doc}, not {}",
                r.version, r.snapshot
            )
        })?;
    }
    ensure(doc == head.snapshot && head.version == 6, || {
        format!(
            "the replay ends at {doc}, the head is v{} {}",
            head.version, head.snapshot
        )
    })
}

pub(super) async fn nul_in_names_is_refused(fx: &Fixture) -> Outcome {
    let s = fx.store();
    let bad = |k: &ArtifactErrorKind| *k == ArtifactErrorKind::InvalidArgument;
    let nul_scope = burrow_runtime::session::Scope::new("t", "w\0x");
    let create = Change::Create {
        kind: "note".into(),
        snapshot: note("a"),
    };
    refused(
        s.submit(&nul_scope, &alice(), create.clone()).await,
        "a create in a workspace named with NUL",
        bad,
    )?;
    refused(
        s.get(&fx.scope(), "note\0-1").await,
        "a get of an id with NUL",
        bad,
    )?;
    refused(
        s.submit(
            &fx.scope(),
            &alice(),
            edit("note\0-1", 1, "/text", "a", "b"),
        )
        .await,
        "an edit of an id with NUL",
        bad,
    )?;
    refused(
        s.events(&nul_scope, 0, 10).await,
        "events of a workspace named with NUL",
        bad,
    )?;
    // A NUL inside a snapshot's text is only data (JSON escapes it).
    let c = s
        .submit(
            &fx.scope(),
            &alice(),
            Change::Create {
                kind: "note".into(),
                snapshot: note("a\0b"),
            },
        )
        .await?;
    let read = s.get(&fx.scope(), &c.artifact.id).await?;
    ensure(read.snapshot == note("a\0b"), || {
        format!("a NUL in the text reads back as {}", read.snapshot)
    })
}
