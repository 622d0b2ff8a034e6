//! Scenarios: a team's shared todo list (added, claimed once, blocked until its blockers complete, completed by its holder) and its messages (logged in order, each reaching its receiver, a broadcast every other member), on the store's team part.

use std::sync::Arc;

use burrow_types::{SharedTodoItem, TeamMessage, TodoStatus};

use super::{Outcome, Pass, ScenarioError, ensure, expect_kind, scope};
use crate::session::{SessionStore, StoreErrorKind};
use crate::team::{TeamKey, TeamStore, TodoChange};

fn team() -> TeamKey {
    TeamKey::new(scope(), "crew")
}

fn item(id: &str, blocked_by: &[&str]) -> SharedTodoItem {
    SharedTodoItem {
        id: id.into(),
        content: format!("do {id}"),
        status: TodoStatus::Pending,
        assigned_to: None,
        blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
        created_by: Some("lead".into()),
    }
}

fn claim(id: &str, member: &str) -> TodoChange {
    TodoChange::Claim {
        id: id.into(),
        member: member.into(),
    }
}

fn complete(id: &str, member: &str) -> TodoChange {
    TodoChange::Complete {
        id: id.into(),
        member: member.into(),
    }
}

fn message(id: &str, sender: &str, receiver: &str, content: &str) -> TeamMessage {
    TeamMessage {
        id: id.into(),
        sender: sender.into(),
        receiver: receiver.into(),
        content: content.into(),
        timestamp: "2026-12-04T20:00:00Z".into(),
    }
}

fn teams_of(store: &dyn SessionStore) -> Result<&dyn TeamStore, Pass> {
    store
        .teams()
        .ok_or_else(|| Pass::Skipped("the store keeps no teams".into()))
}

/// Items are listed in the order added; a claim makes an item in progress
/// and the member's (claiming it again changes nothing), completing it
/// makes it completed; duplicate ids, unknown blockers, empty content,
/// completing an unclaimed or another's item and claiming a completed one are
/// refused with their kinds and change nothing; the list survives a reopen.
pub async fn team_todos_are_added_claimed_and_completed(fx: &super::Fixture) -> Outcome {
    let store = fx.store();
    let ts = match teams_of(&*store) {
        Ok(t) => t,
        Err(skip) => return Ok(skip),
    };
    let t = team();
    ensure(ts.team_todos(&t).await?.is_empty(), || {
        "an unknown team has todo items".into()
    })?;
    ts.change_todo(&t, TodoChange::Add(item("a", &[]))).await?;
    ts.change_todo(&t, TodoChange::Add(item("b", &[]))).await?;
    expect_kind(
        ts.change_todo(&t, TodoChange::Add(item("a", &[]))).await,
        StoreErrorKind::IdInUse,
        "adding an item id twice",
    )?;
    expect_kind(
        ts.change_todo(&t, TodoChange::Add(item("c", &["nope"])))
            .await,
        StoreErrorKind::NotFound,
        "adding an item blocked by an unknown item",
    )?;
    let mut empty = item("d", &[]);
    empty.content = " ".into();
    expect_kind(
        ts.change_todo(&t, TodoChange::Add(empty)).await,
        StoreErrorKind::InvalidArgument,
        "adding an item without content",
    )?;
    let mut started = item("e", &[]);
    started.status = TodoStatus::InProgress;
    expect_kind(
        ts.change_todo(&t, TodoChange::Add(started)).await,
        StoreErrorKind::InvalidArgument,
        "adding an item already in progress",
    )?;
    expect_kind(
        ts.change_todo(&t, complete("a", "alice")).await,
        StoreErrorKind::InvalidState,
        "completing an unclaimed item",
    )?;
    expect_kind(
        ts.change_todo(&t, claim("zz", "alice")).await,
        StoreErrorKind::NotFound,
        "claiming an unknown item",
    )?;
    let claimed = ts.change_todo(&t, claim("a", "alice")).await?;
    ensure(
        claimed.status == TodoStatus::InProgress && claimed.assigned_to.as_deref() == Some("alice"),
        || format!("a claimed item reads {claimed:?}"),
    )?;
    let again = ts.change_todo(&t, claim("a", "alice")).await?;
    ensure(again == claimed, || {
        format!("claiming one's own item again changed it: {again:?}")
    })?;
    let taken = expect_kind(
        ts.change_todo(&t, claim("a", "bob")).await,
        StoreErrorKind::InvalidState,
        "claiming another member's item",
    )?;
    ensure(taken.message().contains("alice"), || {
        format!("the refusal does not name the holder: {}", taken.message())
    })?;
    expect_kind(
        ts.change_todo(&t, complete("a", "bob")).await,
        StoreErrorKind::InvalidState,
        "completing another member's item",
    )?;
    let done = ts.change_todo(&t, complete("a", "alice")).await?;
    ensure(
        done.status == TodoStatus::Completed && done.assigned_to.as_deref() == Some("alice"),
        || format!("a completed item reads {done:?}"),
    )?;
    expect_kind(
        ts.change_todo(&t, claim("a", "bob")).await,
        StoreErrorKind::InvalidState,
        "claiming a completed item",
    )?;
    let list = ts.team_todos(&t).await?;
    let ids: Vec<&str> = list.iter().map(|i| i.id.as_str()).collect();
    ensure(ids == ["a", "b"], || format!("the list reads {ids:?}"))?;
    ensure(list[0] == done && list[1] == item("b", &[]), || {
        format!("the items read {list:?}")
    })?;
    let other = TeamKey::new(scope(), "other-crew");
    ensure(ts.team_todos(&other).await?.is_empty(), || {
        "another team sees this team's items".into()
    })?;
    expect_kind(
        ts.team_todos(&TeamKey::new(scope(), "")).await,
        StoreErrorKind::InvalidArgument,
        "an empty team name",
    )?;
    if let Some(reopened) = fx.reopen().await {
        let reopened = reopened?;
        let ts = match teams_of(&*reopened) {
            Ok(t) => t,
            Err(_) => return Err(ScenarioError::new("the reopened store keeps no teams")),
        };
        let after = ts.team_todos(&t).await?;
        ensure(after == list, || {
            format!("after a reopen the list reads {after:?}")
        })?;
    }
    Ok(Pass::Passed)
}

