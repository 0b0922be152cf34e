//! Load on `acp-ext serve`: many sessions on ONE connection, in process,
//! with concurrent prompts (plain prompts, subagent streams, turns cancelled
//! by `session/cancel` or by `session/close`), then every session closed.
//! Checks routing as it reads (every message names the session it belongs
//! to; turn, run and usage scope ids never cross sessions) and prints
//! throughput and memory: live heap bytes (this binary counts them with its
//! own global allocator) and RSS.
//!
//! ```sh
//! cargo run --release -p acp-ext --example serve_load -- [SESSIONS] [ROUNDS]
//! ```
//!
//! `tests/load.rs` runs the same driver in debug and asserts on it.

use std::alloc::System;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_ext::serve::{self, ServeOptions, TaskMonitor};
use acp_extension_core::methods::{ContractMethod, contract_method};
use agent_client_protocol::Lines;
use cap::Cap;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

// The tests' reader of `/proc/<pid>/status`; `peak_rss` is theirs alone.
#[allow(dead_code)]
#[path = "../tests/common/procfs.rs"]
mod procfs;

/// Counts live heap bytes and their peak (`cap` wraps the system allocator).
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Live heap bytes now.
pub fn live_bytes() -> usize {
    ALLOCATOR.allocated()
}

/// The most live heap bytes so far.
pub fn peak_bytes() -> usize {
    ALLOCATOR.max_allocated()
}

/// Resident set size of this process, if readable (Linux).
pub fn rss_bytes() -> Option<u64> {
    procfs::rss("self")
}

/// What one run measured and found.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Sessions opened (and closed).
    pub sessions: usize,
    /// Prompts sent.
    pub prompts: usize,
    /// Lines the client sent.
    pub sent: u64,
    /// Lines the agent sent.
    pub received: u64,
    /// From the first `session/new` to the last `session/close` answer.
    pub elapsed: Duration,
    /// Prompt answers by stop reason.
    pub stop_reasons: HashMap<String, usize>,
    /// Subagent runs seen (distinct run ids).
    pub runs: usize,
    /// Turns seen (distinct turn ids).
    pub turns: usize,
    /// Usage scopes seen (distinct `usageScopeId`s).
    pub scopes: usize,
    /// Live heap bytes before the agent started.
    pub live_before: usize,
    /// Live heap bytes after `initialize`.
    pub live_initialized: usize,
    /// Peak live heap bytes (of the whole process life; the sessions are
    /// the largest part).
    pub live_peak: usize,
    /// Live heap bytes once every session was closed (the client's own
    /// bookkeeping dropped; the connection still open).
    pub live_closed: usize,
    /// Live heap bytes after EOF, once the agent returned.
    pub live_after: usize,
    /// RSS after `initialize`, at the peak of the sessions (sampled), after
    /// closing and after EOF.
    pub rss: [u64; 4],
    /// Agent tasks still running once every session was closed.
    pub tasks_after_close: usize,
    /// Everything that went wrong (misrouted messages, wrong answers).
    pub violations: Vec<String>,
}

/// Who owns what, learnt from the wire.
#[derive(Default)]
struct Routing {
    /// Session id → the client's index for it.
    index: HashMap<String, usize>,
    /// Turn id → session id.
    turns: HashMap<String, String>,
    /// Subagent run id → session id.
    runs: HashMap<String, String>,
    /// Usage scope id → session id.
    scopes: HashMap<String, String>,
    /// Prompt tokens echoed, by session index.
    echoed: HashMap<usize, Vec<String>>,
    violations: Vec<String>,
}

impl Routing {
    fn owner(map: &mut HashMap<String, String>, what: &str, id: &str, sid: &str) -> Option<String> {
        let owner = map.entry(id.to_owned()).or_insert_with(|| sid.to_owned());
        (owner != sid).then(|| format!("{what} {id} of {owner} seen on {sid}"))
    }

