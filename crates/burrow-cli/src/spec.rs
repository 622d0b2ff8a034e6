//! Backend specs (`--backend SPEC`): parsing and opening; each backend is one match arm behind its cargo feature.
//!
//! To add a backend: a variant of [`Spec`], an arm in `Spec::from_str` and
//! an arm in `Spec::open`, each behind the backend's cargo feature (see the
//! `--- wire here` markers), plus a line in [`KNOWN`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use burrow::{Backend, Result};

/// Every scheme burrow knows, and the cargo feature that brings it, so a
/// build without it can say which feature is missing.
const KNOWN: &[(&str, &str)] = &[
    ("memory", "state"),
    ("state", "state"),
    ("fs", "fs"),
    ("sqlite", "sqlite"),
    ("s3", "s3"),
    ("gs", "gcs"),
    ("az", "azure"),
    ("docker", "docker"),
];

/// What one backend spec names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// `memory:`: a fresh in-memory workspace, gone when the process ends.
    #[cfg(feature = "state")]
    Memory,
    /// `state:FILE.json`: a FileData document on the host, saved after changes.
    #[cfg(feature = "state")]
    State(PathBuf),
    // --- wire here: one variant per backend, behind its feature, e.g.
    // #[cfg(feature = "fs")] Fs(PathBuf),            fs:DIR
    // #[cfg(feature = "sqlite")] Sqlite(PathBuf),    sqlite:FILE.db
    // #[cfg(feature = "s3")] S3(String),             s3://bucket/prefix
    // #[cfg(feature = "docker")] Docker(String),     docker:IMAGE
}

impl FromStr for Spec {
    type Err = String;

    fn from_str(text: &str) -> Result<Spec, String> {
        let Some((scheme, rest)) = text.split_once(':') else {
            return Err(format!(
                "`{text}` is not a backend spec; write SCHEME:ARGUMENT, e.g. memory: or state:FILE.json"
            ));
        };
        match scheme {
            #[cfg(feature = "state")]
            "memory" if rest.is_empty() => Ok(Spec::Memory),
            #[cfg(feature = "state")]
            "memory" => Err(format!("memory: takes no argument (got `{text}`)")),
            #[cfg(feature = "state")]
            "state" if rest.is_empty() => Err("state: needs a file, e.g. state:work.json".into()),
            #[cfg(feature = "state")]
            "state" => Ok(Spec::State(PathBuf::from(rest))),
            // --- wire here: one arm per backend, behind its feature, e.g.
            // #[cfg(feature = "fs")]
            // "fs" => Ok(Spec::Fs(PathBuf::from(rest))),
            _ => Err(unknown_scheme(scheme)),
        }
    }
}

/// The message for a scheme this build cannot open.
fn unknown_scheme(scheme: &str) -> String {
    match KNOWN.iter().find(|(name, _)| *name == scheme) {
        Some((_, feature)) => format!(
            "this burrow was built without the `{feature}` feature, so it cannot open {scheme}: specs"
        ),
        None => format!(
            "unknown backend `{scheme}:`; this build knows {}",
            available().join(", ")
        ),
    }
}

/// The schemes this build can open, for messages.
fn available() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut out: Vec<&'static str> = Vec::new();
    #[cfg(feature = "state")]
    out.extend(["memory:", "state:FILE.json"]);
    // --- wire here: e.g. #[cfg(feature = "fs")] out.push("fs:DIR");
    if out.is_empty() {
        out.push("nothing (it was built with no backend feature)");
    }
    out
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "state")]
            Spec::Memory => f.write_str("memory:"),
            #[cfg(feature = "state")]
            Spec::State(path) => write!(f, "state:{}", path.display()),
            // --- wire here
            #[allow(unreachable_patterns)]
            _ => f.write_str("?"),
        }
    }
}

/// One `--backend` value: a SPEC, or `PREFIX=SPEC` (a mount at PREFIX).
///
/// A value is a mount when it starts with "/" and holds a "=": `/data=fs:./data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendArg {
    /// The mount prefix, for `PREFIX=SPEC`.
    pub mount: Option<String>,
    /// The backend.
    pub spec: Spec,
}

impl FromStr for BackendArg {
    type Err = String;

    fn from_str(text: &str) -> Result<BackendArg, String> {
        if text.starts_with('/')
            && let Some((prefix, spec)) = text.split_once('=')
        {
            return Ok(BackendArg {
                mount: Some(prefix.to_owned()),
                spec: spec.parse()?,
            });
        }
        Ok(BackendArg {
            mount: None,
            spec: text.parse()?,
        })
    }
}

