//! `ls`, glob's names, `delete`, `make_dir` and `delete_tree`: what the archive API cannot do without content, run as constant `sh` scripts or tools with the path as an argv element.
//!
//! No script holds a path: the directory or file is `$1`, so no name
//! can break the quoting. Listing prints one `TYPE NAME` record per entry,
//! each ended by a NUL byte (names may hold newlines), using only shell
//! built-ins, so it never opens an entry (a FIFO cannot block it); sizes and
//! times then come from the archive stat of each file in the window.

use bollard::Docker;
use burrow_backend::{
    Error, ErrorKind, FileInfo, Glob, Listing, Result, ResultOrder, Smallest, VPath,
};
use futures::StreamExt;

use crate::exec::{ExecEnv, records, run_argv};
use crate::paths::{self, Kind, Layout, join};

/// Lists directory `$1`: `d`, `f`, `l` (link) or `o` (other), a space, the name, a NUL.
const LIST: &str = r#"for f in "$1"/.* "$1"/*; do
  n=${f##*/}
  case $n in .|..) continue ;; esac
  if [ -L "$f" ]; then t=l
  elif [ -d "$f" ]; then t=d
  elif [ -f "$f" ]; then t=f
  elif [ -e "$f" ]; then t=o
  else continue
  fi
  printf '%s %s\0' "$t" "$n"
done"#;

/// Deletes `$1`: a directory only when empty (exit 40 otherwise), anything else with `rm`.
const DELETE: &str = r#"if [ -d "$1" ] && [ ! -L "$1" ]; then
  for f in "$1"/.* "$1"/*; do
    case ${f##*/} in .|..) continue ;; esac
    if [ -e "$f" ] || [ -L "$f" ]; then exit 40; fi
  done
  exec rmdir -- "$1"
fi
exec rm -f -- "$1""#;

/// Names every regular file, then every symbolic link, beneath directory
/// `$1` (never their content), each path ended by a NUL, with one empty
/// record between the two groups. Links are not followed, so a link to a
/// directory is not descended; unreadable directories are passed by.
const FIND: &str = r#"command -v find >/dev/null 2>&1 || exit 127
find "$1" -mindepth 1 -type f -print0 2>/dev/null
printf '\0'
find "$1" -mindepth 1 -type l -print0 2>/dev/null
exit 0"#;

/// The exit code of [`DELETE`] for a directory with entries.
const NOT_EMPTY: i64 = 40;
/// How many stat requests one listing keeps in flight.
pub(crate) const STAT_CONCURRENCY: usize = 8;

/// Everything that names one sandbox for these helpers.
pub(crate) struct Place<'a> {
    pub docker: &'a Docker,
    pub at: ExecEnv<'a>,
    pub layout: &'a Layout,
}

/// One entry of a directory, before sizes are known.
struct Raw {
    path: VPath,
    is_dir: bool,
    /// The container path to stat for size and time (a link's target).
    real: String,
}

impl ResultOrder for Raw {
    fn order_path(&self) -> &str {
        self.path.as_str()
    }
}

/// A file glob found: its virtual path and the real container path to stat
/// (a link's target), so the collector orders by the one and carries the other.
pub(crate) struct Found {
    pub path: VPath,
    pub real: String,
}

impl ResultOrder for Found {
    fn order_path(&self) -> &str {
        self.path.as_str()
    }
}

/// The entries directly beneath the directory whose real container path is
/// `real`: the first `limit` by path, and whether there are more.
///
/// Records are read as the script prints them and go through a collector of
/// the first `limit + 1` by path, so memory follows `limit`, not the size of
/// the directory; a link is followed (two stats) only when its entry would be
/// kept, and only kept files are stat-ed for size and time.
pub(crate) async fn list(
    place: &Place<'_>,
    dir: &VPath,
    real: &str,
    limit: usize,
) -> Result<Listing> {
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        LIST.to_owned(),
        "burrow-ls".to_owned(),
        real.to_owned(),
    ];
    let mut records = records(place.docker, place.at, argv).await?;
    let mut first = Smallest::new(limit);
    // Records that are not entries (a shell's complaint) are kept for the failure message.
    let mut said = Vec::new();
    while let Some(record) = records.next().await? {
        let (Some(&kind), Some(b' '), Some(name)) =
            (record.first(), record.get(1).copied(), record.get(2..))
        else {
            if said.len() < 512 {
                said.extend_from_slice(&record);
            }
            continue;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let Ok(path) = dir.join(name) else {
            continue;
        };
        if path.name() != name || !first.would_keep(path.as_str(), 0) {
            continue;
        }
        let here = join(real, name);
        match kind {
            b'd' => first.push(Raw {
                path,
                is_dir: true,
                real: here,
            }),
            b'f' => first.push(Raw {
                path,
                is_dir: false,
                real: here,
            }),
            b'l' => {
                if let Some((is_dir, target)) = follow_link(place, &here).await? {
                    first.push(Raw {
                        path,
                        is_dir,
                        real: target,
                    });
                }
            }
            _ => {}
        }
    }
    let code = records.exit_code(place.docker, place.at.id).await?;
    if code != 0 {
        return Err(Error::failure_msg(format!(
            "listing {dir} in the sandbox failed (exit code {code}): {}",
            crate::engine::scrub(&String::from_utf8_lossy(&said))
        )));
    }
    let (raw, truncated) = first.finish();
    let infos: Vec<Option<FileInfo>> = futures::stream::iter(raw)
        .map(|r| async move { info(place, r).await })
        .buffered(STAT_CONCURRENCY)
        .collect::<Vec<Result<Option<FileInfo>>>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(Listing {
        entries: infos.into_iter().flatten().collect(),
        truncated,
    })
}

