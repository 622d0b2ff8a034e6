//! `cargo xtask deny`: cargo-deny's bans, licenses and sources checks against deny.toml.
//!
//! The advisories check is left out: it downloads the RustSec advisory database, and
//! these machines reach only the package registries (see deny.toml).

use std::path::Path;

use crate::cmd::Cmd;

/// Installs cargo-deny from crates.io when `cargo deny` is missing (`cargo xtask setup`
/// runs this too).
pub fn ensure_installed(root: &Path) -> anyhow::Result<()> {
    if Cmd::cargo(root, &["deny", "--version"]).succeeds_quietly() {
        println!("  cargo-deny is installed");
        return Ok(());
    }
    println!("  cargo-deny is missing: installing it from crates.io (about 5 minutes on 2 cores)");
    Cmd::cargo(root, &["install", "cargo-deny", "--locked"]).run()
}

pub fn run(root: &Path) -> anyhow::Result<bool> {
    ensure_installed(root)?;
    match Cmd::cargo(root, &["deny", "check", "bans", "licenses", "sources"]).run() {
        Ok(()) => {
            println!("deny: bans, licenses and sources ok");
            Ok(true)
        }
        Err(err) => {
            println!("deny: {err:#}");
            Ok(false)
        }
    }
}
