//! Changes (create, JSON Patch, anchored text edit, archive, revert) and the one pure function that applies a change to a head, used by every store.

use burrow_backend::text::{line_ending, with_line_ending};
use json_patch::{Patch, PatchOperation, ReplaceOperation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ArtifactError, ArtifactErrorKind, Result};
use crate::kind::{Kinds, clip};

/// A change to the workspace. Every change but `Create` names the
/// `base_version` it was made against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// A new artifact of `kind` (its id is given by the store).
    Create {
        /// One of the workspace's kinds.
        kind: String,
        /// The first snapshot.
        snapshot: Value,
    },
    /// An RFC 6902 JSON Patch (add, remove, replace, move, copy, test).
    Patch {
        /// The artifact.
        id: String,
        /// The version the patch was made against.
        base_version: u64,
        /// The operations, applied all or none.
        patch: Patch,
        /// What the change does, in a line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// Replaces the one occurrence of `old` by `new` in the string at `field`.
    EditText {
        /// The artifact.
        id: String,
        /// The version the edit was made against.
        base_version: u64,
        /// A JSON Pointer to a string field (`/text`; `""` for a snapshot that is a string).
        field: String,
        /// The anchor: text that occurs exactly once in the field.
        old: String,
        /// What replaces it.
        new: String,
        /// What the change does, in a line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// Archives the artifact: it stays readable and takes no more changes.
    Archive {
        /// The artifact.
        id: String,
        /// The version the archive was decided against.
        base_version: u64,
    },
    /// A new revision whose snapshot is `to_version`'s.
    Revert {
        /// The artifact.
        id: String,
        /// The version the revert was decided against.
        base_version: u64,
        /// The version whose snapshot comes back.
        to_version: u64,
    },
}

impl Change {
    /// The artifact the change is to, `None` for a create.
    pub fn id(&self) -> Option<&str> {
        match self {
            Change::Create { .. } => None,
            Change::Patch { id, .. }
            | Change::EditText { id, .. }
            | Change::Archive { id, .. }
            | Change::Revert { id, .. } => Some(id),
        }
    }

    /// The base version, `None` for a create.
    pub fn base_version(&self) -> Option<u64> {
        match self {
            Change::Create { .. } => None,
            Change::Patch { base_version, .. }
            | Change::EditText { base_version, .. }
            | Change::Archive { base_version, .. }
            | Change::Revert { base_version, .. } => Some(*base_version),
        }
    }

    /// The change's short name (`create`, `patch`, `edit_text`, `archive`, `revert`).
    pub fn op(&self) -> &'static str {
        match self {
            Change::Create { .. } => "create",
            Change::Patch { .. } => "patch",
            Change::EditText { .. } => "edit_text",
            Change::Archive { .. } => "archive",
            Change::Revert { .. } => "revert",
        }
    }

    /// The change's own summary line, if it has one.
    pub fn summary(&self) -> Option<&str> {
        match self {
            Change::Patch { summary, .. } | Change::EditText { summary, .. } => summary.as_deref(),
            _ => None,
        }
    }
}

/// What a change makes of an artifact's head: the new snapshot, the patch
/// from the old snapshot to it, and whether it is archived.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The new snapshot.
    pub snapshot: Value,
    /// The JSON Patch that turns the previous snapshot into the new one (a
    /// create's is one `add` of the whole document at `""`).
    pub patch: Patch,
    /// The artifact is archived after the change.
    pub archived: bool,
}

/// The head a change is applied to.
#[derive(Debug, Clone, Copy)]
pub struct Head<'a> {
    /// The artifact's id.
    pub id: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// Its head version.
    pub version: u64,
    /// Its head snapshot.
    pub snapshot: &'a Value,
    /// Whether it is archived.
    pub archived: bool,
}

/// Applies `change` to `head` (none for a create), validating the result
/// against its kind. `old_snapshot` gives a revert the snapshot of its
/// `to_version`. The base version is not checked here (the store checks it
/// against the head under its lock, so that it can list the changes since).
///
/// # Behavior
/// - A create of an unknown kind: UnknownKind. Any change's result that does
///   not fit its schema: Validation naming the paths; over the size limit: TooLarge.
/// - A patch that cannot be applied (a missing path, a failed `test`): Patch,
///   naming the failing operation and path.
/// - A text edit whose field is not a string: InvalidState; whose anchor is
///   empty: InvalidArgument; absent: Edit "not found"; repeated: Edit
///   "ambiguous: it occurs N times". Line endings are kept: in a field that uses
///   one ending, `old` and `new` are written with it first (burrow's edit rule).
/// - Any change to an archived artifact: InvalidState.
pub fn apply(
    kinds: &Kinds,
    head: Option<Head<'_>>,
    change: &Change,
    old_snapshot: Option<&Value>,
) -> Result<Applied> {
    let head = match (change, head) {
        (Change::Create { kind, snapshot }, _) => return create(kinds, kind, snapshot.clone()),
        (_, None) => {
            return Err(ArtifactError::not_found(format!(
                "there is no artifact {}.",
                clip(change.id().unwrap_or_default(), 100)
            )));
        }
        (_, Some(head)) => head,
    };
    apply_owned(
        kinds,
        Meta::of(head),
        head.snapshot.clone(),
        change,
        old_snapshot,
    )
}

/// A head but its snapshot: what [`apply_owned`] checks besides the document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta<'a> {
    /// The artifact's id.
    pub id: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// Its head version.
    pub version: u64,
    /// Whether it is archived.
    pub archived: bool,
}

