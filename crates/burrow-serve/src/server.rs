//! `Server`: the router and its state, the accept loop with its timeouts (hyper's HTTP/1 connections, since `axum::serve` sets no header-read timeout), and the graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use burrow_runtime::runner::Runner;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::error::ServeResult;
use crate::follow::Wake;
use crate::tokens::Tokens;

/// The limits a server keeps to.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest request body, in bytes.
    pub body_bytes: usize,
    /// How long a client may take to send a request's headers (also the
    /// idle time of a kept-alive connection before its next request).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// The most live-event watchers at once.
    pub watchers: usize,
    /// How often an idle event stream gets a heartbeat comment.
    pub heartbeat: Duration,
    /// How long shutdown waits for open connections before it drops them.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            watchers: 1000,
            heartbeat: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// What every handler shares.
pub(crate) struct State {
    pub(crate) runner: Runner,
    pub(crate) tokens: Tokens,
    pub(crate) workspace: String,
    pub(crate) limits: Limits,
    pub(crate) watchers: Arc<Semaphore>,
    /// True once the server shuts down: every event stream ends.
    pub(crate) shutdown: watch::Receiver<bool>,
    /// What wakes watchers of runs held by other processes (ADR 0344).
    pub(crate) wake: Wake,
    /// The artifact workspace's store, when the server has one.
    #[cfg(feature = "artifacts")]
    pub(crate) artifacts: std::sync::OnceLock<Arc<dyn burrow_artifacts::ArtifactStore>>,
}

pub(crate) type Shared = Arc<State>;

/// An HTTP server over a runner.
pub struct Server {
    state: Shared,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("workspace", &self.state.workspace)
            .field("limits", &self.state.limits)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server of `runner`'s threads in the workspace `workspace` of each
    /// token's tenant, accepting `tokens`, keeping to `limits`.
    pub fn new(runner: Runner, tokens: Tokens, workspace: &str, limits: Limits) -> Self {
        Self::with_wake(runner, tokens, workspace, limits, Wake::default())
    }

    /// [`Self::new`], with watchers of runs held by other processes woken by
    /// `wake` (a poll by default; PostgreSQL's notifications with
    /// [`Wake::postgres`]).
    pub fn with_wake(
        runner: Runner,
        tokens: Tokens,
        workspace: &str,
        limits: Limits,
        wake: Wake,
    ) -> Self {
        let (shutdown, receiver) = watch::channel(false);
        let state = Arc::new(State {
            runner,
            tokens,
            workspace: workspace.to_owned(),
            watchers: Arc::new(Semaphore::new(limits.watchers)),
            limits,
            shutdown: receiver,
            wake,
            #[cfg(feature = "artifacts")]
            artifacts: std::sync::OnceLock::new(),
        });
        Self { state, shutdown }
    }

    /// The same server with the artifact workspace of `store`: its operations
    /// under `/v1/artifacts` and `/v1/proposals` (each tenant in its own
    /// workspace, a change attributed to the token's name), and each thread's
    /// view lists the artifacts its agent follows (docs/adr/0368).
    ///
    /// # Behavior
    /// Without it the artifact operations are 404 `not_found`, saying the
    /// server has no artifact workspace, and thread views list none.
    /// A second call keeps the first store.
    #[cfg(feature = "artifacts")]
    pub fn with_artifacts(self, store: Arc<dyn burrow_artifacts::ArtifactStore>) -> Self {
        let _ = self.state.artifacts.set(store);
        self
    }

    /// The router: the API, the OpenAPI document and the page.
    pub fn router(&self) -> Router {
        crate::api::router(self.state.clone())
    }

    /// Serves on `listener` until `signal` completes, then shuts down: stops
    /// accepting, hands the runner's runs back (not ended; their claims
    /// released, so another process takes them over at once, ADR 0345),
    /// ends every other event stream with an `end` event, and waits up to
    /// the grace period for open requests.
    ///
    /// # Behavior
    /// A client that has not sent a request's headers within the header
    /// timeout is disconnected; accept errors (too many open files) are
    /// waited out, never fatal.
    pub async fn serve(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send,
    ) -> ServeResult<()> {
        let router = self.router();
        let graceful = GracefulShutdown::new();
        let header_timeout = self.state.limits.header_timeout;
        let mut signal = std::pin::pin!(signal);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut signal => break,
            };
            let (stream, _peer): (_, SocketAddr) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Small writes (an SSE frame, a short JSON answer) go out at once, not held
            // back by Nagle's algorithm until the client's delayed ACK (ADR 0342).
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY could not be set");
            }
            let service = TowerToHyperService::new(router.clone());
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
        drop(listener);
        // This process's runs are handed back first, so their watchers here get
        // `end` `handed_over` and another process carries them on (ADR 0345).
        self.state.runner.hand_back().await;
        // Other event streams end with `end`; then open connections finish.
        let _ = self.shutdown.send(true);
        if tokio::time::timeout(self.state.limits.shutdown_grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("connections still open after the shutdown grace period");
        }
        Ok(())
    }
}
