//! The real parts burrow's tests need (an S3 server, a Docker engine, Python packages, an MCP client, ripgrep, PostgreSQL, Chromium): found, or the test fails naming what is missing.
//!
//! Key decision: a test that needs a real part never returns early and passes. It calls
//! [`require`], which hands back what `cargo xtask setup` exported for that part, or
//! panics with one sentence naming the part and how setup provides it. Whether a test
//! whose part is missing is *run* is decided outside the test: `cargo xtask test` knows
//! which parts setup found and, when one is missing and `CI` is not `true`, excludes that
//! part's tests with a nextest filter, so the runner itself reports them as skipped.
//! Under `CI=true` nothing is excluded and a missing part is a failure.
//!
//! Which tests need a part is told by their names, so the filter is exact: every test
//! that needs part `P` lives in a module named [`Part::module`] (`s3`, `docker`, ...),
//! at any depth (`all::s3::...`, `all::concurrency::s3::...`); the Docker part also
//! owns every test of `burrow-docker`. [`Part::filter`] is that rule as a nextest
//! filterset, and [`require`] fails a test that needs a part but sits outside the
//! part's modules (it could not be skipped), naming the module to move it into. Only
//! integration tests (`tests/all.rs`) may need a part; unit tests never do.
//!
//! This crate is a path-only dev-dependency and is never published.

#![allow(clippy::panic)] // failing the calling test is this crate's whole purpose

/// A scripted local HTTP server for model-adapter tests ([`http::ReplayServer`]).
pub mod http;

use std::fmt;

/// A real part a test needs.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// An S3-compatible server on 127.0.0.1 (moto, started by setup).
    S3,
    /// A Docker engine with the busybox test image imported.
    Docker,
    /// A Docker engine with the python3 test image built (debootstrap).
    DockerPython,
    /// A Python interpreter with the pinned `pydantic-ai-backend` package.
    PythonInterop,
    /// A Python interpreter with the official MCP SDK (`mcp`), the client we did not write.
    McpClient,
    /// ripgrep (`rg`), the reference grep.
    Ripgrep,
    /// A PostgreSQL server on 127.0.0.1.
    Postgres,
    /// Headless Chromium (Debian's `chromium`), for the tests that drive a page.
    Chromium,
}

impl Part {
    /// Every part, in a stable order.
    pub const ALL: [Part; 8] = [
        Part::S3,
        Part::Docker,
        Part::DockerPython,
        Part::PythonInterop,
        Part::McpClient,
        Part::Ripgrep,
        Part::Postgres,
        Part::Chromium,
    ];

