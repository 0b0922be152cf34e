//! `acp-ext bridge`: a Core agent (`acp-ext serve`) behind it for a client
//! of standard ACP, and an agent of standard ACP (a script playing what the
//! official adapters send) for a Core client. Each run records both sides
//! of the bridge with `tap --record`; the state a client folds from each
//! side must agree, up to the documented losses.

use std::path::{Path, PathBuf};

use acp_ext::bridge::{BridgeTarget, Mode, Out, Translator};
use acp_ext::check::input::Format;
use acp_ext::probe::{self, ClientDialect, ProbeOptions};
use acp_extension_core::state::{ConnectionState, RunState, StateLimits, SteerStatus};
use serde_json::{Value, json};

const EXE: &str = env!("CARGO_BIN_EXE_acp-ext");

fn standard_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/standard.py")
}

/// `tap --record client -- bridge -- tap --record agent -- AGENT…`.
fn bridged(dir: &Path, agent: &[&str]) -> (Vec<String>, PathBuf, PathBuf) {
    let (client, agent_side) = (dir.join("client.jsonl"), dir.join("agent.jsonl"));
    let mut command = vec![
        EXE.to_owned(),
        "tap".into(),
        "--record".into(),
        client.display().to_string(),
        "--".into(),
        EXE.to_owned(),
        "bridge".into(),
        "--".into(),
        EXE.to_owned(),
        "tap".into(),
        "--record".into(),
        agent_side.display().to_string(),
        "--".into(),
    ];
    command.extend(agent.iter().map(|s| s.to_string()));
    (command, client, agent_side)
}

fn fold(path: &Path) -> ConnectionState {
    let file = std::fs::File::open(path).expect("the record");
    acp_ext::state::fold_reader(
        std::io::BufReader::new(file),
        Format::Auto,
        StateLimits::default(),
    )
    .expect("fold")
}

/// A run as both dialects can say it: its name, whether it ended well,
/// badly or not at all, and its text.
fn comparable(run: &RunState) -> (Option<String>, &'static str, String) {
    let (name, outcome) = match &run.standard {
        Some(std) => (
            std.title.clone(),
            match (std.state.as_deref(), std.stop_reason.as_deref()) {
                (Some("idle"), Some("end_turn")) => "ok",
                (Some("idle"), Some("error")) => "failed",
                (Some("idle"), Some("cancelled")) => "cancelled",
                (Some("running"), _) => "live",
                _ => "other",
            },
        ),
        None => (
            run.name().map(str::to_owned),
            match run.state_name() {
                "completed" => "ok",
                "failed" => "failed",
                "cancelled" => "cancelled",
                "running" | "pending" => "live",
                _ => "other",
            },
        ),
    };
    (name, outcome, run.text.clone())
}

fn runs(state: &ConnectionState, sid: &str) -> Vec<(Option<String>, &'static str, String)> {
    state
        .session(sid)
        .unwrap_or_else(|| panic!("session {sid}"))
        .subagent_runs
        .values()
        .map(comparable)
        .collect()
}

