//! `burrow artifact ...`: a person reads and changes the artifact workspace of a session store (list, show, history, create, edit, archive, proposals, apply, reject).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use burrow_artifacts::{
    Actor, ArtifactError, ArtifactErrorKind, ArtifactStore, Change, Kinds, SqliteArtifactStore,
};
use serde_json::{Value, json};

use crate::cli::{ArtifactCommand, ArtifactCommon};
use crate::display;
use crate::output::Exit;

/// The workspace the CLI's artifacts live in (the session's, as for `burrow thread`).
pub(crate) const WORKSPACE: &str = "default";

/// A refusal or failure of an artifact command: its exit, kind and one sentence.
struct Refused {
    exit: Exit,
    kind: String,
    message: String,
    conflict: Option<Value>,
}

impl Refused {
    fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failed,
            kind: "invalid_argument".to_owned(),
            message: message.into(),
            conflict: None,
        }
    }
}

impl From<ArtifactError> for Refused {
    fn from(e: ArtifactError) -> Self {
        let conflict = match e.kind() {
            ArtifactErrorKind::Conflict {
                head,
                changes_since,
            } => Some(json!({"head": head, "changes_since": changes_since})),
            _ => None,
        };
        Self {
            exit: if e.is_refusal() {
                Exit::Refused
            } else {
                Exit::Failed
            },
            kind: e.kind().as_str().to_owned(),
            message: e.message().to_owned(),
            conflict,
        }
    }
}

/// Runs `command` for `tenant`, printing its result (JSON when `json`).
pub async fn run(command: &ArtifactCommand, tenant: &str, json: bool) -> io::Result<Exit> {
    match execute(command, tenant, json).await {
        Ok(()) => Ok(Exit::Success),
        Err(refused) => {
            if json {
                let mut error = json!({"kind": refused.kind, "message": refused.message});
                if let Some(conflict) = refused.conflict {
                    error["conflict"] = conflict;
                }
                print(&json!({ "error": error }))?;
            } else {
                writeln!(
                    io::stderr(),
                    "burrow: {}",
                    display::sentence(&refused.message)
                )?;
            }
            Ok(refused.exit)
        }
    }
}

fn common(command: &ArtifactCommand) -> &ArtifactCommon {
    match command {
        ArtifactCommand::List { common, .. }
        | ArtifactCommand::Show { common, .. }
        | ArtifactCommand::History { common, .. }
        | ArtifactCommand::Create { common, .. }
        | ArtifactCommand::Edit { common, .. }
        | ArtifactCommand::Archive { common, .. }
        | ArtifactCommand::Proposals { common, .. }
        | ArtifactCommand::Apply { common, .. }
        | ArtifactCommand::Reject { common, .. } => common,
    }
}

/// The person a change is attributed to: `--as`, else the login name, else "user".
fn person(given: Option<&str>) -> Actor {
    let name = given
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok().filter(|n| !n.is_empty()))
        .or_else(|| std::env::var("LOGNAME").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "user".to_owned());
    Actor::person(name)
}

/// The kinds of `DIR/KIND.schema.json`, sorted by name, each rendered through
/// `DIR/KIND.md` when there is one (ADR 0333), else as pretty JSON.
pub fn read_kinds(dir: &Path) -> Result<Kinds, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("the artifacts folder cannot be read: {}", e.kind()))?;
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| format!("the artifacts folder cannot be read: {}", e.kind()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(kind) = name.strip_suffix(".schema.json") {
            files.push((kind.to_owned(), entry.path()));
        }
    }
    if files.is_empty() {
        return Err("the artifacts folder holds no KIND.schema.json file".to_owned());
    }
    files.sort();
    let mut kinds = Kinds::new();
    for (kind, path) in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{kind}.schema.json cannot be read: {}", e.kind()))?;
        let schema: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{kind}.schema.json is not JSON: {e}"))?;
        let template = dir.join(format!("{kind}.md"));
        let added = if template.is_file() {
            let text = std::fs::read_to_string(&template)
                .map_err(|e| format!("{kind}.md cannot be read: {}", e.kind()))?;
            let template = burrow_artifacts::template::Template::parse(&text);
            kinds.with_template(&kind, schema, template)
        } else {
            kinds.with_schema(&kind, schema)
        };
        kinds = added.map_err(|e| format!("{kind}.schema.json: {}", e.message()))?;
    }
    Ok(kinds)
}

