//! Connection and session state.

use acp_extension_core::methods::ContractMethod;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp_extension_core::capabilities::Feature;
use acp_extension_core::mcp_apps::{McpAppToolCallMeta, McpCallToolResult};
use acp_extension_core::meta::MetaField;
use acp_extension_core::namespace::Namespace;
use acp_extension_core::negotiation::Negotiated;
use acp_extension_core::producer::{AgentExtensions, Delivery, SendError, Withheld};
use acp_extension_core::session::{
    GoalSnapshot, GoalStatus, SessionActivityState, SessionActivityUpdate, TaskKind,
};
use acp_extension_core::subagent_events::SubagentEvent;
use acp_extension_core::usage::SessionUsageAccumulator;
use acp_extension_core::wire::Map;
use agent_client_protocol::v1::schema::{Meta, SessionId, SessionUpdate};
use tokio::sync::mpsc;

use super::cancel::Cancel;
use super::features::Advertised;
use super::ledger::{DEFAULT_MODEL, Runs};
use super::wire::{Cx, nn};
use super::{PlainClients, ServeNamespace, ServeOptions, SessionIds, TaskGuard, TaskMonitor};

/// Eight random hex digits, the same for every connection of this process:
/// session ids of two `serve` processes never collide, and those of one
/// process stay apart by their counter.
fn process_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned())
}

/// The context window reported in `usage_update.size`.
pub(crate) const CONTEXT_WINDOW: u64 = 200_000;

/// State shared by the handlers and tasks of one connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) advertised: Advertised,
    pub(crate) namespaces: ServeNamespace,
    /// The caller's task count (may be shared between connections).
    monitor: TaskMonitor,
    /// This connection's own task count, drained on EOF.
    tasks: TaskMonitor,
    /// What a client that advertised no extension gets.
    plain_clients: PlainClients,
    /// The library's extension handle for this connection: every
    /// extension message and every `session/update` goes through it, so
    /// that nothing the client did not negotiate is written. Set at
    /// `initialize`; a lock of its own, as senders may hold the state lock.
    ext: Mutex<Option<AgentExtensions>>,
    inner: Mutex<Inner>,
}

/// The mutable part, behind one lock. Never held across an await.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub(crate) initialized: bool,
    pub(crate) closing: bool,
    pub(crate) client: ClientSide,
    pub(crate) counters: Counters,
    pub(crate) sessions: HashMap<String, Session>,
    /// Tool calls tagged with an MCP app, by (session id, tool call id).
    pub(crate) apps: HashMap<(String, String), AppCall>,
}

/// A tool call tagged with `_meta.<ns>.mcpApp` (`/app`): what the app view
/// loads through `_<ns>/mcp_apps/*`.
#[derive(Debug, Clone)]
pub(crate) struct AppCall {
    pub(crate) app: McpAppToolCallMeta,
    pub(crate) input: Map,
    /// `None` until the tool call completed.
    pub(crate) result: Option<McpCallToolResult>,
}

/// What the client advertised, reduced to what the agent acts on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientSide {
    /// The namespace of every extension message the agent sends.
    pub(crate) ns: Namespace,
    /// The client reads subagent runs: Core `subagentEvents` negotiated,
    /// or standard `subagents` advertised (the handle writes the dialect).
    pub(crate) reads_runs: bool,
    /// The client advertised `elicitation: {version: 1, answerNotes: true}`.
    pub(crate) answer_notes: bool,
    /// The client supports standard ACP form elicitation.
    pub(crate) elicitation_form: bool,
    /// The client supports boolean session config options.
    pub(crate) boolean_config: bool,
    /// `mcpApps` negotiated (both sides advertised it).
    pub(crate) mcp_apps: bool,
}

impl Default for ClientSide {
    fn default() -> Self {
        Self {
            ns: Namespace::Lody,
            reads_runs: false,
            answer_notes: false,
            elicitation_form: false,
            boolean_config: false,
            mcp_apps: false,
        }
    }
}

