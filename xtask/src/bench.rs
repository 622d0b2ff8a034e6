//! `cargo xtask bench [CRATE] [-- ARGS]`: run the benchmarks of every crate that has them.
//!
//! A crate has benchmarks when it has `benches/*.rs` files; each runs through
//! `cargo bench -p CRATE`, whose output (divan's tables) goes straight to the terminal.
//! Arguments after `--` go to the benchmark binaries (e.g. a divan name filter).

use std::fs;
use std::path::Path;

use anyhow::{Context, bail};

use crate::cmd::{Cmd, Steps};
use crate::manifest::Manifest;

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<bool> {
    let (ours, passed) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let filter = match ours {
        [] => None,
        [name] if !name.starts_with('-') => Some(name.as_str()),
        _ => bail!("usage: cargo xtask bench [CRATE] [-- ARGS]"),
    };
    let crates = crates_with_benches(root)?;
    let chosen: Vec<&String> = crates
        .iter()
        .filter(|name| filter.is_none_or(|f| f == name.as_str()))
        .collect();
    if chosen.is_empty() {
        match filter {
            Some(f) => bail!(
                "no crate named `{f}` has benchmarks; crates with benchmarks: {}",
                if crates.is_empty() {
                    "none".to_string()
                } else {
                    crates.join(", ")
                }
            ),
            None => {
                println!("bench: no crate has benches/*.rs");
                return Ok(true);
            }
        }
    }
    let mut steps = Steps::new("bench");
    for name in chosen {
        steps.step(name, || {
            let mut cargo_args = vec!["bench", "-p", name.as_str()];
            if !passed.is_empty() {
                cargo_args.push("--");
                cargo_args.extend(passed.iter().map(String::as_str));
            }
            Cmd::cargo(root, &cargo_args).run()
        });
    }
    Ok(steps.finish())
}

/// The package names of the crates under `crates/` with at least one `benches/*.rs`.
fn crates_with_benches(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    let crates = root.join("crates");
    let mut dirs: Vec<_> = fs::read_dir(&crates)
        .with_context(|| format!("listing {}", crates.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    for dir in dirs {
        let Ok(benches) = fs::read_dir(dir.join("benches")) else {
            continue;
        };
        let has_bench = benches
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "rs"));
        let Ok(text) = fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if has_bench && let Some(name) = Manifest::parse(&text).package_name() {
            names.push(name.to_string());
        }
    }
    Ok(names)
}
