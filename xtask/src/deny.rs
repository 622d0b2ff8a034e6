//! `cargo xtask deny`: cargo-deny's bans, licenses and sources checks against deny.toml.
//!
//! The advisories check is left out: it downloads the RustSec advisory database, and
//! these machines reach only the package registries (see deny.toml).

use std::path::Path;

use crate::cmd::Cmd;

pub fn run(root: &Path) -> anyhow::Result<bool> {
    if Cmd::cargo(root, &["deny", "--version"]).succeeds_quietly() {
        println!("deny: cargo-deny is installed");
    } else {
        println!("deny: cargo-deny is missing: installing it from crates.io (takes a few minutes)");
        Cmd::cargo(root, &["install", "cargo-deny", "--locked"]).run()?;
    }
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
