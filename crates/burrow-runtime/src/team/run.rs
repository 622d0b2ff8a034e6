//! Teams as runs (ADR 0357): a lead's run starts its members' runs, each a run in its own thread `TEAM/member-NAME` of the same session store, in waves; the lead's run ends once the team is quiet; stopping the lead stops every member.
//!
//! # When a member runs
//!
//! A member runs when there is something for it: a team message it has not
//! had (addressed to it, or a broadcast it did not send), or a claimable
//! item on the team's todo list (pending, unassigned, every blocker
//! completed) while the list changed since the member was last woken. Wakes
//! come in **waves**: while no member runs, the team looks at each member in
//! the team file's order and starts a run for each one that has something,
//! all at once; the next wave is looked for once every run of this one has
//! ended. Within a wave members run concurrently (two may race for one item:
//! the store lets one win). The lead asks for a look before each of its
//! model requests, and waits until that look has started its wave (or a
//! wave already runs), so a look the lead asked for never falls between two
//! calls of the lead's own answer; and when it is about to end.
//!
//! # When the team's run is done
//!
//! The lead's run does not end while a wave runs or a member has something
//! to do: when the lead answers without calls, it waits for the team to be
//! quiet, then gets the messages sent to it meanwhile and goes on, or ends.
//!
//! # Stopping
//!
//! However the lead's run ends (completed, stopped by Ctrl-C or `burrow
//! thread stop`, failed, paused), no new wave starts and every member run
//! still going is stopped (its calls in flight end cancelled) before the
//! lead's run is over.
//!
//! # Resuming
//!
//! On its first look at a member, a process reads the member's thread: a
//! run recorded running that does not run here was left by an earlier
//! process (it died). The member is woken with [`RESUME_TEXT`]; the runner
//! takes the thread over once the dead holder's claim lapses (the left run
//! recorded abandoned, its calls in flight answered as for any interrupted
//! run) and starts its next run. Until then the member is held: the team is
//! not quiet, and the thread is tried again every tenth of the claim TTL
//! (ADR 0391).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use burrow_types::{SharedTodoItem, TeamMember, TodoStatus};
use futures::stream::BoxStream;

use super::capability::{TeamInbox, delivered_in};
use super::tools::{TeamContext, team_tools};
use super::{TeamKey, TeamStore};
use crate::agent::{Agent, CancelToken, Capability, FnProvider, Outcome, RunFailure, RunInfo};
use crate::hooks::Hooks;
use crate::message::{Message, Usage};
use crate::model::Model;
use crate::runner::{
    DEFAULT_CLAIM_TTL, LiveChannel, LiveEvent, LiveFrame, RunHandle, Runner, RunnerConfig,
};
use crate::session::{SessionStore, ThreadKey, ThreadStatus};
use crate::tool::ToolRegistry;

/// The lead's name in its team (a member cannot take it).
pub const LEAD: &str = "lead";
/// The author of the message that wakes a member.
pub const WAKE_AUTHOR: &str = "team";
/// The run label naming the team of a member's run.
pub const TEAM_LABEL: &str = "burrow.team";
/// The run label naming the member a run is of.
pub const MEMBER_LABEL: &str = "burrow.team_member";
/// The most model requests of one member's run by default.
pub const DEFAULT_MEMBER_MAX_TURNS: usize = 50;

/// The message that wakes a member; its news comes as `<team-message>` notes after it.
pub const WAKE_TEXT: &str = "There is news for you in the team: look at the team's todo list \
(team_todos) and your messages, claim an item you can do, do it, complete it, and tell the \
lead what you did. If there is nothing for you, answer briefly and stop.";

/// The message that wakes a member whose run an earlier process left
/// running (it died, or lost its claim): its interrupted calls were
/// answered as the runner answers them, and this starts its next run.
pub const RESUME_TEXT: &str = "Your previous run was interrupted before it ended. Look at the \
team's todo list (team_todos) and your messages, finish and complete the items you hold, and tell \
the lead what you did.";