/// Checks the `--backend` flags together; a usage error (exit 2) otherwise.
pub fn check(args: &[BackendArg]) -> Result<(), String> {
    let plain = args.iter().filter(|a| a.mount.is_none()).count();
    if plain > 1 {
        return Err(format!(
            "{plain} --backend flags without PREFIX=: give one default backend and mount the \
             others, e.g. --backend memory: --backend /data=state:data.json"
        ));
    }
    // --- wire here: with the `composite` feature, mounts become a CompositeBackend.
    if let Some(mount) = args.iter().find_map(|a| a.mount.as_deref()) {
        return Err(format!(
            "the mount {mount}= needs the `composite` feature, which this burrow was built without"
        ));
    }
    Ok(())
}

/// A backend ready to use, and what must happen after a change.
pub struct Opened {
    /// The backend every operation goes to.
    pub backend: Arc<dyn Backend>,
    /// Whatever must be written back after a successful mutation.
    savers: Vec<Box<dyn Saver>>,
}

/// Writes a backend's state back to where it came from (e.g. a state file).
pub trait Saver {
    /// Persists the current state.
    fn save(&self) -> Result<()>;
}

impl Opened {
    /// A backend that needs no saving.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Opened {
            backend,
            savers: Vec::new(),
        }
    }

    /// A backend whose changes `saver` persists.
    pub fn with_saver(backend: Arc<dyn Backend>, saver: Box<dyn Saver>) -> Self {
        Opened {
            backend,
            savers: vec![saver],
        }
    }

    /// Persists every change made through [`Opened::backend`].
    pub fn save(&self) -> Result<()> {
        self.savers.iter().try_for_each(|s| s.save())
    }
}

/// Opens the backend the flags name: `memory:` when there is none.
///
/// `args` must have passed [`check`].
pub async fn open(args: &[BackendArg]) -> Result<Opened> {
    match args.iter().find(|a| a.mount.is_none()) {
        Some(arg) => arg.spec.open().await,
        None => default_spec()?.open().await,
    }
}

/// The backend used when no `--backend` is given: `memory:`.
fn default_spec() -> Result<Spec> {
    #[cfg(feature = "state")]
    return Ok(Spec::Memory);
    #[cfg(not(feature = "state"))]
    return Err(burrow::Error::failure_msg(
        "no --backend given and the default, memory:, needs the `state` feature",
    ));
}

impl Spec {
    /// Opens the backend this spec names.
    pub async fn open(&self) -> Result<Opened> {
        match self {
            #[cfg(feature = "state")]
            Spec::Memory => Ok(Opened::new(Arc::new(burrow::StateBackend::new()))),
            #[cfg(feature = "state")]
            Spec::State(path) => crate::state_file::open(path),
            // --- wire here: one arm per backend, behind its feature.
            #[allow(unreachable_patterns)]
            _ => Err(burrow::Error::failure_msg(format!(
                "{self} cannot be opened by this build"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "state")]
    #[test]
    fn parses_the_specs_of_this_build() {
        assert_eq!("memory:".parse::<Spec>(), Ok(Spec::Memory));
        assert_eq!(
            "state:dir/work.json".parse::<Spec>(),
            Ok(Spec::State(PathBuf::from("dir/work.json")))
        );
        // A file name may hold ':' and '=': only the first ':' splits.
        assert_eq!(
            "state:a:b=c.json".parse::<Spec>(),
            Ok(Spec::State(PathBuf::from("a:b=c.json")))
        );
        assert!("memory:x".parse::<Spec>().is_err());
        assert!("state:".parse::<Spec>().is_err());
    }

    #[test]
    fn refuses_unknown_and_unbuilt_schemes() {
        let err = "nope:x".parse::<Spec>().unwrap_err();
        assert!(err.contains("unknown backend `nope:`"), "{err}");
        let err = "no-colon".parse::<Spec>().unwrap_err();
        assert!(err.contains("SCHEME:ARGUMENT"), "{err}");
        // A known scheme the parser did not take names its missing feature.
        let err = unknown_scheme("docker");
        assert!(err.contains("`docker` feature"), "{err}");
    }

    #[cfg(feature = "state")]
    #[test]
    fn mounts_start_with_a_slash() {
        let arg: BackendArg = "/data=state:x=y.json".parse().unwrap();
        assert_eq!(arg.mount.as_deref(), Some("/data"));
        assert_eq!(arg.spec, Spec::State(PathBuf::from("x=y.json")));
        let arg: BackendArg = "state:/abs/x=y.json".parse().unwrap();
        assert_eq!(arg.mount, None);
        assert_eq!(arg.spec, Spec::State(PathBuf::from("/abs/x=y.json")));
    }

    #[cfg(feature = "state")]
    #[test]
    fn several_plain_backends_are_a_usage_error() {
        let args: Vec<BackendArg> = vec!["memory:".parse().unwrap(), "memory:".parse().unwrap()];
        assert!(check(&args).unwrap_err().contains("2 --backend flags"));
        assert!(check(&args[..1]).is_ok());
        assert!(check(&[]).is_ok());
    }
}
