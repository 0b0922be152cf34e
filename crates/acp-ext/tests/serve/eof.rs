//! EOF

use super::*;

/// A raw JSON-lines peer: the test writes requests and reads every line.
pub(super) struct Raw {
    pub(super) tx: Option<mpsc::UnboundedSender<String>>,
    pub(super) rx: mpsc::UnboundedReceiver<String>,
    pub(super) seen: Vec<Value>,
}

/// `serve` on an in-memory transport, initialized by a capable client,
/// with one session open: the agent's task, the raw client and the id.
async fn raw_session(
    options: ServeOptions,
) -> (tokio::task::JoinHandle<anyhow::Result<()>>, Raw, Value) {
    let (c2a_tx, c2a_rx) = mpsc::unbounded::<String>();
    let (a2c_tx, a2c_rx) = mpsc::unbounded::<String>();
    let transport = Lines::new(a2c_tx.sink_map_err(to_io), c2a_rx.map(Ok));
    let agent = tokio::spawn(serve::run(options, transport));
    let mut raw = Raw {
        tx: Some(c2a_tx),
        rx: a2c_rx,
        seen: Vec::new(),
    };
    raw.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": full_client_caps()}),
    )
    .await;
    let sid = raw
        .request(2, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await["result"]["sessionId"]
        .clone();
    (agent, raw, sid)
}

impl Raw {
    pub(super) fn send(&self, v: Value) {
        self.tx
            .as_ref()
            .unwrap()
            .unbounded_send(v.to_string())
            .unwrap();
    }

    /// Reads until a line matches `pred`.
    pub(super) async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = tokio::time::timeout(TIMEOUT, self.rx.next())
                .await
                .expect("the agent answers in time")
                .expect("the agent's output is open");
            let v: Value = serde_json::from_str(&line).unwrap();
            self.seen.push(v.clone());
            if pred(&v) {
                return v;
            }
        }
    }

    pub(super) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until(|v| v["id"] == id && v.get("method").is_none())
            .await
    }
}

/// Asserts that every root `tool_call` the agent opened got a terminal
/// `tool_call_update` (`completed` or `failed`) before the end of `wire`.
fn assert_tool_calls_closed(wire: &[Value]) {
    let update = |v: &Value| v["method"] == "session/update" && v["params"]["update"].is_object();
    let opened: Vec<&Value> = wire
        .iter()
        .filter(|v| update(v) && v["params"]["update"]["sessionUpdate"] == "tool_call")
        .map(|v| &v["params"]["update"]["toolCallId"])
        .collect();
    assert!(!opened.is_empty(), "no tool call was opened");
    for id in opened {
        let ended = wire.iter().any(|v| {
            let u = &v["params"]["update"];
            update(v)
                && u["sessionUpdate"] == "tool_call_update"
                && &u["toolCallId"] == id
                && (u["status"] == "completed" || u["status"] == "failed")
        });
        assert!(ended, "tool call {id} was never closed");
    }
}

#[tokio::test]
async fn closing_the_session_mid_turn_ends_its_runs_and_tool_calls() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let turn = peer.prompt_running(&sid, "/subagents 2 30").await;
        peer.wait_for("both runs working", |m| {
            m.iter()
                .filter(|v| v["params"]["progress"]["summary"] == "Working")
                .count()
                == 2
        })
        .await;
        peer.ok("session/close", json!({"sessionId": sid})).await;
        let stop = turn.await.unwrap().unwrap();
        assert_eq!(stop["stopReason"], "cancelled");
    })
    .await;
    assert_tool_calls_closed(&messages);
    let cancelled = messages
        .iter()
        .filter(|v| v["params"]["snapshot"]["state"] == "cancelled")
        .count();
    assert_eq!(cancelled, 2, "each live run ends with a cancelled snapshot");
}