/// Where the link at `real` leads, when it stays inside and reaches a file or directory.
pub(crate) async fn follow_link(place: &Place<'_>, real: &str) -> Result<Option<(bool, String)>> {
    // A loop of links leads nowhere: left out, like a link leading out.
    let link = match paths::stat(place.docker, place.at.id, real).await {
        Ok(Some(link)) => link,
        Ok(None) => return Ok(None),
        Err(e) if paths::is_loop(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    if link.kind != Kind::Symlink || !place.layout.contains(&link.link_target) {
        return Ok(None);
    }
    let target = match paths::stat(place.docker, place.at.id, &link.link_target).await {
        Err(e) if paths::is_loop(&e) => return Ok(None),
        other => other?,
    };
    Ok(match target {
        Some(t) if t.kind == Kind::Dir => Some((true, link.link_target)),
        Some(t) if t.kind == Kind::File => Some((false, link.link_target)),
        _ => None,
    })
}

/// The entry for the file `path` whose real container path is `real`, with
/// its size and time (`None` when it is gone or no longer a regular file).
pub(crate) async fn file_info(
    place: &Place<'_>,
    path: VPath,
    real: String,
) -> Result<Option<FileInfo>> {
    info(
        place,
        Raw {
            path,
            is_dir: false,
            real,
        },
    )
    .await
}

/// The listing entry for `r`: directories as they are, files with their size and time.
async fn info(place: &Place<'_>, r: Raw) -> Result<Option<FileInfo>> {
    let name = r.path.name().to_owned();
    if r.is_dir {
        return Ok(Some(FileInfo {
            name,
            path: r.path.to_string(),
            is_dir: true,
            size: None,
            modified_at: None,
        }));
    }
    // A file deleted since the listing is left out.
    Ok(paths::stat(place.docker, place.at.id, &r.real)
        .await?
        .filter(|s| s.kind == Kind::File)
        .map(|s| FileInfo {
            name,
            path: r.path.to_string(),
            is_dir: false,
            size: Some(s.size),
            modified_at: s.modified_at,
        }))
}

/// The first `limit` paths (and whether there are more) beneath `dir` (real
/// container path `real`) that match `glob`, each with the real path of the
/// file to stat: regular files, and links that stay inside and reach a file.
/// Names come from `find` in the sandbox, read as they arrive, so no content
/// is transferred and memory is bounded by `limit`.
pub(crate) async fn glob_files(
    place: &Place<'_>,
    dir: &VPath,
    real: &str,
    glob: &Glob,
    limit: usize,
) -> Result<Smallest<Found>> {
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        FIND.to_owned(),
        "burrow-find".to_owned(),
        real.to_owned(),
    ];
    let mut records = records(place.docker, place.at, argv).await?;
    let mut first = Smallest::new(limit);
    let mut links = false;
    // Records that are not paths (a shell's complaint) are passed by.
    let mut said = Vec::new();
    while let Some(record) = records.next().await? {
        if record.is_empty() {
            links = true;
            continue;
        }
        let Some(rel) = relative(real, &record) else {
            if said.len() < 512 {
                said.extend_from_slice(&record);
            }
            continue;
        };
        let Ok(path) = dir.join(&rel) else {
            continue;
        };
        if !glob.is_match(&rel) || !first.would_keep(path.as_str(), 0) {
            continue;
        }
        let here = join(real, &rel);
        if !links {
            first.push(Found { path, real: here });
        } else if let Some((false, target)) = follow_link(place, &here).await? {
            // Links leading out, nowhere, to a directory or into a loop are left out.
            first.push(Found { path, real: target });
        }
    }
    let code = records.exit_code(place.docker, place.at.id).await?;
    match code {
        0 => Ok(first),
        127 => Err(Error::failure_msg(format!(
            "glob under {dir} needs `find` in the sandbox image, and it has none"
        ))),
        _ => Err(Error::failure_msg(format!(
            "listing the files under {dir} in the sandbox failed (exit code {code}): {}",
            crate::engine::scrub(&String::from_utf8_lossy(&said))
        ))),
    }
}

/// The path `record` printed by `find` for a start at `real`, relative to it
/// (`None` when it is not valid UTF-8 or not beneath `real`).
pub(crate) fn relative(real: &str, record: &[u8]) -> Option<String> {
    let path = std::str::from_utf8(record).ok()?;
    let rest = path.strip_prefix(real)?;
    let rel = if real.ends_with('/') {
        rest
    } else {
        rest.strip_prefix('/')?
    };
    (!rel.is_empty()).then(|| rel.to_owned())
}

/// Deletes the file, link, special file or empty directory at the real container path `real`.
pub(crate) async fn delete(place: &Place<'_>, path: &VPath, real: &str) -> Result<()> {
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        DELETE.to_owned(),
        "burrow-rm".to_owned(),
        real.to_owned(),
    ];
    let (code, out) = run_argv(place.docker, place.at, argv).await?;
    match code {
        0 => Ok(()),
        NOT_EMPTY => Err(Error::refusal(
            ErrorKind::DirectoryNotEmpty,
            format!("{path} is a directory that is not empty; delete its entries first."),
        )),
        _ => {
            let said = String::from_utf8_lossy(&out);
            if said.contains("ermission denied") || said.contains("not permitted") {
                Err(Error::refusal(
                    ErrorKind::PermissionDenied,
                    format!("the sandbox's user may not delete {path}."),
                ))
            } else {
                Err(Error::failure_msg(format!(
                    "deleting {path} in the sandbox failed (exit code {code}): {}",
                    crate::engine::scrub(&said)
                )))
            }
        }
    }
}