    /// Checks one message the agent sent that names `sid`.
    fn check(&mut self, sid: &str, method: &str, v: &Value) {
        let Some(&index) = self.index.get(sid) else {
            self.violations
                .push(format!("{method} for unknown session {sid}: {v}"));
            return;
        };
        let params = &v["params"];
        let mut found = Vec::new();
        for turn in [
            params.pointer("/update/_meta/lody/turnId"),
            v.pointer("/result/_meta/lody/turnId"),
        ]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        {
            found.extend(Self::owner(&mut self.turns, "turn", turn, sid));
        }
        if contract_method(method) == Some(ContractMethod::SubagentEvent)
            && let Some(run) = params["runId"].as_str()
        {
            found.extend(Self::owner(&mut self.runs, "run", run, sid));
        }
        if let Some(scope) = params
            .pointer("/_meta/lody/usageScopeId")
            .and_then(Value::as_str)
        {
            found.extend(Self::owner(&mut self.scopes, "usage scope", scope, sid));
        }
        // Prompt tokens (`tok-<index>-<n>`) in any text the agent sent.
        if let Some(text) = params
            .pointer("/update/content/text")
            .and_then(Value::as_str)
        {
            for word in text.split_whitespace() {
                if let Some(rest) = word.strip_prefix("tok-") {
                    let owner = rest.split('-').next().and_then(|n| n.parse::<usize>().ok());
                    if owner != Some(index) {
                        found.push(format!("token {word} on {sid} (session #{index})"));
                    } else if text.starts_with("You said: ") {
                        self.echoed.entry(index).or_default().push(word.to_owned());
                    }
                }
            }
        }
        self.violations.extend(found);
    }
}

/// The client end of the connection: raw JSON-RPC lines.
struct Client {
    tx: mpsc::UnboundedSender<String>,
    next_id: AtomicU64,
    sent: AtomicU64,
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Value>)>>,
    /// Session id → count of notifications seen for it.
    seen: Mutex<HashMap<String, watch::Sender<u64>>>,
    routing: Mutex<Routing>,
}

impl Client {
    fn send(&self, v: Value) {
        self.sent.fetch_add(1, Relaxed);
        let _ = self.tx.unbounded_send(v.to_string());
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Relaxed);
        let (tx, rx) = oneshot::channel();
        let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
        self.pending.lock().unwrap().insert(id, (sid, tx));
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match tokio::time::timeout(Duration::from_secs(120), rx).await {
            Ok(Ok(v)) => v,
            _ => json!({"error": {"message": format!("{method} got no answer")}}),
        }
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn violation(&self, what: String) {
        self.routing.lock().unwrap().violations.push(what);
    }

    /// Reads everything the agent sends until the connection ends.
    fn read(&self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            self.violation(format!("not JSON: {line}"));
            return;
        };
        let method = v["method"].as_str().unwrap_or_default().to_owned();
        if method.is_empty() {
            let Some(id) = v["id"].as_u64() else {
                self.violation(format!("response with a foreign id: {v}"));
                return;
            };
            let Some((sid, tx)) = self.pending.lock().unwrap().remove(&id) else {
                self.violation(format!("response to no request: {v}"));
                return;
            };
            if !sid.is_empty() && v.get("result").is_some() {
                self.routing.lock().unwrap().check(&sid, "response", &v);
            }
            let _ = tx.send(v);
            return;
        }
        if v.get("id").is_some() {
            self.violation(format!("unexpected request from the agent: {v}"));
            return;
        }
        let Some(sid) = v["params"]["sessionId"].as_str() else {
            self.violation(format!("notification without a session: {v}"));
            return;
        };
        self.routing.lock().unwrap().check(sid, &method, &v);
        if let Some(seen) = self.seen.lock().unwrap().get(sid) {
            seen.send_modify(|n| *n += 1);
        }
    }
}

fn to_io<E: std::fmt::Display>(e: E) -> io::Error {
    io::Error::other(e.to_string())
}

/// What a session does after its first (plain) prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plan {
    /// A second plain prompt.
    Plain,
    /// `/subagents 2`: a subagent event stream.
    Subagents,
    /// `/slow 600`, then `session/cancel` once the turn has started.
    Cancel,
    /// `/slow 600` with `session/cancel` right behind it on the wire.
    CancelAtOnce,
    /// `/slow 600`, then `session/close` once the turn has started.
    CloseMidTurn,
}

impl Plan {
    /// Whether the second prompt ends `cancelled`.
    pub fn cancelled(self) -> bool {
        matches!(self, Plan::Cancel | Plan::CancelAtOnce | Plan::CloseMidTurn)
    }
}

/// The plan of session number `i`.
pub fn plan(i: usize) -> Plan {
    match i % 8 {
        0 | 4 => Plan::Subagents,
        1 => Plan::Cancel,
        5 => Plan::CancelAtOnce,
        3 => Plan::CloseMidTurn,
        _ => Plan::Plain,
    }
}

/// Subagents per `/subagents` prompt.
pub const CHILDREN: usize = 2;

fn prompt(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
}

