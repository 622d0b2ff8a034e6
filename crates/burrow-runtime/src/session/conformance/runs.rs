//! Scenarios: runs start in idle threads, pause on requests, are answered and resume, and end once.

use super::{Outcome, Pass, ScenarioError, claim, ensure, expect_kind, post, scope, start, thread};
use crate::message::Usage;
use crate::session::types::{
    Answer, Commit, RequestKind, RequestSpec, RunEnd, RunStatus, Trigger, Write,
};
use crate::session::{SessionStore, StoreErrorKind, ThreadKey, ThreadStatus};

async fn run_status(s: &dyn SessionStore, run: &str) -> Result<RunStatus, ScenarioError> {
    s.run(&scope(), run)
        .await?
        .map(|r| r.status)
        .ok_or_else(|| ScenarioError::new(format!("run {run} is missing")))
}

async fn thread_status(s: &dyn SessionStore, t: &ThreadKey) -> Result<ThreadStatus, ScenarioError> {
    s.thread(t)
        .await?
        .map(|i| i.status)
        .ok_or_else(|| ScenarioError::new(format!("thread {} is missing", t.thread)))
}

fn end(run: &str, end: RunEnd) -> Write {
    Write::EndRun {
        run_id: run.into(),
        end,
    }
}

/// A run starts in an idle thread (running, the thread running) and ends (the thread idle).
pub async fn a_run_starts_and_ends(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "go")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new().fenced(c.fence()).write(start("r1", &["m1"])),
    )
    .await?;
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    ensure(
        r.status == RunStatus::Running
            && r.thread == "t1"
            && r.trigger == Trigger::Message
            && r.message_ids == ["m1"]
            && r.segments == 1
            && r.started_seq == 2
            && r.ended_at_ms.is_none(),
        || format!("unexpected run after start: {r:?}"),
    )?;
    let info = s.thread(&t).await?;
    ensure(
        info.as_ref().is_some_and(|i| {
            i.status == ThreadStatus::Running && i.active_run.as_deref() == Some("r1")
        }),
        || format!("thread after start: {info:?}"),
    )?;
    s.commit(
        &t,
        Commit::new().fenced(c.fence()).write(end(
            "r1",
            RunEnd::Failed {
                reason: crate::agent::FailureReason::MaxTurns,
                message: "the run reached 100 turns".into(),
            },
        )),
    )
    .await?;
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    ensure(
        r.status == RunStatus::Failed
            && r.reason.as_deref() == Some("max_turns")
            && r.failure.as_deref() == Some("the run reached 100 turns")
            && r.ended_at_ms.is_some(),
        || format!("unexpected run after end: {r:?}"),
    )?;
    ensure(thread_status(&*s, &t).await? == ThreadStatus::Idle, || {
        "the thread is not idle after its run ended".into()
    })?;
    let runs: Vec<String> = s.runs(&t).await?.into_iter().map(|r| r.run_id).collect();
    ensure(runs == ["r1"], || format!("runs: {runs:?}"))?;
    Ok(Pass::Passed)
}

/// A second run cannot start while one is running or paused; after the first ends it can.
pub async fn a_thread_has_one_unfinished_run(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    s.commit(&t, Commit::new().fenced(c.fence()).write(start("r1", &[])))
        .await?;
    expect_kind(
        s.commit(&t, Commit::new().fenced(c.fence()).write(start("r2", &[])))
            .await,
        StoreErrorKind::InvalidState,
        "starting a second run while r1 runs",
    )?;
    s.commit(
        &t,
        Commit::new().fenced(c.fence()).write(Write::PauseRun {
            run_id: "r1".into(),
            requests: vec![RequestSpec {
                id: "q1".into(),
                call_id: "c1".into(),
                tool_name: "ask_user".into(),
                kind: RequestKind::Question,
                arguments: None,
            }],
        }),
    )
    .await?;
    expect_kind(
        s.commit(&t, Commit::new().fenced(c.fence()).write(start("r2", &[])))
            .await,
        StoreErrorKind::InvalidState,
        "starting a second run while r1 is paused",
    )?;
    // Ending the old run and starting the next in one commit (the abandoned-run pattern).
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(end(
                "r1",
                RunEnd::Failed {
                    reason: crate::agent::FailureReason::Abandoned,
                    message: "its process stopped".into(),
                },
            ))
            .write(start("r2", &[])),
    )
    .await?;
    let runs: Vec<(String, RunStatus)> = s
        .runs(&t)
        .await?
        .into_iter()
        .map(|r| (r.run_id, r.status))
        .collect();
    ensure(
        runs == vec![
            ("r1".to_string(), RunStatus::Failed),
            ("r2".to_string(), RunStatus::Running),
        ],
        || format!("runs: {runs:?}"),
    )?;
    Ok(Pass::Passed)
}