/// The argv element that `mkdir` and `rm` get before the path, so a name starting with "-" is a name.
const END_OF_OPTIONS: &str = "--";

/// Makes the directory at the real container path `real` (`mkdir`, with
/// `parents` `mkdir -p`); the caller has checked what stands on the way.
pub(crate) async fn make_dir(
    place: &Place<'_>,
    path: &VPath,
    real: &str,
    parents: bool,
) -> Result<()> {
    let mut argv = vec!["mkdir".to_owned()];
    if parents {
        argv.push("-p".to_owned());
    }
    argv.extend([END_OF_OPTIONS.to_owned(), real.to_owned()]);
    let (code, out) = run_argv(place.docker, place.at, argv).await?;
    match code {
        0 => Ok(()),
        _ => Err(tool_refusal("make", path, code, &out)),
    }
}

/// Deletes the file, link or directory at the real container path `real`
/// with everything beneath it (`rm -rf`, which never follows a link).
pub(crate) async fn delete_tree(place: &Place<'_>, path: &VPath, real: &str) -> Result<()> {
    let argv = vec![
        "rm".to_owned(),
        "-rf".to_owned(),
        END_OF_OPTIONS.to_owned(),
        real.to_owned(),
    ];
    let (code, out) = run_argv(place.docker, place.at, argv).await?;
    match code {
        0 => Ok(()),
        _ => Err(tool_refusal("delete", path, code, &out)),
    }
}

/// What a tool's failure to `verb` `path` means: AlreadyExists (made
/// meanwhile), PermissionDenied, or a failure with its words.
fn tool_refusal(verb: &str, path: &VPath, code: i64, out: &[u8]) -> Error {
    let said = String::from_utf8_lossy(out);
    if said.contains("ermission denied") || said.contains("not permitted") {
        Error::refusal(
            ErrorKind::PermissionDenied,
            format!("the sandbox's user may not {verb} {path}."),
        )
    } else if verb == "make" && said.contains("File exists") {
        Error::refusal(
            ErrorKind::AlreadyExists,
            format!("{path} already exists (it was made meanwhile)."),
        )
    } else {
        Error::failure_msg(format!(
            "trying to {verb} {path} in the sandbox failed (exit code {code}): {}",
            crate::engine::scrub(&said)
        ))
    }
}
