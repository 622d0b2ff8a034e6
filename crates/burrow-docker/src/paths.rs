//! Virtual paths to container paths, stat through the archive HEAD request, and resolution that refuses symlinks leading out of the work dir.
//!
//! The engine resolves an archive path's directories *within the container's
//! root*, not within the work dir: a link `notes -> /etc` inside the work dir
//! would silently reach the container's `/etc`. So every operation first
//! resolves its path itself, one component at a time: each prefix of the path
//! is stat'ed (HEAD, concurrently), and a component that is a symbolic link
//! is checked against its fully resolved target (which the engine reports)
//! before anything is read or written through it.

use bollard::Docker;
use bollard::query_parameters::ContainerArchiveInfoOptionsBuilder;
use burrow_backend::{Error, ErrorKind, Result, VPath};
use futures::StreamExt;

use crate::engine;

/// Go's `os.FileMode` type bits, as the engine reports them.
const MODE_DIR: u32 = 1 << 31;
const MODE_SYMLINK: u32 = 1 << 27;
const MODE_DEVICE: u32 = 1 << 26;
const MODE_NAMED_PIPE: u32 = 1 << 25;
const MODE_SOCKET: u32 = 1 << 24;
const MODE_SETUID: u32 = 1 << 23;
const MODE_SETGID: u32 = 1 << 22;
const MODE_CHAR_DEVICE: u32 = 1 << 21;
const MODE_STICKY: u32 = 1 << 20;
const MODE_IRREGULAR: u32 = 1 << 19;

/// How many stat requests one resolution keeps in flight.
const STAT_CONCURRENCY: usize = 8;

/// What a path in the container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device: never opened.
    Other,
}

/// The engine's stat of one path (of the link itself for a symbolic link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    pub kind: Kind,
    pub size: u64,
    /// Unix permission bits (with setuid, setgid and sticky).
    pub perm: u32,
    /// RFC 3339 modification time, when the engine gave a parseable one.
    pub modified_at: Option<String>,
    /// For a symbolic link: its target fully resolved within the container's root.
    pub link_target: String,
}

impl Stat {
    fn from_engine(r: bollard::container::PathStatResponse) -> Stat {
        let mode = r.file_mode;
        let kind = if mode & MODE_DIR != 0 {
            Kind::Dir
        } else if mode & MODE_SYMLINK != 0 {
            Kind::Symlink
        } else if mode
            & (MODE_DEVICE | MODE_NAMED_PIPE | MODE_SOCKET | MODE_CHAR_DEVICE | MODE_IRREGULAR)
            != 0
        {
            Kind::Other
        } else {
            Kind::File
        };
        let mut perm = mode & 0o777;
        for (go, unix) in [
            (MODE_SETUID, 0o4000),
            (MODE_SETGID, 0o2000),
            (MODE_STICKY, 0o1000),
        ] {
            if mode & go != 0 {
                perm |= unix;
            }
        }
        Stat {
            kind,
            size: u64::try_from(r.size).unwrap_or(0),
            perm,
            modified_at: r
                .modification_time
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| t.to_string()),
            link_target: r.link_target,
        }
    }
}

/// Where the virtual tree lives in the container: "/" is `work_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Absolute, normalised, no trailing "/" (unless it is "/").
    work_dir: String,
}

impl Layout {
    /// The layout for `work_dir`, which must be an absolute path.
    pub fn new(work_dir: &str) -> Result<Layout> {
        if !work_dir.starts_with('/') {
            return Err(Error::invalid_argument(format!(
                "the work dir \"{work_dir}\" is not an absolute path; use e.g. \"/workspace\"."
            )));
        }
        let parsed = VPath::parse(work_dir)?;
        if parsed.as_str() != work_dir.trim_end_matches('/') && !parsed.is_root() {
            return Err(Error::invalid_argument(format!(
                "the work dir \"{work_dir}\" is not a normalised path; use \"{parsed}\"."
            )));
        }
        Ok(Layout {
            work_dir: parsed.as_str().to_owned(),
        })
    }

    /// The work dir's container path.
    pub fn work_dir(&self) -> &str {
        &self.work_dir
    }

    /// The container path of `path` (before any link is resolved).
    pub fn container(&self, path: &VPath) -> String {
        join(
            &self.work_dir,
            path.relative_to(&VPath::root()).unwrap_or(""),
        )
    }

    /// True when the container path `real` is the work dir or beneath it.
    pub fn contains(&self, real: &str) -> bool {
        self.work_dir == "/"
            || real == self.work_dir
            || (real.starts_with(&self.work_dir)
                && real.as_bytes().get(self.work_dir.len()) == Some(&b'/'))
    }
}

