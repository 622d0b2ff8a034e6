//! Checkpoints taken by the runner before each batch that changes files, rewinds that restore the files byte for byte and move the conversation back (the next run's request holds the earlier conversation), forks, and rewinds cut short after their intent (failpoints) finished by running them again: on the memory, SQLite and PostgreSQL stores.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_backend::{Backend, ErrorKind};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::checkpoint::{
    self, CheckpointErrorKind, Checkpointer, RewindMode, RewindOptions,
};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{Runner, RunnerConfig};
use burrow_runtime::session::{Commit, HistoryItem, Scope, ThreadKey, Write};
use burrow_runtime::tool::ToolRegistry;
use burrow_runtime::tools::Toolset;
use burrow_state::StateBackend;
use serde_json::json;

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, memory, on_every_store, sqlite};
use super::support::{ctx, p};

/// Bytes no text decoder keeps as they are.
const ORIGINAL: &[u8] = b"\x00\x01\r\n\r\xff\xfe original";

type Seen = Arc<Mutex<Vec<Vec<Message>>>>;

/// The model: for "edit", reads /a.txt and creates /b.txt, then rewrites
/// /a.txt, then answers "done"; anything else is answered "ok". Every
/// request's messages are kept in `seen`.
fn model(seen: Seen) -> ScriptedModel {
    ScriptedModel::new(move |request| {
        seen.lock().unwrap().push(request.messages.to_vec());
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .unwrap_or(0);
        let results = request.messages[last_user..]
            .iter()
            .filter(|m| matches!(m, Message::ToolResult(_)))
            .count();
        let Some(Message::User { text }) = request.messages.get(last_user) else {
            return Ok(ScriptedResponse::text("ok"));
        };
        Ok(match (text.as_str(), results) {
            ("edit", 0) => ScriptedResponse::calls()
                .call("c1", "read_file", json!({"file_path": "/a.txt"}))
                .call(
                    "c2",
                    "write_file",
                    json!({"file_path": "/b.txt", "content": "one"}),
                ),
            ("edit", 2) => ScriptedResponse::calls().call(
                "c3",
                "write_file",
                json!({"file_path": "/a.txt", "content": "changed"}),
            ),
            ("edit", _) => ScriptedResponse::text("done"),
            _ => ScriptedResponse::text("ok"),
        })
    })
}

struct Setup {
    runner: Runner,
    backend: Arc<StateBackend>,
    seen: Seen,
    thread: ThreadKey,
}

async fn setup(fx: &Fixture) -> Setup {
    let backend = Arc::new(StateBackend::new());
    backend
        .write_bytes(&ctx(), &p("/a.txt"), ORIGINAL)
        .await
        .unwrap();
    let dynamic: Arc<dyn Backend> = backend.clone();
    let mut tools = ToolRegistry::new();
    tools.add_toolset(Arc::new(Toolset::new(dynamic.clone(), ctx())));
    let seen: Seen = Arc::default();
    let agent = Agent::new(Arc::new(model(seen.clone()))).with_tools(tools);
    let config = RunnerConfig::default().with_checkpoints(Checkpointer::new(dynamic, ctx()));
    Setup {
        runner: Runner::with_config(agent, fx.store.clone(), config),
        backend,
        seen,
        thread: Scope::new("tenant-a", "workspace-1").thread("t1"),
    }
}

async fn run(s: &Setup, text: &str) {
    let run = super::support::start_run(&s.runner, &s.thread, "alice", text).await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    s.runner.drain().await;
}

async fn bytes(backend: &StateBackend, path: &str) -> Option<Vec<u8>> {
    match backend.read_bytes(&ctx(), &p(path)).await {
        Ok(b) => Some(b),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => panic!("reading {path}: {e}"),
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::User { text } => format!("user:{text}"),
            Message::Assistant { .. } => {
                let calls: Vec<String> = m.tool_calls().map(|c| c.id.clone()).collect();
                if calls.is_empty() {
                    format!("assistant:{m:?}").chars().take(60).collect()
                } else {
                    format!("calls:{}", calls.join(","))
                }
            }
            Message::ToolResult(r) => format!("result:{}", r.call_id),
            Message::System { text } => format!("system:{text}"),
            other => format!("{other:?}"),
        })
        .collect()
}

