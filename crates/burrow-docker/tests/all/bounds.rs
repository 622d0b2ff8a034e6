//! grep keeps only its limit's matches: 1,000 files of 1,000 matching lines each are searched with a limit of 1,000 in a child process whose peak memory is measured (a collector per file would hold a million).

use burrow_backend::{Backend, FileContext, GrepQuery, Sandbox, VPath};
use burrow_testkit::{Part, require};

use super::support::{self, Removal};

/// The peak resident memory of this process (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Far less than the million matches would take (each a path and a line, well over 60 bytes).
const BOUND: u64 = 60 << 20;

#[test]
fn grep_holds_only_its_limit() {
    require(Part::Docker);
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "all::bounds::grep_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run by `grep_holds_only_its_limit` in a child process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs as a child of grep_holds_only_its_limit, which measures its memory alone"]
async fn grep_child() {
    let sandbox =
        support::sandbox_with(support::options("bounds-grep").with_max_results(1000)).await;
    let _removal = Removal(sandbox.id().to_owned());
    let ctx = FileContext::default();
    let made = sandbox
        .execute(
            &ctx,
            "yes needle-in-a-haystack | head -n 1000 > one && for i in $(seq 1000); do cp one f$i.txt; done && rm one",
            None,
        )
        .await
        .unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);
    let found = sandbox
        .grep(&ctx, &GrepQuery::regex("needle"), &VPath::root(), 1000)
        .await
        .unwrap();
    assert!(found.truncated);
    assert_eq!(found.matches.len(), 1000);
    assert!(found.matches.iter().all(|m| m.path == "/f1.txt"));
    let peak = peak_rss();
    println!("peak resident memory: {peak} bytes");
    assert!(
        peak < BOUND,
        "grep over a million matches peaked at {peak} bytes"
    );
}
