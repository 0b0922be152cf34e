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

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use acp_extension_core::capabilities::{
    ClientExtensionCapabilities, ElicitationCapability, Feature, SteeringTransport,
    VersionOneCapability,
};
use acp_extension_core::namespace::{self, Namespace, NamespaceSet};
use acp_extension_core::negotiation::{Advertisement, Side, negotiate};
use acp_extension_core::wire::True;
use agent_client_protocol::{AcpAgent, Client, LineDirection, UntypedMessage};
use serde_json::{Value, json};

use crate::check::{Checker, Direction, Finding, Severity};

pub use report::{ExtensionRow, PromptResult, QueryResult, Report, ReportFinding};

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
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            namespace: NamespaceSet::Both,
            session: false,
            prompts: Vec::new(),
            timeout: Duration::from_secs(30),
            quiet: false,
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
pub type Observer = Box<dyn FnMut(&WireEvent) + Send>;

/// The client's extension capabilities: every client feature.
pub fn client_extensions() -> ClientExtensionCapabilities {
    ClientExtensionCapabilities::new()
        .subagent_events(VersionOneCapability::new())
        .elicitation(ElicitationCapability::new().answer_notes(True))
        .mcp_apps(VersionOneCapability::new())
}

fn client_capabilities(ns: NamespaceSet) -> Value {
    json!({
        "fs": {"readTextFile": false, "writeTextFile": false},
        "terminal": false,
        "elicitation": {"form": {}},
        "_meta": client_extensions().to_meta(ns),
    })
}