async fn a_run_checkpoints_each_batch_and_a_rewind_restores_files_and_conversation(fx: Fixture) {
    let s = setup(&fx).await;
    run(&s, "edit").await;
    assert_eq!(
        bytes(&s.backend, "/a.txt").await.as_deref(),
        Some(&b"changed"[..])
    );
    assert_eq!(
        bytes(&s.backend, "/b.txt").await.as_deref(),
        Some(&b"one"[..])
    );

    // One checkpoint before each batch that changes files, holding the pre-images.
    let ks = fx.store.checkpoints(&s.thread).await.unwrap();
    assert_eq!(ks.len(), 2, "{ks:?}");
    assert_eq!(ks[0].paths, ["/b.txt"]);
    assert_eq!(ks[1].paths, ["/a.txt"]);
    assert_eq!(ks[0].metadata["tools"], json!(["write_file"]));
    assert_eq!(ks[1].turn, Some(2));
    let before_two = fx
        .store
        .checkpoint_files(&s.thread, &ks[1].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before_two[0].bytes.as_deref(), Some(ORIGINAL));
    let full_before = fx.store.history(&s.thread, 0).await.unwrap().len();

    // Rewind to before the second batch: /a.txt has its bytes back, /b.txt stays.
    let rewound = checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &ks[1].id,
        &RewindOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(rewound.restored, ["/a.txt"]);
    assert!(rewound.conversation);
    assert_eq!(bytes(&s.backend, "/a.txt").await.as_deref(), Some(ORIGINAL));
    assert_eq!(
        bytes(&s.backend, "/b.txt").await.as_deref(),
        Some(&b"one"[..])
    );
    assert!(fx.store.claim(&s.thread).await.unwrap().is_none());
    let view = checkpoint::load_view(fx.store.as_ref(), &s.thread)
        .await
        .unwrap();
    assert_eq!(
        texts(&view),
        ["user:edit", "calls:c1,c2", "result:c1", "result:c2"]
    );
    // Later entries stay in the store, reachable by position.
    let full = fx.store.history(&s.thread, 0).await.unwrap();
    assert_eq!(full.len(), full_before + 1);
    assert!(matches!(
        full.last().unwrap().item,
        HistoryItem::Rewind { .. }
    ));
    assert!(
        full.iter()
            .any(|e| e.message.tool_calls().any(|c| c.id == "c3"))
    );

    // The next run's request holds the conversation at the checkpoint.
    s.seen.lock().unwrap().clear();
    run(&s, "again").await;
    let first = s.seen.lock().unwrap()[0].clone();
    assert_eq!(
        texts(&first),
        [
            "user:edit",
            "calls:c1,c2",
            "result:c1",
            "result:c2",
            "user:again"
        ]
    );

    // The undo checkpoint brings the files back as they stood before the rewind.
    let undo = rewound.undo_checkpoint.unwrap();
    let options = RewindOptions {
        mode: RewindMode::FilesOnly,
        ..RewindOptions::default()
    };
    checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &undo,
        &options,
    )
    .await
    .unwrap();
    assert_eq!(
        bytes(&s.backend, "/a.txt").await.as_deref(),
        Some(&b"changed"[..])
    );
    // Files only: the conversation goes on as it was.
    let view = checkpoint::load_view(fx.store.as_ref(), &s.thread)
        .await
        .unwrap();
    assert_eq!(
        texts(&view).last().map(String::as_str),
        Some("assistant:Assistant { parts: [Text { text: \"ok\" }] }")
    );

    // Conversation only, to before the first batch: files stay.
    let options = RewindOptions {
        mode: RewindMode::ConversationOnly,
        ..RewindOptions::default()
    };
    let back = checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &ks[0].id,
        &options,
    )
    .await
    .unwrap();
    assert!(back.restored.is_empty() && back.undo_checkpoint.is_none());
    assert_eq!(
        bytes(&s.backend, "/a.txt").await.as_deref(),
        Some(&b"changed"[..])
    );
    assert_eq!(
        bytes(&s.backend, "/b.txt").await.as_deref(),
        Some(&b"one"[..])
    );
    let view = checkpoint::load_view(fx.store.as_ref(), &s.thread)
        .await
        .unwrap();
    assert_eq!(view.len(), usize::try_from(ks[0].history_len).unwrap());

    // Both, to before the first batch: /b.txt, created by it, is gone; /a.txt original.
    checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &ks[0].id,
        &RewindOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(bytes(&s.backend, "/b.txt").await, None);
    assert_eq!(bytes(&s.backend, "/a.txt").await.as_deref(), Some(ORIGINAL));
}

