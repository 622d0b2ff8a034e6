//! `GET /v1/runs/{run}/events`: a run's live frames as Server-Sent Events, numbered so `Last-Event-ID` resumes, with `gap` and `end` events and heartbeats.
//!
//! The runner's live channel numbers each segment's frames from 0 and hands a
//! new watcher every frame it still keeps, after a gap marker for those it
//! dropped; counting what a watcher receives (a frame: one, a gap: `missed`)
//! gives each frame its number, which is the event's `id:`. A reconnect with
//! `Last-Event-ID: N` watches anew and skips the frames up to N.
//!
//! A run this process does not run now (held by another process, paused or
//! ended) is followed through the store's event log instead (`follow`, ADR
//! 0344): its frames carry ids `sSEQ.K`, which resume in any process.

use std::convert::Infallible;

use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use burrow_runtime::runner::{LiveEvent, LiveFrame};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use crate::api::{quoted, scope};
use crate::error::{ServeError, ServeErrorKind, ServeResult};
use crate::follow::{After, follow};
use crate::server::Shared;
use crate::tokens::Principal;

/// The JSON `burrow run --json` prints for a frame (`run_started`,
/// `text_delta`, `tool_call`, ..., `gap`, `run_ended`), and the event's name.
fn frame_json(frame: &LiveFrame) -> (&'static str, Value) {
    match &frame.event {
        LiveEvent::Started { thread_id } => (
            "run_started",
            json!({"type": "run_started", "run_id": frame.run_id, "thread_id": thread_id}),
        ),
        LiveEvent::End { outcome, reason } => (
            "end",
            json!({"type": "run_ended", "run_id": frame.run_id, "outcome": outcome, "reason": reason}),
        ),
        // A subagent's doings, as `burrow run --json` prints them (ADR 0405):
        // its own frames are `task_frame` events, so a watcher of the run's
        // text never takes the child's for it.
        LiveEvent::Task { event } => {
            let name = match event.get("type").and_then(Value::as_str) {
                Some("task_started") => "task_started",
                Some("task_ended") => "task_ended",
                _ => "task_frame",
            };
            (name, event.clone())
        }
        other => {
            let value = serde_json::to_value(other).unwrap_or(Value::Null);
            let name = match other {
                LiveEvent::TextDelta { .. } => "text_delta",
                LiveEvent::ThinkingDelta { .. } => "thinking_delta",
                LiveEvent::ToolCall { .. } => "tool_call",
                LiveEvent::ToolResult { .. } => "tool_result",
                LiveEvent::Usage { .. } => "usage",
                LiveEvent::Retry { .. } => "retry",
                LiveEvent::Draft { .. } => "draft",
                LiveEvent::Gap { .. } => "gap",
                _ => "frame",
            };
            (name, value)
        }
    }
}

/// The event of a frame read from the log, with its id `sSEQ.K` (none for the end).
fn followed_event(id: &str, frame: &LiveFrame) -> Event {
    let (name, data) = frame_json(frame);
    let event = Event::default().event(name).data(data.to_string());
    if id.is_empty() { event } else { event.id(id) }
}

/// Where a watcher is: the number of the next frame, and the frames to skip.
struct Position {
    next: u64,
    /// Frames numbered below this were delivered before (`Last-Event-ID` + 1).
    resume: u64,
}

impl Position {
    /// The event for `frame`, or `None` when it was delivered before.
    fn event(&mut self, frame: &LiveFrame) -> Option<Event> {
        let (name, data) = frame_json(frame);
        match &frame.event {
            LiveEvent::Gap { missed } => {
                let from = self.next;
                self.next = self.next.saturating_add(*missed);
                // Only frames after the resume point count as missed.
                let missed = self.next.saturating_sub(from.max(self.resume));
                (missed > 0).then(|| {
                    Event::default()
                        .event("gap")
                        .data(json!({"type": "gap", "missed": missed}).to_string())
                })
            }
            LiveEvent::End { .. } => Some(Event::default().event(name).data(data.to_string())),
            _ => {
                let n = self.next;
                self.next += 1;
                (n >= self.resume).then(|| {
                    Event::default()
                        .event(name)
                        .id(n.to_string())
                        .data(data.to_string())
                })
            }
        }
    }
}

