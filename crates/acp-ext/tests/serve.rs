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
        let report = validate::validate_value(Kind::Auto, m);
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
    assert!(!validate::validate_value(Kind::Auto, &bad).is_valid());
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

// ---- initialize ------------------------------------------------------------

const CONTRACT_FEATURES: &[&str] = &[
    "subagentEvents",
    "sessionTitle",
    "usage",
    "rateLimits",
    "forkAtTurn",
    "steering",
    "tasks",
    "subagents",
    "goal",
    "compaction",
    "sessionHistory",
    "worktreeProject",
    "sessionActivity",
    "mcpApps",
];

#[tokio::test]
async fn initialize_advertises_every_extension_under_both_namespaces() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let r = peer.init(json!({})).await;
        assert_eq!(r["protocolVersion"], 1);
        let caps = &r["agentCapabilities"];
        assert_eq!(caps["loadSession"], true);
        for key in ["list", "resume", "close", "fork"] {
            assert!(
                caps["sessionCapabilities"][key].is_object(),
                "sessionCapabilities.{key}"
            );
        }
        assert!(
            r.get("authMethods")
                .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty))
        );
        let ua = &caps["_meta"]["ua"];
        assert_eq!(
            ua, &caps["_meta"]["lody"],
            "same content in both namespaces"
        );
        for key in CONTRACT_FEATURES {
            assert_eq!(ua[key]["version"], 1, "{key} advertised with version 1");
        }
        let steering = &ua["steering"];
        assert!(["request", "prompt"].contains(&steering["transport"].as_str().unwrap()));
        assert!(["same", "handoff"].contains(&steering["upstreamTurn"].as_str().unwrap()));
        assert!(["active", "apply"].contains(&steering["configPolicy"].as_str().unwrap()));
        assert_eq!(ua["subagents"]["lifecycle"], true);
        let goal = &ua["goal"];
        for a in goal["controlActions"].as_array().unwrap() {
            assert!(
                ["pause", "clear"].contains(&a.as_str().unwrap()),
                "control actions never start work"
            );
        }
        assert!(
            goal["promptActions"]
                .as_array()
                .unwrap()
                .contains(&json!("set"))
        );
    })
    .await;
}

#[tokio::test]
async fn only_advertises_a_subset_and_serves_nothing_else() {
    let options = ServeOptions::new()
        .namespace(ServeNamespace::Ua)
        .only(["usage", "steering"]);
    let messages = session(options, Answers::default(), async |peer| {
        let r = peer.init(full_client_caps()).await;
        let meta = &r["agentCapabilities"]["_meta"];
        assert!(
            meta.get("lody").is_none(),
            "--namespace ua advertises under ua only"
        );
        let keys: Vec<&String> = meta["ua"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["usage", "steering"]);
        // Unadvertised methods are not served.
        for method in [
            "_ua/rate_limits/get",
            "_lody/rate_limits/get",
            "_ua/subagents/list",
        ] {
            let e = peer
                .call(method, json!({"sessionId": "x"}))
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
        }
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/limits").await.unwrap();
        peer.prompt(&sid, "/subagents 1").await.unwrap();
        peer.prompt(&sid, "hello").await.unwrap();
    })
    .await;
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert!(!methods.iter().any(|m| m.ends_with("rate_limits/update")));
    assert!(
        !methods.iter().any(|m| m.ends_with("subagents/event")),
        "subagentEvents not advertised"
    );
    assert!(!methods.iter().any(|m| m.ends_with("activity_update")));
    assert!(
        methods.contains(&"_ua/session/usage_update"),
        "usage is advertised, in ua"
    );
    assert!(!methods.iter().any(|m| m.starts_with("_lody/")));
}

#[tokio::test]
async fn extension_messages_follow_the_client_namespace() {
    // A client that advertises under `ua` only gets `_ua/…`.
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({"_meta": {"ua": {}}})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "hi").await.unwrap();
    })
    .await;
    let ext: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .filter(|m| m.starts_with('_'))
        .collect();
    assert!(!ext.is_empty());
    assert!(ext.iter().all(|m| m.starts_with("_ua/")), "{ext:?}");

    // Anything else (here: no extension capabilities at all) gets `_lody/…`.
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "hi").await.unwrap();
    })
    .await;
    assert!(
        messages
            .iter()
            .filter_map(|m| m["method"].as_str())
            .filter(|m| m.starts_with('_'))
            .all(|m| m.starts_with("_lody/"))
    );
}

// ---- scripted prompts --------------------------------------------------------

