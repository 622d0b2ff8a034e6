//! Backend specs (`--backend SPEC`): parsing and opening; each backend is one match arm behind its cargo feature.
//!
//! To add a backend: a variant of [`Spec`], an arm in `Spec::from_str`,
//! `Display` and `Spec::open`, each behind the backend's cargo feature, plus
//! a line in [`KNOWN`] and in `available`. Mounts (`PREFIX=SPEC`) are put
//! together into a composite by `crate::mounts` (docs/adr/0120).

use std::collections::BTreeSet;
use std::fmt;
#[cfg(feature = "sqlite")]
use std::path::Path;
#[cfg(any(feature = "state", feature = "fs", feature = "sqlite"))]
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use burrow::{Backend, Error, Result, VPath};

/// Every scheme burrow knows, and the cargo feature that brings it, so a
/// build without it can say which feature is missing.
const KNOWN: &[(&str, &str)] = &[
    ("memory", "state"),
    ("state", "state"),
    ("fs", "fs"),
    ("sqlite", "sqlite"),
    ("s3", "s3"),
    ("docker", "docker"),
];

/// Object-store schemes the library offers but the command does not open
/// (docs/adr/0121), with what to use instead.
const NOT_OFFERED: &[(&str, &str)] =
    &[("gs", "Google Cloud Storage"), ("az", "Azure Blob Storage")];

/// What one backend spec names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// `memory:`: a fresh in-memory workspace, gone when the process ends.
    #[cfg(feature = "state")]
    Memory,
    /// `state:FILE.json`: a FileData document on the host, saved after changes.
    #[cfg(feature = "state")]
    State(PathBuf),
    /// `fs:DIR`: a folder on the host (created when missing).
    #[cfg(feature = "fs")]
    Fs(PathBuf),
    /// `sqlite:FILE.db`: a SQLite database on the host (created when missing).
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
    /// `s3://bucket/prefix`, kept whole: a bucket and key prefix on S3.
    #[cfg(feature = "s3")]
    S3(String),
    /// `docker:IMAGE`: a fresh container of IMAGE for this one command (or
    /// batch), removed when burrow ends.
    #[cfg(feature = "docker")]
    Docker(String),
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
            #[cfg(feature = "fs")]
            "fs" if rest.is_empty() => Err("fs: needs a folder, e.g. fs:./work".into()),
            #[cfg(feature = "fs")]
            "fs" => Ok(Spec::Fs(PathBuf::from(rest))),
            #[cfg(feature = "sqlite")]
            "sqlite" if rest.is_empty() => {
                Err("sqlite: needs a database file, e.g. sqlite:agent.db".into())
            }
            #[cfg(feature = "sqlite")]
            "sqlite" => Ok(Spec::Sqlite(PathBuf::from(rest))),
            #[cfg(feature = "s3")]
            "s3" => match burrow::object_store::parse_s3_url(&format!("s3:{rest}")) {
                Ok(_) => Ok(Spec::S3(format!("s3:{rest}"))),
                Err(e) => Err(e.message().to_owned()),
            },
            #[cfg(feature = "docker")]
            "docker" if rest.is_empty() => {
                Err("docker: needs an image, e.g. docker:alpine:3.20".into())
            }
            #[cfg(feature = "docker")]
            "docker" => Ok(Spec::Docker(rest.to_owned())),
            _ => Err(unknown_scheme(scheme)),
        }
    }
}

/// The message for a scheme this build cannot open.
fn unknown_scheme(scheme: &str) -> String {
    if let Some((_, store)) = NOT_OFFERED.iter().find(|(name, _)| *name == scheme) {
        return format!(
            "the burrow command does not open {scheme}: specs; {store} is reached from Rust \
             (the burrow crate's `object-store` feature with an object_store client)"
        );
    }
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
    #[cfg(feature = "fs")]
    out.push("fs:DIR");
    #[cfg(feature = "sqlite")]
    out.push("sqlite:FILE.db");
    #[cfg(feature = "s3")]
    out.push("s3://BUCKET/PREFIX");
    #[cfg(feature = "docker")]
    out.push("docker:IMAGE");
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
            #[cfg(feature = "fs")]
            Spec::Fs(path) => write!(f, "fs:{}", path.display()),
            #[cfg(feature = "sqlite")]
            Spec::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            #[cfg(feature = "s3")]
            Spec::S3(url) => f.write_str(url),
            #[cfg(feature = "docker")]
            Spec::Docker(image) => write!(f, "docker:{image}"),
            #[allow(unreachable_patterns)]
            _ => f.write_str("?"),
        }
    }
}

