//! The replay guard: an effect key makes a mutation happen once; its outcome (success or refusal) is replayed.

use burrow_backend::{Backend, ErrorKind};
use rusqlite::Connection;

use super::common::{TempStore, ctx, p};

fn modified_at(t: &TempStore, path: &str) -> String {
    Connection::open(t.db_path())
        .unwrap()
        .query_row(
            "SELECT modified_at FROM files WHERE path = ?1",
            [path],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn the_same_key_writes_once_and_a_new_key_writes_again() {
    let t = TempStore::new();
    let c = ctx("t");
    let first = t
        .files
        .write(&c.with_effect_key("k1"), &p("/a.txt"), "one")
        .await
        .unwrap();
    let stamp = modified_at(&t, "/a.txt");
    // Someone else changes the file; a retry of the first call must not undo that.
    t.files.write(&c, &p("/a.txt"), "changed").await.unwrap();
    let changed_stamp = modified_at(&t, "/a.txt");
    let again = t
        .files
        .write(&c.with_effect_key("k1"), &p("/a.txt"), "one")
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(
        t.files.read_bytes(&c, &p("/a.txt")).await.unwrap(),
        b"changed"
    );
    assert_eq!(modified_at(&t, "/a.txt"), changed_stamp);
    assert!(changed_stamp >= stamp);

    t.files
        .write(&c.with_effect_key("k2"), &p("/a.txt"), "two")
        .await
        .unwrap();
    assert_eq!(t.files.read_bytes(&c, &p("/a.txt")).await.unwrap(), b"two");
}

#[tokio::test]
async fn an_edit_is_applied_once_and_its_count_replayed() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/log.txt"), "x x x\n").await.unwrap();
    let key = c.with_effect_key("edit-1");
    let first = t
        .files
        .edit(&key, &p("/log.txt"), "x", "xy", true)
        .await
        .unwrap();
    assert_eq!(first.occurrences, Some(3));
    let again = t
        .files
        .edit(&key, &p("/log.txt"), "x", "xy", true)
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(
        t.files.read_bytes(&c, &p("/log.txt")).await.unwrap(),
        b"xy xy xy\n"
    );
}

#[tokio::test]
async fn a_refusal_is_recorded_and_replayed_even_when_it_would_now_succeed() {
    let t = TempStore::new();
    let c = ctx("t");
    let key = c.with_effect_key("del-1");
    let err = t.files.delete(&key, &p("/later.txt")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    t.files
        .write(&c, &p("/later.txt"), "now here")
        .await
        .unwrap();
    let again = t.files.delete(&key, &p("/later.txt")).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::NotFound);
    assert_eq!(again.message(), err.message());
    assert_eq!(
        t.files.read_bytes(&c, &p("/later.txt")).await.unwrap(),
        b"now here"
    );
}

#[tokio::test]
async fn a_delete_is_done_once() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/a.txt"), "a").await.unwrap();
    let key = c.with_effect_key("del-2");
    t.files.delete(&key, &p("/a.txt")).await.unwrap();
    t.files.write(&c, &p("/a.txt"), "again").await.unwrap();
    t.files.delete(&key, &p("/a.txt")).await.unwrap();
    assert_eq!(
        t.files.read_bytes(&c, &p("/a.txt")).await.unwrap(),
        b"again"
    );
}

#[tokio::test]
async fn a_refused_batch_under_a_key_records_the_refusal_and_writes_nothing() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/f"), "file").await.unwrap();
    let key = c.with_effect_key("batch-1");
    let batch = vec![
        (p("/ok.txt"), b"1".to_vec()),
        (p("/f/x.txt"), b"2".to_vec()),
    ];
    let err = t.files.write_many(&key, batch.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADirectory);
    assert_eq!(
        t.files
            .read_bytes(&c, &p("/ok.txt"))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    t.files.delete(&c, &p("/f")).await.unwrap();
    let again = t.files.write_many(&key, batch).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::NotADirectory);
    assert!(
        t.files
            .ls(&c, &p("/"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
}

#[tokio::test]
async fn a_key_reused_for_another_operation_is_refused() {
    let t = TempStore::new();
    let c = ctx("t").with_effect_key("k");
    t.files.write(&c, &p("/a.txt"), "a b").await.unwrap();
    let err = t
        .files
        .edit(&c, &p("/a.txt"), "a", "c", false)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("effect key"), "{err}");
    assert_eq!(
        t.files.read_bytes(&ctx("t"), &p("/a.txt")).await.unwrap(),
        b"a b"
    );
}

#[tokio::test]
async fn concurrent_calls_with_one_key_apply_once() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/n.txt"), "n").await.unwrap();
    let key = c.with_effect_key("append");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (files, key) = (t.files.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            files.edit(&key, &p("/n.txt"), "n", "nn", true).await
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().occurrences, Some(1));
    }
    assert_eq!(t.files.read_bytes(&c, &p("/n.txt")).await.unwrap(), b"nn");
}

