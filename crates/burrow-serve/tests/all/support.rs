//! The test server: a runner over a real SQLite session file with a scripted model (optionally with write_todos, the task tool and the artifact workspace on the same file), a tokens file of two tenants, served on 127.0.0.1 port 0; and a small SSE reader.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use burrow_artifacts::template::Template;
use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{ArtifactStore, Kinds, SqliteArtifactStore};
use burrow_runtime::agent::Agent;
use burrow_runtime::model::Model;
use burrow_runtime::model::{ModelError, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{FanoutChannel, Runner, RunnerConfig};
use burrow_runtime::session::{Scope, SessionStore, SqliteStore};
use burrow_runtime::subagent::Tasks;
use burrow_serve::{Limits, ServeResult, Server, Tokens, Wake, add_token};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

/// A running test server.
pub struct Served {
    pub base: String,
    pub client: reqwest::Client,
    /// Tenant `acme`'s token.
    pub token: String,
    /// Tenant `other`'s token.
    pub other: String,
    /// Each model request waits for one permit when the server is gated.
    pub gate: Arc<Semaphore>,
    pub store: Arc<dyn SessionStore>,
    pub requests: Arc<AtomicUsize>,
    /// The artifact store, when the server has one (`Setup::artifacts`; read by the
    /// tests that build only with the `artifacts` feature).
    #[cfg_attr(not(feature = "artifacts"), allow(dead_code))]
    pub artifacts: Option<Arc<dyn ArtifactStore>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<ServeResult<()>>>,
    _dir: tempfile::TempDir,
}

/// How a test server is set up.
pub struct Setup {
    pub script: Vec<ScriptedResponse>,
    pub gated: bool,
    pub limits: Limits,
    pub live_buffer: usize,
    /// The session store (a fresh SQLite file when `None`).
    pub store: Option<Arc<dyn SessionStore>>,
    /// The tenant of `Served::token`.
    pub tenant: String,
    /// How long the runner's claim on a thread lasts unrenewed.
    pub claim_ttl: Duration,
    /// What wakes watchers of runs another server holds.
    pub wake: Wake,
    /// Give the agent write_todos.
    pub todos: bool,
    /// Give the agent the task tool (general-purpose children, in the tenant's workspace).
    pub tasks: bool,
    /// An artifact workspace on the session's SQLite file (kind `plan`, rendered
    /// through a template), served, and installed on the agent as `thread:t1`.
    pub artifacts: bool,
}

/// The `plan` kind's schema: a title and a text.
pub fn plan_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "required": ["title", "text"],
        "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
        "additionalProperties": false
    })
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            script: vec![ScriptedResponse::text("hello from the model")],
            gated: false,
            limits: Limits::default(),
            live_buffer: 1024,
            store: None,
            tenant: "acme".to_owned(),
            claim_ttl: Duration::from_secs(5),
            wake: Wake::default(),
            todos: false,
            tasks: false,
            artifacts: false,
        }
    }
}