#[tokio::test]
async fn plain_text_streams_commentary_then_final_answer_with_usage() {
    let mut sid = String::new();
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        sid = peer.start_session().await;
        let r = peer.turn(&sid, "Explain the parser").await;
        let turn = r["_meta"]["lody"]["turnId"].as_str().unwrap().to_owned();
        let updates = peer.updates(&sid);
        let chunks: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .collect();
        let phases: Vec<&str> = chunks
            .iter()
            .map(|c| meta(c, "lody")["messagePhase"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["commentary", "final_answer"]);
        // Two messages, told apart by their ids, and apart in joined text.
        assert_ne!(chunks[0]["messageId"], chunks[1]["messageId"]);
        assert!(
            chunks[0]["content"]["text"]
                .as_str()
                .unwrap()
                .ends_with("\n\n")
        );
        for c in &chunks {
            assert_eq!(
                meta(c, "lody")["turnId"],
                turn.as_str(),
                "chunks carry the prompt's turn id"
            );
        }
        assert!(
            chunks[1]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("Explain the parser")
        );
        let plans: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "plan")
            .collect();
        assert!(!plans.is_empty());
        let last = plans.last().unwrap()["entries"].as_array().unwrap();
        assert!(last.iter().all(|e| e["status"] == "completed"));
        let usage: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "usage_update")
            .collect();
        assert_eq!(usage.len(), 1);
        assert!(usage[0]["used"].as_u64().unwrap() > 0);
        assert_eq!(usage[0]["cost"]["currency"], "USD");

        let ext = peer.notes("_lody/session/usage_update");
        assert_eq!(ext.len(), 1);
        let u = &ext[0];
        assert_eq!(u["sessionId"], sid.as_str());
        assert!(u["usage"]["inputTokens"].as_u64().unwrap() > 0);
        let scope = u["_meta"]["lody"]["usageScopeId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!scope.is_empty() && scope.len() <= 256);
        // The first update's delta is measured from zero: it equals the totals.
        assert_eq!(u["delta"]["modelUsage"], u["modelUsage"]);

        // A second turn in the same lifetime: same scope, cumulative totals.
        peer.prompt(&sid, "again").await.unwrap();
        let ext = peer.notes("_lody/session/usage_update");
        assert_eq!(ext.len(), 2);
        assert_eq!(ext[1]["_meta"]["lody"]["usageScopeId"], scope.as_str());
        let model = ext[1]["modelUsage"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let total = ext[1]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        let first = ext[0]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        let delta = ext[1]["delta"]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        assert_eq!(
            total,
            first + delta,
            "delta is already included in modelUsage"
        );
        assert_eq!(
            ext[1]["usage"]["inputTokens"].as_u64().unwrap(),
            delta,
            "usage is the latest turn"
        );
    })
    .await;

    // Activity: running while the turn runs, idle afterwards.
    for m in messages
        .iter()
        .filter(|m| m["method"] == "_lody/session/activity_update")
    {
        assert_eq!(m["params"]["version"], 1);
        assert_eq!(m["params"]["sessionId"], sid.as_str());
    }
    assert_eq!(
        activity(&messages),
        [("running", 0), ("idle", 0), ("running", 0), ("idle", 0)]
    );
}

/// Removes what legitimately differs between two runs: timestamps, the
/// usage scope id (unique per lifetime by contract) and JSON-RPC ids (the
/// SDK assigns them).
fn normalize_message(v: &mut Value) {
    if let Some(id) = v.get_mut("id") {
        *id = json!("*");
    }
    normalize(v);
}

fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if k.ends_with("EpochSeconds") || k == "updatedAt" || k == "usageScopeId" {
                    *val = json!("*");
                } else {
                    normalize(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

#[tokio::test]
async fn the_same_input_gives_the_same_output() {
    let script = async |peer: Peer| {
        let a = peer.start_session().await;
        let b = peer.new_session().await;
        for text in [
            "hello",
            "/tool",
            "/subagents 2",
            "/compact",
            "/title",
            "/goal set ship it",
            "/ask",
        ] {
            peer.prompt(&a, text).await.unwrap();
        }
        peer.prompt(&b, "other").await.unwrap();
    };
    let mut first = session(ServeOptions::new(), Answers::default(), script).await;
    let mut second = session(ServeOptions::new(), Answers::default(), script).await;
    first.iter_mut().for_each(normalize_message);
    second.iter_mut().for_each(normalize_message);
    assert_eq!(first.len(), second.len());
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a, b);
    }
}

