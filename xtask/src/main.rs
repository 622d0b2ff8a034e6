//! cargo xtask: the project's automation (ci, test, tidy, setup, bench, deny, release), in plain Rust.
//!
//! Everything a developer or CI runs lives here rather than in shell scripts, so it works
//! the same on every machine that has the Rust toolchain. `.ci/run` only calls
//! `cargo xtask ci`. Dependencies stay few (anyhow, serde_json for `cargo metadata`, std): xtask is built on every CI
//! run, before anything else.

mod bench;
mod changelog;
mod ci;
mod cmd;
mod deny;
mod docker_images;
mod manifest;
mod parts;
mod postgres;
mod release;
mod setup;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  ci                 fmt check, tidy, changelog, clippy, facade features, deny,
                     docs, MSRV, CLI features, release dry run, then test
                     (BURROW_KEEP_PARTS=1 keeps the servers setup started)
  test               setup, then doc tests and every test (nextest, else cargo test);
                     stops the servers setup started unless BURROW_KEEP_PARTS=1
  tidy               check the house rules (//! headers, manifests, code map, test layout)
  setup              install and start what the tests need (idempotent)
  fuzz [SECONDS]     run every fuzz target (burrow-conformance tests/all/fuzz.rs) for
                     SECONDS in all (default 300), keeping failing seeds
  bench [CRATE] [-- ARGS]
                     run the benchmarks of every crate with benches, or of CRATE
  deny               cargo deny check bans licenses sources (installs cargo-deny if missing)
  changelog          check CHANGELOG.md's form, and that [Unreleased] lists something
                     when crates/ changed since the last release
  release [--dry-run] [--version X.Y.Z]
                     check, package and publish every publishable crate in order
                     (without --dry-run: only on a clean main)
  help               this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> anyhow::Result<ExitCode> {
    let root = workspace_root()?;
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("help", &[][..]),
    };
    let no_args = |name: &str| -> anyhow::Result<()> {
        match rest.first() {
            Some(extra) => anyhow::bail!("`{name}` takes no arguments (got `{extra}`)\n\n{USAGE}"),
            None => Ok(()),
        }
    };
    let ok = match command {
        "ci" => {
            no_args("ci")?;
            ci::ci(&root)?
        }
        "test" => {
            no_args("test")?;
            ci::test(&root)?
        }
        "tidy" => {
            no_args("tidy")?;
            tidy::run(&root)?
        }
        "setup" => {
            no_args("setup")?;
            setup::run_and_report(&root)?
        }
        "bench" => bench::run(&root, rest)?,
        "fuzz" => fuzz(&root, rest)?,
        "deny" => {
            no_args("deny")?;
            deny::run(&root)?
        }
        "changelog" => {
            no_args("changelog")?;
            changelog::run(&root)?
        }
        "release" => release::run(&root, rest)?,
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            true
        }
        other => {
            eprint!("xtask: unknown command `{other}`\n\n{USAGE}");
            return Ok(ExitCode::from(2));
        }
    };
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `cargo xtask fuzz [SECONDS]`: the fuzz targets, each for its share of SECONDS.
fn fuzz(root: &Path, rest: &[String]) -> anyhow::Result<bool> {
    let seconds: u64 = match rest {
        [] => 300,
        [s] => s
            .parse()
            .map_err(|_| anyhow::anyhow!("`fuzz` takes a number of seconds (got `{s}`)"))?,
        _ => anyhow::bail!("`fuzz` takes at most one argument, SECONDS\n\n{USAGE}"),
    };
    let env = vec![("BURROW_FUZZ_SECONDS".to_string(), seconds.to_string())];
    let result = cmd::Cmd::cargo(
        root,
        &[
            "test",
            "-p",
            "burrow-conformance",
            "--test",
            "all",
            "--",
            "all::fuzz::fuzz_targets_hold",
            "--exact",
            "--nocapture",
        ],
    )
    .envs(&env)
    .run();
    match result {
        Ok(()) => Ok(true),
        Err(err) => {
            println!(
                "fuzz: a target failed ({err:#}); its seed is kept in \
                 crates/burrow-conformance/fuzz/regressions/: fix the bug, keep the seed, \
                 and note it in docs/fuzzing.md"
            );
            Ok(false)
        }
    }
}

/// The workspace root: xtask's own manifest directory is one level below it.
fn workspace_root() -> anyhow::Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest_dir.parent() {
        Some(root) => Ok(root.to_path_buf()),
        None => anyhow::bail!(
            "xtask's manifest dir {} has no parent",
            manifest_dir.display()
        ),
    }
}