/// Per-connection id counters: ids are deterministic for the same input,
/// but for the process-wide prefix of session ids ([`SessionIds::Unique`]).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// `sess-<prefix>-N` when set, else `sess-N`.
    session_prefix: Option<String>,
    session: u64,
    turn: u64,
    call: u64,
    task: u64,
    /// Subagent run ids, shared with every session's emitter.
    pub(crate) run_ids: Arc<AtomicU64>,
    generation: u64,
    /// Prompts accepted on this connection (drives the synthetic rate limits).
    pub(crate) prompts: u64,
}

impl Counters {
    fn new(ids: SessionIds) -> Self {
        Self {
            session_prefix: match ids {
                SessionIds::Unique => Some(process_prefix().to_owned()),
                SessionIds::Counter => None,
            },
            ..Self::default()
        }
    }

    pub(crate) fn session(&mut self) -> (u64, String) {
        self.session += 1;
        let id = match &self.session_prefix {
            Some(prefix) => format!("sess-{prefix}-{}", self.session),
            None => format!("sess-{}", self.session),
        };
        (self.session, id)
    }
    pub(crate) fn turn(&mut self) -> String {
        self.turn += 1;
        format!("turn-{}", self.turn)
    }
    pub(crate) fn call(&mut self) -> String {
        self.call += 1;
        format!("call-{}", self.call)
    }
    pub(crate) fn task(&mut self) -> String {
        self.task += 1;
        format!("task-{}", self.task)
    }
    pub(crate) fn generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }
}

/// One completed turn, kept for `session/load`, history reads and forks.
#[derive(Debug, Clone)]
pub(crate) struct TurnRecord {
    pub(crate) turn_id: String,
    pub(crate) user_text: String,
    pub(crate) answer: String,
}

/// A goal (`/goal`, `goalControl`, `_<ns>/session/goal`).
#[derive(Debug, Clone)]
pub(crate) struct Goal {
    pub(crate) objective: String,
    pub(crate) status: GoalStatus,
    pub(crate) iterations: u64,
    pub(crate) last_reason: Option<String>,
    pub(crate) created: u64,
    pub(crate) updated: u64,
    pub(crate) tokens_used: u64,
}

impl Goal {
    /// A new active goal, set at `now`.
    pub(crate) fn new(objective: String, now: u64) -> Self {
        Self {
            objective,
            status: GoalStatus::Active,
            iterations: 0,
            last_reason: None,
            created: now,
            updated: now,
            tokens_used: 0,
        }
    }

    /// The contract's GoalSnapshot.
    pub(crate) fn snapshot(&self) -> GoalSnapshot {
        let mut g = GoalSnapshot::new(self.objective.clone(), self.status)
            .iterations(nn(self.iterations as f64))
            .created_at_epoch_seconds(self.created)
            .updated_at_epoch_seconds(self.updated)
            .tokens_used(nn(self.tokens_used as f64));
        if let Some(reason) = &self.last_reason {
            g = g.last_reason(Some(reason.clone()));
        }
        g
    }
}

/// One session known to this connection, open or closed.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) seq: u64,
    pub(crate) cwd: PathBuf,
    pub(crate) additional_directories: Vec<PathBuf>,
    pub(crate) title: Option<String>,
    pub(crate) updated_at: u64,
    pub(crate) project: Option<PathBuf>,
    pub(crate) model_id: String,
    pub(crate) plan_mode: bool,
    pub(crate) goal: Option<Goal>,
    pub(crate) history: Vec<TurnRecord>,
    /// Tokens in the (synthetic) context window.
    pub(crate) context_used: u64,
    /// The open lifetime; `None` once closed.
    pub(crate) live: Option<Live>,
}

impl Session {
    pub(crate) fn new(id: String, seq: u64, cwd: PathBuf) -> Self {
        Self {
            id,
            seq,
            cwd,
            additional_directories: Vec::new(),
            title: None,
            updated_at: crate::time::now(),
            project: None,
            model_id: DEFAULT_MODEL.to_owned(),
            plan_mode: false,
            goal: None,
            history: Vec::new(),
            context_used: 0,
            live: None,
        }
    }
}