#[tokio::test]
async fn tool_asks_permission_and_honours_allow_and_deny() {
    for (answer, status) in [("allow", "completed"), ("deny", "failed")] {
        let answers = Answers {
            permission: answer,
            ..Answers::default()
        };
        session(ServeOptions::new(), answers, async |peer| {
            let sid = peer.start_session().await;
            peer.turn(&sid, "/tool").await;
            let updates = peer.updates(&sid);
            let call = first(&updates, "tool_call");
            let id = call["toolCallId"].as_str().unwrap();
            assert!(meta(call, "lody")["toolName"].is_string());
            let asks = peer.requests("session/request_permission");
            assert_eq!(asks.len(), 1);
            assert_eq!(asks[0]["toolCall"]["toolCallId"], id);
            let kinds: Vec<&str> = asks[0]["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect();
            assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"));
            let last = last_tool_update(&updates, id);
            assert_eq!(last["status"], status, "{answer}");
            assert!(meta(last, "lody")["toolName"].is_string());
            // While the permission was pending the session required action.
            let states: Vec<String> = peer
                .notes("_lody/session/activity_update")
                .iter()
                .map(|a| a["state"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(states, ["running", "requires_action", "running", "idle"]);
        })
        .await;
    }
}

// ---- MCP apps --------------------------------------------------------------

fn mcp_apps_client_caps() -> Value {
    json!({"_meta": {"lody": {"mcpApps": {"version": 1}}}})
}

#[tokio::test]
async fn app_is_tagged_and_served_when_mcp_apps_is_negotiated() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(mcp_apps_client_caps()).await;
        let sid = peer.new_session().await;
        peer.turn(&sid, "/app").await;
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        let id = call["toolCallId"].as_str().unwrap();
        let app = &meta(call, "lody")["mcpApp"];
        assert_eq!(app["version"], 1);
        assert_eq!(app["server"], "demo");
        assert_eq!(app["tool"], "chart");
        assert_eq!(app["resourceUri"], "ui://demo/chart");
        assert_eq!(app["preferredDisplayMode"], "inline");
        let done = last_tool_update(&updates, id);
        assert_eq!(done["status"], "completed");
        assert_eq!(done["content"][0]["content"]["type"], "text");

        // load: the app as tagged, the call's input and (completed) result.
        let load = peer
            .ok(
                "_lody/mcp_apps/load",
                json!({"sessionId": sid, "toolCallId": id}),
            )
            .await;
        assert_eq!(&load["app"], app);
        assert_eq!(load["toolInput"], call["rawInput"]);
        assert_eq!(load["toolResult"]["content"][0]["type"], "text");

        // resource/read of the app's UI resource, in either namespace.
        let read = peer
            .ok(
                "_ua/mcp_apps/resource/read",
                json!({"sessionId": sid, "toolCallId": id, "uri": "ui://demo/chart"}),
            )
            .await;
        let contents = read["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], "ui://demo/chart");
        assert_eq!(contents[0]["mimeType"], "text/html;profile=mcp-app");
        assert!(contents[0]["text"].as_str().unwrap().contains("<html"));

        // tool/call of the app's own tool.
        let result = peer
            .ok(
                "_lody/mcp_apps/tool/call",
                json!({"sessionId": sid, "toolCallId": id, "name": "chart",
                       "arguments": {"series": [4, 5]}}),
            )
            .await;
        assert_eq!(result["content"][0]["type"], "text");
        assert!(result["content"][0]["text"].is_string());

        // Any other tool is refused, naming it.
        let e = peer
            .call(
                "_lody/mcp_apps/tool/call",
                json!({"sessionId": sid, "toolCallId": id, "name": "delete_everything"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("delete_everything"), "{}", e.message);
        assert!(
            e.message.contains("not visible to the app"),
            "{}",
            e.message
        );

        // Requests are scoped to a tagged tool call of a known session.
        for params in [
            json!({"sessionId": sid, "toolCallId": "call-999"}),
            json!({"sessionId": "sess-999", "toolCallId": id}),
        ] {
            let e = peer
                .call("_lody/mcp_apps/load", params.clone())
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{params}");
        }
    })
    .await;
}

#[tokio::test]
async fn app_has_no_mcp_app_meta_without_the_client_capability() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/app").await.unwrap();
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        assert!(meta(call, "lody").get("mcpApp").is_none(), "{call}");
        assert!(meta(call, "ua").get("mcpApp").is_none(), "{call}");
        let id = call["toolCallId"].as_str().unwrap();
        // Not negotiated: the methods are not served.
        let e = peer
            .call(
                "_lody/mcp_apps/load",
                json!({"sessionId": sid, "toolCallId": id}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
    })
    .await;
}

fn events(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "_lody/subagents/event")
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn subagents_stream_through_the_emitter_and_are_listed() {
    let mut sid = String::new();
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        sid = peer.start_session().await;
        peer.turn(&sid, "/subagents 2").await;
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        let tasks = list["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 2);
        for t in tasks {
            assert_eq!(t["status"], "completed");
            assert!(t["endedAtEpochSeconds"].is_number());
            let out = peer
                .ok(
                    "_lody/subagents/output",
                    json!({"sessionId": sid, "taskId": t["taskId"]}),
                )
                .await;
            assert!(out["output"].as_str().unwrap().contains("done"));
            let tail = peer
                .ok(
                    "_lody/subagents/output",
                    json!({"sessionId": sid, "taskId": t["taskId"], "tail": 1}),
                )
                .await;
            assert_eq!(tail["output"].as_str().unwrap().lines().count(), 1);
        }
        let active = peer
            .ok(
                "_lody/subagents/list",
                json!({"sessionId": sid, "activeOnly": true}),
            )
            .await;
        assert_eq!(active["tasks"], json!([]));
    })
    .await;
    let events = events(&messages);
    let mut runs: Vec<String> = Vec::new();
    for e in &events {
        assert_eq!(e["version"], 1);
        assert_eq!(e["sessionId"], sid.as_str(), "events name the root session");
        let run = e["runId"].as_str().unwrap();
        assert!(!run.is_empty());
        if !runs.iter().any(|r| r == run) {
            runs.push(run.to_owned());
        }
    }
    assert_eq!(runs.len(), 2, "one run id per child");
    for run in &runs {
        let mine: Vec<&Value> = events
            .iter()
            .filter(|e| e["runId"] == run.as_str())
            .collect();
        assert_eq!(mine[0]["type"], "snapshot");
        assert_eq!(mine[0]["snapshot"]["state"], "running");
        assert!(mine.iter().any(|e| e["type"] == "progress"));
        let outputs: Vec<&str> = mine
            .iter()
            .filter(|e| e["type"] == "output")
            .map(|e| e["update"]["sessionUpdate"].as_str().unwrap())
            .collect();
        assert!(outputs.contains(&"agent_message_chunk") && outputs.contains(&"tool_call"));
        let last = mine.last().unwrap();
        assert_eq!(last["type"], "snapshot");
        assert_eq!(last["snapshot"]["state"], "completed");
        // The parent tool call exists in the root session and carries the task.
        let parent = mine[0]["snapshot"]["parentToolCallId"].as_str().unwrap();
        let call = messages
            .iter()
            .find(|m| {
                m["params"]["update"]["sessionUpdate"] == "tool_call"
                    && m["params"]["update"]["toolCallId"] == parent
            })
            .expect("parent tool call");
        assert_eq!(
            call["params"]["update"]["_meta"]["lody"]["task"]["kind"],
            "subagent"
        );
    }
}

#[tokio::test]
async fn subagent_events_are_never_sent_without_negotiation() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        // The client advertises other extensions, but not subagentEvents.
        peer.init(json!({"_meta": {"lody": {"elicitation": {"version": 1}}}}))
            .await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/subagents 3").await.unwrap();
        // The runs exist all the same, through the subagents capability.
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        assert_eq!(list["tasks"].as_array().unwrap().len(), 3);
    })
    .await;
    assert!(
        !messages.iter().any(|m| m["method"]
            .as_str()
            .is_some_and(|s| s.ends_with("subagents/event"))),
        "no subagent event without the client's subagentEvents"
    );
}