/// A run id is used once per workspace, even by another thread.
pub async fn run_ids_are_used_once_per_workspace(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let (t1, t2) = (thread("t1"), thread("t2"));
    let c1 = claim(&*s, &t1, "h1").await?;
    let c2 = claim(&*s, &t2, "h2").await?;
    s.commit(
        &t1,
        Commit::new()
            .fenced(c1.fence())
            .write(start("r1", &[]))
            .write(end("r1", RunEnd::Completed)),
    )
    .await?;
    expect_kind(
        s.commit(
            &t1,
            Commit::new().fenced(c1.fence()).write(start("r1", &[])),
        )
        .await,
        StoreErrorKind::IdInUse,
        "starting run r1 again in its thread",
    )?;
    expect_kind(
        s.commit(
            &t2,
            Commit::new().fenced(c2.fence()).write(start("r1", &[])),
        )
        .await,
        StoreErrorKind::IdInUse,
        "starting run r1 in another thread",
    )?;
    Ok(Pass::Passed)
}

/// An ended run refuses every later write: a late end from a dead process changes nothing.
pub async fn an_ended_run_never_changes(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &[]))
            .write(end(
                "r1",
                RunEnd::Stopped {
                    reason: "stopped by alice".into(),
                },
            )),
    )
    .await?;
    for (what, write) in [
        ("ending it again", end("r1", RunEnd::Completed)),
        (
            "resuming it",
            Write::ResumeRun {
                run_id: "r1".into(),
                requested_by: None,
            },
        ),
        (
            "starting a tool call in it",
            Write::ToolStarted {
                run_id: "r1".into(),
                call_id: "c1".into(),
                name: "read_file".into(),
                effect_key: None,
            },
        ),
        (
            "recording usage in it",
            Write::RecordUsage {
                run_id: "r1".into(),
                usage: Usage::UNKNOWN,
            },
        ),
    ] {
        expect_kind(
            s.commit(&t, Commit::new().fenced(c.fence()).write(write))
                .await,
            StoreErrorKind::InvalidState,
            what,
        )?;
    }
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    ensure(
        r.status == RunStatus::Stopped && r.reason.as_deref() == Some("stopped by alice"),
        || format!("the ended run changed: {r:?}"),
    )?;
    Ok(Pass::Passed)
}

fn question(id: &str) -> RequestSpec {
    RequestSpec {
        id: id.into(),
        call_id: format!("call-{id}"),
        tool_name: "ask_user".into(),
        kind: RequestKind::Question,
        arguments: None,
    }
}

fn approval(id: &str) -> RequestSpec {
    RequestSpec {
        id: id.into(),
        call_id: format!("call-{id}"),
        tool_name: "write_file".into(),
        kind: RequestKind::Approval,
        arguments: None,
    }
}

fn answer(run: &str, request: &str, approved: Option<bool>, text: &str) -> Write {
    Write::AnswerRequest {
        run_id: run.into(),
        request_id: request.into(),
        answer: Answer {
            author: "alice".into(),
            approved,
            text: Some(text.into()),
            message_id: None,
        },
    }
}