/// One session's life: new, a plain prompt, its planned second prompt,
/// close. Returns the stop reasons of its prompts.
async fn one_session(client: Arc<Client>, i: usize) -> Vec<String> {
    let mut reasons = Vec::new();
    let new = client
        .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    let Some(sid) = new["result"]["sessionId"].as_str().map(str::to_owned) else {
        client.violation(format!("session/new #{i}: {new}"));
        return reasons;
    };
    let (seen_tx, mut seen) = watch::channel(0u64);
    client.seen.lock().unwrap().insert(sid.clone(), seen_tx);
    client.routing.lock().unwrap().index.insert(sid.clone(), i);

    let mut expect = |r: &Value, want: &str, what: &str| {
        let got = r["result"]["stopReason"].as_str().unwrap_or("(error)");
        if got != want {
            client.violation(format!("{sid} {what}: {want} expected, got {r}"));
        }
        reasons.push(got.to_owned());
    };
    let r = client
        .request("session/prompt", prompt(&sid, &format!("tok-{i}-1")))
        .await;
    expect(&r, "end_turn", "first prompt");
    let mut closed = false;
    match plan(i) {
        Plan::Plain => {
            let r = client
                .request("session/prompt", prompt(&sid, &format!("tok-{i}-2")))
                .await;
            expect(&r, "end_turn", "second prompt");
        }
        Plan::Subagents => {
            let r = client
                .request(
                    "session/prompt",
                    prompt(&sid, &format!("/subagents {CHILDREN}")),
                )
                .await;
            expect(&r, "end_turn", "subagents");
        }
        Plan::Cancel | Plan::CancelAtOnce | Plan::CloseMidTurn => {
            let before = *seen.borrow_and_update();
            // Polled first by `join!`: the prompt is on the wire before the
            // cancel.
            let turn = client.request("session/prompt", prompt(&sid, "/slow 600"));
            let stop = async {
                // The turn has started once the agent says anything about it.
                if plan(i) != Plan::CancelAtOnce {
                    let _ = seen.wait_for(|n| *n > before).await;
                }
                if plan(i) != Plan::CloseMidTurn {
                    client.notify("session/cancel", json!({"sessionId": sid}));
                } else {
                    let r = client
                        .request("session/close", json!({"sessionId": sid}))
                        .await;
                    if r.get("result").is_none() {
                        client.violation(format!("{sid} close mid-turn: {r}"));
                    }
                }
            };
            let (r, ()) = tokio::join!(turn, stop);
            expect(&r, "cancelled", "interrupted turn");
            closed = plan(i) == Plan::CloseMidTurn;
        }
    }
    if !closed {
        let r = client
            .request("session/close", json!({"sessionId": sid}))
            .await;
        if r.get("result").is_none() {
            client.violation(format!("{sid} close: {r}"));
        }
    }
    reasons
}