#[tokio::test]
async fn eof_mid_turn_cancels_everything_and_marks_runs_disconnected() {
    let monitor = TaskMonitor::new();
    let (agent, mut raw, sid) =
        raw_session(ServeOptions::new().task_monitor(monitor.clone())).await;
    raw.request(
        3,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/background 30"}]}),
    )
    .await;
    raw.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/subagents 2 30"}]}}),
    );
    raw.until(|v| {
        v["params"]["type"] == "progress" && v["params"]["progress"]["summary"] == "Working"
    })
    .await;
    raw.until(|v| {
        v["params"]["type"] == "progress" && v["params"]["progress"]["summary"] == "Working"
    })
    .await;
    assert!(
        monitor.live() >= 2,
        "a turn and a background task are running"
    );

    // EOF: the client stops writing but keeps reading.
    raw.tx = None;
    let mut rest = Vec::new();
    while let Ok(Some(line)) = tokio::time::timeout(TIMEOUT, raw.rx.next()).await {
        rest.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let result = tokio::time::timeout(TIMEOUT, agent)
        .await
        .expect("the agent exits")
        .unwrap();
    assert!(result.is_ok(), "serve::run returns Ok on EOF: {result:?}");
    assert_eq!(monitor.live(), 0, "no task left running");

    let disconnected: Vec<&Value> = rest
        .iter()
        .filter(|v| {
            v["method"] == "_lody/subagents/event"
                && v["params"]["snapshot"]["reason"]["code"] == "disconnected"
        })
        .collect();
    assert_eq!(
        disconnected.len(),
        2,
        "each live run is marked disconnected"
    );
    for e in &disconnected {
        assert_eq!(e["params"]["snapshot"]["state"], "unknown");
        assert_eq!(e["params"]["snapshot"]["outputIncomplete"], true);
    }
    let response = rest
        .iter()
        .find(|v| v["id"] == 4)
        .expect("the prompt is answered");
    assert_eq!(response["result"]["stopReason"], "cancelled");
    // Nothing about the runs after they were marked disconnected.
    let first_disconnect = rest
        .iter()
        .position(|v| v["params"]["snapshot"]["reason"]["code"] == "disconnected")
        .unwrap();
    assert!(
        rest[first_disconnect + 2..]
            .iter()
            .all(|v| v["method"] != "_lody/subagents/event"),
        "no late events after disconnect"
    );
    let mut all = raw.seen.clone();
    all.extend(rest);
    assert_tool_calls_closed(&all);
    assert_valid(&all);
}