#[tokio::test]
async fn a_core_agent_reaches_a_standard_client_as_subagent_updates() {
    let dir = tempfile_dir("core-agent");
    let (command, client, agent) = bridged(&dir, &[EXE, "serve", "--session-ids", "counter"]);
    let options = ProbeOptions::default()
        .quiet(true)
        .client(ClientDialect::Standard)
        .prompt("/subagents 3")
        .prompt("/slow 0.5");
    let report = probe::run(command, options).await.unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let prompt = &report.prompts[0];
    assert_eq!(
        prompt.updates.get("subagent_update"),
        Some(&6),
        "{prompt:#?}"
    );
    assert!(prompt.extension_notifications.is_empty(), "{prompt:#?}");
    // The standard steer became a Core steer, injected into the slow turn.
    let steer = report
        .queries
        .iter()
        .find(|q| q.method == "_session/steering")
        .expect("a standard steer");
    assert_eq!(steer.outcome.as_deref(), Some("injected"));
    assert!(
        report.prompts[1]
            .answer
            .as_deref()
            .is_some_and(|a| a.contains("steered by"))
    );

    let (client, agent) = (fold(&client), fold(&agent));
    let sid = report.session_id.as_deref().unwrap();
    let (client_runs, agent_runs) = (runs(&client, sid), runs(&agent, sid));
    assert_eq!(agent_runs.len(), 3, "{agent_runs:#?}");
    assert_eq!(client_runs, agent_runs);
    // Client side: standard runs (child sessions); agent side: Core runs.
    let session = client.session(sid).unwrap();
    assert!(session.subagent_runs.values().all(|r| r.standard.is_some()));
    assert!(
        agent
            .session(sid)
            .unwrap()
            .subagent_runs
            .values()
            .all(|r| r.snapshot.is_some())
    );
    // The steer on both sides: confirmed by `steer_applied` on the Core
    // side; the standard dialect has no confirmation, so `injected` is
    // where it stays (documented).
    let client_steer = session.steers.values().next().expect("client-side steer");
    let agent_steer = agent
        .session(sid)
        .unwrap()
        .steers
        .values()
        .next()
        .expect("agent-side steer");
    assert_eq!(client_steer.outcome, SteerStatus::Injected);
    assert_eq!(agent_steer.outcome, SteerStatus::Applied);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_standard_agent_reaches_a_core_client_as_subagent_events() {
    let dir = tempfile_dir("standard-agent");
    let script = standard_agent();
    let (command, client, agent) = bridged(&dir, &["python3", script.to_str().unwrap()]);
    let report = probe::run(command, ProbeOptions::default().quiet(true).prompt("hi"))
        .await
        .unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    // The Core client saw the agent advertise subagent events and steering.
    let features: Vec<&str> = report
        .extensions
        .iter()
        .map(|r| r.feature.as_str())
        .collect();
    assert_eq!(
        features,
        ["subagentEvents", "usage", "rateLimits", "steering"]
    );
    let prompt = &report.prompts[0];
    assert!(
        prompt
            .extension_notifications
            .get("_lody/subagents/event")
            .is_some_and(|n| *n >= 8),
        "{prompt:#?}"
    );
    // Nothing of the children's own sessions reached the Core client.
    assert_eq!(prompt.other_session_updates, 0, "{prompt:#?}");
    assert!(!prompt.updates.contains_key("subagent_update"));

    let (client, agent) = (fold(&client), fold(&agent));
    let (client_runs, agent_runs) = (runs(&client, "s1"), runs(&agent, "s1"));
    assert_eq!(
        agent_runs,
        [
            (Some("Explorer 1".into()), "ok", "Part 1 looks fine.".into()),
            (
                Some("Explorer 2".into()),
                "failed",
                "Part 2 looks fine.".into()
            ),
        ]
    );
    assert_eq!(client_runs, agent_runs);
    // claude's rate limit and codex's turn usage, in Core.
    let limit = &client.rate_limits()["claude:five_hour"];
    assert!((limit.rate_limit.windows[0].used_percent.get() - 91.0).abs() < 1e-9);
    assert_eq!(limit.rate_limit.scope.provider_id, "anthropic");
    assert_eq!(
        serde_json::to_value(&limit.rate_limit).unwrap(),
        serde_json::to_value(&agent.rate_limits()["claude:five_hour"].rate_limit).unwrap()
    );
    let usage = &client.session("s1").unwrap().usage;
    assert_eq!(
        serde_json::to_value(&usage.totals["gpt-5.5"]).unwrap(),
        json!({"inputTokens": 200, "outputTokens": 60, "cacheReadInputTokens": 1000,
            "cacheCreationInputTokens": 0, "reasoningOutputTokens": 40, "webSearchRequests": 0})
    );
    assert_eq!(
        report.prompts[0]
            .extension_notifications
            .get("_lody/session/usage_update"),
        Some(&1)
    );
    // The failure's message became the Core reason.
    let failed = client
        .session("s1")
        .unwrap()
        .subagent_runs
        .values()
        .nth(1)
        .unwrap();
    assert_eq!(
        failed
            .snapshot
            .as_ref()
            .unwrap()
            .reason
            .as_ref()
            .unwrap()
            .message
            .as_deref(),
        Some("Subagent work failed")
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-ext-bridge-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- the translation alone ----------------------------------------------

fn lines(out: &[Out]) -> Vec<(&'static str, Value)> {
    out.iter()
        .map(|o| match o {
            Out::ToAgent(b) => ("agent", serde_json::from_slice(b).unwrap()),
            Out::ToClient(b) => ("client", serde_json::from_slice(b).unwrap()),
        })
        .collect()
}

fn send(t: &mut Translator, from_client: bool, v: Value) -> Vec<(&'static str, Value)> {
    let bytes = format!("{v}\n").into_bytes();
    let out = if from_client {
        t.from_client(&bytes)
    } else {
        t.from_agent(&bytes)
    };
    lines(&out)
}

#[test]
fn subagent_events_count_only_as_the_contract_writes_them() {
    // `subagentEvents` needs `{"version": 1}`: read by the negotiation's
    // own reader, an advertisement without it is no Core peer's.
    let init = |caps: Value| {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": caps}})
    };
    let mut t = Translator::new(BridgeTarget::Auto);
    let sent = send(
        &mut t,
        true,
        init(json!({"_meta": {"ua": {"subagentEvents": {"version": "1"}}}})),
    );
    // A plain client: the agent is not asked for standard subagents.
    assert_eq!(
        sent[0].1["params"]["clientCapabilities"].get("subagents"),
        None
    );

    let mut t = Translator::new(BridgeTarget::Auto);
    send(
        &mut t,
        true,
        init(json!({"_meta": {"ua": {"subagentEvents": {"version": 1}}}})),
    );
    send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"ua": {"subagentEvents": {}}}}}}),
    );
    // The agent writes no subagent events: its standard updates are
    // translated for the Core client.
    assert_eq!(t.mode(), Mode::ToCore);
}