/// A paused run resumes only once every request is answered, as the same run with one more segment.
pub async fn a_run_pauses_is_answered_and_resumes(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &[]))
            .write(Write::PauseRun {
                run_id: "r1".into(),
                requests: vec![question("q1"), approval("a1")],
            }),
    )
    .await?;
    ensure(run_status(&*s, "r1").await? == RunStatus::Paused, || {
        "r1 is not paused".into()
    })?;
    ensure(
        thread_status(&*s, &t).await? == ThreadStatus::Paused,
        || "the thread is not paused".into(),
    )?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(answer("r1", "q1", None, "option A")),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(c.fence()).write(Write::ResumeRun {
                run_id: "r1".into(),
                requested_by: Some("alice".into()),
            }),
        )
        .await,
        StoreErrorKind::InvalidState,
        "resuming with approval a1 unanswered",
    )?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(answer("r1", "a1", Some(false), "not that file"))
            .write(Write::ResumeRun {
                run_id: "r1".into(),
                requested_by: Some("alice".into()),
            }),
    )
    .await?;
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    let answers: Vec<(String, Option<bool>, Option<String>)> = r
        .requests
        .iter()
        .map(|q| {
            (
                q.spec.id.clone(),
                q.answer.as_ref().and_then(|a| a.approved),
                q.answer.as_ref().and_then(|a| a.text.clone()),
            )
        })
        .collect();
    ensure(r.status == RunStatus::Running && r.segments == 2, || {
        format!("run after resume: {r:?}")
    })?;
    ensure(
        answers
            == vec![
                ("q1".to_string(), None, Some("option A".to_string())),
                (
                    "a1".to_string(),
                    Some(false),
                    Some("not that file".to_string()),
                ),
            ],
        || format!("answers: {answers:?}"),
    )?;
    Ok(Pass::Passed)
}

/// An approval's answer says approved or not, a question's does not; a request is answered once; only a paused run is answered.
pub async fn answers_follow_the_request_kind(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    s.commit(&t, Commit::new().fenced(c.fence()).write(start("r1", &[])))
        .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(c.fence())
                .write(answer("r1", "q1", None, "x")),
        )
        .await,
        StoreErrorKind::InvalidState,
        "answering a running run",
    )?;
    s.commit(
        &t,
        Commit::new().fenced(c.fence()).write(Write::PauseRun {
            run_id: "r1".into(),
            requests: vec![question("q1"), approval("a1")],
        }),
    )
    .await?;
    let f = c.fence();
    for (what, write, kind) in [
        (
            "an approval answered without approved",
            answer("r1", "a1", None, "x"),
            StoreErrorKind::InvalidArgument,
        ),
        (
            "a question answered with approved",
            answer("r1", "q1", Some(true), "x"),
            StoreErrorKind::InvalidArgument,
        ),
        (
            "an unknown request",
            answer("r1", "zz", None, "x"),
            StoreErrorKind::NotFound,
        ),
    ] {
        expect_kind(
            s.commit(&t, Commit::new().fenced(f.clone()).write(write))
                .await,
            kind,
            what,
        )?;
    }
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(answer("r1", "q1", None, "yes")),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(answer("r1", "q1", None, "again")),
        )
        .await,
        StoreErrorKind::InvalidState,
        "answering q1 twice",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f).write(Write::PauseRun {
                run_id: "r1".into(),
                requests: vec![],
            }),
        )
        .await,
        StoreErrorKind::InvalidState,
        "pausing a paused run",
    )?;
    Ok(Pass::Passed)
}

/// A write naming a run of another thread is refused as not found.
pub async fn a_run_of_another_thread_is_not_found(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let (t1, t2) = (thread("t1"), thread("t2"));
    let c1 = claim(&*s, &t1, "h1").await?;
    let c2 = claim(&*s, &t2, "h2").await?;
    s.commit(
        &t1,
        Commit::new().fenced(c1.fence()).write(start("r1", &[])),
    )
    .await?;
    expect_kind(
        s.commit(
            &t2,
            Commit::new()
                .fenced(c2.fence())
                .write(end("r1", RunEnd::Completed)),
        )
        .await,
        StoreErrorKind::NotFound,
        "ending t1's run through t2",
    )?;
    ensure(run_status(&*s, "r1").await? == RunStatus::Running, || {
        "t1's run changed".into()
    })?;
    Ok(Pass::Passed)
}