#[tokio::test]
async fn the_binary_serves_stdio_and_exits_zero_on_eof() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_acp-ext"))
        .args(["serve", "--namespace", "lody"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn acp-ext serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut until = async |pred: &dyn Fn(&Value) -> bool, seen: &mut Vec<Value>| loop {
        let line = tokio::time::timeout(TIMEOUT, lines.next_line())
            .await
            .expect("output in time")
            .unwrap()
            .expect("stdout open");
        let v: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC lines only");
        seen.push(v.clone());
        if pred(&v) {
            return v;
        }
    };
    let send = |v: Value| format!("{v}\n");
    stdin
        .write_all(
            send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": full_client_caps()}}))
            .as_bytes(),
        )
        .await
        .unwrap();
    until(&|v| v["id"] == 1, &mut seen).await;
    stdin
        .write_all(send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})).as_bytes())
        .await
        .unwrap();
    let sid = until(&|v| v["id"] == 2, &mut seen).await["result"]["sessionId"].clone();
    stdin
        .write_all(
            send(
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/subagents 1 30"}]}}),
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    until(
        &|v| v["params"]["progress"]["summary"] == "Working",
        &mut seen,
    )
    .await;
    drop(stdin);
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .expect("exits after EOF")
        .unwrap();
    assert!(status.success(), "exit status {status}");
    while let Ok(Some(line)) = lines.next_line().await {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let answer = seen
        .iter()
        .find(|v| v["id"] == 3)
        .expect("the prompt is answered");
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    assert!(
        seen.iter()
            .any(|v| v["params"]["snapshot"]["reason"]["code"] == "disconnected")
    );
    // The root tool call of the run is closed too (acpx `--timeout` ends
    // a turn this way).
    assert_tool_calls_closed(&seen);
    assert_valid(&seen);
}

/// The session id `acp-ext serve ARGS` gives its first session.
fn first_session_id(args: &[&str]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_acp-ext"))
        .arg("serve")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == 2)
        .and_then(|v| v["result"]["sessionId"].as_str().map(str::to_owned))
        .expect("session/new answered")
}

#[test]
fn session_ids_never_collide_across_processes_unless_counters_are_asked_for() {
    // Clients key their session stores by ACP session id: two agents'
    // `sess-1` would overwrite each other.
    let a = first_session_id(&[]);
    let b = first_session_id(&[]);
    assert_ne!(a, b);
    for id in [&a, &b] {
        let prefix = id
            .strip_prefix("sess-")
            .and_then(|r| r.strip_suffix("-1"))
            .unwrap_or_else(|| panic!("{id}: sess-<prefix>-1"));
        assert_eq!(prefix.len(), 8, "{id}");
        assert!(prefix.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
    assert_eq!(first_session_id(&["--session-ids", "counter"]), "sess-1");
}

/// The methods of the agent's `_…` notifications to a client that
/// initialized with `caps`, over a plain turn and `/limits`.
async fn extension_notifications(options: ServeOptions, caps: Value) -> Vec<String> {
    let messages = session(options, Answers::default(), async |peer| {
        peer.init(caps).await;
        let sid = peer.new_session().await;
        peer.turn(&sid, "hello").await;
        peer.turn(&sid, "/limits").await;
    })
    .await;
    let mut methods: Vec<String> = messages
        .iter()
        .filter(|m| m.get("id").is_none())
        .filter_map(|m| m["method"].as_str())
        .filter(|m| m.starts_with('_'))
        .map(str::to_owned)
        .collect();
    methods.sort();
    methods.dedup();
    methods
}

#[tokio::test]
async fn a_client_without_extensions_gets_no_extension_notifications_unless_asked() {
    let plain = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
    assert_eq!(
        extension_notifications(ServeOptions::new(), plain.clone()).await,
        Vec::<String>::new()
    );
    // An empty section is enough to say "I read the extensions".
    let aware = json!({"_meta": {"lody": {}}});
    let expected = [
        "_lody/rate_limits/update",
        "_lody/session/activity_update",
        "_lody/session/usage_update",
    ];
    assert_eq!(
        extension_notifications(ServeOptions::new(), aware).await,
        expected
    );
    let notify = ServeOptions::new().plain_clients(serve::PlainClients::Notify);
    assert_eq!(extension_notifications(notify, plain).await, expected);
}

#[test]
fn serve_help_lists_the_prompt_commands() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-ext"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(!help.contains("serve.md"), "{help}");
    for c in serve::PROMPT_COMMANDS {
        let row = help
            .lines()
            .find(|l| l.trim_start().starts_with(c.usage))
            .unwrap_or_else(|| panic!("{} missing:\n{help}", c.usage));
        assert!(row.ends_with(c.summary), "{row}");
    }
}

/// Every `costUSD` and `cost.amount` the agent sent.
fn costs(messages: &[Value]) -> Vec<f64> {
    fn walk(v: &Value, out: &mut Vec<f64>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("costUSD", Value::Number(n)) => out.push(n.as_f64().unwrap()),
                        ("cost", Value::Object(c)) => out.extend(c["amount"].as_f64()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    messages.iter().for_each(|m| walk(m, &mut out));
    out
}

#[tokio::test]
async fn costs_carry_no_binary_noise() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        for text in [
            "hello",
            "/tool",
            "a longer prompt with more words",
            "/limits",
            "again",
        ] {
            peer.turn(&sid, text).await;
        }
    })
    .await;
    let costs = costs(&messages);
    assert!(costs.len() >= 15, "{costs:?}");
    for c in costs {
        // The shortest decimal that reads back as this number.
        let text = c.to_string();
        let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(decimals <= 10, "cost {text} has binary noise");
    }
}

#[tokio::test]
async fn compacting_an_empty_context_compacts_nothing() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.turn(&sid, "/compact").await;
        assert_eq!(
            peer.final_answer(&sid),
            "Nothing to compact: the context is empty."
        );
        assert!(
            peer.updates(&sid)
                .iter()
                .all(|u| u["sessionUpdate"] != "tool_call"),
            "no compaction tool call"
        );
    })
    .await;
}

/// EOF while the agent waits on the client (a permission request, a
/// question): nobody answered, so the turn ends `cancelled`, every time,
/// with no made-up outcome in its text.
#[tokio::test]
async fn eof_while_a_request_is_pending_cancels_the_turn() {
    for (prompt, method) in [
        ("/tool", "session/request_permission"),
        ("/ask", "elicitation/create"),
    ] {
        for _ in 0..5 {
            let (agent, mut raw, sid) = raw_session(ServeOptions::new()).await;
            raw.send(
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}}),
            );
            raw.until(|v| v["method"] == method).await;
            raw.tx = None;
            let mut rest = Vec::new();
            while let Ok(Some(line)) = tokio::time::timeout(TIMEOUT, raw.rx.next()).await {
                rest.push(serde_json::from_str::<Value>(&line).unwrap());
            }
            let _ = tokio::time::timeout(TIMEOUT, agent).await;
            let response = rest
                .iter()
                .find(|v| v["id"] == 3)
                .unwrap_or_else(|| panic!("{prompt}: the prompt is answered: {rest:#?}"));
            assert_eq!(response["result"]["stopReason"], "cancelled", "{prompt}");
            let said: String = raw
                .seen
                .iter()
                .chain(&rest)
                .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
                .filter_map(|v| v["params"]["update"]["content"]["text"].as_str())
                .collect();
            assert!(
                !said.contains("denied") && !said.contains("failed"),
                "{prompt}: {said:?}"
            );
        }
    }
}