/// A steer waiting to be applied by the running turn.
#[derive(Debug, Clone)]
pub(crate) struct Steer {
    pub(crate) steer_id: String,
    pub(crate) text: String,
    /// It came on `_session/steering`: no `steer_applied` follows.
    pub(crate) standard: bool,
}

/// The prompt slot: at most one turn per session.
#[derive(Debug)]
pub(crate) struct TurnSlot {
    pub(crate) turn_id: String,
    pub(crate) cancel: Cancel,
    pub(crate) steer: mpsc::UnboundedSender<Steer>,
}

/// Work that outlives the turn that started it (`/background`, `/schedule`).
#[derive(Debug)]
pub(crate) struct Background {
    pub(crate) task_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) kind: TaskKind,
    pub(crate) description: String,
    /// `None` while a scheduled task waits for its wakeup.
    pub(crate) started: Option<u64>,
    pub(crate) cancel: Cancel,
}

/// One open lifetime of a session: its accounting, runs and work.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) generation: u64,
    /// One usage accumulator per lifetime (a fresh usage scope id each).
    pub(crate) ledger: SessionUsageAccumulator,
    /// The lifetime's total cost after the last usage update, if known.
    pub(crate) total_cost: Option<f64>,
    pub(crate) runs: Runs,
    pub(crate) turn: Option<TurnSlot>,
    pub(crate) background: BTreeMap<String, Background>,
    /// Requests to the client the turn is waiting on (permission, elicitation).
    pub(crate) waiting: usize,
    /// The last activity level sent (`idle`/0 is assumed before any update).
    pub(crate) activity: (SessionActivityState, usize),
}

impl Live {
    pub(crate) fn new(
        generation: u64,
        session_id: &str,
        ns: Namespace,
        run_ids: Arc<AtomicU64>,
    ) -> Self {
        Self {
            generation,
            ledger: SessionUsageAccumulator::new().with_namespace(ns),
            total_cost: None,
            runs: Runs::new(session_id, run_ids),
            turn: None,
            background: BTreeMap::new(),
            waiting: 0,
            activity: (SessionActivityState::Idle, 0),
        }
    }

    /// The current activity level.
    pub(crate) fn level(&self) -> (SessionActivityState, usize) {
        let state = match (&self.turn, self.waiting) {
            (None, _) => SessionActivityState::Idle,
            (Some(_), 0) => SessionActivityState::Running,
            (Some(_), _) => SessionActivityState::RequiresAction,
        };
        (state, self.background.len())
    }

    /// Cancels the turn and every background task.
    pub(crate) fn cancel_all(&mut self) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
        for task in self.background.values() {
            task.cancel.cancel();
        }
    }
}

impl Shared {
    pub(crate) fn new(options: ServeOptions) -> anyhow::Result<Arc<Self>> {
        let advertised = Advertised::new(options.only.as_deref())?;
        Ok(Arc::new(Self {
            advertised,
            namespaces: options.namespace,
            monitor: options.task_monitor,
            tasks: TaskMonitor::new(),
            plain_clients: options.plain_clients,
            ext: Mutex::new(None),
            inner: Mutex::new(Inner {
                counters: Counters::new(options.session_ids),
                ..Inner::default()
            }),
        }))
    }

    /// Locks the state (a poisoned lock is still usable: every update is
    /// small and leaves the state consistent).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one running task (turn or background job) until dropped.
    pub(crate) fn task_guard(&self) -> (TaskGuard, TaskGuard) {
        (self.tasks.guard(), self.monitor.guard())
    }

    /// Whether `feature` is advertised.
    pub(crate) fn has(&self, feature: Feature) -> bool {
        self.advertised.has(feature)
    }

