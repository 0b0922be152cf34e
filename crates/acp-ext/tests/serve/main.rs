//! `acp-ext serve`: the reference agent, driven over in-memory connections.
//!
//! Most tests use the SDK's client (`Client.v1()`) over a newline-delimited
//! JSON transport whose agent-to-client lines are recorded, so assertions
//! read the wire as a client sees it. Tests that need to misbehave (bad
//! params, EOF mid-turn) speak raw JSON-RPC lines.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_ext::serve::{self, ServeNamespace, ServeOptions, TaskMonitor};
use acp_extension_core::validate::{self, Kind};
use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode, Lines, UntypedMessage};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(10);

type Cx = agent_client_protocol::v1::ConnectionTo<Agent>;

/// Everything the agent wrote, in order.
type Log = Arc<Mutex<Vec<Value>>>;

/// The client side of a test: the SDK connection and the recorded wire.
#[derive(Clone)]
struct Peer {
    cx: Cx,
    log: Log,
}

/// How the test client answers the agent's requests.
#[derive(Clone)]
struct Answers {
    permission: &'static str,
    note: Option<&'static str>,
}

impl Default for Answers {
    fn default() -> Self {
        Self {
            permission: "allow",
            note: Some("Keep the public API stable."),
        }
    }
}

fn full_client_caps() -> Value {
    json!({
        "elicitation": {"form": {}},
        "session": {"configOptions": {"boolean": {}}},
        "_meta": {"lody": {"subagentEvents": {"version": 1}, "elicitation": {"version": 1, "answerNotes": true}}}
    })
}