/// One `--backend` value: a SPEC, or `PREFIX=SPEC` (a mount at PREFIX).
///
/// A value is a mount when it starts with "/" and holds a "=": `/data=fs:./data`.
/// The prefix is normalised as a path ("/data/" is "/data"), and `/=SPEC`
/// names the default backend, as a plain SPEC does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendArg {
    /// The mount prefix (normalised, never "/"), for `PREFIX=SPEC`.
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
            let prefix = VPath::parse(prefix)
                .map_err(|e| format!("`{text}` has a bad mount prefix: {}", e.message()))?;
            return Ok(BackendArg {
                mount: (!prefix.is_root()).then(|| prefix.as_str().to_owned()),
                spec: spec.parse()?,
            });
        }
        Ok(BackendArg {
            mount: None,
            spec: text.parse()?,
        })
    }
}

#[cfg(feature = "run")]
impl Spec {
    /// The same spec with its host path made absolute against the current
    /// folder, so two processes in different folders name one workspace alike.
    fn absolute(&self) -> Spec {
        #[cfg(any(feature = "state", feature = "fs", feature = "sqlite"))]
        let abs = |path: &PathBuf| std::path::absolute(path).unwrap_or_else(|_| path.clone());
        match self {
            #[cfg(feature = "state")]
            Spec::State(path) => Spec::State(abs(path)),
            #[cfg(feature = "fs")]
            Spec::Fs(path) => Spec::Fs(abs(path)),
            #[cfg(feature = "sqlite")]
            Spec::Sqlite(path) => Spec::Sqlite(abs(path)),
            #[allow(unreachable_patterns)]
            other => other.clone(),
        }
    }
}

/// The workspace the `--backend` flags name, as one line a run's record
/// keeps (ADR 0359): the default spec (`memory:` when none is given), then
/// each mount as `PREFIX=SPEC` in prefix order, host paths made absolute,
/// separated by spaces. Two flag lists name the same files exactly when
/// their lines are equal (up to symlinks and such host aliases).
#[cfg(feature = "run")]
// A build with no backend feature has no spec to name.
#[allow(unreachable_code)]
pub fn workspace(args: &[BackendArg]) -> String {
    let default = match args.iter().find(|a| a.mount.is_none()) {
        Some(arg) => arg.spec.absolute().to_string(),
        None => "memory:".to_owned(),
    };
    let mut mounts: Vec<(&str, String)> = args
        .iter()
        .filter_map(|a| Some((a.mount.as_deref()?, a.spec.absolute().to_string())))
        .collect();
    mounts.sort();
    let mut line = default;
    for (prefix, spec) in mounts {
        line.push(' ');
        line.push_str(prefix);
        line.push('=');
        line.push_str(&spec);
    }
    line
}

/// Checks the `--backend` flags together; a usage error (exit 2) otherwise.
pub fn check(args: &[BackendArg]) -> Result<(), String> {
    let defaults = args.iter().filter(|a| a.mount.is_none()).count();
    if defaults > 1 {
        return Err(format!(
            "{defaults} --backend flags name the default backend (a SPEC without PREFIX=, or \
             /=SPEC): give one default and mount the others, e.g. --backend fs:./work \
             --backend /data=state:data.json"
        ));
    }
    let mut prefixes = BTreeSet::new();
    for prefix in args.iter().filter_map(|a| a.mount.as_deref()) {
        if !prefixes.insert(prefix) {
            return Err(format!(
                "two --backend flags mount at {prefix}; each prefix takes one backend"
            ));
        }
    }
    #[cfg(not(feature = "composite"))]
    if let Some(mount) = prefixes.first() {
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
    /// What must be shut down when burrow ends.
    closer: Closer,
}

/// What must be shut down when burrow ends, whatever happened: the
/// containers of `docker:` specs. Taken from [`Opened::closer`] before the
/// command runs, so it outlives whatever consumes the [`Opened`].
#[derive(Clone, Default)]
pub struct Closer {
    #[cfg(feature = "docker")]
    sandboxes: Vec<Arc<burrow::DockerSandbox>>,
    /// `state:` documents, compacted at the end when they took changes.
    #[cfg(feature = "state")]
    states: Vec<Arc<crate::state_file::StateFile>>,
}

impl Closer {
    /// Shuts everything down; every part is tried, and the first error returned.
    pub async fn close(self) -> Result<()> {
        #[allow(unused_mut)]
        let mut outcome = Ok(());
        #[cfg(feature = "state")]
        for state in self.states {
            state.close();
        }
        #[cfg(feature = "docker")]
        for sandbox in self.sandboxes {
            if let Err(e) = sandbox.close().await
                && outcome.is_ok()
            {
                outcome = Err(Error::failure(
                    "cannot remove the docker: container (it carries the label burrow.sandbox=1)",
                    e,
                ));
            }
        }
        outcome
    }
}

/// Writes a backend's state back to where it came from (e.g. a state file),
/// a group of operations at a time.
pub trait Saver {
    /// Starts a group: the operations until [`Saver::finish`] are saved together.
    fn begin(&self);
    /// Persists what the group changed and ends it. Must be called, whatever
    /// happened, before any result of the group is printed.
    fn finish(&self) -> Result<()>;
}

impl Opened {
    /// A backend that needs no saving.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Opened {
            backend,
            savers: Vec::new(),
            closer: Closer::default(),
        }
    }

    /// A `state:` document: it saves its groups' changes and is compacted
    /// when burrow ends.
    #[cfg(feature = "state")]
    pub fn with_state_file(file: Arc<crate::state_file::StateFile>) -> Self {
        let mut closer = Closer::default();
        closer.states.push(file.clone());
        Opened {
            backend: file.clone(),
            savers: vec![Box::new(file)],
            closer,
        }
    }

    /// Starts a group of operations whose changes are saved together by
    /// [`Opened::finish`] (a `state:` file is locked from the group's first
    /// change until then).
    pub fn begin(&self) {
        self.savers.iter().for_each(|s| s.begin());
    }

    /// Persists every change the group made through [`Opened::backend`] and
    /// ends the group. Every part is saved; the first error is returned.
    pub fn finish(&self) -> Result<()> {
        let mut outcome = Ok(());
        for saver in &self.savers {
            if let Err(e) = saver.finish()
                && outcome.is_ok()
            {
                outcome = Err(e);
            }
        }
        outcome
    }

    /// Takes over what `part` must save, and returns its backend (to mount
    /// it inside this one).
    #[cfg(feature = "composite")]
    pub fn adopt(&mut self, part: Opened) -> Arc<dyn Backend> {
        self.savers.extend(part.savers);
        #[cfg(feature = "state")]
        self.closer.states.extend(part.closer.states);
        #[cfg(feature = "docker")]
        self.closer.sandboxes.extend(part.closer.sandboxes);
        part.backend
    }

    /// What must be shut down when burrow ends; call [`Closer::close`] on it
    /// once the command is done, whatever its outcome.
    pub fn closer(&self) -> Closer {
        self.closer.clone()
    }
}

