//! Conformance client: spawns any ACP agent, advertises every client
//! extension, reads what the agent advertises, optionally opens a session
//! and runs prompts, and checks every message on the wire against the
//! contract and the negotiated capabilities.
//!
//! Usable from another crate's tests, so that an adapter's CI can assert
//! that its agent keeps the contract:
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use acp_ext::probe::{self, ProbeOptions};
//! use acp_ext::check::Severity;
//!
//! let options = ProbeOptions::default().session(true).prompt("hello");
//! let report = probe::run(["my-agent", "--acp"], options).await?;
//! assert!(report.findings.iter().all(|f| f.severity < Severity::Error), "{:#?}", report.findings);
//! # Ok(()) }
//! ```

mod report;

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use acp_extension_core::capabilities::{
    ClientExtensionCapabilities, ElicitationCapability, Feature, SteeringTransport,
    VersionOneCapability,
};
use acp_extension_core::methods::ContractMethod;
use acp_extension_core::namespace::{self, Namespace, NamespaceSet};
use acp_extension_core::negotiation::{Advertisement, Negotiated, Side, negotiate};
use acp_extension_core::wire::True;
use agent_client_protocol::{AcpAgent, Client, LineDirection, UntypedMessage};
use serde_json::{Value, json};

use crate::check::{Checker, Direction, Finding, Severity};
use acp_extension_core::connection::{Connection, Message};

pub use report::{
    ANSWER_CHARS, ExtensionRow, ProbeReport, PromptResult, QueryResult, ReportFinding,
};

/// What the probe does besides `initialize`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// Namespaces the client advertises its extensions under.
    pub namespace: NamespaceSet,
    /// Open a session (`session/new` in a temporary directory).
    pub session: bool,
    /// Prompts to run in the session, in order (implies `session`).
    pub prompts: Vec<String>,
    /// Timeout of every request.
    pub timeout: Duration,
    /// Capture the agent's stderr instead of passing it through.
    pub quiet: bool,
    /// Which dialect the probe speaks as a client.
    pub client: ClientDialect,
    /// Steer each prompt's turn that still runs after 100 ms, when the
    /// agent takes steers by request: a Core client by `_<ns>/session/steer`,
    /// a standard client by `_session/steering`; a plain client never
    /// steers (it knows neither). On by default; a steer changes what
    /// the agent does next, so a scripted run may turn it off.
    pub steer: bool,
    /// A binary that runs the tap's guard ([`crate::tap::GUARD_ARG`])
    /// between the probe and the agent, so that the agent's process group
    /// ends even when the probe is killed; `acp-ext probe` passes itself.
    pub agent_guard: Option<std::path::PathBuf>,
    /// Which ACP version the probe asks for in `initialize`.
    pub protocol: ProtocolChoice,
}

/// Which ACP version the probe asks for. It then speaks what the agent
/// answers: v2's `capabilities` and `info`, a prompt's answer as a receipt
/// and its turn ended by the `idle` `state_update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProtocolChoice {
    /// ACP v1 (the default).
    #[default]
    V1,
    /// ACP v2: an agent that answers v1 is reported (`protocol-version`).
    V2,
    /// v2 first, following the agent's answer: a v1 answer, or a refusal
    /// (`-32022`) naming the versions it supports, gives v1.
    Auto,
}

crate::choice::choices!(ProtocolChoice, "protocol version" {
    V1 = "1" | "v1",
    V2 = "2" | "v2",
    Auto = "auto",
});

/// Which client the probe plays: what it advertises in `initialize`.
pub use crate::dialect::ClientDialect;

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            namespace: NamespaceSet::Both,
            session: false,
            prompts: Vec::new(),
            timeout: Duration::from_secs(30),
            quiet: false,
            client: ClientDialect::Core,
            steer: true,
            agent_guard: None,
            protocol: ProtocolChoice::V1,
        }
    }
}

impl ProbeOptions {
    /// Sets whether to open a session.
    #[must_use]
    pub fn session(mut self, yes: bool) -> Self {
        self.session = yes;
        self
    }

    /// Adds a prompt (and opens a session).
    #[must_use]
    pub fn prompt(mut self, text: impl Into<String>) -> Self {
        self.prompts.push(text.into());
        self.session = true;
        self
    }

    /// Sets the request timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the namespaces of the client's advertisement.
    #[must_use]
    pub fn namespace(mut self, namespace: NamespaceSet) -> Self {
        self.namespace = namespace;
        self
    }

    /// Captures the agent's stderr instead of passing it through.
    #[must_use]
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Sets which client the probe plays.
    #[must_use]
    pub fn client(mut self, client: ClientDialect) -> Self {
        self.client = client;
        self
    }

    /// Sets whether the probe steers running turns ([`ProbeOptions::steer`]).
    #[must_use]
    pub fn steer(mut self, steer: bool) -> Self {
        self.steer = steer;
        self
    }

    /// Sets which ACP version the probe asks for.
    #[must_use]
    pub fn protocol(mut self, protocol: ProtocolChoice) -> Self {
        self.protocol = protocol;
        self
    }

    /// Runs the agent under the tap's guard, started as `exe __tap-guard
    /// …` (a binary whose `main` calls [`crate::tap::guard_main`] for that
    /// argument, as `acp-ext` does): the agent's process group ends even if
    /// the probe is killed.
    #[must_use]
    pub fn agent_guard(mut self, exe: impl Into<std::path::PathBuf>) -> Self {
        self.agent_guard = Some(exe.into());
        self
    }
}