/// Runs `sessions` sessions at once on one connection to an in-process
/// `serve`, `rounds` times over (each round opens and closes them all).
pub async fn run(sessions: usize, rounds: usize) -> LoadReport {
    let mut report = LoadReport {
        live_before: live_bytes(),
        ..LoadReport::default()
    };
    let monitor = TaskMonitor::new();
    let (c2a_tx, c2a_rx) = mpsc::unbounded::<String>();
    let (a2c_tx, mut a2c_rx) = mpsc::unbounded::<String>();
    let transport = Lines::new(a2c_tx.sink_map_err(to_io), c2a_rx.map(Ok));
    let agent = tokio::spawn(serve::run(
        ServeOptions::new().task_monitor(monitor.clone()),
        transport,
    ));
    let client = Arc::new(Client {
        tx: c2a_tx,
        next_id: AtomicU64::new(1),
        sent: AtomicU64::new(0),
        pending: Mutex::default(),
        seen: Mutex::default(),
        routing: Mutex::default(),
    });
    let received = Arc::new(AtomicU64::new(0));
    let reader = {
        let (client, received) = (Arc::clone(&client), Arc::clone(&received));
        tokio::spawn(async move {
            while let Some(line) = a2c_rx.next().await {
                received.fetch_add(1, Relaxed);
                client.read(&line);
            }
        })
    };
    let init = client
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {
                "_meta": {"lody": {"subagentEvents": {"version": 1}}}}}),
        )
        .await;
    if init.get("result").is_none() {
        client.violation(format!("initialize: {init}"));
    }
    report.live_initialized = live_bytes();
    report.rss[0] = rss_bytes().unwrap_or(0);

    let rss_peak = Arc::new(AtomicU64::new(0));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (peak, on) = (Arc::clone(&rss_peak), Arc::clone(&sampling));
        std::thread::spawn(move || {
            while on.load(Relaxed) {
                peak.fetch_max(rss_bytes().unwrap_or(0), Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let started = Instant::now();
    for round in 0..rounds {
        let tasks: Vec<_> = (0..sessions)
            .map(|i| tokio::spawn(one_session(Arc::clone(&client), round * sessions + i)))
            .collect();
        for t in tasks {
            for reason in t.await.unwrap_or_default() {
                *report.stop_reasons.entry(reason).or_default() += 1;
                report.prompts += 1;
            }
        }
    }
    report.elapsed = started.elapsed();
    report.sessions = sessions * rounds;
    sampling.store(false, Relaxed);
    let _ = sampler.join();
    report.rss[1] = rss_peak.load(Relaxed);
    report.live_peak = peak_bytes();

    // Turns answer before their tasks end: let the last ones finish.
    let deadline = Instant::now() + Duration::from_secs(30);
    while monitor.live() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    report.tasks_after_close = monitor.live();

    // Sessions the client expected to see echoed, and subagent runs.
    {
        let mut routing = std::mem::take(&mut *client.routing.lock().unwrap());
        for i in 0..sessions * rounds {
            let mut want = vec![format!("tok-{i}-1")];
            if plan(i) == Plan::Plain {
                want.push(format!("tok-{i}-2"));
            }
            let got = routing.echoed.remove(&i).unwrap_or_default();
            if got != want {
                routing
                    .violations
                    .push(format!("session #{i}: answers {got:?}, expected {want:?}"));
            }
        }
        let mut per_session: HashMap<&str, HashSet<&str>> = HashMap::new();
        for (run, sid) in &routing.runs {
            per_session.entry(sid).or_default().insert(run);
        }
        for (sid, &i) in &routing.index {
            let want = if plan(i) == Plan::Subagents {
                CHILDREN
            } else {
                0
            };
            let got = per_session.get(sid.as_str()).map_or(0, HashSet::len);
            if got != want {
                routing
                    .violations
                    .push(format!("{sid}: {got} subagent runs, expected {want}"));
            }
        }
        report.runs = routing.runs.len();
        report.turns = routing.turns.len();
        report.scopes = routing.scopes.len();
        report.violations = std::mem::take(&mut routing.violations);
    }
    // The client's own bookkeeping is gone; what is left is the agent's.
    client.seen.lock().unwrap().clear();
    report.live_closed = live_bytes();
    report.rss[2] = rss_bytes().unwrap_or(0);

    // EOF: the agent returns, the reader sees the end.
    report.sent = client.sent.load(Relaxed);
    client.tx.close_channel();
    match tokio::time::timeout(Duration::from_secs(60), agent).await {
        Ok(Ok(Ok(()))) => {}
        other => report
            .violations
            .push(format!("the agent did not end cleanly: {other:?}")),
    }
    let _ = tokio::time::timeout(Duration::from_secs(60), reader).await;
    report.received = received.load(Relaxed);
    report.violations.extend(std::mem::take(
        &mut client.routing.lock().unwrap().violations,
    ));
    drop(client);
    report.live_after = live_bytes();
    report.rss[3] = rss_bytes().unwrap_or(0);
    report
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let r = runtime.block_on(run(sessions, rounds));
    let secs = r.elapsed.as_secs_f64();
    let messages = r.sent + r.received;
    println!(
        "{} sessions ({sessions} at once × {rounds} rounds) on one connection, {} prompts, {} subagent runs",
        r.sessions, r.prompts, r.runs
    );
    println!("stop reasons: {:?}", r.stop_reasons);
    println!(
        "time {secs:.2} s: {:.0} sessions/s, {:.0} prompts/s, {:.0} messages/s ({} client → agent, {} agent → client)",
        r.sessions as f64 / secs,
        r.prompts as f64 / secs,
        messages as f64 / secs,
        r.sent,
        r.received
    );
    let live = |b: usize| mib(b as u64);
    println!(
        "live heap: before {}, initialized {}, peak {}, all sessions closed {} ({} B per closed session kept for session/load), after EOF {}",
        live(r.live_before),
        live(r.live_initialized),
        live(r.live_peak),
        live(r.live_closed),
        r.live_closed.saturating_sub(r.live_initialized) / r.sessions.max(1),
        live(r.live_after)
    );
    println!(
        "RSS: initialized {}, peak {}, all sessions closed {}, after EOF {}",
        mib(r.rss[0]),
        mib(r.rss[1]),
        mib(r.rss[2]),
        mib(r.rss[3])
    );
    println!("agent tasks left after closing: {}", r.tasks_after_close);
    if r.violations.is_empty() {
        println!("routing: every message on its own session");
    } else {
        println!("{} violations, first ones:", r.violations.len());
        for v in r.violations.iter().take(10) {
            println!("  {v}");
        }
        std::process::exit(1);
    }
}