/// The thread of member `name` of the team `team`.
pub fn member_thread(team: &str, name: &str) -> String {
    format!("{team}/member-{name}")
}

/// A member of a team, with its model resolved (`None`: the lead's).
#[derive(Clone)]
pub struct MemberDef {
    /// The seed's member: name, role, description, instructions, model spec.
    pub member: TeamMember,
    /// The model it runs with; `None`: the lead's.
    pub model: Option<Arc<dyn Model>>,
}

impl std::fmt::Debug for MemberDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberDef")
            .field("member", &self.member)
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .finish()
    }
}

/// What a team's members do, for a front end to print.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TeamEvent {
    /// A member's run started.
    Started {
        /// The member's run id.
        run_id: String,
        /// The lead's run id.
        parent_run_id: String,
        /// The member's thread.
        thread_id: String,
        /// The member's name.
        member: String,
    },
    /// A live frame of a member's run.
    Frame {
        /// The member's run id.
        run_id: String,
        /// The lead's run id.
        parent_run_id: String,
        /// The member's name.
        member: String,
        /// What happened.
        event: LiveEvent,
    },
    /// A member's run ended.
    Ended {
        /// The member's run id.
        run_id: String,
        /// The lead's run id.
        parent_run_id: String,
        /// The member's thread.
        thread_id: String,
        /// The member's name.
        member: String,
        /// `completed`, `failed`, `paused` or `stopped`.
        outcome: String,
        /// Why, when it did not complete.
        reason: Option<String>,
        /// Its model requests.
        turns: usize,
        /// Its tool calls.
        tool_calls: usize,
        /// Its usage.
        usage: Usage,
    },
    /// A member that had something to do could not be started.
    NotStarted {
        /// The member's name.
        member: String,
        /// Why, one sentence.
        message: String,
    },
}

/// Where [`TeamEvent`]s go; called from the members' runs, so it must not block.
pub type TeamEventSink = Arc<dyn Fn(TeamEvent) + Send + Sync>;

/// A team to run under a lead: its members and how they run.
pub struct Team {
    store: Arc<dyn SessionStore>,
    key: TeamKey,
    model: Arc<dyn Model>,
    members: Vec<MemberDef>,
    tools: ToolRegistry,
    hooks: Hooks,
    max_turns: usize,
    claim_ttl: Duration,
    compaction: Option<crate::compaction::CompactionConfig>,
    events: Option<TeamEventSink>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("key", &self.key)
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

impl Team {
    /// The team `key` of `store` with `members`, each running by default
    /// with `model` (the lead's), no tools but the team's, no hooks.
    pub fn new(
        store: Arc<dyn SessionStore>,
        key: TeamKey,
        model: Arc<dyn Model>,
        members: Vec<MemberDef>,
    ) -> Self {
        Self {
            store,
            key,
            model,
            members,
            tools: ToolRegistry::new(),
            hooks: Hooks::new(),
            max_turns: DEFAULT_MEMBER_MAX_TURNS,
            claim_ttl: DEFAULT_CLAIM_TTL,
            compaction: None,
            events: None,
        }
    }

    /// The same, members getting `tools` besides the team tools.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// The same, `hooks` deciding members' calls too.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same, each member run making at most `n` model requests (at least 1).
    pub fn with_member_max_turns(mut self, n: usize) -> Self {
        self.max_turns = n.max(1);
        self
    }

    /// The same, members' runners claiming their threads for `ttl`.
    pub fn with_claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl;
        self
    }

    /// The same, members compacting their histories as `config` says.
    pub fn with_compaction(mut self, config: crate::compaction::CompactionConfig) -> Self {
        self.compaction = Some(config);
        self
    }

