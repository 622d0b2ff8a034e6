//! Session-store commit cost per agent turn: the two commits a durable turn with one tool call makes, on memory, SQLite and (when `BURROW_POSTGRES_URL` is set and the `postgres` feature is on) PostgreSQL.
//!
//! `cargo bench -p burrow-runtime --bench session_store` (add `--features postgres`
//! after `cargo xtask setup` for the PostgreSQL rows). One iteration is one turn on a
//! thread whose run is already started: commit 1 appends the assistant message (a
//! tool call) and records the call started with its effect key; commit 2 records the
//! call finished, appends the result by reference and records the usage. Both are
//! fenced by the thread's claim, as the runner's are. `turn_after` runs on a thread
//! that already holds 10,000 turns, to show the cost does not grow with the history.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burrow_runtime::message::{AssistantPart, Message, ToolCall, ToolResult, Usage};
use burrow_runtime::session::{
    ClaimAttempt, Commit, Fence, HistoryItem, MemoryStore, Scope, SessionStore, SqliteStore,
    ThreadKey, Trigger, Write,
};
use serde_json::json;

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

fn main() {
    divan::main();
}

struct Bench {
    rt: tokio::runtime::Runtime,
    store: Arc<dyn SessionStore>,
    thread: ThreadKey,
    fence: Fence,
    turn: AtomicU64,
    _dir: Option<tempfile::TempDir>,
}

impl Bench {
    fn new(
        store: impl FnOnce(&tokio::runtime::Runtime) -> Arc<dyn SessionStore>,
        dir: Option<tempfile::TempDir>,
    ) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = store(&rt);
        let thread = Scope::new("bench", "ws").thread("t1");
        let fence = rt.block_on(async {
            let claim = match store
                .acquire_claim(&thread, "bench", std::time::Duration::from_secs(3600))
                .await
                .unwrap()
            {
                ClaimAttempt::Granted(c) => c,
                ClaimAttempt::Busy(_) => panic!("busy"),
            };
            store
                .commit(
                    &thread,
                    Commit::new()
                        .write(Write::PostMessage {
                            id: "m1".into(),
                            author: "alice".into(),
                            kind: burrow_runtime::session::MessageKind::Message,
                            text: "go".into(),
                        })
                        .cursor_to_head("asked"),
                )
                .await
                .unwrap();
            store
                .commit(
                    &thread,
                    Commit::new()
                        .fenced(claim.fence())
                        .write(Write::StartRun {
                            run_id: "r1".into(),
                            trigger: Trigger::Message,
                            requested_by: Some("alice".into()),
                            message_ids: vec!["m1".into()],
                            labels: Default::default(),
                        })
                        .write(Write::AppendHistory {
                            run_id: Some("r1".into()),
                            items: vec![HistoryItem::Posted {
                                message_id: "m1".into(),
                            }],
                        })
                        .cursor("taken", 1),
                )
                .await
                .unwrap();
            claim.fence()
        });
        Bench {
            rt,
            store,
            thread,
            fence,
            turn: AtomicU64::new(0),
            _dir: dir,
        }
    }

    fn turn(&self) {
        let n = self.turn.fetch_add(1, Ordering::Relaxed);
        let call = format!("c{n}");
        self.rt.block_on(async {
            self.store
                .commit(
                    &self.thread,
                    Commit::new()
                        .fenced(self.fence.clone())
                        .write(Write::AppendHistory {
                            run_id: Some("r1".into()),
                            items: vec![HistoryItem::Message {
                                message: Message::Assistant {
                                    parts: vec![AssistantPart::ToolCall(ToolCall {
                                        id: call.clone(),
                                        name: "read_file".into(),
                                        arguments: json!({"file_path": "/a.txt"}),
                                    })],
                                },
                            }],
                        })
                        .write(Write::ToolStarted {
                            run_id: "r1".into(),
                            call_id: call.clone(),
                            name: "read_file".into(),
                            effect_key: Some(format!("{n:064x}")),
                        }),
                )
                .await
                .unwrap();
            self.store
                .commit(
                    &self.thread,
                    Commit::new()
                        .fenced(self.fence.clone())
                        .write(Write::ToolFinished {
                            run_id: "r1".into(),
                            call_id: call.clone(),
                            result: ToolResult {
                                call_id: call.clone(),
                                name: "read_file".into(),
                                content: "     1\tone line\n".into(),
                                is_error: false,
                            },
                        })
                        .write(Write::AppendHistory {
                            run_id: Some("r1".into()),
                            items: vec![HistoryItem::ToolResult { call_id: call }],
                        })
                        .write(Write::RecordUsage {
                            run_id: "r1".into(),
                            usage: Usage {
                                input_tokens: Some(1000),
                                output_tokens: Some(20),
                                ..Usage::UNKNOWN
                            },
                        }),
                )
                .await
                .unwrap();
        });
    }
}

fn memory() -> Bench {
    Bench::new(|_| Arc::new(MemoryStore::new()), None)
}

fn sqlite() -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    Bench::new(
        move |_| Arc::new(SqliteStore::open(&path).unwrap()),
        Some(dir),
    )
}

#[divan::bench(sample_count = 100, sample_size = 20)]
fn turn_memory(bencher: divan::Bencher) {
    let b = memory();
    bencher.bench_local(|| b.turn());
}

#[divan::bench(sample_count = 100, sample_size = 20)]
fn turn_sqlite(bencher: divan::Bencher) {
    let b = sqlite();
    bencher.bench_local(|| b.turn());
}

#[divan::bench(sample_count = 50, sample_size = 20)]
fn turn_sqlite_after_10000_turns(bencher: divan::Bencher) {
    let b = sqlite();
    for _ in 0..10_000 {
        b.turn();
    }
    bencher.bench_local(|| b.turn());
}

#[cfg(feature = "postgres")]
#[divan::bench(sample_count = 50, sample_size = 10)]
fn turn_postgres(bencher: divan::Bencher) {
    if std::env::var("BURROW_POSTGRES_URL").is_err() {
        eprintln!(
            "turn_postgres: BURROW_POSTGRES_URL is not set (run `cargo xtask setup`); not measured"
        );
        return;
    }
    let mut schema = String::new();
    let b = Bench::new(
        |rt| {
            let (store, fresh) = pg::fresh_store(rt).unwrap();
            schema = fresh;
            store
        },
        None,
    );
    bencher.bench_local(|| b.turn());
    pg::drop_schema(&b.rt, &schema);
}