#[tokio::test]
async fn a_subagent_can_be_cancelled_while_it_runs() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let turn = {
            let peer = peer.clone();
            let sid = sid.clone();
            tokio::spawn(async move { peer.prompt(&sid, "/subagents 2 0.5").await })
        };
        peer.wait_for("two running children", |m| {
            events(m).iter().filter(|e| e["type"] == "progress").count() >= 4
        })
        .await;
        let list = peer
            .ok(
                "_lody/subagents/list",
                json!({"sessionId": sid, "activeOnly": true}),
            )
            .await;
        let tasks = list["tasks"].as_array().unwrap().clone();
        assert_eq!(tasks.len(), 2);
        assert!(
            tasks
                .iter()
                .all(|t| t["status"] == "running" && t["endedAtEpochSeconds"].is_null())
        );
        let victim = tasks[0]["taskId"].clone();
        let r = peer
            .ok(
                "_lody/subagents/cancel",
                json!({"sessionId": sid, "taskId": victim, "reason": "not needed"}),
            )
            .await;
        assert_eq!(r, json!({}));
        let e = peer
            .call(
                "_lody/subagents/cancel",
                json!({"sessionId": sid, "taskId": "task-999"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("taskId"));
        let r = turn.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "end_turn");
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        let statuses: Vec<&str> = list["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["killed", "completed"]);
    })
    .await;
    let finals: Vec<&str> = events(&messages)
        .iter()
        .filter(|e| e["type"] == "snapshot")
        .filter_map(|e| e["snapshot"]["state"].as_str())
        .filter(|s| *s != "running")
        .map(|s| {
            if s == "cancelled" {
                "cancelled"
            } else {
                "other"
            }
        })
        .collect();
    assert!(finals.contains(&"cancelled"));
    let cancelled = events(&messages)
        .into_iter()
        .find(|e| e["snapshot"]["state"] == "cancelled")
        .unwrap();
    assert_eq!(cancelled["snapshot"]["reason"]["code"], "cancelled");
    // Nothing is emitted for a run after its terminal snapshot.
    let run = cancelled["runId"].clone();
    let after: Vec<Value> = events(&messages)
        .into_iter()
        .skip_while(|e| e["snapshot"]["state"] != "cancelled")
        .skip(1)
        .filter(|e| e["runId"] == run)
        .collect();
    assert!(after.is_empty(), "late events: {after:?}");
}

#[tokio::test]
async fn background_and_scheduled_tasks_outlive_the_turn() {
    for (command, kind, first_status) in [
        ("/background 0.2", "background", "in_progress"),
        ("/schedule 0.2", "scheduled", "pending"),
    ] {
        let mut sid = String::new();
        let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
            sid = peer.start_session().await;
            let r = peer.prompt(&sid, command).await.unwrap();
            assert_eq!(
                r["stopReason"], "end_turn",
                "the turn ends while the task runs"
            );
            let updates = peer.updates(&sid);
            let call = first(&updates, "tool_call");
            let task = &meta(call, "lody")["task"];
            assert_eq!(task["version"], 1);
            assert_eq!(task["kind"], kind);
            assert_eq!(task["status"], first_status);
            let id = call["toolCallId"].as_str().unwrap().to_owned();
            peer.wait_for("task completion", |m| {
                m.iter().any(|m| {
                    let u = &m["params"]["update"];
                    u["toolCallId"] == id.as_str()
                        && u["_meta"]["lody"]["task"]["status"] == "completed"
                })
            })
            .await;
            peer.wait_for("idle with no background task", |m| {
                m.last().is_some_and(|l| {
                    l["method"] == "_lody/session/activity_update"
                        && l["params"]["backgroundTaskCount"] == 0
                })
            })
            .await;
        })
        .await;
        assert_eq!(
            activity(&messages),
            [("running", 0), ("running", 1), ("idle", 1), ("idle", 0)],
            "{command}: activity also changes between prompts"
        );
        // The completion came after the prompt response.
        let response = messages
            .iter()
            .position(|m| m["result"]["stopReason"].is_string())
            .unwrap();
        let done = messages
            .iter()
            .position(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"] == "completed")
            .unwrap();
        assert!(done > response);
        if kind == "scheduled" {
            let statuses: Vec<&str> = messages
                .iter()
                .filter_map(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"].as_str())
                .collect();
            assert_eq!(statuses, ["pending", "in_progress", "completed"]);
        }
        // A task has a start time once it runs, not while it is pending.
        for m in &messages {
            let task = &m["params"]["update"]["_meta"]["lody"]["task"];
            if task.is_object() {
                let started = task.get("startedAtEpochSeconds").is_some();
                assert_eq!(started, task["status"] != "pending", "{command}: {task}");
            }
        }
    }
}