async fn a_fork_starts_a_new_thread_from_a_checkpoint_and_the_original_is_untouched(fx: Fixture) {
    let s = setup(&fx).await;
    run(&s, "edit").await;
    let ks = fx.store.checkpoints(&s.thread).await.unwrap();
    let original = fx.store.history(&s.thread, 0).await.unwrap();
    let new = s.thread.scope.thread("t2");
    let n = checkpoint::fork(fx.store.as_ref(), &s.thread, &ks[1].id, &new)
        .await
        .unwrap();
    assert_eq!(n, 4);
    let forked = checkpoint::load_view(fx.store.as_ref(), &new)
        .await
        .unwrap();
    assert_eq!(
        texts(&forked),
        ["user:edit", "calls:c1,c2", "result:c1", "result:c2"]
    );
    assert_eq!(fx.store.history(&s.thread, 0).await.unwrap(), original);
    assert_eq!(
        bytes(&s.backend, "/a.txt").await.as_deref(),
        Some(&b"changed"[..])
    );
    // A fork into a thread with a conversation, or from an unknown checkpoint, is refused.
    let again = checkpoint::fork(fx.store.as_ref(), &s.thread, &ks[1].id, &new)
        .await
        .unwrap_err();
    assert_eq!(again.kind(), CheckpointErrorKind::InvalidState);
    let unknown = checkpoint::fork(
        fx.store.as_ref(),
        &s.thread,
        "ck_none",
        &s.thread.scope.thread("t3"),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.kind(), CheckpointErrorKind::NotFound);
    // A run in the fork goes on from its conversation.
    s.seen.lock().unwrap().clear();
    let run = super::support::start_run(&s.runner, &new, "alice", "hello").await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    s.runner.drain().await;
    let first = s.seen.lock().unwrap()[0].clone();
    assert_eq!(texts(&first).last().map(String::as_str), Some("user:hello"));
    assert_eq!(first.len(), 5);
}