pub async fn start(setup: Setup) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let tokens_path = dir.path().join("tokens");
    let token = add_token(&tokens_path, &setup.tenant, "alice").unwrap();
    let other = add_token(&tokens_path, "other", "bob").unwrap();
    let tokens = Tokens::load(&tokens_path).unwrap();
    let store: Arc<dyn SessionStore> = match setup.store {
        Some(store) => store,
        None => Arc::new(SqliteStore::open(dir.path().join("session.db")).unwrap()),
    };
    let gate = Arc::new(Semaphore::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let script = Arc::new(setup.script);
    let model = {
        let gate = gate.clone();
        let requests = requests.clone();
        let gated = setup.gated;
        ScriptedModel::new_async(move |_| {
            let gate = gate.clone();
            let n = requests.fetch_add(1, Ordering::SeqCst);
            let script = script.clone();
            async move {
                if gated {
                    gate.acquire().await.unwrap().forget();
                }
                // Past the script's end the model keeps saying it is done.
                Ok::<_, ModelError>(
                    script
                        .get(n)
                        .cloned()
                        .unwrap_or_else(|| ScriptedResponse::text("done")),
                )
            }
        })
    };
    let model: Arc<dyn Model> = Arc::new(model);
    let mut agent = Agent::new(model.clone());
    if setup.todos {
        agent = burrow_runtime::todos::with_todos(agent);
    }
    let scope = Scope::new(setup.tenant.clone(), "default");
    let artifacts = setup.artifacts.then(|| {
        let kinds = Kinds::new()
            .with_template(
                "plan",
                plan_schema(),
                Template::parse("# {{title}}\n\n{{text}}"),
            )
            .unwrap();
        Arc::new(SqliteArtifactStore::open(dir.path().join("session.db"), kinds).unwrap())
            as Arc<dyn ArtifactStore>
    });
    if let Some(artifacts) = &artifacts {
        let workspace = ArtifactWorkspace::new(artifacts.clone(), scope.clone(), "thread:t1");
        agent = Arc::new(workspace).install(agent);
    }
    if setup.tasks {
        agent = Tasks::new(Vec::new(), model, store.clone(), scope).install(agent);
    }
    let config = RunnerConfig::default()
        .with_ask_user(true)
        .with_claim_ttl(setup.claim_ttl)
        .with_live(Arc::new(FanoutChannel::new(setup.live_buffer)));
    let runner = Runner::with_config(agent, store.clone(), config);
    #[cfg_attr(not(feature = "artifacts"), allow(unused_mut))]
    let mut server = Server::with_wake(runner, tokens, "default", setup.limits, setup.wake);
    // Without the feature the server has no artifact routes (the tests that need them
    // build only with it).
    #[cfg(feature = "artifacts")]
    if let Some(artifacts) = &artifacts {
        server = server.with_artifacts(artifacts.clone());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(server.serve(listener, async move {
        let _ = rx.await;
    }));
    Served {
        base,
        client: reqwest::Client::new(),
        token,
        other,
        gate,
        store,
        requests,
        artifacts,
        shutdown: Some(tx),
        task: Some(task),
        _dir: dir,
    }
}

impl Served {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(self.url(path)).bearer_auth(&self.token)
    }

    pub fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(path))
            .bearer_auth(&self.token)
            .json(&body)
    }

    /// Posts `body` to the thread's messages and returns the JSON answer.
    pub async fn message(&self, thread: &str, body: Value) -> Value {
        self.post(&format!("/v1/threads/{thread}/messages"), body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Shuts the server down as SIGTERM does and waits until it has.
    pub async fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(20), task)
                .await
                .expect("the server shut down in time")
                .unwrap()
                .unwrap();
        }
    }

    /// Waits until `thread`'s last run has ended, and returns its status.
    pub async fn settled(&self, thread: &str) -> String {
        // Generous: a loaded CI machine runs the long scripts slowly.
        for _ in 0..1200 {
            let v = self.view(thread).await;
            let status = v["runs"]
                .as_array()
                .and_then(|r| r.last())
                .map(|r| r["status"].as_str().unwrap_or("").to_owned());
            if let Some(s) = status.filter(|s| s != "running") {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("thread {thread} did not settle");
    }
}

impl Served {
    /// `GET /v1/threads/{thread}` as JSON.
    pub async fn view(&self, thread: &str) -> Value {
        self.get(&format!("/v1/threads/{thread}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits until `thread`'s history holds `text` and its last run has ended.
    pub async fn until_history(&self, thread: &str, text: &str) -> Value {
        for _ in 0..400 {
            let v = self.view(thread).await;
            let last = v["runs"].as_array().and_then(|r| r.last()).cloned();
            let ended = last.is_some_and(|r| r["status"] != "running");
            if ended && v["history"].to_string().contains(text) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{text:?} never reached the history of {thread}");
    }
}

/// A problem+json body, checked to be one: its `kind`.
pub async fn problem(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status().as_u16(), status);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert!(
        body["type"]
            .as_str()
            .unwrap()
            .starts_with("urn:burrow:problem:")
    );
    assert!(!body["detail"].as_str().unwrap().is_empty());
    body
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// Reads server-sent events off a response.
pub struct Sse {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
    pub comments: usize,
}

impl Sse {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status().as_u16(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
            comments: 0,
        }
    }

    /// The next event, `None` once the stream ends.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..at + 2).collect();
                let mut event = SseEvent {
                    event: "message".into(),
                    id: None,
                    data: Value::Null,
                };
                let mut data = String::new();
                let mut any = false;
                for line in block.lines() {
                    if let Some(rest) = line.strip_prefix(':') {
                        let _ = rest;
                        self.comments += 1;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event.event = v.trim().to_owned();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("id:") {
                        event.id = Some(v.trim().to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                        any = true;
                    }
                }
                if !any {
                    continue;
                }
                event.data = serde_json::from_str(&data).unwrap();
                return Some(event);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.stream.next())
                .await
                .expect("an event in time")?
                .unwrap();
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Every event until the stream ends.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut all = Vec::new();
        while let Some(e) = self.next().await {
            all.push(e);
        }
        all
    }
}