#[tokio::test]
async fn cancel_without_a_turn_stops_background_work() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/background 30").await.unwrap();
        peer.notify("session/cancel", json!({"sessionId": sid}));
        peer.wait_for("the task to fail as cancelled", |m| {
            m.iter()
                .any(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"] == "failed")
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn compact_reports_compaction_activity() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "fill the context a little")
            .await
            .unwrap();
        peer.prompt(&sid, "/compact").await.unwrap();
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        let activity = &meta(call, "lody")["activity"];
        assert_eq!(activity["version"], 1);
        assert_eq!(activity["kind"], "context_compaction");
        let before = activity["usedTokensBefore"].as_u64().unwrap();
        let done = updates
            .iter()
            .find(|u| {
                u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == call["toolCallId"]
            })
            .unwrap();
        assert_eq!(done["status"], "completed");
        let after = meta(done, "lody")["activity"]["usedTokensAfter"]
            .as_u64()
            .unwrap();
        assert!(after < before);
        // Compaction never resets the accounting lifetime.
        let usage = peer.notes("_lody/session/usage_update");
        let scopes: Vec<&Value> = usage
            .iter()
            .map(|u| &u["_meta"]["lody"]["usageScopeId"])
            .collect();
        assert_eq!(scopes[0], scopes[1]);
    })
    .await;
}

fn goals(updates: &[Value]) -> Vec<Value> {
    updates
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "session_info_update" && u["_meta"]["lody"].get("goal").is_some()
        })
        .map(|u| u["_meta"]["lody"]["goal"].clone())
        .collect()
}

#[tokio::test]
async fn goals_travel_on_prompts_and_the_control_request() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/goal set ship the parser")
            .await
            .unwrap();
        let g = goals(&peer.updates(&sid));
        assert_eq!(g.first().unwrap()["status"], "active");
        assert_eq!(g.last().unwrap()["objective"], "ship the parser");
        assert_eq!(g.last().unwrap()["iterations"], 1);

        // Status-only actions on the request, accepted mid-prompt.
        let slow = {
            let peer = peer.clone();
            let sid = sid.clone();
            tokio::spawn(async move { peer.prompt(&sid, "/slow 0.3").await })
        };
        peer.wait_for("the slow turn", |m| {
            m.iter().any(|m| {
                m["params"]["update"]["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Working for"))
            })
        })
        .await;
        let r = peer
            .ok(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "pause"}),
            )
            .await;
        assert_eq!(r["goal"]["status"], "paused");
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "end_turn");
        // Work-starting actions are refused on the request.
        let e = peer
            .call(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "set", "objective": "x"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("action"));

        // `resume` through prompt metadata starts a goal turn.
        let r = peer
            .ok(
                "session/prompt",
                json!({
                    "sessionId": sid,
                    "prompt": [{"type": "text", "text": "continue"}],
                    "_meta": {"lody": {"goalControl": {"version": 1, "action": "resume"}}}
                }),
            )
            .await;
        assert_eq!(r["stopReason"], "end_turn");
        let g = goals(&peer.updates(&sid));
        assert_eq!(g.last().unwrap()["status"], "active");
        assert_eq!(g.last().unwrap()["iterations"], 2);

        let r = peer
            .ok(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "clear"}),
            )
            .await;
        assert_eq!(r, json!({"goal": null}));
        assert_eq!(
            goals(&peer.updates(&sid)).last().unwrap(),
            &Value::Null,
            "null means no goal"
        );
    })
    .await;
}

#[tokio::test]
async fn ask_sends_a_note_only_to_clients_that_keep_notes() {
    // answerNotes advertised: the note property references the question.
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        let asks = peer.requests("elicitation/create");
        assert_eq!(asks.len(), 1);
        let req = &asks[0];
        assert_eq!(req["mode"], "form");
        assert_eq!(req["sessionId"], sid.as_str());
        let props = req["requestedSchema"]["properties"].as_object().unwrap();
        let notes: Vec<(&String, &Value)> = props
            .iter()
            .filter(|(_, p)| p["_meta"]["lody"]["elicitation"]["noteFor"].is_string())
            .collect();
        assert_eq!(notes.len(), 1);
        let target = notes[0].1["_meta"]["lody"]["elicitation"]["noteFor"]
            .as_str()
            .unwrap();
        assert!(
            props.contains_key(target),
            "the note references a question in the schema"
        );
        let required = req["requestedSchema"]["required"].as_array().unwrap();
        assert!(required.contains(&json!(target)) && !required.contains(&json!(notes[0].0)));
        let question = &req["_meta"]["lody"]["elicitation"]["questions"][0];
        assert_eq!(question["note"]["fieldId"], notes[0].0.as_str());
        let answer = peer.updates(&sid).last().cloned();
        let text = peer.final_answer(&sid);
        assert!(
            text.contains("Small change") && text.contains("Keep the public API stable."),
            "{answer:?}"
        );
    })
    .await;
    // Without answerNotes: no noteFor anywhere (the legacy custom answer instead).
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 1}}}}))
            .await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        let req = peer.requests("elicitation/create").remove(0);
        assert!(!req.to_string().contains("noteFor"));
        assert!(req.to_string().contains("customAnswerFor"));
    })
    .await;
    // Without form elicitation: nothing is asked.
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        assert!(peer.requests("elicitation/create").is_empty());
    })
    .await;
}