    /// The same, sending what members do to `sink`.
    pub fn with_events(mut self, sink: TeamEventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// `Err` with one sentence when a member's name is empty, not a plain
    /// name (letters, digits, `-`, `_`), the lead's, or taken twice.
    pub fn check(members: &[TeamMember]) -> Result<(), String> {
        if members.is_empty() {
            return Err("the team has no members".to_owned());
        }
        let mut seen = std::collections::HashSet::new();
        for m in members {
            let plain = !m.name.is_empty()
                && m.name.len() <= 64
                && m.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !plain {
                return Err(format!(
                    "the member name {:?} is not a plain name (1 to 64 letters, digits, - or _)",
                    m.name.chars().take(80).collect::<String>()
                ));
            }
            if m.name == LEAD {
                return Err(format!(
                    "a member cannot be named {LEAD}: that is the lead's name"
                ));
            }
            if !seen.insert(m.name.as_str()) {
                return Err(format!(
                    "two members are named {}; names must be unique",
                    m.name
                ));
            }
        }
        Ok(())
    }

    /// `agent` as the team's lead: with the team tools (acting as
    /// [`LEAD`]), its messages delivered before each request, the members
    /// listed in its instructions, and its runs running the members. The
    /// handle stops what is left of the members before the process exits.
    pub fn install(self, agent: Agent) -> (Agent, TeamHandle) {
        let lead_cx = TeamContext {
            store: self.store.clone(),
            team: self.key.clone(),
            member: LEAD.to_owned(),
        };
        let lead_run = Arc::new(Mutex::new(String::new()));
        let roster = roster(&self.members);
        let mut slots = Vec::with_capacity(self.members.len());
        for def in &self.members {
            slots.push(self.slot(def, &roster, &lead_run));
        }
        let (looks, _) = tokio::sync::watch::channel(Looks::default());
        let crew = Arc::new(Crew {
            key: self.key.clone(),
            store: self.store.clone(),
            slots,
            lead_inbox: Arc::new(TeamInbox::new(lead_cx.clone())),
            events: self.events.clone(),
            lead_run,
            kicks: AtomicU64::new(0),
            kick: tokio::sync::Notify::new(),
            looks,
            supervisor: Mutex::new(None),
            held_poll: (self.claim_ttl / 10)
                .clamp(Duration::from_millis(50), Duration::from_secs(1)),
        });
        let mut tools = agent.tools().clone();
        for tool in team_tools(lead_cx) {
            tools.add_arc(tool);
        }
        let text = format!(
            "You lead a team. {roster} Split the work into items of the team's todo list \
(team_todos with `add`; `blocked_by` orders them): members take the items they can do. \
send_message writes to one member (`to`) or to everyone; members' messages to you arrive as \
<team-message> notes. Members work while you go on; when you end, the team finishes its \
work first and you get what they sent you."
        );
        let agent = agent
            .with_tools(tools)
            .with_provider(Arc::new(FnProvider(move |_: &[Message]| {
                Some(text.clone())
            })))
            .with_capability(crew.lead_inbox.clone())
            .with_capability(Arc::new(Lead { crew: crew.clone() }));
        (agent, TeamHandle { crew })
    }

    fn slot(&self, def: &MemberDef, roster: &str, lead_run: &Arc<Mutex<String>>) -> Slot {
        let name = def.member.name.clone();
        let cx = TeamContext {
            store: self.store.clone(),
            team: self.key.clone(),
            member: name.clone(),
        };
        let inbox = Arc::new(TeamInbox::new(cx.clone()));
        let mut tools = self.tools.clone();
        for tool in team_tools(cx) {
            tools.add_arc(tool);
        }
        let model = def.model.clone().unwrap_or_else(|| self.model.clone());
        let m = &def.member;
        let mut text = format!(
            "You are {name}, the {} of a team led by {LEAD}. {} {roster} The team shares a todo \
list: team_todos lists it (and adds items), claim_todo takes a pending item whose blockers are \
completed (one member gets it), complete_todo marks an item you hold as done. send_message \
writes to one member (`to`) or to everyone; messages for you arrive as <team-message> notes. \
Claim an item before you work on it and complete it when it is done.",
            if m.role.is_empty() {
                "member"
            } else {
                m.role.as_str()
            },
            m.description
        );
        if !m.instructions.is_empty() {
            text.push_str("\n\n");
            text.push_str(&m.instructions);
        }
        let mut agent = Agent::new(model)
            .with_tools(tools)
            .with_hooks(self.hooks.clone())
            .with_max_turns(self.max_turns)
            .with_instructions(text)
            .with_capability(inbox.clone());
        if let Some(config) = &self.compaction {
            agent = agent.with_compaction(config.clone());
        }
        let thread = self.key.scope.thread(member_thread(&self.key.team, &name));
        let live = MemberLive {
            sink: self.events.clone(),
            lead_run: lead_run.clone(),
            thread_id: thread.thread.clone(),
            member: name.clone(),
        };
        let config = RunnerConfig::default()
            .with_claim_ttl(self.claim_ttl)
            .with_live(Arc::new(live))
            .with_run_label(TEAM_LABEL, self.key.team.clone())
            .with_run_label(MEMBER_LABEL, name.clone());
        Slot {
            name,
            thread,
            runner: Runner::with_config(agent, self.store.clone(), config),
            inbox,
            woke_at: Mutex::new(None),
            read_history: Mutex::new(false),
            held: Mutex::new(false),
        }
    }
}

/// The members as the instructions list them.
fn roster(members: &[MemberDef]) -> String {
    let names: Vec<String> = members
        .iter()
        .map(|d| {
            let m = &d.member;
            match (m.role.is_empty(), m.description.is_empty()) {
                (true, true) => m.name.clone(),
                (false, true) => format!("{} ({})", m.name, m.role),
                (true, false) => format!("{}: {}", m.name, m.description),
                (false, false) => format!("{} ({}): {}", m.name, m.role, m.description),
            }
        })
        .collect();
    format!("The team's members: {}.", names.join("; "))
}

/// Stops what is left of a team's members (runs of a lead that was
/// dropped) and waits for their ends.
#[derive(Clone)]
pub struct TeamHandle {
    crew: Arc<Crew>,
}

impl std::fmt::Debug for TeamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamHandle")
            .field("team", &self.crew.key)
            .finish_non_exhaustive()
    }
}