/// Sets the time the record of `key` was made (as text and as Unix milliseconds).
fn backdate(t: &TempStore, key: &str, stamp: &str) {
    let ms = stamp.parse::<jiff::Timestamp>().unwrap().as_millisecond();
    let changed = Connection::open(t.db_path())
        .unwrap()
        .execute(
            "UPDATE effects SET created_at = ?2, created_ms = ?3 WHERE effect_key = ?1",
            rusqlite::params![key, stamp, ms],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

#[tokio::test]
async fn pruning_forgets_records_made_before_an_instant_of_every_tenant() {
    let t = TempStore::new();
    let (a, b) = (ctx("a"), ctx("b"));
    for (c, key) in [
        (&a, "old"),
        (&b, "whole-second"),
        (&a, "after"),
        (&b, "new"),
    ] {
        t.files
            .write(&c.with_effect_key(key), &p("/f.txt"), key)
            .await
            .unwrap();
    }
    backdate(&t, "old", "2020-01-01T00:00:00.123456789Z");
    // Before the cut-off as an instant, after it as a string ("Z" sorts after ".").
    backdate(&t, "whole-second", "2020-01-01T00:00:00Z");
    backdate(&t, "after", "2020-01-01T00:00:01Z");
    let cutoff: jiff::Timestamp = "2020-01-01T00:00:00.5Z".parse().unwrap();

    assert_eq!(t.files.prune_effects(cutoff).await.unwrap(), 2);
    assert_eq!(t.files.prune_effects(cutoff).await.unwrap(), 0);

    // A pruned key runs again; a kept one still replays.
    t.files.write(&a, &p("/f.txt"), "changed").await.unwrap();
    t.files
        .write(&a.with_effect_key("old"), &p("/f.txt"), "old")
        .await
        .unwrap();
    assert_eq!(t.files.read_bytes(&a, &p("/f.txt")).await.unwrap(), b"old");
    t.files.write(&a, &p("/f.txt"), "changed").await.unwrap();
    t.files
        .write(&a.with_effect_key("after"), &p("/f.txt"), "after")
        .await
        .unwrap();
    assert_eq!(
        t.files.read_bytes(&a, &p("/f.txt")).await.unwrap(),
        b"changed"
    );
    t.files.write(&b, &p("/f.txt"), "changed").await.unwrap();
    t.files
        .write(&b.with_effect_key("new"), &p("/f.txt"), "new")
        .await
        .unwrap();
    assert_eq!(
        t.files.read_bytes(&b, &p("/f.txt")).await.unwrap(),
        b"changed"
    );
}

#[tokio::test]
async fn pruning_goes_in_batches_through_the_time_index() {
    let t = TempStore::new();
    let c = ctx("t");
    // More records than one batch, all of them old enough.
    let batch: Vec<_> = (0..2500).map(|i| format!("k{i}")).collect();
    {
        let conn = Connection::open(t.db_path()).unwrap();
        let mut insert = conn
            .prepare("INSERT INTO effects (tenant, effect_key, op, outcome, created_at, path, created_ms) VALUES ('t', ?1, 'delete', '{\"ok\":null}', '2020-01-01T00:00:00Z', '/x', 1577836800000)")
            .unwrap();
        for key in &batch {
            insert.execute([key]).unwrap();
        }
    }
    t.files
        .write(&c.with_effect_key("fresh"), &p("/f.txt"), "x")
        .await
        .unwrap();
    let cutoff: jiff::Timestamp = "2021-01-01T00:00:00Z".parse().unwrap();
    assert_eq!(t.files.prune_effects(cutoff).await.unwrap(), 2500);
    let left: i64 = Connection::open(t.db_path())
        .unwrap()
        .query_row("SELECT count(*) FROM effects", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 1, "the fresh record is kept");
    // The statement reads the time index, never scanning the table.
    let conn = Connection::open(t.db_path()).unwrap();
    let mut stmt = conn
        .prepare(&format!(
            "EXPLAIN QUERY PLAN {}",
            burrow_sqlite::queries::EFFECTS_PRUNE
        ))
        .unwrap();
    let plan: Vec<String> = stmt
        .query_map(rusqlite::params![0_i64, 1000_i64], |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        plan.iter().any(|l| l.contains("effects_by_time")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|l| l.starts_with("SCAN effects")),
        "{plan:?}"
    );
}

#[tokio::test]
async fn a_key_replays_only_for_the_same_operation_on_the_same_path() {
    let t = TempStore::new();
    let c = ctx("t");
    let key = c.with_effect_key("k");
    t.files.write(&key, &p("/a.txt"), "a").await.unwrap();
    // The same key for a write of another path: refused, nothing written.
    let err = t.files.write(&key, &p("/b.txt"), "b").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("/a.txt") && err.message().contains("/b.txt"),
        "{err}"
    );
    assert_eq!(
        t.files
            .read_bytes(&c, &p("/b.txt"))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    // For another operation on the same path: refused, file unchanged.
    let err = t
        .files
        .edit(&key, &p("/a.txt"), "a", "z", false)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = t.files.delete(&key, &p("/a.txt")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.files.read_bytes(&c, &p("/a.txt")).await.unwrap(), b"a");
    // A batch matches only the same paths in the same order.
    let batch_key = c.with_effect_key("batch");
    let one = vec![(p("/x"), b"1".to_vec()), (p("/y"), b"2".to_vec())];
    t.files.write_many(&batch_key, one.clone()).await.unwrap();
    assert_eq!(t.files.write_many(&batch_key, one).await.unwrap().len(), 2);
    let other = vec![(p("/y"), b"2".to_vec()), (p("/x"), b"1".to_vec())];
    let err = t.files.write_many(&batch_key, other).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // The same key for the same write still replays.
    t.files.write(&c, &p("/a.txt"), "changed").await.unwrap();
    t.files.write(&key, &p("/a.txt"), "a").await.unwrap();
    assert_eq!(
        t.files.read_bytes(&c, &p("/a.txt")).await.unwrap(),
        b"changed"
    );
}

#[tokio::test]
async fn a_batch_target_is_unambiguous_and_the_refusal_is_one_line() {
    let t = TempStore::new();
    let c = ctx("t");
    // One file whose name holds a newline, then two files that the same
    // newline would separate: not the same batch, so the key is refused.
    let key = c.with_effect_key("k\nnext");
    let one = vec![(p("/a\n/b"), b"1".to_vec())];
    assert_eq!(t.files.write_many(&key, one).await.unwrap().len(), 1);
    let two = vec![(p("/a"), b"2".to_vec()), (p("/b"), b"3".to_vec())];
    let err = t.files.write_many(&key, two).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(!err.message().contains('\n'), "{}", err.message());
    assert_eq!(
        t.files.read_bytes(&c, &p("/a")).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // A single path with a newline or a backslash still replays for itself.
    for name in ["/x\ny", "/x\\ny"] {
        let key = c.with_effect_key(name);
        t.files.write(&key, &p(name), "first").await.unwrap();
        t.files.write(&c, &p(name), "changed").await.unwrap();
        t.files.write(&key, &p(name), "first").await.unwrap();
        assert_eq!(t.files.read_bytes(&c, &p(name)).await.unwrap(), b"changed");
    }
    let err = t
        .files
        .write(&c.with_effect_key("/x\ny"), &p("/x\\ny"), "z")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    // A batch of no files is a batch of its own, not one of unknown paths.
    let empty = c.with_effect_key("empty");
    assert!(
        t.files
            .write_many(&empty, Vec::new())
            .await
            .unwrap()
            .is_empty()
    );
    let err = t
        .files
        .write_many(&empty, vec![(p("/e"), b"e".to_vec())])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}