#[tokio::test]
async fn title_is_generated_and_tagged() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "fix the flaky login test").await.unwrap();
        peer.prompt(&sid, "/title").await.unwrap();
        let info = peer
            .updates(&sid)
            .into_iter()
            .find(|u| u["sessionUpdate"] == "session_info_update")
            .unwrap();
        assert_eq!(info["_meta"]["lody"]["titleSource"], "generated");
        let title = info["title"].as_str().unwrap().to_owned();
        assert!(title.to_lowercase().contains("login"));
        let list = peer.ok("session/list", json!({})).await;
        assert_eq!(list["sessions"][0]["title"], title.as_str());
    })
    .await;
}

#[tokio::test]
async fn cancel_ends_a_slow_turn_with_cancelled() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let started = tokio::time::Instant::now();
        let slow = peer.prompt_running(&sid, "/slow 30").await;
        peer.notify("session/cancel", json!({"sessionId": sid}));
        let r = slow.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "cancelled");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The slot is free again.
        peer.turn(&sid, "after").await;
    })
    .await;
}

#[tokio::test]
async fn cancel_request_on_the_prompt_ends_the_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let sent = peer.cx.send_request(
            UntypedMessage::new(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/slow 30"}]}),
            )
            .unwrap(),
        );
        peer.wait_for("the slow turn", |m| {
            m.iter().any(|m| m["params"]["state"] == "running")
        })
        .await;
        sent.cancel().unwrap();
        let r = tokio::time::timeout(TIMEOUT, sent.block_task())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r["stopReason"], "cancelled");
    })
    .await;
}

#[tokio::test]
async fn steer_is_injected_into_a_running_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let r = peer
            .ok("_lody/session/steer", json!({"sessionId": sid, "steerId": "s0", "prompt": [{"type": "text", "text": "x"}]}))
            .await;
        assert_eq!(r["outcome"], "failed", "nothing to steer without a turn");
        let slow = peer.prompt_running(&sid, "/slow 0.3").await;
        let r = peer
            .ok(
                "_lody/session/steer",
                json!({"sessionId": sid, "steerId": "steer-a", "prompt": [{"type": "text", "text": "use tabs"}]}),
            )
            .await;
        assert_eq!(r["outcome"], "injected");
        let r = slow.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "end_turn");
        let applied = peer.notes("_lody/session/steer_applied");
        assert_eq!(applied, [json!({"sessionId": sid, "steerId": "steer-a"})]);
        assert!(peer.final_answer(&sid).contains("use tabs"));
    })
    .await;
}

#[tokio::test]
async fn rate_limits_are_pushed_and_queryable() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let got = peer.ok("_lody/rate_limits/get", json!({})).await;
        let limits = got["rateLimits"].as_array().unwrap();
        assert!(!limits.is_empty());
        for l in limits {
            assert!(l["limitId"].is_string() && l["scope"]["providerId"].is_string());
            let windows = l["windows"].as_array().unwrap();
            assert!(
                windows.len() >= 2,
                "concurrent windows are reported separately"
            );
            for w in windows {
                let p = w["usedPercent"].as_f64().unwrap();
                assert!((0.0..=100.0).contains(&p));
                assert!(
                    w.get("windowDurationSeconds").is_some()
                        && w.get("resetsAtEpochSeconds").is_some()
                );
            }
        }
        // Requests are read in either namespace.
        let ua = peer
            .ok("_ua/rate_limits/get", json!({"modelId": "m"}))
            .await;
        assert!(ua["rateLimits"].is_array());
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/limits").await.unwrap();
        let pushed = peer.notes("_lody/rate_limits/update");
        assert_eq!(pushed.len(), 1);
        assert!(pushed[0]["rateLimits"].is_array());
    })
    .await;
}

#[tokio::test]
async fn fail_sends_an_error_notice_and_fails_the_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let e = peer.prompt(&sid, "/fail").await.unwrap_err();
        assert!(e.message.to_lowercase().contains("fail"));
        let notice = peer
            .updates(&sid)
            .into_iter()
            .find(|u| {
                u["sessionUpdate"] == "session_info_update"
                    && u["_meta"]["lody"].get("notice").is_some()
            })
            .map(|u| u["_meta"]["lody"]["notice"].clone())
            .expect("an error notice on session_info_update");
        assert_eq!(notice["level"], "error");
        assert!(notice["message"].is_string());
        peer.turn(&sid, "still here").await;
    })
    .await;
}

// ---- protocol robustness ---------------------------------------------------------