impl<'a> Meta<'a> {
    fn of(head: Head<'a>) -> Self {
        Self {
            id: head.id,
            kind: head.kind,
            version: head.version,
            archived: head.archived,
        }
    }
}

/// A create's result: `snapshot` validated, its patch one `add` of it at `""`.
pub(crate) fn create(kinds: &Kinds, kind: &str, snapshot: Value) -> Result<Applied> {
    kinds.validate(kind, &snapshot)?;
    let patch = Patch(vec![PatchOperation::Add(json_patch::AddOperation {
        path: json_patch::jsonptr::PointerBuf::new(),
        value: snapshot.clone(),
    })]);
    Ok(Applied {
        snapshot,
        patch,
        archived: false,
    })
}

/// [`apply`] to the head `head` whose snapshot, `doc`, the caller gives up:
/// it is changed in place rather than copied first.
pub(crate) fn apply_owned(
    kinds: &Kinds,
    head: Meta<'_>,
    mut doc: Value,
    change: &Change,
    old_snapshot: Option<&Value>,
) -> Result<Applied> {
    if head.archived {
        return Err(ArtifactError::invalid_state(format!(
            "{} is archived and takes no more changes.",
            head.id
        )));
    }
    let (patch, archived) = match change {
        Change::Create { .. } => {
            return Err(ArtifactError::invalid_state(
                "a create makes a new artifact and applies to no head.",
            ));
        }
        Change::Patch { patch, .. } => {
            json_patch::patch(&mut doc, patch).map_err(|e| {
                ArtifactError::new(
                    ArtifactErrorKind::Patch,
                    format!(
                        "operation {} of the patch (at {}) cannot be applied to {} v{}: {}.",
                        e.operation,
                        shown_path(e.path.as_str()),
                        head.id,
                        head.version,
                        e.kind
                    ),
                )
            })?;
            (patch.clone(), false)
        }
        Change::EditText {
            field, old, new, ..
        } => {
            let text = edit_field(head, &doc, field, old, new)?;
            let pointer = json_patch::jsonptr::PointerBuf::parse(field.as_str())
                .map_err(|e| bad_pointer(field, e))?;
            let patch = Patch(vec![PatchOperation::Replace(ReplaceOperation {
                path: pointer,
                value: Value::String(text),
            })]);
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                ArtifactError::invalid_state(format!(
                    "the field {} of {} cannot be replaced: {}.",
                    shown_path(field),
                    head.id,
                    e.kind
                ))
            })?;
            (patch, false)
        }
        Change::Archive { .. } => (Patch(Vec::new()), true),
        Change::Revert { to_version, .. } => {
            let Some(old) = old_snapshot else {
                return Err(ArtifactError::not_found(format!(
                    "{} has no version {to_version}.",
                    head.id
                )));
            };
            let patch = json_patch::diff(&doc, old);
            doc = old.clone();
            (patch, false)
        }
    };
    kinds.validate(head.kind, &doc)?;
    Ok(Applied {
        snapshot: doc,
        patch,
        archived,
    })
}

fn shown_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn bad_pointer(field: &str, e: impl std::fmt::Display) -> ArtifactError {
    ArtifactError::invalid_argument(format!(
        "the field {:?} is not a JSON Pointer ({e}); write it like /text or /sections/intro.",
        clip(field, 100)
    ))
}

/// The string at `field` of `doc` (`head`'s snapshot) with the one
/// occurrence of `old` replaced by `new`.
fn edit_field(head: Meta<'_>, doc: &Value, field: &str, old: &str, new: &str) -> Result<String> {
    let pointer = json_patch::jsonptr::Pointer::parse(field).map_err(|e| bad_pointer(field, e))?;
    let Some(Value::String(text)) = pointer.resolve(doc).ok() else {
        return Err(ArtifactError::invalid_state(format!(
            "the field {} of {} is not a string, so it takes no text edit; use a JSON Patch.",
            shown_path(field),
            head.id
        )));
    };
    edit_text(text, old, new).map_err(|e| {
        let message = format!(
            "the text to replace in {} of {} v{} {}",
            shown_path(field),
            head.id,
            head.version,
            e.message()
        );
        ArtifactError::new(e.kind().clone(), message)
    })
}

/// burrow's edit rule on a string: the one occurrence of `old` replaced by
/// `new`, line endings kept (in text that uses one ending, `old` and `new`
/// are written with it first). Refusals: an empty `old` (InvalidArgument),
/// `old` absent ("not found") or repeated ("ambiguous: it occurs N times"),
/// both Edit; an edit that changes nothing (InvalidArgument).
pub(crate) fn edit_text(text: &str, old: &str, new: &str) -> Result<String> {
    if old.is_empty() {
        return Err(ArtifactError::invalid_argument(
            "is empty; give text that occurs exactly once.",
        ));
    }
    let (old, new) = match line_ending(text) {
        Some(ending) => (with_line_ending(old, ending), with_line_ending(new, ending)),
        None => (old.to_owned(), new.to_owned()),
    };
    if old == new {
        return Err(ArtifactError::invalid_argument(
            "is the same as the new text (once line endings are the field's); there is nothing to change.",
        ));
    }
    let occurrences = text.matches(old.as_str()).count();
    match occurrences {
        0 => Err(ArtifactError::new(
            ArtifactErrorKind::Edit { occurrences },
            "was not found; read the artifact and copy the exact text.",
        )),
        1 => Ok(text.replacen(old.as_str(), &new, 1)),
        n => Err(ArtifactError::new(
            ArtifactErrorKind::Edit { occurrences: n },
            format!("is ambiguous: it occurs {n} times; include more surrounding text."),
        )),
    }
}
