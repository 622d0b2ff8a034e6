//! Links inside the work dir: edits through a link and its target share one lock, and a loop of links is a refusal that ls leaves out (as in FsBackend).

use burrow_backend::{Backend, ErrorKind, FileContext, Sandbox, VPath};
use burrow_testkit::{Part, require};
use futures::future::join_all;

use super::support::{self, Removal};

fn cx() -> FileContext {
    FileContext::default()
}

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_through_a_link_and_its_target_lose_nothing() {
    require(Part::Docker);
    let sandbox = support::sandbox("links-lock").await;
    let _removal = Removal(sandbox.id().to_owned());
    sandbox.write(&cx(), &p("/t.txt"), "END\n").await.unwrap();
    let made = sandbox
        .execute(&cx(), "ln -s t.txt l.txt", None)
        .await
        .unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);
    let edits = (0..24).map(|i| {
        let sandbox = &sandbox;
        async move {
            let path = if i % 2 == 0 { "/l.txt" } else { "/t.txt" };
            sandbox
                .edit(&cx(), &p(path), "END", &format!("edit-{i}\nEND"), false)
                .await
        }
    });
    for result in join_all(edits).await {
        result.unwrap();
    }
    let text = String::from_utf8(sandbox.read_bytes(&cx(), &p("/t.txt")).await.unwrap()).unwrap();
    for i in 0..24 {
        assert!(
            text.contains(&format!("edit-{i}\n")),
            "edit {i} was lost:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_of_links_is_refused_and_left_out_of_listings() {
    require(Part::Docker);
    let sandbox = support::sandbox("links-loop").await;
    let _removal = Removal(sandbox.id().to_owned());
    sandbox.write(&cx(), &p("/kept.txt"), "x\n").await.unwrap();
    let made = sandbox
        .execute(&cx(), "ln -s loop loop && ln -s b a && ln -s a b", None)
        .await
        .unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);
    let listing = sandbox.ls(&cx(), &VPath::root(), 100).await.unwrap();
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["kept.txt"], "loops are left out");
    for path in ["/loop", "/a", "/loop/x"] {
        let err = sandbox.read_bytes(&cx(), &p(path)).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::PermissionDenied,
            "{path}: {}",
            err.message()
        );
        assert!(err.message().contains("loop"), "{}", err.message());
        let err = sandbox.write(&cx(), &p(path), "y").await.unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::PermissionDenied,
            "{path}: {}",
            err.message()
        );
    }
    let found = sandbox
        .glob(&cx(), "**", &VPath::root(), 100)
        .await
        .unwrap();
    let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["/kept.txt"]);
}