#[test]
fn a_core_steer_to_a_standard_agent_is_confirmed_only_when_injected() {
    let mut t = Translator::new(BridgeTarget::Auto);
    let init = send(
        &mut t,
        true,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1,
            "clientCapabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1}}}}}}),
    );
    // The agent is asked for standard subagents.
    assert_eq!(
        init[0].1["params"]["clientCapabilities"]["subagents"],
        json!({})
    );
    let result = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {}, "_meta": {"steering": {"supported": true}}}}),
    );
    assert_eq!(t.mode(), Mode::ToCore);
    assert_eq!(
        result[0].1["result"]["agentCapabilities"]["_meta"]["ua"]["steering"]["transport"],
        "request"
    );
    let steer = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "_ua/session/steer",
            "params": {"sessionId": "s1", "steerId": format!("st-{id}"),
                "prompt": [{"type": "text", "text": "go"}]}})
    };
    let sent = send(&mut t, true, steer(5));
    assert_eq!(
        sent,
        [(
            "agent",
            json!({"jsonrpc": "2.0", "id": 5, "method": "_session/steering",
                "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}],
                    "steerId": "st-5", "_meta": {"steering": {"idleBehavior": "promptRequired"}}}})
        )]
    );
    let injected = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": "injected"}}),
    );
    assert_eq!(
        injected,
        [
            (
                "client",
                json!({"jsonrpc": "2.0", "method": "_ua/session/steer_applied",
                    "params": {"sessionId": "s1", "steerId": "st-5"}})
            ),
            (
                "client",
                json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": "injected"}})
            ),
        ]
    );
    send(&mut t, true, steer(6));
    let idle = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 6, "result": {"outcome": "promptRequired",
            "reason": "noRunningTurn"}}),
    );
    assert_eq!(idle.len(), 1);
    assert_eq!(idle[0].1["error"]["code"], -32600);
}

