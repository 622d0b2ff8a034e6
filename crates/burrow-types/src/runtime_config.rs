//! `RuntimeConfig`: how a Docker sandbox's image is chosen or built.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The package manager that installs `RuntimeConfig::packages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageManager {
    /// `pip install` (the default).
    #[default]
    Pip,
    /// `npm install -g`.
    Npm,
    /// `apt-get install`.
    Apt,
    /// `cargo install`.
    Cargo,
}

/// A pre-configured execution environment for a Docker sandbox, as the Python
/// pydantic model `RuntimeConfig` serialises it (`model_dump`: every field
/// present, `None` as `null`).
///
/// Give either a ready-made `image`, or a `base_image` plus `packages` to build
/// from. Missing fields take the Python defaults when deserialising.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeConfig {
    /// Unique name of the runtime, e.g. `"python-datascience"`.
    pub name: String,
    /// Human-readable description; `""` by default.
    #[serde(default)]
    pub description: String,
    /// A ready-to-use image, e.g. `"myregistry/python-ds:v1"`.
    #[serde(default)]
    pub image: Option<String>,
    /// The image to build upon, e.g. `"python:3.12-slim"`.
    #[serde(default)]
    pub base_image: Option<String>,
    /// Packages to install.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Which package manager installs `packages`; pip by default.
    #[serde(default)]
    pub package_manager: PackageManager,
    /// Extra setup commands run while building, e.g. `"apt-get update"`.
    #[serde(default)]
    pub setup_commands: Vec<String>,
    /// Environment variables set in the container.
    #[serde(default)]
    pub env_vars: BTreeMap<String, String>,
    /// The working directory inside the container; `"/workspace"` by default.
    #[serde(default = "default_work_dir")]
    pub work_dir: String,
    /// Whether to cache the built image locally; true by default.
    #[serde(default = "default_cache_image")]
    pub cache_image: bool,
    /// Build the image around an unprivileged user with this uid (its home and
    /// an owned virtualenv first on `PATH`) and run as them; `None` runs as
    /// root. Only meaningful with `base_image`.
    #[serde(default)]
    pub run_as_uid: Option<u32>,
}

/// The default `work_dir`.
pub const DEFAULT_WORK_DIR: &str = "/workspace";

fn default_work_dir() -> String {
    DEFAULT_WORK_DIR.to_owned()
}

fn default_cache_image() -> bool {
    true
}

impl RuntimeConfig {
    /// A config named `name` with every other field at its Python default.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            image: None,
            base_image: None,
            packages: Vec::new(),
            package_manager: PackageManager::default(),
            setup_commands: Vec::new(),
            env_vars: BTreeMap::new(),
            work_dir: default_work_dir(),
            cache_image: default_cache_image(),
            run_as_uid: None,
        }
    }
}