/// `dir` joined with the relative path `rel` ("" gives `dir`).
pub(crate) fn join(dir: &str, rel: &str) -> String {
    match (dir, rel) {
        (d, "") => d.to_owned(),
        ("/", r) => format!("/{r}"),
        (d, r) => format!("{d}/{r}"),
    }
}

/// The parent and name of the container path `real` (not "/").
pub(crate) fn split(real: &str) -> (&str, &str) {
    match real.rfind('/') {
        Some(0) => ("/", &real[1..]),
        Some(i) => (&real[..i], &real[i + 1..]),
        None => ("/", real),
    }
}

/// Stat of `real` in container `id`; `None` when it does not exist.
pub(crate) async fn stat(docker: &Docker, id: &str, real: &str) -> Result<Option<Stat>> {
    let options = ContainerArchiveInfoOptionsBuilder::default()
        .path(real)
        .build();
    match docker.get_container_archive_info(id, Some(options)).await {
        Ok(r) => Ok(Some(Stat::from_engine(r))),
        Err(e) if engine::status(&e) == Some(404) => {
            if is_no_such_container(&e) {
                Err(gone(e))
            } else {
                Ok(None)
            }
        }
        // A HEAD answers a loop of links with a bare 500: ask the container whether `real` resolves.
        Err(e) if engine::status(&e) == Some(500) && unresolvable(docker, id, real).await => {
            Err(Error::refusal(ErrorKind::PermissionDenied, LOOP_MESSAGE))
        }
        Err(e) => Err(engine::failure("look up a path in the sandbox", e)),
    }
}

/// The message of the refusal [`stat`] gives for a loop of links (replaced by [`looped`] once the path is known).
const LOOP_MESSAGE: &str = "the path goes through a loop of symbolic links; it is refused.";

/// True when `e` is [`stat`]'s refusal for a loop of links.
pub(crate) fn is_loop(e: &Error) -> bool {
    e.kind() == ErrorKind::PermissionDenied && e.message() == LOOP_MESSAGE
}

/// The refusal for `path`, which goes through a loop of symbolic links.
pub(crate) fn looped(path: &VPath) -> Error {
    Error::refusal(
        ErrorKind::PermissionDenied,
        format!("{path} goes through a loop of symbolic links; it is refused."),
    )
}

/// True when `readlink -f` cannot resolve `real` in the container (a loop of links).
async fn unresolvable(docker: &Docker, id: &str, real: &str) -> bool {
    let at = crate::exec::ExecEnv {
        id,
        work_dir: "/",
        env: &[],
        user: None,
    };
    let argv = ["readlink", "-f", "--", real]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    matches!(crate::exec::run_argv(docker, at, argv).await, Ok((code, _)) if code != 0)
}

/// True when a 404 is about the container, not the path.
pub(crate) fn is_no_such_container(e: &bollard::errors::Error) -> bool {
    matches!(e, bollard::errors::Error::DockerResponseServerError { message, .. }
        if message.contains("No such container"))
}

/// The failure for a container that no longer exists.
pub(crate) fn gone(e: bollard::errors::Error) -> Error {
    Error::failure(
        "the sandbox container no longer exists (it was removed or killed); start a new sandbox",
        e,
    )
}

/// Whether the last component of a path is followed when it is a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    Yes,
    /// The link itself is the target (delete removes a link, never its target).
    No,
}

/// A virtual path resolved in the container.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The real container path of the deepest existing directory on the way.
    pub base: String,
    /// Components beneath `base` that do not exist yet (empty when the target exists).
    pub missing: Vec<String>,
    /// The target's real container path and stat, when it exists.
    pub target: Option<(String, Stat)>,
    /// True when the way goes through a symbolic link that leads nowhere.
    pub dangling: bool,
    /// The ancestor that is a file (or special file), when one stands in the way.
    pub blocked_by: Option<VPath>,
}

/// The refusal for a path that would leave the work dir through a link.
pub(crate) fn leads_out(path: &VPath) -> Error {
    Error::refusal(
        ErrorKind::PermissionDenied,
        format!(
            "{path} goes through a symbolic link that leads outside the workspace; use a path inside it."
        ),
    )
}

/// The refusal for a FIFO, socket or device.
pub(crate) fn special(path: &VPath) -> Error {
    Error::refusal(
        ErrorKind::PermissionDenied,
        format!(
            "{path} is not a regular file or directory (a FIFO, socket or device); it is never opened."
        ),
    )
}

/// Resolves `path` in container `id`, refusing any link on the way that
/// leads outside the work dir (PermissionDenied). A file used as a directory
/// makes the target missing, with `blocked_by` naming it (a write refuses
/// that with NotADirectory; a read finds nothing).
pub(crate) async fn resolve(
    docker: &Docker,
    id: &str,
    layout: &Layout,
    path: &VPath,
    follow: Follow,
) -> Result<Resolved> {
    resolve_inner(docker, id, layout, path, follow)
        .await
        .map_err(|e| if is_loop(&e) { looped(path) } else { e })
}