/// An item blocked by unfinished items cannot be started (`InvalidState`,
/// the sentence naming the unfinished ones); once they complete it can.
pub async fn a_blocked_team_todo_cannot_be_started(fx: &super::Fixture) -> Outcome {
    let store = fx.store();
    let ts = match teams_of(&*store) {
        Ok(t) => t,
        Err(skip) => return Ok(skip),
    };
    let t = team();
    ts.change_todo(&t, TodoChange::Add(item("design", &[])))
        .await?;
    ts.change_todo(&t, TodoChange::Add(item("schema", &[])))
        .await?;
    ts.change_todo(&t, TodoChange::Add(item("build", &["design", "schema"])))
        .await?;
    let refused = expect_kind(
        ts.change_todo(&t, claim("build", "bob")).await,
        StoreErrorKind::InvalidState,
        "claiming an item blocked by two pending items",
    )?;
    ensure(
        refused.message().contains("design") && refused.message().contains("schema"),
        || {
            format!(
                "the refusal does not name the blockers: {}",
                refused.message()
            )
        },
    )?;
    ts.change_todo(&t, claim("design", "alice")).await?;
    ts.change_todo(&t, complete("design", "alice")).await?;
    ts.change_todo(&t, claim("schema", "carol")).await?;
    let refused = expect_kind(
        ts.change_todo(&t, claim("build", "bob")).await,
        StoreErrorKind::InvalidState,
        "claiming an item blocked by one item in progress",
    )?;
    ensure(
        refused.message().contains("schema") && !refused.message().contains("design"),
        || {
            format!(
                "the refusal names the wrong blockers: {}",
                refused.message()
            )
        },
    )?;
    let build = ts.team_todos(&t).await?;
    ensure(
        build
            .iter()
            .any(|i| i.id == "build" && i.status == TodoStatus::Pending && i.assigned_to.is_none()),
        || format!("a refused claim changed the item: {build:?}"),
    )?;
    ts.change_todo(&t, complete("schema", "carol")).await?;
    let started = ts.change_todo(&t, claim("build", "bob")).await?;
    ensure(
        started.status == TodoStatus::InProgress && started.assigned_to.as_deref() == Some("bob"),
        || format!("the unblocked item reads {started:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Two members claiming the same items at once, each on its own connection
/// (on one when the store lends no second): for every item exactly one wins,
/// the other is refused `InvalidState`, and the item is the winner's.
pub async fn two_members_claiming_one_todo_at_once_exactly_one_wins(
    fx: &super::Fixture,
) -> Outcome {
    let a = fx.store();
    let b = match fx.sibling().await {
        Some(opened) => opened?,
        None => fx.store(),
    };
    if a.teams().is_none() || b.teams().is_none() {
        return Ok(Pass::Skipped("the store keeps no teams".into()));
    }
    let t = team();
    const ITEMS: usize = 12;
    for i in 0..ITEMS {
        if let Some(ts) = a.teams() {
            ts.change_todo(&t, TodoChange::Add(item(&format!("i{i}"), &[])))
                .await?;
        }
    }
    let mut tasks = Vec::new();
    for i in 0..ITEMS {
        for (store, member) in [(Arc::clone(&a), "alice"), (Arc::clone(&b), "bob")] {
            let t = t.clone();
            let id = format!("i{i}");
            tasks.push(tokio::spawn(async move {
                let Some(ts) = store.teams() else {
                    return (id, member, None);
                };
                let got = ts.change_todo(&t, claim(&id, member)).await;
                (id, member, Some(got))
            }));
        }
    }
    let mut winners = std::collections::BTreeMap::new();
    for task in tasks {
        let (id, member, got) = task
            .await
            .map_err(|e| ScenarioError::new(format!("a claiming task failed: {e}")))?;
        match got {
            Some(Ok(won)) => {
                ensure(won.assigned_to.as_deref() == Some(member), || {
                    format!("{member} won {id} but it reads {won:?}")
                })?;
                if let Some(first) = winners.insert(id.clone(), member) {
                    return Err(ScenarioError::new(format!(
                        "both {first} and {member} won item {id}"
                    )));
                }
            }
            Some(Err(e)) if e.kind() == StoreErrorKind::InvalidState => {}
            Some(Err(e)) => {
                return Err(ScenarioError::new(format!(
                    "{member} claiming {id} failed unexpectedly: {e}"
                )));
            }
            None => return Err(ScenarioError::new("a connection lost its team part")),
        }
    }
    ensure(winners.len() == ITEMS, || {
        format!("only {} of {ITEMS} items had a winner", winners.len())
    })?;
    let Some(ts) = b.teams() else {
        return Err(ScenarioError::new("a connection lost its team part"));
    };
    for it in ts.team_todos(&t).await? {
        let winner = winners.get(&it.id).copied();
        ensure(
            it.status == TodoStatus::InProgress && it.assigned_to.as_deref() == winner,
            || format!("item {} reads {it:?}, its winner was {winner:?}", it.id),
        )?;
    }
    Ok(Pass::Passed)
}

/// Messages are logged with seqs 1, 2, ...; a member reads those addressed to
/// it and every broadcast it did not send, after a seq, oldest first; a
/// message id is used once per team.
pub async fn team_messages_reach_their_receivers_and_broadcasts_reach_everyone(
    fx: &super::Fixture,
) -> Outcome {
    let store = fx.store();
    let ts = match teams_of(&*store) {
        Ok(t) => t,
        Err(skip) => return Ok(skip),
    };
    let t = team();
    let s1 = ts
        .send_message(&t, message("m1", "lead", "bob", "take i1"))
        .await?;
    let s2 = ts
        .send_message(&t, message("m2", "lead", "", "standup now"))
        .await?;
    let s3 = ts
        .send_message(&t, message("m3", "bob", "lead", "done"))
        .await?;
    ensure((s1, s2, s3) == (1, 2, 3), || {
        format!("the seqs read {s1}, {s2}, {s3}")
    })?;
    expect_kind(
        ts.send_message(&t, message("m1", "bob", "", "again")).await,
        StoreErrorKind::IdInUse,
        "a message id used twice",
    )?;
    expect_kind(
        ts.send_message(&t, message("m4", "", "", "who?")).await,
        StoreErrorKind::InvalidArgument,
        "a message without a sender",
    )?;
    let read = |v: Vec<crate::team::LoggedMessage>| -> Vec<(u64, String)> {
        v.into_iter().map(|m| (m.seq, m.message.id)).collect()
    };
    let bob = read(ts.messages_for(&t, "bob", 0).await?);
    ensure(bob == [(1, "m1".into()), (2, "m2".into())], || {
        format!("bob reads {bob:?}")
    })?;
    let carol = read(ts.messages_for(&t, "carol", 0).await?);
    ensure(carol == [(2, "m2".into())], || {
        format!("carol reads {carol:?}")
    })?;
    let lead = read(ts.messages_for(&t, "lead", 0).await?);
    ensure(lead == [(3, "m3".into())], || {
        format!("the lead reads {lead:?} (its own broadcast included?)")
    })?;
    let later = read(ts.messages_for(&t, "bob", 1).await?);
    ensure(later == [(2, "m2".into())], || {
        format!("bob after seq 1 reads {later:?}")
    })?;
    let full = ts.messages_for(&t, "carol", 0).await?;
    ensure(
        full.first()
            .is_some_and(|m| m.message == message("m2", "lead", "", "standup now")),
        || format!("the broadcast reads {full:?}"),
    )?;
    let other = TeamKey::new(scope(), "other-crew");
    ensure(ts.messages_for(&other, "bob", 0).await?.is_empty(), || {
        "another team reads this team's messages".into()
    })?;
    Ok(Pass::Passed)
}

/// A member's delivery cursor starts at 0, only moves forward, cannot pass
/// the team's last message (refused, nothing changed), belongs to its member
/// and team, and survives a reopen.
pub async fn a_members_delivery_cursor_only_moves_forward(fx: &super::Fixture) -> Outcome {
    let store = fx.store();
    let ts = match teams_of(&*store) {
        Ok(t) => t,
        Err(skip) => return Ok(skip),
    };
    let t = team();
    ensure(ts.delivered(&t, "bob").await? == 0, || {
        "a member never marked has a cursor".into()
    })?;
    for (i, id) in ["d1", "d2", "d3"].iter().enumerate() {
        let seq = ts.send_message(&t, message(id, "lead", "", "news")).await?;
        ensure(seq == i as u64 + 1, || {
            format!("message {id} got seq {seq}")
        })?;
    }
    let at = ts.mark_delivered(&t, "bob", 2).await?;
    ensure(at == 2, || format!("marking 2 left the cursor at {at}"))?;
    let back = ts.mark_delivered(&t, "bob", 1).await?;
    ensure(back == 2, || {
        format!("marking 1 after 2 left the cursor at {back}")
    })?;
    expect_kind(
        ts.mark_delivered(&t, "bob", 4).await,
        StoreErrorKind::InvalidArgument,
        "a cursor past the last message",
    )?;
    expect_kind(
        ts.mark_delivered(&t, "", 1).await,
        StoreErrorKind::InvalidArgument,
        "a cursor of an empty member name",
    )?;
    let now = ts.delivered(&t, "bob").await?;
    ensure(now == 2, || {
        format!("after the refusals bob's cursor is {now}")
    })?;
    ensure(ts.delivered(&t, "carol").await? == 0, || {
        "bob's cursor moved carol's".into()
    })?;
    let other = TeamKey::new(scope(), "other-crew");
    ensure(ts.delivered(&other, "bob").await? == 0, || {
        "another team reads this team's cursor".into()
    })?;
    if let Some(reopened) = fx.reopen().await {
        let reopened = reopened?;
        let ts = match teams_of(&*reopened) {
            Ok(t) => t,
            Err(_) => return Err(ScenarioError::new("the reopened store keeps no teams")),
        };
        let after = ts.delivered(&t, "bob").await?;
        ensure(after == 2, || {
            format!("after a reopen bob's cursor is {after}")
        })?;
    }
    Ok(Pass::Passed)
}
