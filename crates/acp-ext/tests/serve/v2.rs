//! A client that asks for ACP v2 (`serve::run_lines`, what `acp-ext serve`
//! runs on stdio) is answered in v2: read here as raw lines and through the
//! SDK's v2 types.

use agent_client_protocol::v2::schema as v2;

use super::eof::Raw;
use super::*;

/// `serve::run_lines` on an in-memory line transport, and the raw client.
fn on_lines() -> (tokio::task::JoinHandle<anyhow::Result<()>>, Raw) {
    let (c2a_tx, c2a_rx) = mpsc::unbounded::<String>();
    let (a2c_tx, a2c_rx) = mpsc::unbounded::<String>();
    let agent = tokio::spawn(serve::run_lines(
        ServeOptions::new(),
        a2c_tx.sink_map_err(to_io),
        c2a_rx.map(Ok),
    ));
    let raw = Raw {
        tx: Some(c2a_tx),
        rx: a2c_rx,
        seen: Vec::new(),
    };
    (agent, raw)
}

/// `serve` on an in-memory line transport, initialized by a v2 client with
/// the extensions' opt-ins under v2's `capabilities`, with one session:
/// the agent's task, the raw client, the `initialize` answer and the id.
async fn v2_session() -> (
    tokio::task::JoinHandle<anyhow::Result<()>>,
    Raw,
    Value,
    Value,
) {
    let (agent, mut raw) = on_lines();
    let init = raw
        .request(
            1,
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"},
                "capabilities": full_client_caps()}),
        )
        .await;
    let sid = raw
        .request(2, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await["result"]["sessionId"]
        .clone();
    (agent, raw, init, sid)
}

fn prompt(raw: &Raw, id: u64, sid: &Value, text: &str) {
    raw.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}}),
    );
}

fn is_idle(v: &Value) -> bool {
    v["params"]["update"]["sessionUpdate"] == "state_update"
        && v["params"]["update"]["state"] == "idle"
}

#[tokio::test]
async fn a_v2_client_is_answered_in_v2_with_the_extensions_negotiated() {
    let (agent, mut raw, init, _sid) = v2_session().await;
    let answer: v2::InitializeResponse =
        serde_json::from_value(init["result"].clone()).expect("a v2 initialize answer");
    assert_eq!(answer.protocol_version, 2.into());
    assert_eq!(answer.info.name, "acp-ext-serve");
    let meta = answer
        .capabilities
        .meta
        .expect("the extensions' capabilities");
    assert_eq!(meta["lody"]["usage"], json!({"version": 1}), "{meta:?}");
    raw.tx = None;
    agent.await.unwrap().unwrap();
}

#[tokio::test]
async fn each_turn_is_a_receipt_then_its_updates_then_idle_and_a_prompt_sent_meanwhile_waits() {
    let (agent, mut raw, _, sid) = v2_session().await;
    prompt(&raw, 3, &sid, "/subagents 1");
    prompt(&raw, 4, &sid, "hello");
    let idles = std::cell::Cell::new(0);
    raw.until(|v| {
        idles.set(idles.get() + usize::from(is_idle(v)));
        idles.get() == 2
    })
    .await;
    let wire = std::mem::take(&mut raw.seen);
    raw.tx = None;
    agent.await.unwrap().unwrap();

    // Every session update is a v2 one, by the SDK's v2 types.
    let updates: Vec<(usize, v2::UpdateSessionNotification)> = wire
        .iter()
        .enumerate()
        .filter(|(_, v)| v["method"] == "session/update")
        .map(|(i, v)| {
            let n = serde_json::from_value(v["params"].clone())
                .unwrap_or_else(|e| panic!("not a v2 session update ({e}): {v}"));
            (i, n)
        })
        .collect();
    // (A Core subagent event's `output` is the contract's, v1's shape, and
    // is left as it is.)
    let tags: Vec<&str> = wire
        .iter()
        .filter(|v| v["method"] == "session/update")
        .filter_map(|v| v["params"]["update"]["sessionUpdate"].as_str())
        .collect();
    for v1_only in ["tool_call", "plan"] {
        assert!(!tags.contains(&v1_only), "{tags:?}");
    }
    assert!(
        updates
            .iter()
            .any(|(_, n)| matches!(n.update, v2::SessionUpdate::ToolCallUpdate(_)))
    );

    // The order a v2 client relies on, per turn: receipt, echo, running,
    // ..., idle; the second prompt is inserted only after the first idle.
    let position = |pred: &dyn Fn(&Value) -> bool| wire.iter().position(pred).unwrap();
    let receipt = |id: u64| position(&|v: &Value| v["id"] == id && v.get("result").is_some());
    let idle = |n: usize| {
        wire.iter()
            .enumerate()
            .filter(|(_, v)| is_idle(v))
            .nth(n)
            .map(|(i, _)| i)
            .unwrap()
    };
    let (r3, r4, i0, i1) = (receipt(3), receipt(4), idle(0), idle(1));
    assert!(r3 < i0 && i0 < r4 && r4 < i1, "{r3} {i0} {r4} {i1}");
    for (id, at) in [(3, r3), (4, r4)] {
        let message_id = &wire[at]["result"]["messageId"];
        assert!(message_id.is_string(), "{}", wire[at]);
        let echo = &wire[at + 1]["params"]["update"];
        assert_eq!(echo["sessionUpdate"], "user_message", "prompt {id}");
        assert_eq!(&echo["messageId"], message_id);
        assert_eq!(wire[at + 2]["params"]["update"]["state"], "running");
    }
    for at in [i0, i1] {
        let idle = &wire[at]["params"]["update"];
        assert_eq!(idle["stopReason"], "end_turn", "{idle}");
        assert!(idle["usage"]["totalTokens"].as_u64().unwrap() > 0, "{idle}");
        assert!(idle["_meta"]["lody"]["turnId"].is_string(), "{idle}");
    }
    // The subagent's events ride on v2 as on v1.
    assert!(
        wire.iter().any(|v| v["method"] == "_lody/subagents/event"),
        "{wire:#?}"
    );
}

#[tokio::test]
async fn cancel_ends_the_turn_cancelled_and_refuses_the_prompts_it_held() {
    let (agent, mut raw, _, sid) = v2_session().await;
    prompt(&raw, 3, &sid, "/slow 30");
    raw.until(|v| v["id"] == 3).await;
    prompt(&raw, 4, &sid, "held");
    raw.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    let refused = raw.until(|v| v["id"] == 4).await;
    assert_eq!(refused["error"]["code"], -32800, "{refused}");
    let idle = raw.until(is_idle).await;
    assert_eq!(
        idle["params"]["update"]["stopReason"], "cancelled",
        "{idle}"
    );
    raw.tx = None;
    agent.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_v1_client_on_the_same_entry_point_is_served_in_v1() {
    let (agent, mut raw) = on_lines();
    let init = raw
        .request(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert!(init["result"]["agentCapabilities"].is_object(), "{init}");
    let sid = raw
        .request(2, "session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await["result"]["sessionId"]
        .clone();
    let answer = raw
        .request(
            3,
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    raw.tx = None;
    agent.await.unwrap().unwrap();
}