impl TeamHandle {
    /// Stops the supervisor and every member run, and waits until each has recorded its end.
    pub async fn aclose(&self) {
        self.crew.stop_supervisor().await;
        for slot in &self.crew.slots {
            slot.runner.aclose().await;
        }
    }
}

struct Slot {
    name: String,
    thread: ThreadKey,
    runner: Runner,
    inbox: Arc<TeamInbox>,
    /// The todo list as it stood when the member was last woken.
    woke_at: Mutex<Option<String>>,
    /// Whether the member's history was read for what it was delivered
    /// (and its thread for a run an earlier process left running).
    read_history: Mutex<bool>,
    /// Its thread holds a message for a run another holder's claim still
    /// keeps (one an earlier process left running): taken once the claim lapses.
    held: Mutex<bool>,
}

type Supervisor = (CancelToken, tokio::task::JoinHandle<()>);

/// What a look started.
#[derive(Default)]
struct Wave {
    /// The member runs it started.
    runs: Vec<(usize, RunHandle)>,
    /// A member's thread waits for another holder's claim to lapse.
    held: bool,
}

/// What the supervisor's looks found, by the number of looks asked for when each began.
#[derive(Debug, Clone, Copy, Default)]
struct Looks {
    /// The last look made (its wave, if any, started).
    looked: u64,
    /// The last look that found the team quiet (no wave, nothing to do).
    quiet: u64,
    /// A wave runs.
    running: bool,
}