impl Peer {
    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        let message = UntypedMessage::new(method, params)?;
        tokio::time::timeout(TIMEOUT, self.cx.send_request(message).block_task())
            .await
            .map_err(|_| Error::internal_error().data(format!("{method} timed out")))?
    }

    async fn ok(&self, method: &str, params: Value) -> Value {
        match self.call(method, params).await {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e:?}"),
        }
    }

    fn notify(&self, method: &str, params: Value) {
        self.cx
            .send_notification(UntypedMessage::new(method, params).unwrap())
            .unwrap();
    }

    async fn init(&self, caps: Value) -> Value {
        self.ok(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
        )
        .await
    }

    async fn new_session(&self) -> String {
        let r = self
            .ok("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        r["sessionId"].as_str().unwrap().to_owned()
    }

    /// `initialize` with [`full_client_caps`], then `session/new`: the usual
    /// start. Returns the session id.
    async fn start_session(&self) -> String {
        self.init(full_client_caps()).await;
        self.new_session().await
    }

    async fn prompt(&self, sid: &str, text: &str) -> Result<Value, Error> {
        self.call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Prompts `text`, asserting that the turn ends with `end_turn`; returns
    /// the response.
    async fn turn(&self, sid: &str, text: &str) -> Value {
        let r = self.prompt(sid, text).await.unwrap();
        assert_eq!(r["stopReason"], "end_turn", "{text}");
        r
    }

    /// Prompts `text` on a task of its own and waits until a turn is
    /// running, so the test can act on it.
    async fn prompt_running(
        &self,
        sid: &str,
        text: &str,
    ) -> tokio::task::JoinHandle<Result<Value, Error>> {
        let turn = {
            let peer = self.clone();
            let (sid, text) = (sid.to_owned(), text.to_owned());
            tokio::spawn(async move { peer.prompt(&sid, &text).await })
        };
        self.wait_for("the slow turn", |m| {
            m.iter().any(|m| m["params"]["state"] == "running")
        })
        .await;
        turn
    }

    fn messages(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }

    /// The text of the last `final_answer` chunk in `sid`.
    fn final_answer(&self, sid: &str) -> String {
        self.updates(sid)
            .iter()
            .filter(|u| u["_meta"]["lody"]["messagePhase"] == "final_answer")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .next_back()
            .unwrap()
    }

    /// `session/update` params.update values for `sid`, in order.
    fn updates(&self, sid: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == sid)
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Params of notifications named `method`, in order.
    fn notes(&self, method: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Params of the agent's requests named `method`.
    fn requests(&self, method: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Waits until `pred` holds for the recorded wire.
    async fn wait_for(&self, what: &str, pred: impl Fn(&[Value]) -> bool) {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            if pred(&self.messages()) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn to_io<E: std::fmt::Display>(e: E) -> io::Error {
    io::Error::other(e.to_string())
}

/// Runs the agent with `options` against an SDK client whose main function
/// is `body`; returns the recorded agent-to-client messages after the
/// connection closed and the agent returned.
async fn session<F, Fut>(options: ServeOptions, answers: Answers, body: F) -> Vec<Value>
where
    F: FnOnce(Peer) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let monitor = TaskMonitor::new();
    let options = options.task_monitor(monitor.clone());
    let (c2a_tx, c2a_rx) = mpsc::unbounded::<String>();
    let (a2c_tx, a2c_rx) = mpsc::unbounded::<String>();
    let agent_transport = Lines::new(a2c_tx.sink_map_err(to_io), c2a_rx.map(Ok));
    let log: Log = Arc::default();
    let tap = log.clone();
    let client_incoming = a2c_rx.map(move |line: String| {
        let v: Value = serde_json::from_str(&line).expect("the agent writes JSON lines");
        tap.lock().unwrap().push(v);
        Ok(line)
    });
    let client_transport = Lines::new(c2a_tx.sink_map_err(to_io), client_incoming);
    let agent = tokio::spawn(serve::run(options, agent_transport));

    let permission = answers.permission;
    let note = answers.note;
    let peer_log = log.clone();
    let result = Client
        .v1()
        .on_receive_request(
            async move |_req: RequestPermissionRequest, responder, _cx| {
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(permission)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: UntypedMessage, responder, _cx| {
                if req.method() == "elicitation/create" {
                    let props = &req.params()["requestedSchema"]["properties"];
                    let mut content = json!({"approach": "Small change"});
                    if let (Some(n), true) = (note, props.get("approach_note").is_some()) {
                        content["approach_note"] = json!(n);
                    }
                    responder.respond(json!({"action": "accept", "content": content}))
                } else {
                    responder.respond_with_error(Error::method_not_found())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(client_transport, async move |cx| {
            body(Peer { cx, log: peer_log }).await;
            Ok(())
        })
        .await;
    result.expect("client connection");
    let finished = tokio::time::timeout(TIMEOUT, agent)
        .await
        .expect("the agent exits after EOF");
    finished
        .expect("agent task")
        .expect("serve::run returns Ok");
    assert_eq!(monitor.live(), 0, "no agent task outlives the connection");
    let messages = log.lock().unwrap().clone();
    assert_valid(&messages);
    messages
}

/// Every message the agent sent passes the contract validator (what
/// `acp-ext validate` runs on each line).
fn assert_valid(messages: &[Value]) {
    for m in messages {
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        let report = validate::validate_value(Kind::AUTO, m);
        assert!(
            report.is_valid(),
            "{m}\nbreaks the contract: {:?}",
            report.violations
        );
    }
}

#[test]
fn the_validator_used_here_rejects_contract_breaks() {
    let bad = json!({"jsonrpc": "2.0", "method": "_lody/session/activity_update",
        "params": {"version": 1, "sessionId": "s", "state": "bogus", "backgroundTaskCount": 0}});
    assert!(!validate::validate_value(Kind::AUTO, &bad).is_valid());
}

fn meta<'a>(v: &'a Value, ns: &str) -> &'a Value {
    &v["_meta"][ns]
}

/// The first update of `kind` (its `sessionUpdate`).
fn first<'a>(updates: &'a [Value], kind: &str) -> &'a Value {
    updates.iter().find(|u| u["sessionUpdate"] == kind).unwrap()
}

/// The last `tool_call_update` of tool call `id`.
fn last_tool_update<'a>(updates: &'a [Value], id: &str) -> &'a Value {
    updates
        .iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == id)
        .unwrap()
}

/// Each `_lody/session/activity_update` as `(state, backgroundTaskCount)`.
fn activity(messages: &[Value]) -> Vec<(&str, u64)> {
    messages
        .iter()
        .filter(|m| m["method"] == "_lody/session/activity_update")
        .map(|m| {
            (
                m["params"]["state"].as_str().unwrap(),
                m["params"]["backgroundTaskCount"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_owned())
        .collect()
}

mod commands;
mod eof;
mod initialize;
mod lifecycle;
mod mcp_apps;
mod prompts;
mod robustness;
mod standard;
mod v2;