/// Probes the agent started by `command` (program and arguments).
pub async fn run<I, S>(command: I, options: ProbeOptions) -> anyhow::Result<Report>
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
pub async fn run_interruptible<I, S>(command: I, options: ProbeOptions) -> anyhow::Result<Report>
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
    observer: Option<Observer>,
) -> anyhow::Result<Report>
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    let argv: Vec<String> = command.into_iter().map(|s| s.to_string()).collect();
    anyhow::ensure!(!argv.is_empty(), "no agent command given");
    let started = Instant::now();

    // Every line on the wire goes to the checker thread, in order.
    let (tx, rx) = mpsc::channel::<(Direction, Duration, String)>();
    let stderr_tail: Arc<Mutex<Vec<String>>> = Arc::default();
    let tail = stderr_tail.clone();
    let quiet = options.quiet;
    let agent = AcpAgent::from_args(&argv)
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", argv.join(" ")))?
        .with_debug(move |line, direction| {
            let dir = match direction {
                LineDirection::Stdin => Direction::ClientToAgent,
                LineDirection::Stdout => Direction::AgentToClient,
                LineDirection::Stderr => {
                    if quiet {
                        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                        if t.len() >= 50 {
                            t.remove(0);
                        }
                        t.push(line.to_owned());
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
    let result = drive(agent, &options, outcome.clone()).await;
    // The connection is closed and the agent reaped: the channel ends.
    let findings = checker.join().unwrap_or_default();
    let outcome = std::mem::take(&mut *outcome.lock().unwrap_or_else(|p| p.into_inner()));
    let mut report = Report::build(outcome, findings, &options);
    if let Err(e) = result {
        report.push_finding(
            Severity::Error,
            "probe-connection",
            "",
            format!("connection failed: {e}"),
        );
    }
    let tail = stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
    report.stderr_tail = tail.clone();
    report.command = argv;
    Ok(report)
}

fn check_lines(
    rx: mpsc::Receiver<(Direction, Duration, String)>,
    mut observer: Option<Observer>,
) -> Vec<Finding> {
    let mut checker = Checker::new();
    let mut all = Vec::new();
    for (direction, elapsed, raw) in rx {
        let message = serde_json::from_str::<Value>(&raw).ok();
        let findings = match &message {
            Some(m) => checker.message(direction, m),
            None => vec![Finding::new(
                "not-json",
                Severity::Error,
                "",
                "a line on the ACP stdio stream is not a JSON value",
            )],
        };
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
    all
}

/// Sends one request with the timeout, recording a timeout as an error.
async fn request(
    cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Result<Value, RequestError> {
    let msg =
        UntypedMessage::new(method, params).map_err(|e| RequestError::Rpc(e.to_string(), None))?;
    match tokio::time::timeout(timeout, cx.send_request(msg).block_task()).await {
        Err(_) => Err(RequestError::Timeout),
        Ok(Err(e)) => Err(RequestError::Rpc(
            e.message.clone(),
            Some(i32::from(e.code)),
        )),
        Ok(Ok(v)) => Ok(v),
    }
}

/// A request that did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RequestError {
    Timeout,
    Rpc(String, Option<i32>),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Timeout => f.write_str("timed out"),
            RequestError::Rpc(m, Some(code)) => write!(f, "error {code}: {m}"),
            RequestError::Rpc(m, None) => f.write_str(m),
        }
    }
}

async fn drive(
    agent: AcpAgent,
    options: &ProbeOptions,
    outcome: Arc<Mutex<report::Outcome>>,
) -> anyhow::Result<()> {
    let options = options.clone();
    let record = move |f: &dyn Fn(&mut report::Outcome)| {
        let mut o = outcome.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut o);
    };
    let record = Arc::new(record);
    let rec = record.clone();
    Client
        .v1()
        .name("acp-ext probe")
        .on_receive_request(
            async move |req: UntypedMessage, responder, _cx| {
                let answer = auto_answer(&req.method, &req.params);
                match answer {
                    Some(v) => responder.respond(v),
                    None => responder.respond_with_error(agent_client_protocol::Error::method_not_found()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx| {
            let timeout = options.timeout;
            let client_caps = client_capabilities(options.namespace);
            let init = request(
                &cx,
                "initialize",
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": client_caps,
                    "clientInfo": {"name": "acp-ext-probe", "title": "acp-ext probe", "version": env!("CARGO_PKG_VERSION")},
                }),
                timeout,
            )
            .await;
            let init = match init {
                Ok(v) => v,
                Err(e) => {
                    let msg = format!("initialize failed: {e}");
                    rec(&|o| o.errors.push(msg.clone()));
                    return Ok(());
                }
            };
            let agent_caps = init.get("agentCapabilities").cloned().unwrap_or(Value::Null);
            let negotiated = negotiate(&agent_caps, &client_caps);
            let advertisement = Advertisement::read(&agent_caps, Side::Agent);
            let ns = [Feature::Usage, Feature::RateLimits, Feature::Subagents, Feature::SessionHistory]
                .into_iter()
                .find_map(|f| negotiated.namespace_of(f))
                .unwrap_or(Namespace::Lody);
            {
                let init = init.clone();
                rec(&|o| {
                    o.initialize = Some(init.clone());
                    o.advertisement = Some(advertisement.clone());
                });
            }
            if !options.session && options.prompts.is_empty() {
                return Ok(());
            }
            let dir = tempdir().map_err(agent_client_protocol::Error::into_internal_error)?;
            let mut new_params = json!({"cwd": dir.path.to_string_lossy(), "mcpServers": []});
            let mut meta = serde_json::Map::new();
            if let Some(ns) = negotiated.namespace_of(Feature::WorktreeProject) {
                let project = json!({"version": 1, "originProjectPath": dir.path.to_string_lossy()});
                namespace::write_key(&mut meta, ns, "worktreeProject", project);
            }
            if let Some(ns) = negotiated.namespace_of(Feature::SessionConfig) {
                namespace::write_key(&mut meta, ns, "sessionConfig", json!({"version": 1, "configOptionValues": {}}));
            }
            if !meta.is_empty() {
                new_params["_meta"] = Value::Object(meta);
            }
            let new = request(&cx, "session/new", new_params, timeout).await;
            let session_id = match new {
                Ok(v) => v.get("sessionId").and_then(Value::as_str).map(str::to_owned),
                Err(e) => {
                    let auth = matches!(&e, RequestError::Rpc(_, Some(-32000)));
                    let msg = if auth {
                        let ids: Vec<String> = init
                            .get("authMethods")
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).map(str::to_owned).collect())
                            .unwrap_or_default();
                        format!(
                            "session/new needs authentication ({e}); auth methods offered: {}",
                            if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
                        )
                    } else {
                        format!("session/new failed: {e}")
                    };
                    rec(&|o| {
                        if auth {
                            o.auth_required = Some(msg.clone());
                        } else {
                            o.errors.push(msg.clone());
                        }
                    });
                    return Ok(());
                }
            };
            let Some(session_id) = session_id else {
                rec(&|o| o.errors.push("session/new returned no sessionId".into()));
                return Ok(());
            };
            rec(&|o| o.session_id = Some(session_id.clone()));

            let steer_ns = negotiated.namespace_of(Feature::Steering);
            let steer_by_request = negotiated
                .steering()
                .is_some_and(|st| st.transport == SteeringTransport::Request);
            let mut last_turn: Option<String> = None;
            for (i, text) in options.prompts.iter().enumerate() {
                let started = Instant::now();
                let prompt = request(
                    &cx,
                    "session/prompt",
                    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
                    timeout,
                );
                // A long turn is the place to exercise steering: send one
                // steer while it runs, when the agent takes steers by request.
                let steer = async {
                    if !(steer_by_request && text.starts_with("/slow")) {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let method = steer_ns.unwrap_or(ns).method("session/steer");
                    let params = json!({
                        "sessionId": session_id,
                        "steerId": format!("probe-steer-{}", i + 1),
                        "prompt": [{"type": "text", "text": "Also keep the public API stable."}],
                    });
                    let r = request(&cx, &method, params, timeout).await;
                    Some(QueryResult { method, ok: r.is_ok(), error: r.err().map(|e| e.to_string()) })
                };
                let (r, steered) = tokio::join!(prompt, steer);
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
                    stop_reason: r.as_ref().ok().and_then(|v| v.get("stopReason")).and_then(Value::as_str).map(str::to_owned),
                    error: r.as_ref().err().map(ToString::to_string),
                    millis: started.elapsed().as_millis() as u64,
                };
                rec(&|o| {
                    o.prompts.push(result.clone());
                    if let Some(q) = &steered {
                        o.queries.push(q.clone());
                    }
                });
                if matches!(r, Err(RequestError::Timeout)) {
                    break;
                }
            }

            let mut queries = Vec::new();
            if negotiated.rate_limits().is_some_and(|r| r.query.is_some()) {
                queries.push(("rate_limits/get", json!({"sessionId": session_id})));
            }
            if negotiated.subagents().is_some_and(|s| s.list.is_some()) {
                queries.push(("subagents/list", json!({"sessionId": session_id})));
            }
            if negotiated.is_active(Feature::SessionHistory) {
                queries.push(("session/history/read", json!({"sessionId": session_id})));
            }
            if let (Some(fork_ns), Some(turn)) = (negotiated.namespace_of(Feature::ForkAtTurn), &last_turn) {
                let mut meta = serde_json::Map::new();
                namespace::write_key(&mut meta, fork_ns, "forkAtTurn", json!({"version": 1, "turnId": turn}));
                let params = json!({
                    "sessionId": session_id,
                    "cwd": dir.path.to_string_lossy(),
                    "mcpServers": [],
                    "_meta": meta,
                });
                let r = request(&cx, "session/fork", params, timeout).await;
                let q = QueryResult {
                    method: "session/fork".into(),
                    ok: r.is_ok(),
                    error: r.err().map(|e| e.to_string()),
                };
                rec(&|o| o.queries.push(q.clone()));
            }
            for (path, params) in queries {
                let method = ns.method(path);
                let r = request(&cx, &method, params, timeout).await;
                let q = QueryResult {
                    method: method.clone(),
                    ok: r.is_ok(),
                    error: r.err().map(|e| e.to_string()),
                };
                rec(&|o| o.queries.push(q.clone()));
            }
            Ok(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Answers the agent's requests the way a cooperative user would:
/// permissions get the first "allow" option, elicitations are accepted
/// with a plausible value for every property.
fn auto_answer(method: &str, params: &Value) -> Option<Value> {
    match method {
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
            Some(json!({"outcome": {"outcome": "selected", "optionId": pick.get("optionId")?}}))
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
            Some(json!({"action": "accept", "content": content}))
        }
        _ => None,
    }
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