/// `GET /v1/runs/{run}/events` (`Last-Event-ID` to resume).
#[utoipa::path(get, path = "/v1/runs/{run}/events",
    params(("run" = String, Path),
           ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses((status = 200, content_type = "text/event-stream", body = String,
               description = "One event per live frame, named by its type (run_started, text_delta, \
                   thinking_delta, tool_call, tool_result, usage, retry, draft), each with an id and \
                   the JSON `burrow run --json` prints; a subagent's `task_started`, `task_ended` and \
                   `task_frame` (its own frames, with its run_id and the parent_run_id); \
                   `gap` {missed} when frames were dropped; \
                   `end` {type: run_ended, outcome, reason} last; heartbeat comments between"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 503, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn run_events(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> ServeResult<impl IntoResponse> {
    // A number: a frame of this process's live channel; `sSEQ.K`: one read from the log.
    let (resume, after) = match headers.get("last-event-id") {
        None => (0, None),
        Some(v) => {
            let v = v.to_str().map(str::trim).unwrap_or_default();
            match (v.parse::<u64>(), After::parse(v)) {
                (Ok(n), _) => (n.saturating_add(1), None),
                (Err(_), Some(after)) => (0, Some(after)),
                (Err(_), None) => {
                    return Err(ServeError::new(
                        ServeErrorKind::InvalidArgument,
                        "Last-Event-ID is not an event id this server gave",
                    ));
                }
            }
        }
    };
    let scope = scope(&state, &principal);
    // A run held here (in the token's workspace) is watched live with no store
    // read; any other is read first, and followed through the log (ADR 0344).
    let here = after
        .is_none()
        .then(|| state.runner.running_in(&scope, &run_id))
        .flatten();
    let followed = match here {
        Some(_) => None,
        None => match state.runner.store().run(&scope, &run_id).await? {
            Some(run) => Some((scope.thread(run.thread.clone()), run)),
            None => {
                return Err(ServeError::new(
                    ServeErrorKind::NotFound,
                    format!("there is no run {}", quoted(&run_id)),
                ));
            }
        },
    };
    let permit = state.watchers.clone().try_acquire_owned().map_err(|_| {
        ServeError::new(
            ServeErrorKind::Unavailable,
            "this server has as many watchers as it takes; try again later",
        )
    })?;
    let shutdown = state.shutdown.clone();
    if *shutdown.borrow() {
        return Err(ServeError::new(
            ServeErrorKind::Unavailable,
            "this server is shutting down",
        ));
    }
    let frames: BoxStream<'static, (Option<String>, LiveFrame)> = match followed {
        None => state
            .runner
            .watch(&scope, &run_id)
            .map(|f| (None, f))
            .boxed(),
        Some((thread, run)) => follow(state.runner.clone(), thread, run, after, &state.wake)
            .await
            .map(|f| (Some(f.id.unwrap_or_default()), f.frame))
            .boxed(),
    };
    let mut position = Position { next: 0, resume };
    let end_run = run_id.clone();
    let stream = futures::stream::unfold(
        (frames, false, Some(permit)),
        move |(mut frames, done, permit)| {
            let mut shutdown = shutdown.clone();
            let end_run = end_run.clone();
            async move {
                if done {
                    drop(permit);
                    return None;
                }
                tokio::select! {
                    frame = frames.next() => {
                        let frame = frame?;
                        let end = frame.1.event.is_end();
                        Some((Some(frame), (frames, end, permit)))
                    }
                    _ = shutdown.wait_for(|down| *down) => {
                        // The server shuts down: the watcher gets an end all the same.
                        let frame = (None, LiveFrame {
                            run_id: end_run,
                            event: LiveEvent::End { outcome: None, reason: Some("server_shutdown".to_owned()) },
                        });
                        Some((Some(frame), (frames, true, permit)))
                    }
                }
            }
        },
    )
    .filter_map(move |frame| {
        let event = frame.and_then(|(id, f)| match id {
            // A followed frame carries its id (the end an empty one).
            Some(id) => Some(followed_event(&id, &f)),
            None => position.event(&f),
        });
        futures::future::ready(event.map(Ok::<_, Infallible>))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(state.limits.heartbeat)))
}