/// Usage adds up per count; a count no request reported stays unknown.
pub async fn usage_adds_up_and_unknown_stays_unknown(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    let u1 = Usage {
        input_tokens: Some(100),
        output_tokens: Some(20),
        ..Usage::UNKNOWN
    };
    let u2 = Usage {
        input_tokens: Some(50),
        cache_read_tokens: Some(7),
        ..Usage::UNKNOWN
    };
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &[]))
            .write(Write::RecordUsage {
                run_id: "r1".into(),
                usage: u1,
            })
            .write(Write::RecordUsage {
                run_id: "r1".into(),
                usage: u2,
            }),
    )
    .await?;
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    let want = Usage {
        input_tokens: Some(150),
        output_tokens: Some(20),
        cache_read_tokens: Some(7),
        cache_write_tokens: None,
    };
    ensure(r.usage == want, || {
        format!("usage {:?}, want {want:?}", r.usage)
    })?;
    Ok(Pass::Passed)
}

/// Every write but a posted message needs a fence.
pub async fn writes_to_a_run_need_a_fence(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    expect_kind(
        s.commit(&t, Commit::new().write(start("r1", &[]))).await,
        StoreErrorKind::StaleClaim,
        "starting a run without a fence",
    )?;
    expect_kind(
        s.commit(&t, Commit::new().write(Write::save_checkpoint("k1", None)))
            .await,
        StoreErrorKind::StaleClaim,
        "saving a checkpoint without a fence",
    )?;
    ensure(s.run(&scope(), "r1").await?.is_none(), || {
        "the unfenced run was stored".into()
    })?;
    Ok(Pass::Passed)
}

fn start_labelled(run: &str, labels: &[(&str, String)]) -> Write {
    Write::StartRun {
        run_id: run.into(),
        trigger: Trigger::Message,
        requested_by: Some("alice".into()),
        message_ids: vec!["m1".into()],
        labels: labels
            .iter()
            .map(|(n, v)| ((*n).to_string(), v.clone()))
            .collect(),
    }
}

/// A run keeps the labels it started with, unchanged by its later writes; labels over the limits are refused and start nothing.
pub async fn a_run_keeps_its_labels(fx: &super::Fixture) -> Outcome {
    use crate::session::types::{MAX_LABEL_NAME, MAX_LABEL_VALUE, MAX_RUN_LABELS};
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "go")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    let too_many: Vec<(String, String)> = (0..=MAX_RUN_LABELS)
        .map(|i| (format!("l{i}"), "v".to_string()))
        .collect();
    let too_many: Vec<(&str, String)> = too_many
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let long_name = "n".repeat(MAX_LABEL_NAME + 1);
    let refused = [
        too_many,
        vec![("", "v".to_string())],
        vec![(long_name.as_str(), "v".to_string())],
        vec![("model", "v".repeat(MAX_LABEL_VALUE + 1))],
        vec![("model", "a\0b".to_string())],
    ];
    for labels in &refused {
        let attempt = s
            .commit(
                &t,
                Commit::new()
                    .fenced(c.fence())
                    .write(start_labelled("r1", labels)),
            )
            .await;
        expect_kind(
            attempt,
            StoreErrorKind::InvalidArgument,
            "a start with bad labels",
        )?;
    }
    ensure(s.run(&scope(), "r1").await?.is_none(), || {
        "a refused start left a run".to_string()
    })?;
    let labels = [
        ("burrow.model", "openai:gpt-5".to_string()),
        ("app.note", "x".repeat(MAX_LABEL_VALUE)),
    ];
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start_labelled("r1", &labels)),
    )
    .await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(end("r1", RunEnd::Completed)),
    )
    .await?;
    let r = s
        .run(&scope(), "r1")
        .await?
        .ok_or_else(|| ScenarioError::new("run r1 is missing"))?;
    let kept: Vec<(&str, &str)> = r
        .labels
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let want: Vec<(&str, &str)> = vec![
        ("app.note", labels[1].1.as_str()),
        ("burrow.model", "openai:gpt-5"),
    ];
    ensure(kept == want, || format!("labels after end: {:?}", r.labels))?;
    let listed = s.runs(&t).await?;
    ensure(listed.first().is_some_and(|l| l.labels == r.labels), || {
        "the thread's run list lost the labels".to_string()
    })?;
    Ok(Pass::Passed)
}