/// Opens the artifact store of the session `spec`, accepting `kinds`.
pub async fn open(spec: &str, kinds: Kinds) -> Result<Arc<dyn ArtifactStore>, String> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        if path.is_empty() {
            return Err("the session sqlite: names no file; give sqlite:FILE.db".to_owned());
        }
        return SqliteArtifactStore::open(path, kinds)
            .map(|s| Arc::new(s) as Arc<dyn ArtifactStore>)
            .map_err(|e| format!("the artifact store cannot be opened: {}", e.message()));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return open_postgres(spec, kinds).await;
    }
    Err(format!(
        "{} is not a session the artifact workspace can live in: give sqlite:FILE.db or postgres://...",
        display::name(spec)
    ))
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str, kinds: Kinds) -> Result<Arc<dyn ArtifactStore>, String> {
    burrow_artifacts::store::PostgresArtifactStore::connect(url, "burrow_artifacts", kinds)
        .await
        .map(|s| Arc::new(s) as Arc<dyn ArtifactStore>)
        .map_err(|e| format!("the artifact store cannot be opened: {}", e.message()))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str, _kinds: Kinds) -> Result<Arc<dyn ArtifactStore>, String> {
    Err(
        "PostgreSQL sessions are not built into this burrow (rebuild burrow-agent-cli with its `postgres` feature)"
            .to_owned(),
    )
}

fn read_json_file(path: &Path, what: &str) -> Result<Value, Refused> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Refused::usage(format!("the {what} file cannot be read: {}", e.kind())))?;
    serde_json::from_str(&text)
        .map_err(|e| Refused::usage(format!("the {what} file is not JSON: {e}")))
}