async fn resolve_inner(
    docker: &Docker,
    id: &str,
    layout: &Layout,
    path: &VPath,
    follow: Follow,
) -> Result<Resolved> {
    let segments: Vec<&str> = path.segments().collect();
    if segments.is_empty() {
        let root = layout.work_dir().to_owned();
        let stat = Stat {
            kind: Kind::Dir,
            size: 0,
            perm: 0o755,
            modified_at: None,
            link_target: String::new(),
        };
        return Ok(Resolved {
            base: root.clone(),
            missing: Vec::new(),
            target: Some((root, stat)),
            dangling: false,
            blocked_by: None,
        });
    }
    // Stat every prefix at once; the engine resolves in-bound links the same way we do.
    let mut prefixes = Vec::with_capacity(segments.len());
    let mut acc = layout.work_dir().to_owned();
    for s in &segments {
        acc = join(&acc, s);
        prefixes.push(acc.clone());
    }
    let stats: Vec<Result<Option<Stat>>> = futures::stream::iter(prefixes)
        .map(|p| async move { stat(docker, id, &p).await })
        .buffered(STAT_CONCURRENCY)
        .collect()
        .await;
    let mut real = layout.work_dir().to_owned();
    let last = segments.len() - 1;
    for (i, (segment, stat)) in segments.iter().zip(stats).enumerate() {
        let Some(mut stat) = stat? else {
            return Ok(Resolved {
                base: real,
                missing: segments[i..].iter().map(|s| (*s).to_owned()).collect(),
                target: None,
                dangling: false,
                blocked_by: None,
            });
        };
        let mut here = join(&real, segment);
        if stat.kind == Kind::Symlink && (i < last || follow == Follow::Yes) {
            if !layout.contains(&stat.link_target) {
                return Err(leads_out(path));
            }
            here = stat.link_target.clone();
            match self::stat(docker, id, &here).await? {
                Some(target) if target.kind != Kind::Symlink => stat = target,
                _ => {
                    return Ok(Resolved {
                        base: real,
                        missing: segments[i..].iter().map(|s| (*s).to_owned()).collect(),
                        target: None,
                        dangling: true,
                        blocked_by: None,
                    });
                }
            }
        }
        if i == last {
            let base = split(&here).0.to_owned();
            return Ok(Resolved {
                base,
                missing: Vec::new(),
                target: Some((here, stat)),
                dangling: false,
                blocked_by: None,
            });
        }
        if stat.kind != Kind::Dir {
            return Ok(Resolved {
                base: real,
                missing: segments[i..].iter().map(|s| (*s).to_owned()).collect(),
                target: None,
                dangling: false,
                blocked_by: Some(VPath::parse(&segments[..=i].join("/"))?),
            });
        }
        real = here;
    }
    Err(Error::failure_msg(
        "resolving a path ended without a result",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_maps_and_contains() {
        let l = Layout::new("/workspace").unwrap();
        assert_eq!(l.container(&VPath::root()), "/workspace");
        assert_eq!(
            l.container(&VPath::parse("/a b/c").unwrap()),
            "/workspace/a b/c"
        );
        assert!(l.contains("/workspace"));
        assert!(l.contains("/workspace/x"));
        assert!(!l.contains("/workspace2"));
        assert!(!l.contains("/etc"));
        let root = Layout::new("/").unwrap();
        assert_eq!(root.container(&VPath::parse("/a").unwrap()), "/a");
        assert!(root.contains("/etc"));
        assert!(Layout::new("workspace").is_err());
        assert!(Layout::new("/a/../b").is_err());
        assert_eq!(split("/a/b"), ("/a", "b"));
        assert_eq!(split("/a"), ("/", "a"));
    }

    #[test]
    fn modes_decode() {
        let r = |mode: u32| bollard::container::PathStatResponse {
            name: "x".into(),
            size: 3,
            file_mode: mode,
            modification_time: Some("2026-11-30T08:25:23.123456789Z".into()),
            link_target: String::new(),
        };
        let s = Stat::from_engine(r(0o644));
        assert_eq!((s.kind, s.perm), (Kind::File, 0o644));
        assert_eq!(
            s.modified_at.as_deref(),
            Some("2026-11-30T08:25:23.123456789Z")
        );
        assert_eq!(Stat::from_engine(r(MODE_DIR | 0o755)).kind, Kind::Dir);
        assert_eq!(
            Stat::from_engine(r(MODE_SYMLINK | 0o777)).kind,
            Kind::Symlink
        );
        assert_eq!(
            Stat::from_engine(r(MODE_NAMED_PIPE | 0o600)).kind,
            Kind::Other
        );
        assert_eq!(Stat::from_engine(r(MODE_SETUID | 0o755)).perm, 0o4755);
    }
}