/// One message seen on the wire, with the findings it produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WireEvent {
    /// Which way it went.
    pub direction: Direction,
    /// Time since the probe started.
    pub elapsed: Duration,
    /// The message (or `None` for a line that is not JSON).
    pub message: Option<Value>,
    /// The line as sent.
    pub raw: String,
    /// What the checker found in it.
    pub findings: Vec<Finding>,
}

/// A callback that sees every message as it passes.
pub type OnWire = Box<dyn FnMut(&WireEvent) + Send>;

/// The client's extension capabilities: every client feature.
pub fn client_extensions() -> ClientExtensionCapabilities {
    ClientExtensionCapabilities::new()
        .subagent_events(VersionOneCapability::new())
        .elicitation(ElicitationCapability::new().answer_notes(True))
        .mcp_apps(VersionOneCapability::new())
}

/// What the probe advertises: a capable client's capabilities. File reads
/// and writes are served inside the session's temporary directory; terminal
/// authentication is advertised (in the SDK's `auth.terminal` and the older
/// `_meta["terminal-auth"]` spelling) so agents list such methods, which
/// the report shows; the probe never runs them, nor any command.
fn client_capabilities(ns: NamespaceSet, dialect: ClientDialect) -> Value {
    let mut meta = match dialect {
        ClientDialect::Core => client_extensions().to_meta(ns),
        _ => serde_json::Map::new(),
    };
    meta.insert("terminal-auth".into(), Value::Bool(true));
    let mut caps = json!({
        "fs": {"readTextFile": true, "writeTextFile": true},
        "terminal": false,
        "auth": {"terminal": true},
        "elicitation": {"form": {}},
        "_meta": meta,
    });
    if dialect == ClientDialect::Standard {
        caps["subagents"] = json!({});
        caps["session"] = json!({"compaction": {}, "notices": {}});
        caps["plan"] = json!({});
    }
    caps
}

/// Probes the agent started by `command` (program and arguments).
pub async fn run<I, S>(command: I, options: ProbeOptions) -> anyhow::Result<ProbeReport>
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    run_observed(command, options, None).await
}

/// A signal that stopped [`run_interruptible`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Interrupted {
    /// The signal number (2 for SIGINT, 15 for SIGTERM, 1 for SIGHUP).
    pub signal: i32,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by signal {}", self.signal)
    }
}

impl std::error::Error for Interrupted {}

/// Like [`run`], for a command-line tool: SIGINT, SIGTERM or SIGHUP stops
/// the probe at once and kills the agent's process group, which a
/// signal-killed probe would leave running if the agent ignores the end of
/// its input (the agent has its own process group, so a terminal's Ctrl-C
/// does not reach it). The error is then an [`Interrupted`] (exit with
/// 128 + its signal). It installs handlers for these signals for the rest
/// of the process's life.
pub async fn run_interruptible<I, S>(
    command: I,
    options: ProbeOptions,
) -> anyhow::Result<ProbeReport>
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        // Dropping the probe drops the connection, whose guard kills the
        // agent's process group.
        let signal = tokio::select! {
            report = run(command, options) => return report,
            _ = int.recv() => 2,
            _ = term.recv() => 15,
            _ = hup.recv() => 1,
        };
        Err(Interrupted { signal }.into())
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            report = run(command, options) => report,
            _ = tokio::signal::ctrl_c() => Err(Interrupted { signal: 2 }.into()),
        }
    }
}

