//! The real parts burrow's tests need (an S3 server, a Docker engine, Python packages, an MCP client, ripgrep, PostgreSQL): found, or the test fails naming what is missing.
//!
//! Key decision: a test that needs a real part never returns early and passes. It calls
//! [`require`], which hands back what `cargo xtask setup` exported for that part, or
//! panics with one sentence naming the part and how setup provides it. Whether a test
//! whose part is missing is *run* is decided outside the test: `cargo xtask test` knows
//! which parts setup found and, when one is missing and `CI` is not `true`, excludes that
//! part's tests with a nextest filter, so the runner itself reports them as skipped.
//! Under `CI=true` nothing is excluded and a missing part is a failure.
//!
//! This crate is a path-only dev-dependency and is never published.

#![allow(clippy::panic)] // failing the calling test is this crate's whole purpose

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
}

impl Part {
    /// Every part, in a stable order.
    pub const ALL: [Part; 7] = [
        Part::S3,
        Part::Docker,
        Part::DockerPython,
        Part::PythonInterop,
        Part::McpClient,
        Part::Ripgrep,
        Part::Postgres,
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
        }
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
        }
    }

    /// What the part is, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Part::S3 => "an S3-compatible server on 127.0.0.1 (moto, from PyPI)",
            Part::Docker => "a Docker engine with the busybox test image",
            Part::DockerPython => "a Docker engine with the python3 test image (built with debootstrap)",
            Part::PythonInterop => "Python 3 with pip and the pinned pydantic-ai-backend package",
            Part::McpClient => "Python 3 with pip and the official MCP SDK (`mcp`)",
            Part::Ripgrep => "ripgrep (`rg`, Debian's package)",
            Part::Postgres => "a PostgreSQL server on 127.0.0.1 (Debian's packages)",
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
    }
}