#[test]
fn a_standard_steer_to_a_core_agent_asks_for_a_prompt_when_nothing_runs() {
    let mut t = Translator::new(BridgeTarget::Auto);
    let init = send(
        &mut t,
        true,
        json!({"jsonrpc": "2.0", "id": "i", "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}}),
    );
    assert_eq!(
        init[0].1["params"]["clientCapabilities"]["_meta"]["lody"]["subagentEvents"],
        json!({"version": 1})
    );
    let result = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": "i", "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": {"subagentEvents": {"version": 1},
                "steering": {"version": 1, "transport": "request", "upstreamTurn": "same",
                    "configPolicy": "active"}}}}}}),
    );
    assert_eq!(t.mode(), Mode::ToStandard);
    assert_eq!(
        result[0].1["result"]["_meta"]["steering"],
        json!({"supported": true})
    );
    let sent = send(
        &mut t,
        true,
        json!({"jsonrpc": "2.0", "id": 9, "method": "_session/steering", "params": {
            "sessionId": "s1", "prompt": [], "_meta": {"steering": {"idleBehavior": "promptRequired"}}}}),
    );
    assert_eq!(sent[0].1["method"], "_lody/session/steer");
    assert_eq!(sent[0].1["params"]["steerId"], "bridge:9");
    let answer = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 9, "result": {"outcome": "failed"}}),
    );
    assert_eq!(
        answer,
        [(
            "client",
            json!({"jsonrpc": "2.0", "id": 9, "result": {"outcome": "promptRequired",
                "reason": "noRunningTurn"}})
        )]
    );
    // The agent's `steer_applied` is not for this client (it advertised
    // no extension).
    let applied = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "method": "_lody/session/steer_applied",
            "params": {"sessionId": "s1", "steerId": "bridge:9"}}),
    );
    assert!(applied.is_empty());
}

#[test]
fn a_core_agents_turn_usage_becomes_the_standard_prompt_usage() {
    let mut t = Translator::new(BridgeTarget::Standard);
    send(
        &mut t,
        true,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": {"subagentEvents": {"version": 1}}}}}}),
    );
    assert_eq!(t.mode(), Mode::ToStandard);
    let prompt = json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": []}});
    // The prompt itself passes unchanged.
    assert_eq!(send(&mut t, true, prompt.clone()), [("agent", prompt)]);
    // The Core usage update is not for this client (no extension) …
    let usage = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "method": "_lody/session/usage_update", "params": {
            "sessionId": "s", "usage": {"inputTokens": 10, "outputTokens": 5,
                "cacheReadInputTokens": 100, "reasoningOutputTokens": 2}}}),
    );
    assert!(usage.is_empty());
    // … but the turn's usage is in the answer, as a standard client reads it.
    let answer = send(
        &mut t,
        false,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
    );
    assert_eq!(
        answer,
        [(
            "client",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn",
                "usage": {"totalTokens": 117, "inputTokens": 10, "outputTokens": 7,
                    "cachedReadTokens": 100, "cachedWriteTokens": 0, "thoughtTokens": 2}}})
        )]
    );
}

#[test]
fn lines_it_does_not_translate_pass_byte_for_byte() {
    let mut t = Translator::new(BridgeTarget::Auto);
    for raw in [
        &b"{ \"jsonrpc\" : \"2.0\", \"id\": 1, \"method\": \"session/new\", \"params\": {\"cwd\": \"/\"}}\n"[..],
        b"not json at all\n",
        b"[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}",
    ] {
        assert_eq!(t.from_client(raw), [Out::ToAgent(raw.to_vec())]);
        assert_eq!(t.from_agent(raw), [Out::ToClient(raw.to_vec())]);
    }
    // With no dialect to translate (a plain client), `initialize` passes too.
    let init = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n";
    assert_eq!(t.from_client(init), [Out::ToAgent(init.to_vec())]);
}

