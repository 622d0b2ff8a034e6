//! The embedded page in a real browser: Debian's headless Chromium, driven over the DevTools protocol, opens the page with a token, sends a message to a scripted model, answers its question, stops a run, nests a subagent live and in the history, shows todos and followed artifacts, and fits 360 px; a screenshot of each step.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use burrow_runtime::model::ScriptedResponse;
use burrow_runtime::runner::ASK_USER;
use burrow_testkit::{Part, require};
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use super::support::{Setup, start};

/// A headless Chromium of its own (a fresh profile folder), killed when dropped.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    port: u16,
}

impl Browser {
    fn launch(binary: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=900,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // With port 0 Chromium picks one and writes it to DevToolsActivePort.
        let file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                break port;
            }
            assert!(Instant::now() < deadline, "chromium did not start");
            std::thread::sleep(Duration::from_millis(100));
        };
        Browser {
            child,
            _profile: profile,
            port,
        }
    }

    /// A DevTools connection to the browser's first page.
    async fn page(&self) -> Page {
        let targets: Value = reqwest::get(format!("http://127.0.0.1:{}/json/list", self.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let url = targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("chromium has a page")
            .to_owned();
        tokio::task::spawn_blocking(move || {
            let (ws, _) = tungstenite::connect(url).unwrap();
            if let MaybeTlsStream::Plain(s) = ws.get_ref() {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            }
            Page { ws, next: 0 }
        })
        .await
        .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One page's DevTools connection: commands by id, events skipped.
struct Page {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
}

impl Page {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"id": id, "method": method, "params": params});
        self.ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            let Message::Text(text) = self.ws.read().unwrap() else {
                continue;
            };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["id"] == id {
                assert!(v["error"].is_null(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page; fails naming `what` and the page's text.
    fn wait_for(&mut self, expression: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.eval(expression) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "the page did not show {what}; it reads: {}",
                self.eval("document.body.innerText")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn navigate(&mut self, url: &str) {
        self.call("Page.enable", json!({}));
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for("document.readyState === 'complete'", "a loaded page");
    }

    /// Opens the page at `base`, gives it `token` and connects.
    fn connect(&mut self, base: &str, token: &str) {
        self.navigate(&format!("{base}/"));
        self.eval(&format!(
            "document.getElementById('token').value = {}; document.getElementById('connect').click(); true",
            json!(token)
        ));
        self.wait_for(&shows("notice", "connected"), "\"connected\"");
    }

    /// Opens the thread `name` through the page's form.
    fn open_thread(&mut self, name: &str) {
        self.eval(&format!(
            "document.getElementById('new-thread-name').value = {}; \
             document.getElementById('new-thread').requestSubmit(); true",
            json!(name)
        ));
        self.wait_for(&shows("thread-title", name), "the thread's title");
    }

    /// A PNG of the viewport, saved as `dir/name.png`; returns its size in bytes.
    fn screenshot(&mut self, dir: &Path, name: &str) -> usize {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
        std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
        png.len()
    }
}

/// Where the screenshots go: the test's output folder under the target directory.
fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The page's text under element `id`, as a JavaScript expression testing for `text`.
fn shows(id: &str, text: &str) -> String {
    format!(
        "document.getElementById({}).innerText.includes({})",
        json!(id),
        json!(text)
    )
}

/// True once the page's notice tells a watched run's end (`run completed`, `run stopped`).
const ENDED: &str = "document.getElementById('notice').innerText.startsWith('run ')";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_page_sends_answers_and_stops_runs_in_headless_chromium() {
    let chromium = require(Part::Chromium);
    let s = start(Setup {
        script: vec![
            ScriptedResponse::calls().call("q1", ASK_USER, json!({"question": "which colour?"})),
            ScriptedResponse::text("blue it is, painted"),
        ],
        gated: true,
        ..Setup::default()
    })
    .await;
    let browser = Browser::launch(&chromium);
    let page = browser.page().await;
    let dir = shots();
    let base = s.base.clone();
    let token = s.token.clone();
    let gate = s.gate.clone();
    let page = tokio::task::spawn_blocking(move || {
        let mut page = page;
        // A blank page's screenshot: each step's must hold much more than it.
        let blank = page.screenshot(&dir, "0-blank");

        // Open the page, give it the token, connect.
        page.connect(&base, &token);
        let connected = page.screenshot(&dir, "1-connected");

        // Open thread t1 and send a message with the keyboard (Ctrl+Enter).
        page.open_thread("t1");
        page.eval(
            "{ const m = document.getElementById('message'); m.value = 'paint the fence'; \
             m.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', ctrlKey: true})); } true",
        );
        page.wait_for(&shows("notice", "started run"), "the run started");
        gate.add_permits(1);
        // The model's tool call appears, and its question waits with an answer box.
        page.wait_for(&shows("history", "→ ask_user"), "the tool call");
        page.wait_for(&shows("pending", "which colour?"), "the pending question");
        let question = page.screenshot(&dir, "2-question");

        // Answer on the page: the run resumes and the model's answer streams into the live
        // view (watched with a MutationObserver: the page folds it into the history at the end).
        page.eval(
            "window.sawLive = false; \
             new MutationObserver(() => { \
               if (document.getElementById('live').innerText.includes('blue it is, painted')) window.sawLive = true; \
             }).observe(document.getElementById('live'), {subtree: true, childList: true, characterData: true}); \
             window.streams = 0; \
             { const f = window.fetch; window.fetch = async (...a) => { \
                 const r = await f(...a); if (String(a[0]).endsWith('/events')) window.streams += 1; return r; }; } true",
        );
        page.eval(
            "{ const box = document.querySelector('#pending .pending'); \
             box.querySelector('input').value = 'blue'; \
             [...box.querySelectorAll('button')].find(b => b.textContent === 'Answer').click(); } true",
        );
        // The model answers once the page watches the resumed run (its event stream open).
        page.wait_for("window.streams === 1", "the resumed run watched");
        gate.add_permits(1);
        page.wait_for("window.sawLive === true", "the answer streamed live");
        page.wait_for(ENDED, "the run's end");
        page.wait_for(&shows("history", "blue"), "the answer in the history");
        let answered = page.screenshot(&dir, "3-answered");

        // A new run, held at the gate, stopped with the Stop button.
        page.eval(
            "document.getElementById('message').value = 'and the gate'; \
             document.getElementById('send').requestSubmit(); true",
        );
        page.wait_for(&shows("notice", "started run"), "the second run started");
        page.eval("document.getElementById('stop').click(); true");
        // The notice says "stop requested", then the watched run's end.
        page.wait_for(&shows("notice", "run stopped"), "the stopped run's end");
        let stopped = page.screenshot(&dir, "4-stopped");

        // Readable at 360 px wide: nothing runs off the side.
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": true}),
        );
        page.wait_for(
            "window.innerWidth === 360 && document.documentElement.scrollWidth <= 360",
            "the page within 360 px",
        );
        let narrow = page.screenshot(&dir, "5-narrow");
        for (name, size) in [
            ("connected", connected),
            ("question", question),
            ("answered", answered),
            ("stopped", stopped),
            ("narrow", narrow),
        ] {
            assert!(
                size > blank * 2,
                "the {name} screenshot ({size} bytes) looks blank (a blank page: {blank} bytes)"
            );
        }
        page
    })
    .await
    .unwrap();
    assert_eq!(s.settled("t1").await, "stopped");
    drop(page);
    drop(browser);
}

#[cfg(feature = "artifacts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_page_nests_a_subagent_and_shows_todos_and_artifacts_in_headless_chromium() {
    use burrow_runtime::subagent::{GENERAL_PURPOSE, TASK};

    let chromium = require(Part::Chromium);
    let s = start(Setup {
        // The parent (thread t1) writes todos, creates a plan, starts a child (request
        // 3 is the child's answer), then ends; each request waits at the gate.
        script: vec![
            super::thread_view::todos_call(),
            ScriptedResponse::calls().call(
                "a1",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "Fence plan", "text": "two coats of green"}}),
            ),
            ScriptedResponse::calls().call(
                "c1",
                TASK,
                json!({"description": "survey", "prompt": "measure the fence", "subagent_type": GENERAL_PURPOSE}),
            ),
            ScriptedResponse::text("the fence is 20 m long"),
            ScriptedResponse::text("painted, 20 m"),
        ],
        gated: true,
        todos: true,
        tasks: true,
        artifacts: true,
        ..Setup::default()
    })
    .await;
    let browser = Browser::launch(&chromium);
    let page = browser.page().await;
    let dir = shots();
    let base = s.base.clone();
    let token = s.token.clone();
    let gate = s.gate.clone();
    let page = tokio::task::spawn_blocking(move || {
        let mut page = page;
        let blank = page.screenshot(&dir, "children-0-blank");
        page.connect(&base, &token);
        // Nothing beside the conversation yet: no todos, no artifacts.
        assert_eq!(page.eval("document.getElementById('side').hidden"), json!(true));
        page.open_thread("t1");
        page.eval(
            "window.streams = 0; \
             { const f = window.fetch; window.fetch = async (...a) => { \
                 const r = await f(...a); if (String(a[0]).endsWith('/events')) window.streams += 1; return r; }; } \
             document.getElementById('message').value = 'paint the fence'; \
             document.getElementById('send').requestSubmit(); true",
        );
        page.wait_for("window.streams === 1", "the run watched");
        // The todos, the plan and the task call: the child appears nested in the live view.
        gate.add_permits(3);
        page.wait_for(&shows("live", "→ task"), "the task call");
        page.wait_for(
            "!!document.querySelector('#live details.child[open]')",
            "the child's box in the live view",
        );
        page.wait_for(&shows("live", "subagent t1/task-c1"), "the child's thread");
        page.wait_for(&shows("todos", "Paint the fence"), "the todos beside it");
        page.wait_for(&shows("artifacts", "two coats of green"), "the plan beside it");
        let live_child = page.screenshot(&dir, "children-1-live-child");
        // The child answers: its history shows in its box while the parent still runs.
        gate.add_permits(1);
        page.wait_for(&shows("live", "the fence is 20 m long"), "the child's answer, live");
        page.wait_for(
            "document.querySelector('#live details.child > summary').innerText.endsWith('· completed')",
            "the child's outcome, live",
        );
        let child_done = page.screenshot(&dir, "children-2-child-done");
        // The parent ends: the history nests the child, folded, at its task call.
        gate.add_permits(1);
        page.wait_for(ENDED, "the run's end");
        page.wait_for(&shows("history", "painted, 20 m"), "the parent's answer");
        page.wait_for(
            "(() => { const d = document.querySelector('#history details.child'); \
               return !!d && !d.open && d.innerText.includes('subagent t1/task-c1 · general-purpose · completed'); })()",
            "the child folded in the history",
        );
        assert_eq!(
            page.eval("document.getElementById('side').hidden"),
            json!(false)
        );
        page.wait_for(&shows("artifacts", "plan-"), "the plan's id and version");
        page.wait_for(&shows("artifacts", "v1"), "the plan's version");
        // Opened with the keyboard (Tab focus and Enter, as a person does): its history loads.
        page.eval("document.querySelector('#history details.child > summary').focus(); true");
        page.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyDown", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"}),
        );
        page.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}),
        );
        page.wait_for(
            "document.querySelector('#history details.child').open && \
             document.querySelector('#history details.child').innerText.includes('the fence is 20 m long')",
            "the child's history, opened by keyboard",
        );
        let history = page.screenshot(&dir, "children-3-history");
        // At 360 px the todos and artifacts move below; nothing runs off the side.
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": true}),
        );
        page.wait_for(
            "window.innerWidth === 360 && document.documentElement.scrollWidth <= 360",
            "the page within 360 px",
        );
        page.eval("document.getElementById('side').scrollIntoView(); true");
        let narrow = page.screenshot(&dir, "children-4-narrow");
        for (name, size) in [
            ("live child", live_child),
            ("child done", child_done),
            ("history", history),
            ("narrow", narrow),
        ] {
            assert!(
                size > blank * 2,
                "the {name} screenshot ({size} bytes) looks blank (a blank page: {blank} bytes)"
            );
        }
        page
    })
    .await
    .unwrap();
    assert_eq!(s.settled("t1").await, "completed");
    drop(page);
    drop(browser);
}