struct Crew {
    key: TeamKey,
    store: Arc<dyn SessionStore>,
    slots: Vec<Slot>,
    lead_inbox: Arc<TeamInbox>,
    events: Option<TeamEventSink>,
    /// The lead's run now, the members' runs' parent.
    lead_run: Arc<Mutex<String>>,
    /// Looks asked for, counted.
    kicks: AtomicU64,
    kick: tokio::sync::Notify,
    /// What the looks found.
    looks: tokio::sync::watch::Sender<Looks>,
    supervisor: Mutex<Option<Supervisor>>,
    /// How often a held member thread is tried again.
    held_poll: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `item` can be claimed now: pending, unassigned, every blocker completed.
fn claimable(item: &SharedTodoItem, items: &[SharedTodoItem]) -> bool {
    item.status == TodoStatus::Pending
        && item.assigned_to.is_none()
        && item.blocked_by.iter().all(|b| {
            items
                .iter()
                .any(|i| i.id == *b && i.status == TodoStatus::Completed)
        })
}

impl Crew {
    /// Asks for a look; returns its number.
    fn ask_look(&self) -> u64 {
        let n = self.kicks.fetch_add(1, Ordering::SeqCst) + 1;
        self.kick.notify_one();
        n
    }

    fn emit(&self, event: TeamEvent) {
        if let Some(sink) = &self.events {
            sink(event);
        }
    }

    fn start_supervisor(self: &Arc<Self>) {
        let mut slot = lock(&self.supervisor);
        if slot.as_ref().is_some_and(|(_, task)| !task.is_finished()) {
            return;
        }
        let stop = CancelToken::new();
        let task = tokio::spawn(supervise(self.clone(), stop.clone()));
        *slot = Some((stop, task));
    }

    fn supervising(&self) -> bool {
        lock(&self.supervisor)
            .as_ref()
            .is_some_and(|(_, task)| !task.is_finished())
    }

    /// Waits until the looks satisfy `done`, or the supervisor is gone.
    async fn wait_looks(&self, done: impl Fn(&Looks) -> bool) {
        let mut looks = self.looks.subscribe();
        loop {
            let waited =
                tokio::time::timeout(Duration::from_secs(1), looks.wait_for(|l| done(l))).await;
            match waited {
                Ok(_) => return,
                Err(_) if !self.supervising() => return,
                Err(_) => {}
            }
        }
    }

    async fn stop_supervisor(&self) {
        let taken = lock(&self.supervisor).take();
        if let Some((stop, task)) = taken {
            stop.cancel();
            let _ = task.await;
        }
    }

    /// Starts a run for each member with something to do; none when the team is quiet.
    async fn start_wave(&self) -> Wave {
        let Some(teams) = self.store.teams() else {
            return Wave::default();
        };
        let items = teams.team_todos(&self.key).await.unwrap_or_default();
        let list = serde_json::to_string(&items).unwrap_or_default();
        let open = items.iter().any(|i| claimable(i, &items));
        let mut wave = Wave::default();
        for (i, slot) in self.slots.iter().enumerate() {
            if *lock(&slot.held) {
                // Its message waits: no other is posted, the thread is taken once free.
                match self.take_held(slot).await {
                    Ok(Some(handle)) => wave.runs.push((i, handle)),
                    Ok(None) => wave.held |= *lock(&slot.held),
                    Err(message) => self.emit(TeamEvent::NotStarted {
                        member: slot.name.clone(),
                        message,
                    }),
                }
                continue;
            }
            let found = match self.first_look(slot).await {
                Ok(left) => self.has_mail(teams, slot).await.map(|mail| (left, mail)),
                Err(message) => Err(message),
            };
            let (left, mail) = match found {
                Ok(found) => found,
                Err(message) => {
                    self.emit(TeamEvent::NotStarted {
                        member: slot.name.clone(),
                        message,
                    });
                    continue;
                }
            };
            let todo = open && lock(&slot.woke_at).as_deref() != Some(list.as_str());
            if !(left || mail || todo) {
                continue;
            }
            *lock(&slot.woke_at) = Some(list.clone());
            let text = if left { RESUME_TEXT } else { WAKE_TEXT };
            match slot
                .runner
                .send(&slot.thread, WAKE_AUTHOR, text, None)
                .await
            {
                Ok(sent) => match sent.run {
                    Some(handle) => wave.runs.push((i, handle)),
                    // A claim another holder keeps (a dead process's, until it
                    // lapses) holds the thread: it is taken when free.
                    None => {
                        *lock(&slot.held) = true;
                        wave.held = true;
                    }
                },
                Err(e) => self.emit(TeamEvent::NotStarted {
                    member: slot.name.clone(),
                    message: format!("its run could not be started: {}", e.message()),
                }),
            }
        }
        wave
    }