    /// The short tag used in reports and nextest filters (`s3`, `docker`, ...).
    pub fn tag(self) -> &'static str {
        match self {
            Part::S3 => "s3",
            Part::Docker => "docker",
            Part::DockerPython => "docker_python",
            Part::PythonInterop => "python_interop",
            Part::McpClient => "mcp_client",
            Part::Ripgrep => "ripgrep",
            Part::Postgres => "postgres",
            Part::Chromium => "chromium",
        }
    }

    /// The module name every test that needs the part lives in (at any depth).
    pub fn module(self) -> &'static str {
        match self {
            Part::S3 => "s3",
            Part::Docker => "docker",
            Part::DockerPython => "docker_python",
            Part::PythonInterop => "python",
            Part::McpClient => "mcp_client",
            Part::Ripgrep => "ripgrep",
            Part::Postgres => "postgres",
            Part::Chromium => "browser",
        }
    }

    /// The package all of whose tests need the part, if there is one.
    pub fn whole_package(self) -> Option<&'static str> {
        match self {
            Part::Docker => Some("burrow-docker"),
            _ => None,
        }
    }

    /// The nextest filterset that selects exactly the tests needing the part: the
    /// integration tests (`kind(test)`, the `tests/all.rs` binaries) in the part's
    /// module, or of its whole package. Unit tests never need a part.
    pub fn filter(self) -> String {
        let by_name = format!("test(/(^|::){}::/)", self.module());
        match self.whole_package() {
            Some(package) => format!("(kind(test) & (package({package}) | {by_name}))"),
            None => format!("(kind(test) & {by_name})"),
        }
    }

    /// True when the test `test` (its full name, `all::s3::name`) of package `package`
    /// is selected by [`Part::filter`].
    pub fn selects(self, package: &str, test: &str) -> bool {
        let segment = format!("{}::", self.module());
        let by_name = test.starts_with(&segment) || test.contains(&format!("::{segment}"));
        by_name || self.whole_package() == Some(package)
    }

    /// The environment variable `cargo xtask setup` exports when it has provided the part.
    pub fn env_var(self) -> &'static str {
        match self {
            Part::S3 => "BURROW_S3_ENDPOINT",
            Part::Docker => "BURROW_DOCKER_TEST_IMAGE",
            Part::DockerPython => "BURROW_DOCKER_PYTHON_IMAGE",
            Part::PythonInterop => "BURROW_PYTHON",
            Part::McpClient => "BURROW_MCP_PYTHON",
            Part::Ripgrep => "BURROW_RG",
            Part::Postgres => "BURROW_POSTGRES_URL",
            Part::Chromium => "BURROW_CHROMIUM",
        }
    }

    /// What the part is, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Part::S3 => "an S3-compatible server on 127.0.0.1 (moto, from PyPI)",
            Part::Docker => "a Docker engine with the busybox test image",
            Part::DockerPython => {
                "a Docker engine with the python3 test image (built with debootstrap)"
            }
            Part::PythonInterop => "Python 3 with pip and the pinned pydantic-ai-backend package",
            Part::McpClient => "Python 3 with pip and the official MCP SDK (`mcp`)",
            Part::Ripgrep => "ripgrep (`rg`, Debian's package)",
            Part::Postgres => "a PostgreSQL server on 127.0.0.1 (Debian's packages)",
            Part::Chromium => "headless Chromium (Debian's `chromium`)",
        }
    }

    /// The value setup exported for the part, if it did.
    pub fn find(self) -> Option<String> {
        std::env::var(self.env_var()).ok().filter(|v| !v.is_empty())
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

/// The value setup exported for `part` (an endpoint, an interpreter, an image, a binary).
///
/// # Panics
/// When the part is missing, with a sentence naming it, the variable, and the command
/// that provides it: the calling test fails; it never passes without testing.
pub fn require(part: Part) -> String {
    check_scope(part);
    match part.find() {
        Some(value) => value,
        None => panic!(
            "this test needs {} and {} is not set: run `cargo xtask setup` (or `cargo xtask test`), \
             which provides it, or run the tests through `cargo xtask test`, which reports the \
             tests of a missing part as skipped",
            part.describe(),
            part.env_var()
        ),
    }
}

/// Fails the calling test when [`Part::filter`] would not select it, so a missing part
/// could not be reported as skipped. The test's name is its thread's name (libtest
/// names each test thread after the test); the check applies only where that name is
/// a test path (it holds `::`) and the package is known (`CARGO_PKG_NAME`, set by
/// cargo and nextest when they run a test).
fn check_scope(part: Part) {
    let thread = std::thread::current();
    let Some(test) = thread.name().filter(|n| n.contains("::")) else {
        return;
    };
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    if package.is_empty() || part.selects(&package, test) {
        return;
    }
    panic!(
        "the test {test} of {package} needs {} but is not inside a module named `{}`, so \
         `cargo xtask test` could not report it as skipped when the part is missing: move it \
         into such a module (the filter is {})",
        part.describe(),
        part.module(),
        part.filter()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_variables_are_distinct() {
        let mut tags: Vec<_> = Part::ALL.iter().map(|p| p.tag()).collect();
        let mut vars: Vec<_> = Part::ALL.iter().map(|p| p.env_var()).collect();
        tags.sort();
        tags.dedup();
        vars.sort();
        vars.dedup();
        assert_eq!(tags.len(), Part::ALL.len());
        assert_eq!(vars.len(), Part::ALL.len());
        let mut modules: Vec<_> = Part::ALL.iter().map(|p| p.module()).collect();
        modules.sort();
        modules.dedup();
        assert_eq!(modules.len(), Part::ALL.len());
    }

    #[test]
    fn a_part_selects_its_modules_at_any_depth_and_nothing_else() {
        assert!(Part::S3.selects("burrow-agent-cli", "all::s3::a_test"));
        assert!(Part::S3.selects("x", "all::conformance_s3::s3::ls_sorted"));
        assert!(Part::S3.selects("x", "s3::top"));
        assert!(!Part::S3.selects("x", "all::s3_env::a_test"));
        assert!(!Part::S3.selects("x", "all::news3::a_test"));
        assert!(!Part::S3.selects("x", "all::a_test_s3"));
        assert!(Part::Docker.selects("burrow-docker", "all::runtime::anything"));
        assert!(Part::Docker.selects("burrow-agent-cli", "all::docker::exec"));
        assert!(!Part::Docker.selects("burrow-agent-cli", "all::docker_python::pip"));
        assert!(Part::DockerPython.selects("burrow-docker", "all::runtime::docker_python::pip"));
        assert_eq!(Part::S3.filter(), "(kind(test) & test(/(^|::)s3::/))");
        assert_eq!(
            Part::Docker.filter(),
            "(kind(test) & (package(burrow-docker) | test(/(^|::)docker::/)))"
        );
    }

    #[test]
    fn require_refuses_a_test_outside_the_parts_module() {
        // This unit test is `tests::require_refuses_...`: not in a module named `s3`.
        let caught = std::panic::catch_unwind(|| require(Part::S3));
        let message = caught
            .err()
            .and_then(|e| e.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(message.contains("module named `s3`"), "{message}");
    }

    mod ripgrep {
        #[test]
        fn require_inside_the_module_returns_or_names_the_variable() {
            let caught = std::panic::catch_unwind(|| super::require(super::Part::Ripgrep));
            match caught {
                Ok(rg) => assert!(!rg.is_empty()),
                Err(e) => {
                    let message = e.downcast_ref::<String>().cloned().unwrap_or_default();
                    assert!(message.contains("BURROW_RG is not set"), "{message}");
                }
            }
        }
    }
}