async fn a_rewind_of_a_running_thread_is_refused_and_changes_nothing(fx: Fixture) {
    let s = setup(&fx).await;
    run(&s, "edit").await;
    let ks = fx.store.checkpoints(&s.thread).await.unwrap();
    // A run holds the claim: busy. A run left running (its claim lapsed): invalid state.
    let claim = match fx
        .store
        .acquire_claim(&s.thread, "runner-x", Duration::from_secs(30))
        .await
        .unwrap()
    {
        burrow_runtime::session::ClaimAttempt::Granted(c) => c,
        other => panic!("{other:?}"),
    };
    let busy = checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &ks[0].id,
        &RewindOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(busy.kind(), CheckpointErrorKind::Busy);
    let posted = fx.store.messages(&s.thread, 0, 10).await.unwrap();
    fx.store
        .commit(
            &s.thread,
            Commit::new().fenced(claim.fence()).write(Write::StartRun {
                run_id: "run-left".into(),
                trigger: burrow_runtime::session::Trigger::Api,
                requested_by: None,
                message_ids: vec![posted[0].id.clone()],
                labels: Default::default(),
            }),
        )
        .await
        .unwrap();
    fx.clock.advance(Duration::from_secs(60));
    let running = checkpoint::rewind(
        fx.store.as_ref(),
        s.backend.as_ref(),
        &ctx(),
        &s.thread,
        &ks[0].id,
        &RewindOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(running.kind(), CheckpointErrorKind::InvalidState);
    assert!(
        running.message().contains("cannot be rewound"),
        "{}",
        running.message()
    );
    assert_eq!(
        bytes(&s.backend, "/a.txt").await.as_deref(),
        Some(&b"changed"[..])
    );
    assert_eq!(fx.store.checkpoints(&s.thread).await.unwrap().len(), 2);
    assert!(
        fx.store
            .thread(&s.thread)
            .await
            .unwrap()
            .unwrap()
            .rewind
            .is_none()
    );
}

on_every_store!(
    a_run_checkpoints_each_batch_and_a_rewind_restores_files_and_conversation,
    a_fork_starts_a_new_thread_from_a_checkpoint_and_the_original_is_untouched,
    a_rewind_of_a_running_thread_is_refused_and_changes_nothing,
);

/// Rewinds stopped for good (failpoints) after their intent, or after
/// restoring the files: no run starts meanwhile, and running the rewind again
/// (once its claim lapsed) finishes it, once.
#[cfg(feature = "failpoints")]
mod cut_short {
    use super::*;
    use burrow_runtime::checkpoint::RewindStep;
    use burrow_runtime::session::{ClaimAttempt, Trigger};

    async fn cut_at(fx: Fixture, step: RewindStep) {
        let s = setup(&fx).await;
        run(&s, "edit").await;
        let ks = fx.store.checkpoints(&s.thread).await.unwrap();
        let (reached_tx, reached_rx) = std::sync::mpsc::channel();
        let reached_tx = Mutex::new(reached_tx);
        let options = RewindOptions {
            crash_at: Some(Arc::new(move |at| {
                let crash = at == step;
                if crash {
                    let _ = reached_tx.lock().unwrap().send(at);
                }
                crash
            })),
            ..RewindOptions::default()
        };
        let (store, backend, thread, to) = (
            fx.store.clone(),
            s.backend.clone(),
            s.thread.clone(),
            ks[0].id.clone(),
        );
        let task = tokio::spawn(async move {
            let _ = checkpoint::rewind(
                store.as_ref(),
                backend.as_ref(),
                &ctx(),
                &thread,
                &to,
                &options,
            )
            .await;
        });
        let reached = tokio::task::spawn_blocking(move || reached_rx.recv().unwrap())
            .await
            .unwrap();
        assert_eq!(reached, step);
        task.abort();
        let _ = task.await;

        let info = fx.store.thread(&s.thread).await.unwrap().unwrap();
        assert_eq!(
            info.rewind.as_ref().map(|r| r.checkpoint_id.as_str()),
            Some(ks[0].id.as_str())
        );
        // The conversation has not moved; the files are old (Begun) or new (Restored).
        let view = checkpoint::load_view(fx.store.as_ref(), &s.thread)
            .await
            .unwrap();
        assert_eq!(view.last(), Some(&Message::assistant_text("done")));
        let b = bytes(&s.backend, "/b.txt").await;
        match step {
            RewindStep::Begun => assert_eq!(b.as_deref(), Some(&b"one"[..])),
            RewindStep::Restored => assert_eq!(b, None),
        }
        // No run starts on the half-done rewind (once the dead rewind's claim lapsed).
        fx.clock.advance(Duration::from_secs(60));
        let ClaimAttempt::Granted(claim) = fx
            .store
            .acquire_claim(&s.thread, "another-runner", Duration::from_secs(30))
            .await
            .unwrap()
        else {
            panic!("the dead rewind's claim did not lapse");
        };
        let posted = fx.store.messages(&s.thread, 0, 10).await.unwrap();
        let refused = fx
            .store
            .commit(
                &s.thread,
                Commit::new().fenced(claim.fence()).write(Write::StartRun {
                    run_id: "run-x".into(),
                    trigger: Trigger::Api,
                    requested_by: None,
                    message_ids: vec![posted[0].id.clone()],
                    labels: Default::default(),
                }),
            )
            .await
            .unwrap_err();
        assert_eq!(
            refused.kind(),
            burrow_runtime::session::StoreErrorKind::InvalidState
        );
        assert!(fx.store.release_claim(&s.thread, &claim).await.unwrap());
        // Running it again finishes it: new files, new conversation, no intent.
        let done = checkpoint::rewind(
            fx.store.as_ref(),
            s.backend.as_ref(),
            &ctx(),
            &s.thread,
            &ks[0].id,
            &RewindOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(done.finished_earlier.as_deref(), Some(ks[0].id.as_str()));
        assert_eq!(bytes(&s.backend, "/b.txt").await, None);
        assert_eq!(bytes(&s.backend, "/a.txt").await.as_deref(), Some(ORIGINAL));
        assert!(
            fx.store
                .thread(&s.thread)
                .await
                .unwrap()
                .unwrap()
                .rewind
                .is_none()
        );
        let view = checkpoint::load_view(fx.store.as_ref(), &s.thread)
            .await
            .unwrap();
        assert_eq!(view.len(), usize::try_from(ks[0].history_len).unwrap());
        // Exactly one rewind entry: the re-run did not rewind twice.
        let entries = fx.store.history(&s.thread, 0).await.unwrap();
        let rewinds = entries
            .iter()
            .filter(|e| matches!(e.item, HistoryItem::Rewind { .. }))
            .count();
        assert_eq!(rewinds, 1);
        run(&s, "again").await;
    }

    async fn a_rewind_cut_after_its_intent_is_finished_by_running_it_again(fx: Fixture) {
        cut_at(fx, RewindStep::Begun).await;
    }

    async fn a_rewind_cut_after_restoring_is_finished_by_running_it_again(fx: Fixture) {
        cut_at(fx, RewindStep::Restored).await;
    }

    on_every_store!(
        a_rewind_cut_after_its_intent_is_finished_by_running_it_again,
        a_rewind_cut_after_restoring_is_finished_by_running_it_again,
    );
}

/// A file of schema 2 (checkpoints without files) is upgraded when opened:
/// its checkpoints are listed with no files, a rewind to one moves the
/// conversation, and new checkpoints keep their files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_2_sqlite_file_gains_checkpoint_files() {
    use burrow_runtime::session::{ClaimAttempt, ManualClock, SqliteOptions, SqliteStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let clock = Arc::new(ManualClock::default());
    let t = Scope::new("tenant-a", "workspace-1").thread("t1");
    {
        let store = SqliteStore::open_with(&path, clock.clone(), SqliteOptions::default()).unwrap();
        let ClaimAttempt::Granted(c) = store
            .acquire_claim(&t, "h", Duration::from_secs(30))
            .await
            .unwrap()
        else {
            panic!("claim");
        };
        use burrow_runtime::session::SessionStore as _;
        store
            .commit(
                &t,
                Commit::new()
                    .fenced(c.fence())
                    .write(Write::AppendHistory {
                        run_id: None,
                        items: vec![HistoryItem::Message {
                            message: Message::user("one"),
                        }],
                    })
                    .write(Write::save_checkpoint("old", Some("from schema 2".into())))
                    .write(Write::AppendHistory {
                        run_id: None,
                        items: vec![HistoryItem::Message {
                            message: Message::user("two"),
                        }],
                    }),
            )
            .await
            .unwrap();
        store.release_claim(&t, &c).await.unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE session_checkpoint_files; PRAGMA user_version = 2;")
        .unwrap();
    drop(conn);
    use burrow_runtime::session::SessionStore as _;
    let store = SqliteStore::open_with(&path, clock, SqliteOptions::default()).unwrap();
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
    let ks = store.checkpoints(&t).await.unwrap();
    assert_eq!(ks.len(), 1);
    assert!(ks[0].paths.is_empty() && ks[0].metadata.is_empty() && ks[0].turn.is_none());
    assert_eq!(
        store.checkpoint_files(&t, "old").await.unwrap(),
        Some(Vec::new())
    );
    let backend = StateBackend::new();
    let rewound = checkpoint::rewind(
        &store,
        &backend,
        &ctx(),
        &t,
        "old",
        &RewindOptions::default(),
    )
    .await
    .unwrap();
    assert!(rewound.restored.is_empty());
    let view = checkpoint::load_view(&store, &t).await.unwrap();
    assert_eq!(view, vec![Message::user("one")]);
    let id = checkpoint::take(&store, None, &t, Some("new".into()), &[])
        .await
        .unwrap();
    assert_eq!(
        store
            .checkpoints(&t)
            .await
            .unwrap()
            .last()
            .map(|k| k.id.clone()),
        Some(id)
    );
}
