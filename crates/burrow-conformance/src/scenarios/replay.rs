//! Scenarios for replay: a mutation repeated with the same effect key returns the recorded outcome and changes nothing.

use super::prelude::*;

fn no_effect_keys() -> Outcome {
    skipped(
        "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    )
}

/// The same key twice: one write; the second returns the first outcome even though the file changed in between.
pub async fn replay_write_same_key_applies_once(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.effect_keys {
        return no_effect_keys();
    }
    let path = cx.p("r/once.txt")?;
    let keyed = cx.ctx.with_effect_key("write-once-1");
    let first = b.write(&keyed, &path, "one").await?;
    b.write(&cx.ctx, &path, "changed by someone else").await?;
    let second = b.write(&keyed, &path, "two").await?;
    ensure_eq!(
        second,
        first,
        "the replayed write returns the recorded outcome"
    );
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"changed by someone else".to_vec(),
        "the replay wrote nothing"
    );
    let again = b.write_bytes(&keyed, &path, b"three").await?;
    ensure_eq!(
        again,
        first,
        "write_bytes with the same key is a replay too"
    );
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"changed by someone else".to_vec(),
        "still nothing written"
    );
    passed()
}

/// A different key writes again.
pub async fn replay_different_key_applies_again(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.effect_keys {
        return no_effect_keys();
    }
    let path = cx.p("r/twice.txt")?;
    b.write(&cx.ctx.with_effect_key("key-a"), &path, "a")
        .await?;
    b.write(&cx.ctx.with_effect_key("key-b"), &path, "b")
        .await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"b".to_vec(),
        "the second key's write applied"
    );
    passed()
}

/// A replayed edit returns the recorded count even though its old text is gone now.
pub async fn replay_edit_returns_recorded_outcome(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.effect_keys {
        return no_effect_keys();
    }
    let path = put(b, cx, "r/edit.txt", "x x x\n").await?;
    let keyed = cx.ctx.with_effect_key("edit-1");
    let first = b.edit(&keyed, &path, "x", "y", true).await?;
    ensure_eq!(first.occurrences, Some(3), "first edit");
    b.write(&cx.ctx, &path, "x\n").await?;
    let second = b.edit(&keyed, &path, "x", "y", true).await?;
    ensure_eq!(
        second,
        first,
        "the replayed edit returns the recorded outcome"
    );
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"x\n".to_vec(),
        "the replay edited nothing"
    );
    passed()
}

/// A replayed delete returns success again and deletes nothing, even a file written since.
pub async fn replay_delete_returns_recorded_outcome(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.effect_keys {
        return no_effect_keys();
    }
    let path = put(b, cx, "r/del.txt", "x").await?;
    let keyed = cx.ctx.with_effect_key("delete-1");
    b.delete(&keyed, &path).await?;
    put(b, cx, "r/del.txt", "written again").await?;
    b.delete(&keyed, &path).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"written again".to_vec(),
        "the replayed delete deleted nothing"
    );
    passed()
}

/// Effect keys are per tenant: the same key used by another tenant is a new mutation.
pub async fn replay_keys_are_per_tenant(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.effect_keys {
        return no_effect_keys();
    }
    if !cx.caps.tenants {
        return skipped("the backend does not scope files by tenant (capability tenants is off)");
    }
    let path = cx.p("r/tenant.txt")?;
    b.write(&cx.ctx.with_effect_key("shared-key"), &path, "mine")
        .await?;
    b.write(&cx.other.with_effect_key("shared-key"), &path, "theirs")
        .await?;
    ensure_eq!(
        b.read_bytes(&cx.other, &path).await?,
        b"theirs".to_vec(),
        "the other tenant's write applied"
    );
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"mine".to_vec(),
        "my file is mine"
    );
    passed()
}