/// Opens the backend the flags name: the default (`memory:` when there is
/// none), with every mount over it as a composite.
///
/// `args` must have passed [`check`].
pub async fn open(args: &[BackendArg]) -> Result<Opened> {
    let default = match args.iter().find(|a| a.mount.is_none()) {
        Some(arg) => arg.spec.open().await?,
        None => default_spec()?.open().await?,
    };
    let mounts: Vec<(&str, &Spec)> = args
        .iter()
        .filter_map(|a| Some((a.mount.as_deref()?, &a.spec)))
        .collect();
    if mounts.is_empty() {
        return Ok(default);
    }
    #[cfg(feature = "composite")]
    return crate::mounts::compose(default, &mounts).await;
    #[cfg(not(feature = "composite"))]
    return Err(burrow::Error::failure_msg(
        "mounts need the `composite` feature, which this burrow was built without",
    ));
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
            #[cfg(feature = "fs")]
            Spec::Fs(dir) => {
                let backend = burrow::FsBackend::open_or_create(dir, burrow::FsOptions::default())
                    .map_err(|e| self.cannot_open(e))?;
                Ok(Opened::new(Arc::new(backend)))
            }
            #[cfg(feature = "sqlite")]
            Spec::Sqlite(file) => {
                create_parent(file).map_err(|e| self.cannot_open(e))?;
                let backend = burrow::StoreBackend::open(file).map_err(|e| self.cannot_open(e))?;
                Ok(Opened::new(Arc::new(backend)))
            }
            #[cfg(feature = "s3")]
            Spec::S3(url) => {
                let backend = burrow::ObjectStoreBackend::from_s3_url(url)
                    .map_err(|e| self.cannot_open(e))?;
                Ok(Opened::new(Arc::new(backend)))
            }
            #[cfg(feature = "docker")]
            Spec::Docker(image) => {
                let sandbox = Arc::new(
                    burrow::DockerSandbox::start_with(image, crate::docker::options())
                        .await
                        .map_err(|e| self.cannot_open(e))?,
                );
                let mut opened = Opened::new(sandbox.clone());
                opened.closer.sandboxes.push(sandbox);
                Ok(opened)
            }
            #[allow(unreachable_patterns)]
            _ => Err(burrow::Error::failure_msg(format!(
                "{self} cannot be opened by this build"
            ))),
        }
    }

    /// A failure to open this spec, naming it (host paths included: on the
    /// command line the reader owns the storage), with `cause` as its source.
    #[allow(dead_code)]
    fn cannot_open(&self, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        let cause = cause.into();
        Error::failure(format!("cannot open {self}: {cause}"), cause)
    }
}