/// Like [`run`], calling `observer` for every message on the wire.
pub async fn run_observed<I, S>(
    command: I,
    options: ProbeOptions,
    observer: Option<OnWire>,
) -> anyhow::Result<ProbeReport>
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    let argv: Vec<String> = command.into_iter().map(|s| s.to_string()).collect();
    anyhow::ensure!(!argv.is_empty(), "no agent command given");
    // `NAME=value` words before the program set its environment (as the
    // SDK reads them).
    let assignments = argv.iter().take_while(|a| is_assignment(a)).count();
    let (env, program) = argv.split_at(assignments);
    let Some(first) = program.first() else {
        anyhow::bail!("no agent program given, only environment assignments");
    };
    // A program that is not there is named, not lost in a closed pipe.
    if let Some(missing) = missing_program(first) {
        anyhow::bail!("cannot start the agent: {missing}");
    }
    let started = Instant::now();
    // Where the guard tells how the agent ended.
    let report_path = std::env::temp_dir().join(format!(
        "acp-ext-guard-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    // With a guard, the agent's process group ends even if the probe is
    // killed (SIGKILL included): the tap's guard, between probe and agent,
    // which also reports a signal death of the agent.
    let spawned: Vec<String> = match &options.agent_guard {
        Some(exe) => env
            .iter()
            .cloned()
            .chain([
                format!(
                    "{}={}",
                    crate::tap::guard::REPORT_ENV,
                    report_path.display()
                ),
                exe.to_string_lossy().into_owned(),
                crate::tap::GUARD_ARG.to_owned(),
                std::process::id().to_string(),
                "--".to_owned(),
            ])
            .chain(program.iter().cloned())
            .collect(),
        None => argv.clone(),
    };

    // Every line on the wire goes to the checker thread, in order.
    let (tx, rx) = mpsc::channel::<(Direction, Duration, String)>();
    let stderr_tail: Arc<Mutex<Vec<String>>> = Arc::default();
    let tail = stderr_tail.clone();
    let quiet = options.quiet;
    let idles = Arc::new(Idles::default());
    let seen = idles.clone();
    let agent = AcpAgent::from_args(&spawned)
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", argv.join(" ")))?
        .with_debug(move |line, direction| {
            let dir = match direction {
                LineDirection::Stdin => Direction::ClientToAgent,
                LineDirection::Stdout => {
                    seen.observe(line);
                    Direction::AgentToClient
                }
                LineDirection::Stderr => {
                    if quiet {
                        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                        if t.len() >= 50 {
                            t.remove(0);
                        }
                        t.push(strip_ansi(line));
                    } else {
                        eprintln!("{line}");
                    }
                    return;
                }
            };
            let _ = tx.send((dir, started.elapsed(), line.to_owned()));
        });
    let checker = std::thread::spawn(move || check_lines(rx, observer));

    let outcome = Arc::new(Mutex::new(report::Outcome::default()));
    let result = drive(agent, &options, outcome.clone(), idles).await;
    // The connection is closed and the agent reaped: the channel ends.
    let (findings, turns) = checker.join().unwrap_or_default();
    let outcome = std::mem::take(&mut *outcome.lock().unwrap_or_else(|p| p.into_inner()));
    let mut report = ProbeReport::build(outcome, findings, turns, &options);
    if let Err(e) = result {
        // How the agent ended, as its guard tells it (once the guard has
        // ended too).
        let mut ended = None;
        if options.agent_guard.is_some() {
            use crate::tap::guard::{GuardReport, read_report};
            // While the guard runs, the agent's end is on its way (a
            // guard's zombie also looks alive: bounded).
            let waited = Instant::now();
            loop {
                match read_report(&report_path) {
                    GuardReport::Signal(how) => ended = Some(how),
                    GuardReport::Running if waited.elapsed() < Duration::from_secs(2) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    _ => {}
                }
                break;
            }
        }
        let how = ended.map_or(String::new(), |h| format!(" (the agent was ended by {h})"));
        report.push_finding(
            Severity::Error,
            "probe-connection",
            "",
            format!("connection failed: {e}{how}"),
        );
    }
    let _ = std::fs::remove_file(&report_path);
    let tail = stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
    report.stderr_tail = tail.clone();
    report.command = argv;
    Ok(report)
}

fn check_lines(
    rx: mpsc::Receiver<(Direction, Duration, String)>,
    mut observer: Option<OnWire>,
) -> (Vec<Finding>, Vec<report::TurnTraffic>) {
    // One follower: the checker's rules and the turn tracking observe
    // the same classified messages.
    let mut connection = Connection::new();
    let mut checker = Checker::new();
    let mut all = Vec::new();
    let mut turns = Turns::default();
    for (direction, elapsed, raw) in rx {
        let message = serde_json::from_str::<Value>(&raw).ok();
        match &message {
            Some(m) => connection.follow(direction, m, &mut [&mut turns, &mut checker]),
            None => connection.unreadable(
                "not-json",
                "a line on the ACP stdio stream is not a JSON value",
                &mut [&mut checker],
            ),
        }
        let findings = checker.take_findings();
        if let Some(obs) = observer.as_mut() {
            obs(&WireEvent {
                direction,
                elapsed,
                message,
                raw,
                findings: findings.clone(),
            });
        }
        all.extend(findings);
    }
    // A turn still open at the end (its prompt timed out) counts too.
    turns.close();
    (all, turns.done)
}

/// Collects what the agent sends during each `session/prompt` turn: the
/// updates of the prompted session only (a child session's text is its
/// own, not the parent's answer).
#[derive(Default)]
struct Turns {
    /// The open turn's request id, session and traffic.
    /// (The request id, its session, its traffic, and whether its v2
    /// receipt came: its turn ends at the first idle after it.)
    open: Option<(Value, Option<String>, report::TurnTraffic, bool)>,
    done: Vec<report::TurnTraffic>,
}

impl acp_extension_core::connection::Observer for Turns {
    fn message(&mut self, connection: &Connection, m: &Message<'_>) {
        match (m.direction(), m) {
            (Direction::ClientToAgent, Message::Call(c)) => {
                if c.method == "session/prompt"
                    && let Some(id) = c.id
                {
                    self.close();
                    let session = m.session_id().map(str::to_owned);
                    self.open = Some((id.clone(), session, report::TurnTraffic::default(), false));
                }
            }
            (Direction::AgentToClient, m) => {
                let Some((id, session, t, receipted)) = &mut self.open else {
                    return;
                };
                let of_another_session = session
                    .as_deref()
                    .is_some_and(|s| m.session_id() != Some(s));
                // ACP v2: the answer is a receipt; the turn ends at the
                // session's idle `state_update`.
                let v2 = connection.protocol_version().is_some_and(|v| v >= 2);
                match m {
                    Message::Answer(a) if a.id == Some(&*id) => {
                        if v2 && a.result().is_some() {
                            *receipted = true;
                        } else {
                            self.close()
                        }
                    }
                    Message::Call(c) if c.method == "session/update" && of_another_session => {
                        t.child_updates += 1;
                    }
                    Message::Call(c) if c.method == "session/update" => {
                        let update = c.params.tree().get("update");
                        let kind = update
                            .and_then(|u| u.get("sessionUpdate"))
                            .and_then(Value::as_str)
                            .unwrap_or("(no sessionUpdate)");
                        *t.updates.entry(kind.to_owned()).or_default() += 1;
                        if kind == "agent_message_chunk"
                            && let Some(u) = update
                            && let Some(text) = u.pointer("/content/text").and_then(Value::as_str)
                        {
                            t.text.push_str(text);
                            let phase = u
                                .get("_meta")
                                .and_then(Value::as_object)
                                .and_then(|meta| namespace::read_key(meta, "messagePhase"))
                                .and_then(|(_, p)| p.as_str());
                            if phase == Some("final_answer") {
                                t.final_text.push_str(text);
                            }
                        }
                        if v2
                            && *receipted
                            && kind == "state_update"
                            && update.and_then(|u| u.get("state")).and_then(Value::as_str)
                                == Some("idle")
                        {
                            self.close();
                        }
                    }
                    Message::Call(c) if !c.is_request() && c.method.starts_with('_') => {
                        *t.extension_notifications
                            .entry(c.method.to_owned())
                            .or_default() += 1;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

impl Turns {
    fn close(&mut self) {
        if let Some((_, _, t, _)) = self.open.take() {
            self.done.push(t);
        }
    }
}

/// Sends one request with the timeout, recording a timeout as an error.
async fn request(
    cx: &AgentCx,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Result<Value, RequestError> {
    let msg = UntypedMessage::new(method, params).map_err(|e| RequestError::Rpc {
        message: e.to_string(),
        code: None,
        data: None,
    })?;
    match tokio::time::timeout(timeout, cx.send_request(msg).block_task()).await {
        Err(_) => Err(RequestError::Timeout {
            method: method.to_owned(),
            after: timeout,
        }),
        Ok(Err(e)) => Err(RequestError::Rpc {
            message: e.message.clone(),
            code: Some(i32::from(e.code)),
            data: e.data.clone(),
        }),
        Ok(Ok(v)) => Ok(v),
    }
}

/// A request that did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RequestError {
    /// No answer to `method` within `after`.
    Timeout { method: String, after: Duration },
    /// An error answer (or a request that could not be sent), with the
    /// agent's `error.data` kept: it often holds the real reason.
    Rpc {
        message: String,
        code: Option<i32>,
        data: Option<Value>,
    },
}

impl RequestError {
    fn code(&self) -> Option<i32> {
        match self {
            Self::Rpc { code, .. } => *code,
            Self::Timeout { .. } => None,
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout { method, after } => write!(
                f,
                "timed out: no answer to {method} within {} s (--timeout SECONDS raises the limit)",
                seconds(*after)
            ),
            Self::Rpc {
                message,
                code,
                data,
            } => {
                if let Some(code) = code {
                    write!(f, "error {code}: ")?;
                }
                f.write_str(message)?;
                match data {
                    None | Some(Value::Null) => Ok(()),
                    Some(data) => write!(f, " (data: {})", shorten(&data.to_string(), 300)),
                }
            }
        }
    }
}

/// A line without its terminal escape sequences (colours, cursor moves).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: parameters, then one final byte in @..~.
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {
                chars.next();
            }
        }
    }
    out
}

/// `NAME=value`, a shell-style environment assignment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut c = name.chars();
        c.next()
            .is_some_and(|f| f == '_' || f.is_ascii_alphabetic())
            && c.all(|x| x == '_' || x.is_ascii_alphanumeric())
    })
}

/// Why `program` cannot be started, when it is plainly not there: a path
/// that does not exist, or a bare name found on no `PATH` entry.
fn missing_program(program: &str) -> Option<String> {
    let path = std::path::Path::new(program);
    if program.contains('/') {
        return (!path.exists()).then(|| format!("{program} does not exist"));
    }
    let dirs = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&dirs).any(|d| d.join(program).is_file());
    (!found).then(|| format!("{program:?} is not found on PATH"))
}