#[tokio::test]
async fn bad_params_get_invalid_params_naming_the_field() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let cases = [
            ("session/new", json!({"mcpServers": []}), "cwd"),
            (
                "session/new",
                json!({"cwd": "relative/dir", "mcpServers": []}),
                "cwd",
            ),
            ("session/prompt", json!({"sessionId": "sess-1"}), "prompt"),
            (
                "session/prompt",
                json!({"sessionId": "sess-1", "prompt": "text"}),
                "prompt",
            ),
            (
                "session/load",
                json!({"cwd": "/tmp", "mcpServers": []}),
                "sessionId",
            ),
            (
                "_lody/session/steer",
                json!({"sessionId": "sess-1", "prompt": []}),
                "steerId",
            ),
            (
                "_lody/subagents/output",
                json!({"sessionId": "sess-1", "taskId": 5}),
                "taskId",
            ),
            (
                "session/set_config_option",
                json!({"sessionId": "sess-1", "configId": "nope", "value": true}),
                "configId",
            ),
        ];
        peer.new_session().await;
        for (method, params, field) in cases {
            let e = peer.call(method, params.clone()).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{method} {params}");
            assert!(
                e.message.contains(field),
                "{method}: {:?} should name {field}",
                e.message
            );
        }
        // The connection is still up and serving.
        let sid = peer.new_session().await;
        peer.turn(&sid, "ok").await;
    })
    .await;
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        for method in [
            "_x/anything",
            "_lody/no/such/method",
            "_ua/session/nope",
            "session/unknown",
        ] {
            let e = peer.call(method, json!({})).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
        }
        // Unknown notifications are ignored.
        peer.notify("_x/notify", json!({"a": 1}));
        peer.notify("session/cancel", json!({"sessionId": "no-such-session"}));
        let sid = peer.new_session().await;
        peer.turn(&sid, "ok").await;
    })
    .await;
}

#[tokio::test]
async fn unknown_sessions_are_resource_not_found() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        for (method, params) in [
            (
                "session/prompt",
                json!({"sessionId": "ghost", "prompt": [{"type": "text", "text": "x"}]}),
            ),
            (
                "session/load",
                json!({"sessionId": "ghost", "cwd": "/tmp", "mcpServers": []}),
            ),
            ("session/close", json!({"sessionId": "ghost"})),
            ("_lody/subagents/list", json!({"sessionId": "ghost"})),
        ] {
            let e = peer.call(method, params).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{method}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_second_prompt_in_flight_is_refused() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let other = peer.new_session().await;
        let slow = peer.prompt_running(&sid, "/slow 0.3").await;
        let e = peer.prompt(&sid, "me too").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
        assert!(e.message.contains("in flight"), "{}", e.message);
        // Another session is independent.
        peer.turn(&other, "meanwhile").await;
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "end_turn");
    })
    .await;
}

#[tokio::test]
async fn two_hundred_sessions_share_one_connection() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let mut ids = Vec::new();
        for _ in 0..200 {
            ids.push(peer.new_session().await);
        }
        let prompts = ids.iter().enumerate().map(|(i, sid)| {
            let peer = peer.clone();
            let sid = sid.clone();
            async move {
                let text = if i % 10 == 0 {
                    format!("/slow 0.05 {i}")
                } else {
                    format!("message {i}")
                };
                let r = peer.prompt(&sid, &text).await.unwrap();
                (sid, text, r)
            }
        });
        let results = futures::future::join_all(prompts).await;
        let mut finals: std::collections::HashMap<String, Vec<String>> = Default::default();
        for m in peer.messages() {
            let u = &m["params"]["update"];
            if m["method"] == "session/update"
                && u["_meta"]["lody"]["messagePhase"] == "final_answer"
            {
                finals
                    .entry(m["params"]["sessionId"].as_str().unwrap().to_owned())
                    .or_default()
                    .push(u["content"]["text"].as_str().unwrap().to_owned());
            }
        }
        let mut turn_ids = std::collections::HashSet::new();
        for (sid, text, r) in &results {
            assert_eq!(r["stopReason"], "end_turn");
            assert!(turn_ids.insert(r["_meta"]["lody"]["turnId"].as_str().unwrap().to_owned()));
            let finals = &finals[sid];
            assert_eq!(finals.len(), 1, "{sid}");
            if !text.starts_with('/') {
                assert_eq!(
                    finals[0],
                    format!("You said: {text}"),
                    "{sid} got only its own answer"
                );
            }
        }
        let list = peer.ok("session/list", json!({})).await;
        assert_eq!(list["sessions"].as_array().unwrap().len(), 200);
    })
    .await;
}

// ---- session lifecycle ---------------------------------------------------------------

#[tokio::test]
async fn load_replays_resume_does_not_and_close_ends_the_lifetime() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "first").await.unwrap();
        let scope1 =
            peer.notes("_lody/session/usage_update")[0]["_meta"]["lody"]["usageScopeId"].clone();
        let before = peer.updates(&sid).len();
        peer.ok(
            "session/resume",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        assert_eq!(peer.updates(&sid).len(), before, "resume replays nothing");
        peer.ok(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        let replayed: Vec<Value> = peer.updates(&sid).split_off(before);
        assert_eq!(
            kinds(&replayed),
            ["user_message_chunk", "agent_message_chunk"]
        );
        assert_eq!(replayed[0]["content"]["text"], "first");

        assert_eq!(
            peer.ok("session/close", json!({"sessionId": sid})).await,
            json!({})
        );
        let e = peer.prompt(&sid, "closed?").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND);
        // Loading reopens it with a new accounting lifetime and a new scope.
        peer.ok(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        peer.prompt(&sid, "second").await.unwrap();
        let usage = peer.notes("_lody/session/usage_update");
        let last = usage.last().unwrap();
        assert_ne!(last["_meta"]["lody"]["usageScopeId"], scope1);
        assert_eq!(
            last["delta"]["modelUsage"], last["modelUsage"],
            "totals restart from zero"
        );
        let list = peer.ok("session/list", json!({"cwd": "/tmp"})).await;
        assert_eq!(list["sessions"][0]["sessionId"], sid.as_str());
        assert!(
            list["sessions"][0]["updatedAt"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        let list = peer.ok("session/list", json!({"cwd": "/elsewhere"})).await;
        assert_eq!(list["sessions"], json!([]));
    })
    .await;
}

#[tokio::test]
async fn close_cancels_the_running_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let slow = peer.prompt_running(&sid, "/slow 30").await;
        peer.ok("session/close", json!({"sessionId": sid})).await;
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "cancelled");
    })
    .await;
}

