//! ResolvingBackend: one backend per (tenant, run id), resolved once, cached with a bound, and isolated.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use burrow_backend::{Backend, Capabilities, Error, ErrorKind, FileContext};
use burrow_composite::{CompositeBackend, ResolverFn, ResolvingBackend};
use burrow_state::StateBackend;

use crate::support::{EchoSandbox, p};

/// A resolving backend whose resolver builds a fresh composite (default plus
/// a "/memories" mount) per call, counting the calls.
fn counting() -> (ResolvingBackend, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let resolver = ResolverFn::new(move |ctx: FileContext| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            if ctx.tenant == "refused" {
                return Err(Error::refusal(
                    ErrorKind::PermissionDenied,
                    "unknown tenant",
                ));
            }
            let c = CompositeBackend::builder(Arc::new(StateBackend::new()))
                .mount("/memories", Arc::new(StateBackend::new()))
                .build()?;
            Ok(Arc::new(c) as Arc<dyn Backend>)
        }
    });
    let caps = StateBackend::new().capabilities();
    (ResolvingBackend::new(Arc::new(resolver), caps), calls)
}

#[tokio::test]
async fn each_tenant_gets_its_own_tree() {
    let (b, calls) = counting();
    let acme = FileContext::for_tenant("acme");
    let globex = FileContext::for_tenant("globex");
    b.write(&acme, &p("/memories/plan.md"), "acme's plan")
        .await
        .unwrap();
    let e = b
        .read(&globex, &p("/memories/plan.md"), 0, 10)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(
        b.read(&acme, &p("/memories/plan.md"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["acme's plan"]
    );
    let listing = b.ls(&acme, &p("/"), 10).await.unwrap();
    assert_eq!(listing.entries.len(), 1);
    assert_eq!(listing.entries[0].path, "/memories");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // A run id is part of the key: the same tenant in another run gets another tree.
    let run = acme.with_run_id("run-1");
    assert!(
        b.glob(&run, "**", &p("/"), 10)
            .await
            .unwrap()
            .files
            .is_empty()
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // An effect key is not.
    b.write(&acme.with_effect_key("k"), &p("/x"), "x")
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_calls_resolve_once() {
    let (b, calls) = counting();
    let b = Arc::new(b);
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move {
                let ctx = FileContext::for_tenant("acme");
                b.write(&ctx, &p(&format!("/f{i}")), "x").await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let all = b
        .glob(&FileContext::for_tenant("acme"), "*", &p("/"), 100)
        .await
        .unwrap();
    assert_eq!(all.files.len(), 16);
}

#[tokio::test]
async fn a_failed_resolution_is_not_cached() {
    let (b, calls) = counting();
    let refused = FileContext::for_tenant("refused");
    for _ in 0..2 {
        let e = b.ls(&refused, &p("/"), 10).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_cache_is_bounded_and_can_forget() {
    let (b, calls) = counting();
    let b = b.with_capacity(2);
    let t = |name: &str| FileContext::for_tenant(name);
    for name in ["a", "b", "c"] {
        b.write(&t(name), &p("/f"), name).await.unwrap();
    }
    assert_eq!(b.cached().unwrap(), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // "a" was the oldest: it was dropped, and resolving it again builds a new (empty) tree.
    assert_eq!(
        b.read(&t("a"), &p("/f"), 0, 1).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(b.read(&t("c"), &p("/f"), 0, 1).await.unwrap().lines, ["c"]);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    b.forget(&t("c")).unwrap();
    assert_eq!(b.cached().unwrap(), 1);
}

#[tokio::test]
async fn locks_do_not_depend_on_resolution() {
    let (b, _) = counting();
    let ctx = FileContext::for_tenant("acme");
    let before = b.locks(&ctx, &p("/memories/a"));
    b.write(&ctx, &p("/memories/a"), "x").await.unwrap();
    assert_eq!(before, b.locks(&ctx, &p("/memories/a")));
    assert_ne!(
        before,
        b.locks(&FileContext::for_tenant("globex"), &p("/memories/a"))
    );
    assert_ne!(before, b.locks(&ctx, &p("/memories/b")));
}

#[tokio::test]
async fn execute_reaches_the_resolved_sandbox() {
    let resolver = ResolverFn::new(|ctx: FileContext| async move {
        if ctx.tenant == "plain" {
            return Ok(Arc::new(StateBackend::new()) as Arc<dyn Backend>);
        }
        let sandbox = EchoSandbox {
            files: StateBackend::new(),
            name: "sandbox",
        };
        Ok(Arc::new(CompositeBackend::builder(Arc::new(sandbox)).build()?) as Arc<dyn Backend>)
    });
    let caps = Capabilities::minimal().with_exec(true);
    let b = ResolvingBackend::new(Arc::new(resolver), caps);
    let sandbox = b.as_sandbox().unwrap();
    let out = sandbox
        .execute(&FileContext::for_tenant("acme"), "make", None)
        .await
        .unwrap();
    assert_eq!(out.output, "sandbox ran make for acme");
    let e = sandbox
        .execute(&FileContext::for_tenant("plain"), "make", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);

    let (no_exec, _) = counting();
    assert!(no_exec.as_sandbox().is_none());
}

#[tokio::test]
async fn eviction_drops_the_least_recently_used() {
    let (b, calls) = counting();
    let b = b.with_capacity(2);
    let t = |name: &str| FileContext::for_tenant(name);
    b.write(&t("a"), &p("/f"), "a").await.unwrap();
    b.write(&t("b"), &p("/f"), "b").await.unwrap();
    // "a" is used again, so "b" is now the least recently used.
    assert_eq!(b.read(&t("a"), &p("/f"), 0, 1).await.unwrap().lines, ["a"]);
    b.write(&t("c"), &p("/f"), "c").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(b.read(&t("a"), &p("/f"), 0, 1).await.unwrap().lines, ["a"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "a was kept");
    assert_eq!(
        b.read(&t("b"), &p("/f"), 0, 1).await.unwrap_err().kind(),
        ErrorKind::NotFound,
        "b was dropped and resolved anew"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn an_entry_in_use_is_never_evicted() {
    let (b, calls) = counting();
    let b = b.with_capacity(1);
    let a = FileContext::for_tenant("a");
    // A call for "a" is under way (it holds the resolved backend) ...
    let held = b.backend(&a).await.unwrap();
    // ... while other tenants come and go past the capacity.
    for name in ["x", "y"] {
        let other = FileContext::for_tenant(name);
        b.write(&other, &p("/f"), name).await.unwrap();
    }
    assert_eq!(
        b.cached().unwrap(),
        2,
        "over capacity rather than drop an entry in use"
    );
    held.write(&a, &p("/f"), "written by the call")
        .await
        .unwrap();
    drop(held);
    // The call's write is what the next call for "a" sees: same backend, not rebuilt.
    assert_eq!(
        b.read(&a, &p("/f"), 0, 1).await.unwrap().lines,
        ["written by the call"]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    b.write(&FileContext::for_tenant("z"), &p("/f"), "z")
        .await
        .unwrap();
    assert_eq!(
        b.cached().unwrap(),
        1,
        "idle entries go once room is needed"
    );
}