#[test]
fn the_bridge_reads_messages_and_advertisements_as_the_connection_does() {
    // Each element of a batch is a message of its own to the connection;
    // the bridge passes the batch as it is.
    let mut t = Translator::new(BridgeTarget::Standard);
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}]\n";
    assert_eq!(t.from_client(batch), [Out::ToAgent(batch.to_vec())]);
    // A bare subagent event (fixtures keep them so) is no message on the
    // wire: it passes, even where the bridge translates events.
    let mut core_agent = Translator::new(BridgeTarget::Standard);
    send(
        &mut core_agent,
        true,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}}),
    );
    send(
        &mut core_agent,
        false,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": {"subagentEvents": {"version": 1}}}}}}),
    );
    assert_eq!(core_agent.mode(), Mode::ToStandard);
    let bare = br#"{"version":1,"sessionId":"s","runId":"r","type":"snapshot","snapshot":{"state":"running","support":{"stream":["text"],"progress":true,"outputRead":"none","cancel":false}}}
"#;
    assert_eq!(core_agent.from_agent(bare), [Out::ToClient(bare.to_vec())]);
    let framed = format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "method": "_lody/subagents/event",
            "params": serde_json::from_slice::<Value>(bare).unwrap()})
    );
    assert_ne!(
        core_agent.from_agent(framed.as_bytes()),
        [Out::ToClient(framed.into_bytes())],
        "the same event as a notification is translated"
    );
    assert_eq!(t.translated, [0, 0]);

    // The agent's steering advertisement, read by the negotiation: only a
    // valid one that steers by request gains the standard flag.
    let steering = |steering: Value| {
        let mut t = Translator::new(BridgeTarget::Standard);
        let sent = send(
            &mut t,
            true,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}}),
        );
        // The standard client is asked for Core events, typed.
        assert_eq!(
            sent[0].1["params"]["clientCapabilities"]["_meta"]["lody"]["subagentEvents"],
            json!({"version": 1})
        );
        let back = send(
            &mut t,
            false,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
                "agentCapabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1},
                    "steering": steering}}}}}),
        );
        assert_eq!(t.mode(), Mode::ToStandard);
        back[0].1["result"].pointer("/_meta/steering").cloned()
    };
    let valid = json!({"version": 1, "transport": "request", "upstreamTurn": "same",
        "configPolicy": "active"});
    assert_eq!(steering(valid), Some(json!({"supported": true})));
    assert_eq!(
        steering(json!({"version": 1, "transport": "request"})),
        None,
        "an advertisement the negotiation rejects steers nothing"
    );
}

#[test]
fn the_agents_exit_status_is_the_bridges() {
    let out = std::process::Command::new(EXE)
        .args(["bridge", "--", "sh", "-c", "exit 3"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let missing = std::process::Command::new(EXE)
        .args(["bridge", "--", "/nonexistent/agent"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
}

#[test]
fn a_killed_bridge_leaves_no_agent_behind() {
    let dir = tempfile_dir("kill");
    let pidfile = dir.join("agent.pid");
    // The agent writes its pid and then ignores its input (the end of its
    // stdin would not stop it): only the guard's group kill can.
    let agent = format!("echo $$ > {}; exec sleep 60", pidfile.display());
    let (reader, _writer) = std::io::pipe().unwrap();
    let mut bridge = std::process::Command::new(EXE)
        .args(["bridge", "--", "sh", "-c", &agent])
        .stdin(reader)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pidfile)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    bridge.kill().unwrap(); // SIGKILL: no handler of the bridge runs.
    bridge.wait().unwrap();
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::read_to_string(proc_dir.join("stat")).map_or(true, |stat| stat.contains(") Z "))
    });
    let _ = std::fs::remove_dir_all(dir);
    assert!(gone, "the agent {pid} outlived its SIGKILLed bridge");
}