    /// On the first look at a member in this process: what an earlier
    /// process delivered to it (read from its history), and whether that
    /// process left a run of it running (`true`: it is to be resumed).
    async fn first_look(&self, slot: &Slot) -> Result<bool, String> {
        if *lock(&slot.read_history) {
            return Ok(false);
        }
        let history = crate::session::load_history(&*self.store, &slot.thread)
            .await
            .map_err(|e| format!("its history could not be read: {}", e.message()))?;
        slot.inbox.raise(delivered_in(&history));
        let info = self
            .store
            .thread(&slot.thread)
            .await
            .map_err(|e| format!("its thread could not be read: {}", e.message()))?;
        *lock(&slot.read_history) = true;
        Ok(info.is_some_and(|t| t.status == ThreadStatus::Running)
            && slot.runner.running(&slot.thread).is_none())
    }

    /// Takes the held thread of a member if its claim lapsed; it stays held
    /// while another holder's run of it is running.
    async fn take_held(&self, slot: &Slot) -> Result<Option<RunHandle>, String> {
        let taken = slot.runner.take_thread(&slot.thread).await;
        let taken = taken.map_err(|e| {
            *lock(&slot.held) = false;
            format!("its run could not be started: {}", e.message())
        })?;
        if taken.is_some() {
            *lock(&slot.held) = false;
            return Ok(taken);
        }
        let info = self.store.thread(&slot.thread).await.map_err(|e| {
            *lock(&slot.held) = false;
            format!("its thread could not be read: {}", e.message())
        })?;
        *lock(&slot.held) = info.is_some_and(|t| t.status == ThreadStatus::Running);
        Ok(None)
    }

    /// Whether a message the member has not had waits for it.
    async fn has_mail(&self, teams: &dyn TeamStore, slot: &Slot) -> Result<bool, String> {
        let cursor = teams
            .delivered(&self.key, &slot.name)
            .await
            .map_err(|e| format!("its messages could not be read: {}", e.message()))?;
        let after = cursor.max(slot.inbox.delivered());
        let waiting = teams
            .messages_for(&self.key, &slot.name, after)
            .await
            .map_err(|e| format!("its messages could not be read: {}", e.message()))?;
        Ok(!waiting.is_empty())
    }