    /// Binds the connection's extension handle at `initialize`: `negotiated`
    /// with the namespace serve writes in. A client that advertised no
    /// extension gets no agent-only notification unless `--plain-clients
    /// notify` says so (the handle's default policy).
    pub(crate) fn bind(&self, cx: &Cx, mut negotiated: Negotiated, ns: Namespace) {
        negotiated.agent_writes = ns;
        let ext = AgentExtensions::new(cx.clone(), negotiated)
            .write_to_plain_clients(self.plain_clients == PlainClients::Notify);
        *self.ext.lock().unwrap_or_else(|e| e.into_inner()) = Some(ext);
    }

    /// The connection's handle, once bound.
    pub(crate) fn handle(&self) -> Option<AgentExtensions> {
        self.ext.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sends through the connection's handle. Anything withheld other
    /// than by the plain-client policy is a bug of serve's (it checks the
    /// negotiation first), and so is a message wrong as written: both are
    /// reported on stderr. A closed connection is not an error here: the
    /// work that produced the message is being torn down anyway.
    pub(crate) fn send(
        &self,
        what: &str,
        f: impl FnOnce(&AgentExtensions) -> Result<Delivery, SendError>,
    ) {
        let ext = self.ext.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(ext) = ext else {
            return;
        };
        match f(&ext) {
            Ok(Delivery::Withheld(w @ Withheld::NotNegotiated(_))) => {
                eprintln!("acp-ext serve: {what} not sent: {w}");
            }
            Ok(_) | Err(SendError::Connection(_)) => {}
            Err(e) => eprintln!("acp-ext serve: {what} not sent: {e}"),
        }
    }

    /// A `_meta` holding one contract field, set through the handle (its
    /// feature checked); `None` when refused.
    pub(crate) fn meta<F: MetaField>(&self, value: F::Value) -> Option<Meta> {
        let mut meta: Option<Meta> = None;
        self.send("a `_meta` field", |ext| {
            Ok(ext.set_meta::<F>(&mut meta, value))
        });
        meta
    }

    /// Sends a `session/update`, checked by the handle.
    pub(crate) fn update(&self, session_id: &str, update: SessionUpdate) {
        self.send("session/update", |ext| {
            ext.session_update(&SessionId::new(session_id), update)
        });
    }

    /// Sends a subagent event of a run serve's ledger keeps.
    pub(crate) fn subagent_event(&self, event: SubagentEvent) {
        self.send(ContractMethod::SubagentEvent.path(), |ext| {
            ext.subagent_event(event)
        });
    }

    /// Sends `_<ns>/session/activity_update` if the session's level changed.
    pub(crate) fn sync_activity(&self, session_id: &str, live: &mut Live) {
        let level = live.level();
        if level == live.activity {
            return;
        }
        live.activity = level;
        if self.has(Feature::SessionActivity) {
            self.send(ContractMethod::SessionActivityUpdate.path(), |ext| {
                ext.activity_update(SessionActivityUpdate::new(session_id, level.0, level.1))
            });
        }
    }

    /// EOF: refuse new work, mark live subagent runs disconnected, cancel
    /// every turn and background task, and wait for them to settle.
    pub(crate) async fn shutdown(&self) {
        {
            let mut inner = self.lock();
            inner.closing = true;
            let events = inner.client.reads_runs;
            let mut sessions: Vec<&mut Session> = inner.sessions.values_mut().collect();
            sessions.sort_by_key(|s| s.seq);
            for session in sessions {
                if let Some(live) = &mut session.live {
                    for event in live.runs.disconnect() {
                        if events {
                            self.subagent_event(event);
                        }
                    }
                    live.cancel_all();
                }
            }
        }
        // Cancelled turns answer their prompts with `cancelled`; give them a
        // bounded time to do so before the connection is dropped.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tasks.idle()).await;
    }

    /// The transport broke without EOF: cancel everything (the tasks are
    /// dropped with the connection; nothing can be sent any more).
    pub(crate) fn abandon(&self) {
        let mut inner = self.lock();
        inner.closing = true;
        for session in inner.sessions.values_mut() {
            if let Some(live) = &mut session.live {
                live.runs.disconnect();
                live.cancel_all();
            }
        }
    }
}
