//! Several processes editing one file through `FsBackend` lose no update: the cross-process directory lock serialises each read-modify-write.
//!
//! The children are this test binary re-executed on `processes::editor_child`
//! with `DIR_ENV` set; run alone, that test runs one editor in-process.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use burrow_backend::Backend;
use burrow_fs::FsBackend;

use super::support::{ctx, p};

/// Set (to the workspace folder) when this binary is re-executed as an editor.
const DIR_ENV: &str = "BURROW_FS_EDITOR_DIR";
/// The editor's id.
const ID_ENV: &str = "BURROW_FS_EDITOR_ID";
const PROCESSES: usize = 4;
const EDITS: usize = 50;

/// Appends `EDITS` lines to /ledger.txt, each by an edit of its end marker.
async fn edit_ledger(dir: &Path, id: &str) {
    let backend = FsBackend::open(dir).unwrap();
    for i in 0..EDITS {
        backend
            .edit(
                &ctx(),
                &p("/ledger.txt"),
                "END",
                &format!("{id}-{i}\nEND"),
                false,
            )
            .await
            .unwrap();
    }
}

/// The lines an editor with `id` appends.
fn lines_of(id: &str) -> impl Iterator<Item = String> + '_ {
    (0..EDITS).map(move |i| format!("{id}-{i}"))
}

/// As a child: edits the ledger in `DIR_ENV`. Alone: edits a fresh ledger and checks it.
#[tokio::test]
async fn editor_child() {
    match (std::env::var_os(DIR_ENV), std::env::var(ID_ENV)) {
        (Some(dir), Ok(id)) => edit_ledger(Path::new(&dir), &id).await,
        _ => {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("ledger.txt"), "END").unwrap();
            edit_ledger(dir.path(), "solo").await;
            let text = std::fs::read_to_string(dir.path().join("ledger.txt")).unwrap();
            let expected: Vec<String> = lines_of("solo").chain(["END".to_owned()]).collect();
            assert_eq!(text, expected.join("\n"));
        }
    }
}

#[tokio::test]
async fn four_processes_editing_one_file_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ledger.txt"), "END").unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|id| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "all::processes::editor_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(DIR_ENV, dir.path())
                .env(ID_ENV, format!("p{id}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an editor process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(dir.path().join("ledger.txt")).unwrap();
    let got: BTreeSet<&str> = text.lines().filter(|l| *l != "END").collect();
    let expected: BTreeSet<String> = (0..PROCESSES)
        .flat_map(|id| lines_of(&format!("p{id}")).collect::<Vec<_>>())
        .collect();
    let lost = expected
        .iter()
        .filter(|l| !got.contains(l.as_str()))
        .count();
    assert_eq!(
        lost,
        0,
        "{lost} of {} edits were lost across processes",
        PROCESSES * EDITS
    );
    assert_eq!(text.lines().count(), PROCESSES * EDITS + 1);
    assert!(text.ends_with("END"));
    // The lock left nothing behind in the workspace.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["ledger.txt"]);
}