/// Creates the folder `file` will be created in, when missing.
#[cfg(feature = "sqlite")]
fn create_parent(file: &Path) -> std::io::Result<()> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
        _ => Ok(()),
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
        // Schemes the command never opens say what to use instead.
        let err = "gs://bucket/p".parse::<Spec>().unwrap_err();
        assert!(err.contains("does not open gs: specs"), "{err}");
    }

    #[cfg(all(feature = "fs", feature = "sqlite"))]
    #[cfg(all(feature = "run", feature = "fs", feature = "sqlite", feature = "state"))]
    #[test]
    fn a_workspace_line_is_absolute_and_orders_mounts() {
        let args = |list: &[&str]| -> Vec<BackendArg> {
            list.iter().map(|a| a.parse().unwrap()).collect()
        };
        let here = std::env::current_dir().unwrap();
        assert_eq!(workspace(&[]), "memory:");
        assert_eq!(
            workspace(&args(&["/b=sqlite:/x/b.db", "fs:work", "/a=memory:"])),
            format!(
                "fs:{} /a=memory: /b=sqlite:/x/b.db",
                here.join("work").display()
            )
        );
        assert_eq!(
            workspace(&args(&["fs:./work"])),
            workspace(&args(&[&format!("fs:{}", here.join("work").display())]))
        );
        assert_ne!(
            workspace(&args(&["fs:work"])),
            workspace(&args(&["fs:other"]))
        );
    }

    #[test]
    fn parses_fs_and_sqlite_specs() {
        assert_eq!(
            "fs:./work".parse::<Spec>(),
            Ok(Spec::Fs(PathBuf::from("./work")))
        );
        assert_eq!(
            "sqlite:a:b.db".parse::<Spec>(),
            Ok(Spec::Sqlite(PathBuf::from("a:b.db")))
        );
        assert!(
            "fs:"
                .parse::<Spec>()
                .unwrap_err()
                .contains("needs a folder")
        );
        assert!(
            "sqlite:"
                .parse::<Spec>()
                .unwrap_err()
                .contains("needs a database")
        );
        assert_eq!(Spec::Fs(PathBuf::from("w")).to_string(), "fs:w");
        assert_eq!(
            Spec::Sqlite(PathBuf::from("m.db")).to_string(),
            "sqlite:m.db"
        );
    }

    #[cfg(feature = "s3")]
    #[test]
    fn parses_s3_urls_whole() {
        assert_eq!(
            "s3://bucket/some/prefix".parse::<Spec>(),
            Ok(Spec::S3("s3://bucket/some/prefix".to_owned()))
        );
        assert_eq!("s3://b".parse::<Spec>(), Ok(Spec::S3("s3://b".to_owned())));
        assert!(
            "s3:///nobucket"
                .parse::<Spec>()
                .unwrap_err()
                .contains("no bucket")
        );
        assert!("s3:bucket".parse::<Spec>().is_err());
        let arg: BackendArg = "/data=s3://b/p".parse().unwrap();
        assert_eq!(arg.mount.as_deref(), Some("/data"));
        assert_eq!(arg.spec.to_string(), "s3://b/p");
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
        // Prefixes are normalised; "/" names the default backend.
        let arg: BackendArg = "/data/./x/=memory:".parse().unwrap();
        assert_eq!(arg.mount.as_deref(), Some("/data/x"));
        let arg: BackendArg = "/=memory:".parse().unwrap();
        assert_eq!(arg.mount, None);
        let err = "/../x=memory:".parse::<BackendArg>().unwrap_err();
        assert!(err.contains("bad mount prefix"), "{err}");
    }

    #[cfg(feature = "state")]
    #[test]
    fn several_plain_backends_are_a_usage_error() {
        let args: Vec<BackendArg> = vec!["memory:".parse().unwrap(), "memory:".parse().unwrap()];
        assert!(check(&args).unwrap_err().contains("2 --backend flags"));
        assert!(check(&args[..1]).is_ok());
        assert!(check(&[]).is_ok());
        // `/=SPEC` is a default too.
        let args: Vec<BackendArg> = vec!["memory:".parse().unwrap(), "/=memory:".parse().unwrap()];
        assert!(check(&args).unwrap_err().contains("2 --backend flags"));
    }

    #[cfg(all(feature = "state", feature = "composite"))]
    #[test]
    fn mounts_need_distinct_prefixes() {
        let args: Vec<BackendArg> =
            vec!["/m=memory:".parse().unwrap(), "/n=memory:".parse().unwrap()];
        assert!(check(&args).is_ok());
        let args: Vec<BackendArg> = vec![
            "/m=memory:".parse().unwrap(),
            "/m/=memory:".parse().unwrap(),
        ];
        assert!(check(&args).unwrap_err().contains("mount at /m"));
    }
}