#[tokio::test]
async fn fork_copies_history_up_to_the_requested_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let t1 = peer.prompt(&sid, "one").await.unwrap()["_meta"]["lody"]["turnId"].clone();
        peer.prompt(&sid, "two").await.unwrap();
        let fork = peer
            .ok(
                "session/fork",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [], "_meta": {"lody": {"forkAtTurn": {"version": 1, "turnId": t1}}}}),
            )
            .await;
        let child = fork["sessionId"].as_str().unwrap().to_owned();
        assert_ne!(child, sid);
        peer.ok("session/load", json!({"sessionId": child, "cwd": "/tmp", "mcpServers": []})).await;
        let texts: Vec<String> = peer
            .updates(&child)
            .iter()
            .filter(|u| u["sessionUpdate"] == "user_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(texts, ["one"]);
        let e = peer
            .call(
                "session/fork",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [], "_meta": {"lody": {"forkAtTurn": {"version": 1, "turnId": "turn-999"}}}}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("forkAtTurn"));
        // The fork is a live session of its own.
        peer.turn(&child, "three").await;
    })
    .await;
}

#[tokio::test]
async fn worktree_project_and_session_config_are_honoured() {
    let dir = std::env::temp_dir();
    let root = dir.to_str().unwrap().to_owned();
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let r = peer
            .ok(
                "session/new",
                json!({
                    "cwd": "/tmp", "mcpServers": [],
                    "_meta": {"lody": {
                        "worktreeProject": {"version": 1, "originProjectPath": root},
                        "sessionConfig": {"version": 1, "configOptionValues": {"plan_mode": true}}
                    }}
                }),
            )
            .await;
        assert_eq!(r["_meta"]["lody"]["worktreeProject"]["originProjectPath"], root.as_str());
        let plan = r["configOptions"].as_array().unwrap().iter().find(|o| o["id"] == "plan_mode").unwrap();
        assert_eq!(plan["type"], "boolean");
        assert_eq!(plan["currentValue"], true);
        let sid = r["sessionId"].as_str().unwrap().to_owned();
        peer.prompt(&sid, "change things").await.unwrap();
        assert!(peer.final_answer(&sid).contains("Plan mode"));
        let r = peer
            .ok("session/set_config_option", json!({"sessionId": sid, "configId": "plan_mode", "type": "boolean", "value": false}))
            .await;
        assert_eq!(r["configOptions"][0]["currentValue"], false);
        peer.prompt(&sid, "change things").await.unwrap();
        assert!(!peer.final_answer(&sid).contains("Plan mode"));

        // Load keeps the existing project assignment.
        let r = peer
            .ok(
                "session/load",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [],
                       "_meta": {"lody": {"worktreeProject": {"version": 1, "originProjectPath": "/"}}}}),
            )
            .await;
        assert_eq!(r["_meta"]["lody"]["worktreeProject"]["originProjectPath"], root.as_str());

        // An unresolvable project root is an error, not a silent success.
        for bad in ["/definitely/not/a/real/dir", "relative/path"] {
            let e = peer
                .call(
                    "session/new",
                    json!({"cwd": "/tmp", "mcpServers": [],
                           "_meta": {"lody": {"worktreeProject": {"version": 1, "originProjectPath": bad}}}}),
                )
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
            assert!(e.message.contains("worktreeProject"), "{}", e.message);
        }
        let e = peer
            .call(
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [],
                       "_meta": {"lody": {"sessionConfig": {"version": 1, "configOptionValues": {"plan_mode": "yes"}}}}}),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("plan_mode"));
    })
    .await;
}

#[tokio::test]
async fn history_read_replays_the_transcript() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "remember me").await.unwrap();
        let before = peer.updates(&sid).len();
        assert_eq!(
            peer.ok("_lody/session/history/read", json!({"sessionId": sid}))
                .await,
            json!({})
        );
        let replayed = peer.updates(&sid).split_off(before);
        assert_eq!(replayed[0]["content"]["text"], "remember me");
        // Replay contributes nothing to usage.
        assert_eq!(peer.notes("_lody/session/usage_update").len(), 1);
    })
    .await;
}

// ---- EOF ---------------------------------------------------------------------------

/// A raw JSON-lines peer: the test writes requests and reads every line.
struct Raw {
    tx: Option<mpsc::UnboundedSender<String>>,
    rx: mpsc::UnboundedReceiver<String>,
    seen: Vec<Value>,
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
    fn send(&self, v: Value) {
        self.tx
            .as_ref()
            .unwrap()
            .unbounded_send(v.to_string())
            .unwrap();
    }

    /// Reads until a line matches `pred`.
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
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

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
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
    assert!(!help.contains("SERVE.md"), "{help}");
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