    fn ended(&self, i: usize, result: &crate::agent::RunResult) {
        let slot = &self.slots[i];
        self.emit(TeamEvent::Ended {
            run_id: result.run_id.clone(),
            parent_run_id: lock(&self.lead_run).clone(),
            thread_id: slot.thread.thread.clone(),
            member: slot.name.clone(),
            outcome: result.outcome.name().to_owned(),
            reason: result.outcome.reason().map(str::to_owned),
            turns: result.turns,
            tool_calls: result.tool_calls,
            usage: result.usage,
        });
    }
}

/// Starts waves until stopped; a stop stops the wave's runs and waits for their ends.
async fn supervise(crew: Arc<Crew>, stop: CancelToken) {
    loop {
        if stop.is_cancelled() {
            return;
        }
        let look = crew.kicks.load(Ordering::SeqCst);
        let Wave { runs: wave, held } = crew.start_wave().await;
        crew.looks.send_modify(|l| {
            l.looked = look;
            l.running = !wave.is_empty() || held;
            if wave.is_empty() && !held {
                l.quiet = look;
            }
        });
        if wave.is_empty() && held {
            // Not quiet: a member waits for a dead holder's claim to lapse.
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(crew.held_poll) => {}
            }
            continue;
        }
        if wave.is_empty() {
            // The next look is for a look asked after this one began (a
            // permit left from a look already made starts none).
            loop {
                let kicked = crew.kick.notified();
                let mut kicked = std::pin::pin!(kicked);
                kicked.as_mut().enable();
                if crew.kicks.load(Ordering::SeqCst) > look {
                    break;
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = kicked => {}
                }
            }
            continue;
        }
        let waits = futures::future::join_all(
            wave.iter()
                .map(|(i, handle)| async move { (*i, handle.wait().await) }),
        );
        tokio::select! {
            ended = waits => {
                for (i, result) in &ended {
                    crew.ended(*i, result);
                }
                crew.looks.send_modify(|l| l.running = false);
            }
            () = stop.cancelled() => {
                for (i, handle) in &wave {
                    crew.slots[*i].runner.stop(&handle.thread().scope, handle.run_id());
                }
                for (i, handle) in &wave {
                    let result = handle.wait().await;
                    crew.ended(*i, &result);
                }
                return;
            }
        }
    }
}

/// The lead's part: starts the members' supervisor with the run, asks for
/// a look before each request, waits for a quiet team before ending, and
/// stops the members when the run ends.
struct Lead {
    crew: Arc<Crew>,
}

#[async_trait]
impl Capability for Lead {
    fn name(&self) -> &str {
        "team"
    }

    async fn before_run(&self, run: &RunInfo) -> Result<(), RunFailure> {
        if self.crew.store.teams().is_none() {
            return Err(RunFailure::new(
                "store_failed",
                "the session store keeps no teams, so the team cannot run",
            ));
        }
        *lock(&self.crew.lead_run) = run.run_id.clone();
        self.crew.start_supervisor();
        Ok(())
    }

    async fn before_request(
        &self,
        _run: &RunInfo,
        _history: &[Message],
    ) -> Result<Vec<Message>, RunFailure> {
        // The look starts its wave before the request: none falls inside the answer's calls.
        let look = self.crew.ask_look();
        self.crew
            .wait_looks(|l| l.looked >= look || l.running)
            .await;
        Ok(Vec::new())
    }

    async fn before_end(&self, _run: &RunInfo) -> Vec<Message> {
        let look = self.crew.ask_look();
        self.crew.wait_looks(|l| l.quiet >= look).await;
        // What members sent the lead meanwhile; none lets the run end.
        self.crew.lead_inbox.fresh(0).await.unwrap_or_default()
    }

    async fn after_run(&self, _run: &RunInfo, _outcome: &Outcome) {
        self.crew.stop_supervisor().await;
    }
}

/// A member runner's live channel: every frame goes to the event sink with
/// the member's and the lead's run ids; nothing is kept to watch.
struct MemberLive {
    sink: Option<TeamEventSink>,
    lead_run: Arc<Mutex<String>>,
    thread_id: String,
    member: String,
}

impl LiveChannel for MemberLive {
    fn open(&self, run_id: &str) {
        if let Some(sink) = &self.sink {
            sink(TeamEvent::Started {
                run_id: run_id.to_owned(),
                parent_run_id: lock(&self.lead_run).clone(),
                thread_id: self.thread_id.clone(),
                member: self.member.clone(),
            });
        }
    }

    fn send(&self, frame: LiveFrame) {
        if let Some(sink) = &self.sink
            && !matches!(frame.event, LiveEvent::Started { .. })
        {
            sink(TeamEvent::Frame {
                run_id: frame.run_id,
                parent_run_id: lock(&self.lead_run).clone(),
                member: self.member.clone(),
                event: frame.event,
            });
        }
    }

    fn close(&self, _run_id: &str, _end: LiveEvent) {}

    fn watch(&self, _run_id: &str) -> Option<BoxStream<'static, LiveFrame>> {
        None
    }
}
