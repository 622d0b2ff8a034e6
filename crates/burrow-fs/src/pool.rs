//! Runs one grep's file searches on tokio's shared, bounded blocking pool instead of new OS threads per call.
//!
//! The caller (already on a blocking thread) works too, and waits only for
//! the helpers that have started: a helper still queued when the work is done
//! returns at once, so a busy pool can slow a grep down but never deadlock it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Calls `work(i)` for every `i` in `0..items`, on up to `threads` threads
/// (the caller's included), each index once, in no particular order.
pub(crate) fn for_each_index(items: usize, threads: usize, work: Arc<dyn Fn(usize) + Send + Sync>) {
    let next = Arc::new(AtomicUsize::new(0));
    let run = {
        let (next, work) = (Arc::clone(&next), Arc::clone(&work));
        move || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items {
                    break;
                }
                work(i);
            }
        }
    };
    let helpers = threads.min(items).saturating_sub(1);
    let handle = tokio::runtime::Handle::try_current().ok();
    let Some(handle) = handle.filter(|_| helpers > 0) else {
        run();
        return;
    };
    // (closed, running helpers): once closed, a helper that starts does nothing.
    let state = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
    for _ in 0..helpers {
        let (state, run) = (Arc::clone(&state), run.clone());
        handle.spawn_blocking(move || {
            {
                let mut s = state.0.lock().unwrap_or_else(PoisonError::into_inner);
                if s.0 {
                    return;
                }
                s.1 += 1;
            }
            run();
            let mut s = state.0.lock().unwrap_or_else(PoisonError::into_inner);
            s.1 -= 1;
            state.1.notify_all();
        });
    }
    run();
    let mut s = state.0.lock().unwrap_or_else(PoisonError::into_inner);
    s.0 = true;
    while s.1 > 0 {
        s = state.1.wait(s).unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::for_each_index;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_index_runs_once_with_or_without_a_runtime() {
        for threads in [1, 2, 7] {
            let seen = Arc::new(Mutex::new(vec![0u32; 1000]));
            let s = Arc::clone(&seen);
            tokio::task::spawn_blocking(move || {
                for_each_index(1000, threads, Arc::new(move |i| s.lock().unwrap()[i] += 1));
            })
            .await
            .unwrap();
            assert!(seen.lock().unwrap().iter().all(|n| *n == 1));
        }
        let seen = Arc::new(Mutex::new(vec![0u32; 10]));
        let s = Arc::clone(&seen);
        std::thread::spawn(move || {
            for_each_index(10, 4, Arc::new(move |i| s.lock().unwrap()[i] += 1))
        })
        .join()
        .unwrap();
        assert!(seen.lock().unwrap().iter().all(|n| *n == 1));
    }
}