async fn execute(command: &ArtifactCommand, tenant: &str, json: bool) -> Result<(), Refused> {
    let common = common(command);
    let kinds = read_kinds(&common.artifacts).map_err(Refused::usage)?;
    let store = open(&common.session, kinds).await.map_err(Refused::usage)?;
    let scope = burrow_runtime::session::Scope::new(tenant, WORKSPACE);
    let actor = person(common.as_name.as_deref());
    match command {
        ArtifactCommand::List { all, kind, .. } => {
            let heads = store.list(&scope, kind.as_deref(), *all).await?;
            if json {
                return Ok(print(&json!({ "artifacts": heads }))?);
            }
            let mut out = io::stdout().lock();
            for a in heads {
                let archived = if a.archived { " archived" } else { "" };
                writeln!(
                    out,
                    "{} {} v{} {}{archived}",
                    a.id, a.kind, a.version, a.updated_by
                )?;
            }
        }
        ArtifactCommand::Show { id, version, .. } => {
            let head = store.get(&scope, id).await?;
            let (version, snapshot) = match version {
                Some(v) => (*v, store.revision(&scope, id, *v).await?.snapshot),
                None => (head.version, head.snapshot.clone()),
            };
            if json {
                let mut shown = serde_json::to_value(&head).unwrap_or(Value::Null);
                shown["version"] = json!(version);
                shown["snapshot"] = snapshot;
                return Ok(print(&json!({ "artifact": shown }))?);
            }
            let text = store
                .kinds()
                .get(&head.kind)
                .map(|k| k.render(&snapshot).0)
                .unwrap_or_else(|_| serde_json::to_string_pretty(&snapshot).unwrap_or_default());
            let mut out = io::stdout().lock();
            writeln!(out, "{} {} v{version}", head.id, head.kind)?;
            writeln!(out, "{text}")?;
        }
        ArtifactCommand::History { id, .. } => {
            let revisions = store.history(&scope, id).await?;
            if json {
                return Ok(print(&json!({ "revisions": revisions }))?);
            }
            let mut out = io::stdout().lock();
            for r in revisions {
                let summary = r.summary.as_deref().unwrap_or("");
                writeln!(out, "v{} {} {} {summary}", r.version, r.op, r.actor)?;
            }
        }
        ArtifactCommand::Create { kind, file, .. } => {
            let snapshot = read_json_file(file, "snapshot")?;
            let change = Change::Create {
                kind: kind.clone(),
                snapshot,
            };
            commit(&*store, &scope, &actor, change, json).await?;
        }
        ArtifactCommand::Edit {
            id,
            base,
            patch,
            old,
            new,
            field,
            summary,
            ..
        } => {
            let change = match (patch, old, new) {
                (Some(file), None, None) => {
                    let value = read_json_file(file, "patch")?;
                    let patch = serde_json::from_value(value).map_err(|e| {
                        Refused::usage(format!("the patch file is not an RFC 6902 JSON Patch: {e}"))
                    })?;
                    Change::Patch {
                        id: id.clone(),
                        base_version: *base,
                        patch,
                        summary: summary.clone(),
                    }
                }
                (None, Some(old), Some(new)) => Change::EditText {
                    id: id.clone(),
                    base_version: *base,
                    field: field.clone().unwrap_or_else(|| "/text".to_owned()),
                    old: old.clone(),
                    new: new.clone(),
                    summary: summary.clone(),
                },
                _ => {
                    return Err(Refused::usage(
                        "give either --patch FILE or both --old TEXT and --new TEXT",
                    ));
                }
            };
            commit(&*store, &scope, &actor, change, json).await?;
        }
        ArtifactCommand::Archive { id, base, .. } => {
            let change = Change::Archive {
                id: id.clone(),
                base_version: *base,
            };
            commit(&*store, &scope, &actor, change, json).await?;
        }
        ArtifactCommand::Proposals { all, .. } => {
            let proposals = store.proposals(&scope, !*all).await?;
            if json {
                return Ok(print(&json!({ "proposals": proposals }))?);
            }
            let mut out = io::stdout().lock();
            for p in proposals {
                let target = p.change.id().unwrap_or("(new)");
                let status = serde_json::to_value(&p.status)
                    .ok()
                    .and_then(|s| s.get("status").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{} {} {target} {status} {}: {}",
                    p.id,
                    p.change.op(),
                    p.actor,
                    p.rationale
                )?;
            }
        }
        ArtifactCommand::Apply { proposal, .. } => {
            let committed = store.apply_proposal(&scope, &actor, *proposal).await?;
            say_committed(&committed, json)?;
        }
        ArtifactCommand::Reject {
            proposal, reason, ..
        } => {
            let p = store
                .reject_proposal(&scope, &actor, *proposal, reason.as_deref())
                .await?;
            if json {
                return Ok(print(&json!({ "proposal": p }))?);
            }
            writeln!(io::stdout().lock(), "proposal {} rejected", p.id)?;
        }
    }
    Ok(())
}

async fn commit(
    store: &dyn ArtifactStore,
    scope: &burrow_runtime::session::Scope,
    actor: &Actor,
    change: Change,
    json: bool,
) -> Result<(), Refused> {
    let committed = store.submit(scope, actor, change).await?;
    say_committed(&committed, json)
}

fn say_committed(committed: &burrow_artifacts::Committed, json: bool) -> Result<(), Refused> {
    if json {
        print(&json!({
            "artifact": committed.artifact,
            "revision": committed.revision,
            "seq": committed.seq,
        }))?;
        return Ok(());
    }
    let a = &committed.artifact;
    writeln!(io::stdout().lock(), "{} v{}", a.id, a.version)?;
    Ok(())
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Self {
            exit: Exit::Failed,
            kind: "failure".to_owned(),
            message: format!("cannot write output: {}", e.kind()),
            conflict: None,
        }
    }
}

fn print(value: &Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{value}")?;
    out.flush()
}
