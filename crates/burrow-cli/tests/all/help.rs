//! Help that stands alone: every subcommand's `--help` explains the SPEC it asks for, says nothing it does not do, and puts Usage first.

use super::support::Workspace;

/// `burrow ARGS --help`'s text (stdout, exit 0).
fn help(args: &[&str]) -> String {
    let ws = Workspace::new();
    let mut all = args.to_vec();
    all.push("--help");
    let run = ws.run(&all);
    run.assert_code(0);
    run.out()
}

/// Every help page that offers `--backend <SPEC>` says what a SPEC is on that page,
/// and none points to a SPEC section it does not have.
fn assert_spec_explained(args: &[&str]) {
    let text = help(args);
    assert!(text.contains("--backend <SPEC>"), "{args:?}:\n{text}");
    for spec in [
        "memory:",
        "state:FILE.json",
        "fs:DIR",
        "sqlite:FILE.db",
        "PREFIX=SPEC",
    ] {
        assert!(
            text.contains(spec),
            "{args:?} does not name {spec}:\n{text}"
        );
    }
    if !text.contains("\nSPEC:\n") {
        assert!(!text.contains("SPEC below"), "{args:?}:\n{text}");
    }
}

#[test]
fn every_page_with_a_backend_option_says_what_a_spec_is() {
    assert_spec_explained(&[]);
    assert_spec_explained(&["ls"]);
    assert_spec_explained(&["read"]);
    assert_spec_explained(&["batch"]);
    #[cfg(feature = "run")]
    assert_spec_explained(&["run"]);
    #[cfg(feature = "docker")]
    assert_spec_explained(&["docker", "gc"]);
    // The root page keeps the long list.
    assert!(help(&[]).contains("\nSPEC:\n"));
}

#[test]
fn short_help_names_the_specs_too() {
    let ws = Workspace::new();
    let run = ws.run(&["ls", "-h"]);
    run.assert_code(0);
    let text = run.out();
    assert!(text.contains("state:FILE.json"), "{text}");
    assert!(!text.contains("SPEC below"), "{text}");
}

#[cfg(feature = "docker")]
#[test]
fn docker_says_the_backend_option_does_nothing_rather_than_that_it_is_absent() {
    let text = help(&["docker"]);
    assert!(!text.contains("needs no --backend"), "{text}");
    let root = help(&[]);
    let line = root
        .lines()
        .find(|l| l.trim_start().starts_with("docker "))
        .unwrap_or_else(|| panic!("no docker line in:\n{root}"));
    assert!(line.contains("opens no backend"), "{line}");
    if text.contains("--backend") {
        assert!(
            text.contains("--backend and --tenant do nothing here"),
            "{text}"
        );
    }
}

#[cfg(feature = "run")]
#[test]
fn run_help_puts_usage_and_options_before_the_long_text() {
    let text = help(&["run"]);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("`burrow run --help` lacks {needle:?}:\n{text}"))
    };
    let usage = at("Usage: burrow run");
    let options = at("--model <MODEL>");
    let prose = at("MODEL: scripted:FILE.jsonl");
    let exit_codes = at("Exit codes: 0 the run completed");
    // One line of what it does, then Usage, the arguments and options, then the prose.
    assert!(usage < 200, "Usage is not near the top:\n{text}");
    assert!(
        usage < options && options < prose && prose < exit_codes,
        "{text}"
    );
    // `-h` stays short: no prose at all.
    let ws = Workspace::new();
    let short = ws.run(&["run", "-h"]);
    short.assert_code(0);
    assert!(
        !short.out().contains("MODEL: scripted:FILE.jsonl"),
        "{}",
        short.out()
    );
}

#[cfg(feature = "run")]
#[test]
fn burrows_own_errors_start_with_burrow_whatever_the_command() {
    let ws = Workspace::new();
    let missing = ws.dir().join("missing.jsonl");
    let model = format!("scripted:{}", missing.display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "hi", "--model", "nope:x"],
        vec!["run", "hi", "--model", model.as_str()],
        vec!["read", "/missing.md"],
        // Usage errors clap finds, and the spec check after it.
        vec!["--backend", "nope:x", "ls", "/"],
        vec!["ls", "--no-such-option"],
        vec!["--backend", "memory:", "--backend", "state:a.json", "ls"],
    ];
    for args in cases {
        let run = ws.run(&args);
        assert_ne!(run.code, 0, "{args:?}");
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("burrow: "), "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains("burrow run:"),
            "{args:?}: {}",
            run.stderr
        );
    }
}