/// `d` in seconds, as people write it: `30`, `0.3`.
fn seconds(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// The connection to the agent, as the probe's steps see it.
/// The probe's connection: raw JSON-RPC with no version guard (the SDK's
/// `Client.v1()` would rewrite a v2 `initialize` to v1); the probe speaks
/// the version the agent answers, from its JSON.
type AgentCx = agent_client_protocol::ConnectionTo<agent_client_protocol::Agent>;

/// Where the probe's steps write what happened (shared with the report).
#[derive(Clone)]
struct Recorder(Arc<Mutex<report::Outcome>>);

impl Recorder {
    fn record(&self, f: impl FnOnce(&mut report::Outcome)) {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Records an error that stops the probe.
    fn stop(&self, msg: String) {
        self.record(|o| {
            o.errors.push(msg.clone());
            o.stopped = Some(msg);
        });
    }
}

/// What the steps after `initialize` need of it.
struct Initialized {
    /// The agent's `initialize` result.
    result: Value,
    negotiated: Negotiated,
    /// The namespace the probe (the client) writes in: the one the agent reads.
    ns: Namespace,
    /// The probe plays a plain client: it writes nothing of the extensions.
    plain: bool,
    /// The agent answered ACP v2: a prompt's answer is a receipt, its turn
    /// ended by the `idle` `state_update`.
    v2: bool,
}

/// The `idle` `state_update`s of the agent's, in the order the lines
/// passed (ACP v2 ends a turn with one), and where each prompt receipt
/// (`{messageId}`) fell among them: a prompt's turn ends at its session's
/// first idle after its receipt (an idle before it ends other work, such
/// as a turn the agent started itself).
#[derive(Debug, Default)]
struct Idles(Mutex<IdlesSeen>);

#[derive(Debug, Default)]
struct IdlesSeen {
    /// Each idle's session and `stopReason`, in order.
    idles: Vec<(String, Option<String>)>,
    /// How many idles had passed when the receipt with this `messageId`
    /// did.
    receipts: std::collections::HashMap<String, usize>,
}

impl Idles {
    /// Notes `line` when it is an idle `state_update` or a receipt.
    fn observe(&self, line: &str) {
        if !line.contains("state_update") && !line.contains("messageId") {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = v.get("result")
            && r.get("stopReason").is_none()
            && let Some(id) = r.get("messageId").and_then(Value::as_str)
        {
            let at = seen.idles.len();
            seen.receipts.insert(id.to_owned(), at);
            return;
        }
        let sid = v.pointer("/params/sessionId").and_then(Value::as_str);
        let update = v.pointer("/params/update");
        let is = |key: &str, want: &str| {
            update.and_then(|u| u.get(key)).and_then(Value::as_str) == Some(want)
        };
        if let Some(sid) = sid
            && is("sessionUpdate", "state_update")
            && is("state", "idle")
        {
            let stop = update
                .and_then(|u| u.get("stopReason"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            seen.idles.push((sid.to_owned(), stop));
        }
    }

    /// How many idles have passed.
    fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).idles.len()
    }

    /// Where the receipt with `message_id` fell, when it was seen.
    fn receipt(&self, message_id: &str) -> Option<usize> {
        let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.receipts.get(message_id).copied()
    }

    /// Waits for the first idle of `sid` from the `from`-th on: its stop
    /// reason, or `None` at the deadline.
    async fn after(&self, sid: &str, from: usize, timeout: Duration) -> Option<Option<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((_, stop)) = seen.idles.iter().skip(from).find(|(s, _)| s == sid) {
                    return Some(stop.clone());
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn drive(
    agent: AcpAgent,
    options: &ProbeOptions,
    outcome: Arc<Mutex<report::Outcome>>,
    idles: Arc<Idles>,
) -> anyhow::Result<()> {
    let options = options.clone();
    let rec = Recorder(outcome);
    let dir = tempdir()?;
    let root = dir.path.clone();
    agent_client_protocol::Builder::new(Client)
        .name("acp-ext probe")
        .on_receive_request(
            async move |req: UntypedMessage, responder, _cx| match auto_answer(
                &req.method,
                &req.params,
                &root,
            ) {
                Some(Ok(v)) => responder.respond(v),
                Some(Err(e)) => responder.respond_with_error(e),
                None => {
                    responder.respond_with_error(agent_client_protocol::Error::method_not_found())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx| {
            let Some(init) = initialize(&cx, &options, &rec).await else {
                return Ok(());
            };
            if !options.session && options.prompts.is_empty() {
                return Ok(());
            }
            let Some(session_id) = new_session(&cx, &init, &dir.path, options.timeout, &rec).await
            else {
                return Ok(());
            };
            let last_turn = prompts(&cx, &init, &session_id, &options, &rec, &idles).await;
            queries(
                &cx,
                &init,
                &session_id,
                last_turn.as_deref(),
                &dir.path,
                options.timeout,
                &rec,
            )
            .await;
            Ok(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// `initialize` with the client capabilities of `options`, asking for the
/// version `options.protocol` names; `None` (recorded) when it fails. A
/// refusal of the version asked (`-32022`, with the versions the agent
/// supports) is named as such; under [`ProtocolChoice::Auto`] the probe
/// then asks again for a version the agent supports.
async fn initialize(cx: &AgentCx, options: &ProbeOptions, rec: &Recorder) -> Option<Initialized> {
    let client_caps = client_capabilities(options.namespace, options.client);
    let mut asked = match options.protocol {
        ProtocolChoice::V1 => 1,
        ProtocolChoice::V2 | ProtocolChoice::Auto => 2,
    };
    let mut retried = false;
    let result = loop {
        let params = if asked >= 2 {
            json!({
                "protocolVersion": asked,
                "capabilities": client_caps,
                "info": {"name": "acp-ext-probe", "title": "acp-ext probe", "version": env!("CARGO_PKG_VERSION")},
            })
        } else {
            json!({
                "protocolVersion": asked,
                "clientCapabilities": client_caps,
                "clientInfo": {"name": "acp-ext-probe", "title": "acp-ext probe", "version": env!("CARGO_PKG_VERSION")},
            })
        };
        match request(cx, "initialize", params, options.timeout).await {
            Ok(v) => break v,
            Err(e) => {
                if let Some(supported) = version_refused(&e) {
                    let fallback = supported.iter().copied().filter(|v| *v != asked).max();
                    // `auto` asks once more, for a version the agent named.
                    if let (ProtocolChoice::Auto, Some(v), false) =
                        (options.protocol, fallback, retried)
                    {
                        asked = v;
                        retried = true;
                        continue;
                    }
                    let list = match supported.as_slice() {
                        [] => "named no version it supports".to_owned(),
                        some => format!(
                            "it supports {}",
                            some.iter()
                                .map(|v| format!("v{v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    let msg = format!(
                        "the agent refused ACP v{asked} (-32022); {list} (--protocol selects the version asked)"
                    );
                    rec.record(|o| {
                        o.protocol_asked = Some(asked);
                        o.protocol = Some((Severity::Error, "protocol-refused", msg.clone()));
                        o.stopped = Some(msg);
                    });
                } else {
                    rec.stop(format!("initialize failed: {e}"));
                }
                return None;
            }
        }
    };
    let v2 = result
        .get("protocolVersion")
        .and_then(Value::as_u64)
        .is_some_and(|v| v >= 2);
    rec.record(|o| o.protocol_asked = Some(asked));
    if options.protocol == ProtocolChoice::V2 && !v2 {
        let msg = format!(
            "asked for ACP v2, the agent answered protocolVersion {}: it does not speak v2",
            result.get("protocolVersion").unwrap_or(&Value::Null)
        );
        rec.record(|o| o.protocol = Some((Severity::Warning, "protocol-version", msg)));
    }
    let agent_caps = acp_extension_core::negotiation::initialize_capabilities(&result, Side::Agent)
        .cloned()
        .unwrap_or(Value::Null);
    let negotiated = negotiate(&agent_caps, &client_caps);
    let advertisement = Advertisement::read(&agent_caps, Side::Agent);
    let ns = negotiated.client_writes;
    rec.record(|o| {
        o.initialize = Some(result.clone());
        o.advertisement = Some(advertisement);
    });
    Some(Initialized {
        result,
        negotiated,
        ns,
        plain: options.client == ClientDialect::Plain,
        v2,
    })
}

/// The versions an agent supports, when `e` is its refusal of the version
/// asked (ACP v2's `-32022`, `data: {requested, supported}`).
fn version_refused(e: &RequestError) -> Option<Vec<u64>> {
    let RequestError::Rpc {
        code: Some(-32022),
        data,
        ..
    } = e
    else {
        return None;
    };
    let supported = data.as_ref().and_then(|d| d.get("supported"));
    Some(match supported {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_u64).collect(),
        Some(v) => v.as_u64().into_iter().collect(),
        None => Vec::new(),
    })
}

/// `session/new` in `dir`, with the contract's `_meta` the agent takes;
/// the session id, or `None` (recorded: a login needed, an error).
async fn new_session(
    cx: &AgentCx,
    init: &Initialized,
    dir: &Path,
    timeout: Duration,
    rec: &Recorder,
) -> Option<String> {
    let (negotiated, ns) = (&init.negotiated, init.ns);
    let mut params = json!({"cwd": dir.to_string_lossy(), "mcpServers": []});
    let mut meta = serde_json::Map::new();
    // A plain client writes no `_meta.<ns>` (the agent's advertisement
    // alone makes a feature look active).
    let extensions = !init.plain;
    if extensions && negotiated.is_active(Feature::WorktreeProject) {
        let project = json!({"version": 1, "originProjectPath": dir.to_string_lossy()});
        namespace::write_key(&mut meta, ns, "worktreeProject", project);
    }
    if extensions && negotiated.is_active(Feature::SessionConfig) {
        namespace::write_key(
            &mut meta,
            ns,
            "sessionConfig",
            json!({"version": 1, "configOptionValues": {}}),
        );
    }
    if !meta.is_empty() {
        params["_meta"] = Value::Object(meta);
    }
    match request(cx, "session/new", params, timeout).await {
        Ok(v) => match v.get("sessionId").and_then(Value::as_str) {
            Some(id) => {
                rec.record(|o| o.session_id = Some(id.to_owned()));
                Some(id.to_owned())
            }
            None => {
                rec.stop("session/new returned no sessionId".into());
                None
            }
        },
        Err(e) => {
            let auth = e.code() == Some(-32000);
            let offered = auth_methods(&init.result);
            let msg = if auth {
                format!("session/new needs authentication ({e}); auth methods offered: {offered}")
            } else {
                format!("session/new failed: {e}; auth methods offered: {offered}")
            };
            rec.record(|o| {
                if auth {
                    o.auth_required = Some(msg.clone());
                } else {
                    o.errors.push(msg.clone());
                }
                o.stopped = Some(msg);
            });
            None
        }
    }
}

/// The agent's login methods, by id and name (`none` when it offers none):
/// a failed `session/new` often means one is needed first.
fn auth_methods(init: &Value) -> String {
    let methods: Vec<String> = init
        .get("authMethods")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| {
                    let id = m.get("id").and_then(Value::as_str)?;
                    Some(match m.get("name").and_then(Value::as_str) {
                        Some(n) if n != id => format!("{id} ({n})"),
                        _ => id.to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if methods.is_empty() {
        "none".to_owned()
    } else {
        methods.join(", ")
    }
}

/// Sends each prompt in turn (steering a running turn when the agent takes
/// steers by request); the last turn id the agent reported. A prompt that
/// times out stops the rest.
async fn prompts(
    cx: &AgentCx,
    init: &Initialized,
    session_id: &str,
    options: &ProbeOptions,
    rec: &Recorder,
    idles: &Idles,
) -> Option<String> {
    let steer_by_request = init
        .negotiated
        .steering()
        .is_some_and(|st| st.transport == SteeringTransport::Request);
    // A standard client steers on `_session/steering`, when the agent
    // advertises it, asking for `promptRequired` as a client should.
    let standard_steering = options.steer
        && options.client == ClientDialect::Standard
        && acp_extension_core::standard::advertises_steering(&init.result);
    let steer_by_request = options.steer && steer_by_request;
    let mut last_turn: Option<String> = None;
    for (i, text) in options.prompts.iter().enumerate() {
        let content = json!([{"type": "text", "text": "Also keep the public API stable."}]);
        let steer = if standard_steering {
            Some((
                acp_extension_core::standard::STEERING_METHOD.to_owned(),
                json!({"sessionId": session_id, "prompt": content,
                    "_meta": {"steering": {"idleBehavior": "promptRequired"}}}),
            ))
        } else if steer_by_request && options.client == ClientDialect::Core {
            Some((
                ContractMethod::SessionSteer.method(init.ns).to_owned(),
                json!({"sessionId": session_id, "steerId": format!("probe-steer-{}", i + 1),
                    "prompt": content}),
            ))
        } else {
            None
        };
        let end = init.v2.then_some(idles);
        let (r, took, steered) = prompt(cx, session_id, text, steer, end, options.timeout).await;
        if let Some(turn) = r
            .as_ref()
            .ok()
            .and_then(|v| v.get("_meta"))
            .and_then(Value::as_object)
            .and_then(|m| namespace::read_key(m, "turnId"))
            .and_then(|(_, t)| t.as_str())
        {
            last_turn = Some(turn.to_owned());
        }
        let result = PromptResult {
            prompt: text.clone(),
            stop_reason: r
                .as_ref()
                .ok()
                .and_then(|v| v.get("stopReason"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            error: r.as_ref().err().map(ToString::to_string),
            millis: took.as_millis() as u64,
            ..PromptResult::default()
        };
        rec.record(|o| {
            o.prompts.push(result);
            o.queries.extend(steered);
        });
        if let Err(e @ RequestError::Timeout { .. }) = &r {
            let why = format!("the prompt before it {e}");
            rec.record(|o| o.stopped = Some(why));
            break;
        }
    }
    last_turn
}

/// One `session/prompt`: its answer, the turn's time (taken when the answer
/// arrives), and the steer sent into it. On a v2 connection (`v2_end`,
/// the idles seen) the answer is a receipt: the turn ends at the session's
/// first `idle` `state_update` after it, whose stop reason is added to the
/// receipt. With `steer` (the steer request's
/// method and params), one steer goes 100 ms into a turn that is still running;
/// a turn that ends sooner is not steered, and its time is its own. The
/// checker judges the steer's timing (`steer-answered-after-turn`,
/// `steer-not-applied`).
async fn prompt(
    cx: &AgentCx,
    session_id: &str,
    text: &str,
    steer: Option<(String, Value)>,
    v2_end: Option<&Idles>,
    timeout: Duration,
) -> (Result<Value, RequestError>, Duration, Option<QueryResult>) {
    let started = Instant::now();
    let sent_at = v2_end.map_or(0, Idles::count);
    let prompt = async {
        let mut r = request(
            cx,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
            timeout,
        )
        .await;
        if let (Some(idles), Ok(receipt)) = (v2_end, &mut r)
            && receipt.get("stopReason").is_none()
        {
            // From the receipt on (an older draft's `{}` receipt: from
            // the prompt on).
            let from = receipt
                .get("messageId")
                .and_then(Value::as_str)
                .and_then(|id| idles.receipt(id))
                .unwrap_or(sent_at);
            let left = timeout.saturating_sub(started.elapsed());
            match idles.after(session_id, from, left).await {
                Some(stop) => {
                    if let (Some(o), Some(stop)) = (receipt.as_object_mut(), stop) {
                        o.insert("stopReason".into(), Value::String(stop));
                    }
                }
                None => {
                    r = Err(RequestError::Timeout {
                        method: "session/prompt (its turn's idle state_update)".to_owned(),
                        after: timeout,
                    })
                }
            }
        }
        (r, started.elapsed())
    };
    tokio::pin!(prompt);
    let Some((method, params)) = steer else {
        let (r, took) = prompt.await;
        return (r, took, None);
    };
    tokio::select! {
        (r, took) = &mut prompt => (r, took, None),
        () = tokio::time::sleep(Duration::from_millis(100)) => {
            let steer = request(cx, &method, params, timeout);
            let ((r, took), s) = tokio::join!(&mut prompt, steer);
            let outcome = s
                .as_ref()
                .ok()
                .and_then(|v| v.get("outcome"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let steered = QueryResult {
                method,
                ok: s.is_ok(),
                error: s.err().map(|e| e.to_string()),
                outcome,
                skipped: None,
            };
            (r, took, Some(steered))
        }
    }
}

/// The queries the agent advertised: `session/fork` at the last turn,
/// rate limits, the subagent list, the session history; none, each
/// reported as skipped, for a plain client.
async fn queries(
    cx: &AgentCx,
    init: &Initialized,
    session_id: &str,
    last_turn: Option<&str>,
    dir: &Path,
    timeout: Duration,
    rec: &Recorder,
) {
    let (negotiated, ns) = (&init.negotiated, init.ns);
    let mut queries = Vec::new();
    if negotiated.rate_limits().is_some_and(|r| r.query.is_some()) {
        queries.push((
            ContractMethod::RateLimitsGet,
            json!({"sessionId": session_id}),
        ));
    }
    if negotiated.subagents().is_some_and(|s| s.list.is_some()) {
        queries.push((
            ContractMethod::SubagentsList,
            json!({"sessionId": session_id}),
        ));
    }
    if negotiated.is_active(Feature::SessionHistory) {
        queries.push((
            ContractMethod::SessionHistoryRead,
            json!({"sessionId": session_id}),
        ));
    }
    // A plain client sends nothing of the extensions: each query the agent
    // advertised is reported as skipped, and why.
    if init.plain {
        let forks = negotiated.is_active(Feature::ForkAtTurn) && last_turn.is_some();
        let skipped = queries
            .iter()
            .map(|(method, _)| method.method(ns).to_owned())
            .chain(forks.then(|| "session/fork (_meta.forkAtTurn)".to_owned()));
        for method in skipped {
            let q = QueryResult {
                method,
                ok: true,
                error: None,
                outcome: None,
                skipped: Some("a plain client sends no extension method".to_owned()),
            };
            rec.record(|o| o.queries.push(q));
        }
        return;
    }
    if let (true, Some(turn)) = (negotiated.is_active(Feature::ForkAtTurn), last_turn) {
        let mut meta = serde_json::Map::new();
        namespace::write_key(
            &mut meta,
            ns,
            "forkAtTurn",
            json!({"version": 1, "turnId": turn}),
        );
        let params = json!({
            "sessionId": session_id,
            "cwd": dir.to_string_lossy(),
            "mcpServers": [],
            "_meta": meta,
        });
        let r = request(cx, "session/fork", params, timeout).await;
        let q = QueryResult {
            method: "session/fork".into(),
            ok: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
            outcome: None,
            skipped: None,
        };
        rec.record(|o| o.queries.push(q));
    }
    for (method, params) in queries {
        let method = method.method(ns).to_owned();
        let r = request(cx, &method, params, timeout).await;
        let q = QueryResult {
            method,
            ok: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
            outcome: None,
            skipped: None,
        };
        rec.record(|o| o.queries.push(q));
    }
}

/// Answers the agent's requests the way a cooperative user would:
/// permissions get the first "allow" option, elicitations are accepted
/// with a plausible value for every property, and files are read and
/// written inside `root` (the session's directory) only.
fn auto_answer(
    method: &str,
    params: &Value,
    root: &std::path::Path,
) -> Option<Result<Value, agent_client_protocol::Error>> {
    if let Some(answer) = fs_answer(method, params, root) {
        return Some(answer);
    }
    Some(Ok(match method {
        "session/request_permission" => {
            let options = params.get("options").and_then(Value::as_array)?;
            let pick = options
                .iter()
                .find(|o| {
                    o.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k.starts_with("allow"))
                })
                .or_else(|| options.first())?;
            json!({"outcome": {"outcome": "selected", "optionId": pick.get("optionId")?}})
        }
        "elicitation/create" => {
            let mut content = serde_json::Map::new();
            if let Some(props) = params
                .pointer("/requestedSchema/properties")
                .and_then(Value::as_object)
            {
                for (key, schema) in props {
                    content.insert(key.clone(), sample_value(schema));
                }
            }
            json!({"action": "accept", "content": content})
        }
        _ => return None,
    }))
}

/// `fs/read_text_file` and `fs/write_text_file`, confined to `root`.
fn fs_answer(
    method: &str,
    params: &Value,
    root: &std::path::Path,
) -> Option<Result<Value, agent_client_protocol::Error>> {
    use agent_client_protocol::Error;
    let write = match method {
        "fs/read_text_file" => false,
        "fs/write_text_file" => true,
        _ => return None,
    };
    let path = match params.get("path").and_then(Value::as_str) {
        Some(p) if std::path::Path::new(p).is_absolute() => std::path::PathBuf::from(p),
        _ => {
            return Some(Err(
                Error::invalid_params().data("path: must be an absolute path")
            ));
        }
    };
    // Inside the session's directory, after resolving what exists of it.
    let parent = path.parent().and_then(|p| p.canonicalize().ok());
    let inside = parent.is_some_and(|p| root.canonicalize().is_ok_and(|r| p.starts_with(r)));
    if !inside || path.file_name().is_none() {
        return Some(Err(Error::invalid_params().data(format!(
            "path: the probe serves files inside its session directory {} only",
            root.display()
        ))));
    }
    if write {
        let Some(content) = params.get("content").and_then(Value::as_str) else {
            return Some(Err(
                Error::invalid_params().data("content: must be a string")
            ));
        };
        return Some(
            std::fs::write(&path, content)
                .map(|()| json!({}))
                .map_err(|e| Error::internal_error().data(e.to_string())),
        );
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(Err(
                Error::new(-32002, "Resource not found").data(path.display().to_string())
            ));
        }
        Err(e) => return Some(Err(Error::internal_error().data(e.to_string()))),
    };
    // `line` (1-based) and `limit` select lines, as ACP defines them.
    let line = params
        .get("line")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .map(|l| l as usize);
    let content = if line == 1 && limit.is_none() {
        text
    } else {
        let lines = text.split_inclusive('\n').skip(line - 1);
        match limit {
            Some(n) => lines.take(n).collect(),
            None => lines.collect(),
        }
    };
    Some(Ok(json!({"content": content})))
}

fn sample_value(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(c) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|o| o.get("const"))
        {
            return c.clone();
        }
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(true),
        Some("number") | Some("integer") => json!(1),
        Some("array") => {
            let item = schema
                .get("items")
                .map(sample_value)
                .unwrap_or(json!("probe"));
            json!([item])
        }
        _ => json!("probe answer"),
    }
}

/// A temporary directory removed on drop.
struct TempDir {
    path: std::path::PathBuf,
}

fn tempdir() -> std::io::Result<TempDir> {
    let path = std::env::temp_dir().join(format!(
        "acp-ext-probe-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    std::fs::create_dir_all(&path)?;
    Ok(TempDir { path })
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_served_inside_the_session_directory_only() {
        let dir = tempdir().unwrap();
        let root = dir.path.clone();
        let file = root.join("notes.txt");
        let path = file.to_string_lossy().into_owned();
        let write = json!({"sessionId": "s", "path": path, "content": "one\ntwo\nthree\n"});
        assert_eq!(
            fs_answer("fs/write_text_file", &write, &root)
                .unwrap()
                .unwrap(),
            json!({})
        );
        let read = json!({"sessionId": "s", "path": path, "line": 2, "limit": 1});
        assert_eq!(
            fs_answer("fs/read_text_file", &read, &root)
                .unwrap()
                .unwrap(),
            json!({"content": "two\n"})
        );
        let outside = json!({"sessionId": "s", "path": "/etc/passwd"});
        let e = fs_answer("fs/read_text_file", &outside, &root)
            .unwrap()
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32602);
        let escape = root.join("..").join("escaped.txt");
        let up = json!({"sessionId": "s", "path": escape, "content": "x"});
        assert!(
            fs_answer("fs/write_text_file", &up, &root)
                .unwrap()
                .is_err()
        );
        assert!(!escape.exists());
        let missing = json!({"sessionId": "s", "path": root.join("none.txt")});
        let e = fs_answer("fs/read_text_file", &missing, &root)
            .unwrap()
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32002);
        assert!(fs_answer("session/request_permission", &json!({}), &root).is_none());
    }
}

#[cfg(test)]
mod stderr_tests {
    use super::strip_ansi;

    #[test]
    fn terminal_escapes_leave_the_stderr_tail() {
        assert_eq!(strip_ansi("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}plain"), "plain");
        assert_eq!(strip_ansi("no escapes"), "no escapes");
    }
}
