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
mod steps;
use steps::{AgentCx, Idles, drive};

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
    // The session's folder and the guard's report, removed with `scratch`
    // when the probe ends or is dropped.
    let scratch = steps::tempdir()?;
    let report_path = scratch.guard_report();
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
    let result = drive(agent, &options, outcome.clone(), idles, &scratch.session()).await;
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

#[cfg(test)]
mod tests {
    use super::steps::{fs_answer, tempdir};
    use super::*;

    #[test]
    fn files_are_served_inside_the_session_directory_only() {
        let dir = tempdir().unwrap();
        let root = dir.session();
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
