//! `serve`'s ACP v2 face: a client whose `initialize` asks for protocol
//! version 2 (or later) is answered in v2, by the same agent.
//!
//! The agent itself speaks v1 ([`super::run`]); this face stands between it
//! and a v2 client and rewrites exactly what differs between the two
//! versions, building every v2 message from the SDK's v2 types:
//!
//! - `initialize`: the client's `capabilities`/`info` are also given to the
//!   agent as v1's `clientCapabilities`/`clientInfo`; the answer becomes a
//!   v2 [`InitializeResponse`] (`protocolVersion: 2`, `info`,
//!   `capabilities` with the prompt and fork capabilities and the same
//!   `_meta`, so the extensions negotiate as in v1).
//! - `session/prompt`: the answer is a receipt ([`PromptResponse`] with a
//!   `messageId`), sent when the agent starts the turn (its first message
//!   about the session) and followed by the `user_message` echo and a
//!   `running` [`StateUpdate`]; the turn's end is an `idle` state update
//!   with the stop reason, the usage and the result's `_meta`. A prompt
//!   that the agent refuses gets its error and no receipt; one that fails
//!   after its receipt ends with an `idle` whose stop reason is `error`,
//!   carrying the error. A prompt sent
//!   while a turn runs is held and inserted when that turn goes idle (as
//!   the v2 schema describes a held prompt); `session/cancel` and
//!   `session/close` answer the held ones with an error.
//! - `session/resume`: an `idle` snapshot precedes the answer.
//! - `session/update`: `tool_call` becomes `tool_call_update` (v2's upsert),
//!   `plan` becomes `plan_update` with one plan per session, and message
//!   chunks get the `messageId` v2 requires (one per message kind and turn).
//!
//! Everything else (extension methods and notifications, permission
//! requests and their answers, the other session methods) passes as it is:
//! the extensions ride on v2 exactly as on v1.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Lines;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::schema::{
    AgentCapabilities, ErrorStopReason, IdleStateUpdate, Implementation, InitializeResponse,
    PromptResponse, RunningStateUpdate, SessionUpdate, StateUpdate, StopReason,
    UpdateSessionNotification, Usage, UserMessage,
};
use futures::channel::mpsc::unbounded;
use futures::{Sink, Stream, StreamExt};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::ServeOptions;

/// Whether `line` is an `initialize` request asking for protocol version 2
/// or later.
pub(crate) fn asks_for_v2(line: &str) -> bool {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    m.get("method").and_then(Value::as_str) == Some("initialize")
        && m.get("params")
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_u64)
            .is_some_and(|v| v >= 2)
}

/// Where a line the face wrote goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Out {
    /// To the v1 agent.
    Agent(String),
    /// To the v2 client.
    Client(String),
}

/// A client request whose answer the face rewrites.
#[derive(Debug)]
enum Pending {
    Initialize,
    Prompt(String),
    Resume(String),
}

/// A prompt the agent is running.
#[derive(Debug)]
struct Turn {
    /// The prompt request's `id`.
    id: Value,
    /// Its content, echoed as the `user_message` when it is accepted.
    prompt: Value,
    /// Whether the receipt went out.
    accepted: bool,
    /// The inserted user message's id (the receipt's `messageId`).
    message_id: String,
}

#[derive(Debug, Default)]
struct Session {
    turn: Option<Turn>,
    /// Prompts sent while a turn ran, in order (whole requests).
    held: VecDeque<Map<String, Value>>,
    /// The id of the current agent message and thought (by update tag) of
    /// the turn; cleared when the turn ends.
    messages: HashMap<&'static str, String>,
}

/// The translation state of one connection.
#[derive(Debug, Default)]
pub(crate) struct Face {
    pending: HashMap<String, Pending>,
    sessions: HashMap<String, Session>,
    next_id: u64,
}

fn line(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn notification(session_id: &str, update: SessionUpdate) -> String {
    line(&json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": UpdateSessionNotification::new(session_id.to_owned(), update),
    }))
}

fn response(id: &Value, result: impl Serialize) -> String {
    line(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

fn session_of(params: Option<&Value>) -> Option<String> {
    params?.get("sessionId")?.as_str().map(str::to_owned)
}

impl Face {
    fn mint(&mut self, what: &str) -> String {
        self.next_id += 1;
        format!("{what}-{}", self.next_id)
    }

    /// Translates one line from the client.
    pub(crate) fn client_line(&mut self, text: &str) -> Vec<Out> {
        let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(text) else {
            return vec![Out::Agent(text.to_owned())];
        };
        let method = m.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = m.get("id").cloned();
        let session = session_of(m.get("params"));
        match (method.as_deref(), id, session) {
            (Some("initialize"), Some(id), _) => {
                self.pending.insert(id_key(&id), Pending::Initialize);
                if let Some(Value::Object(p)) = m.get_mut("params") {
                    p.insert("protocolVersion".into(), json!(1));
                    for (v2, v1) in [
                        ("capabilities", "clientCapabilities"),
                        ("info", "clientInfo"),
                    ] {
                        if let Some(v) = p.get(v2).cloned() {
                            p.entry(v1).or_insert(v);
                        }
                    }
                }
                vec![Out::Agent(line(&m))]
            }
            (Some("session/prompt"), Some(id), Some(sid)) => {
                let session = self.sessions.entry(sid.clone()).or_default();
                if session.turn.is_some() {
                    session.held.push_back(m);
                    return Vec::new();
                }
                vec![self.start(&sid, id, m)]
            }
            (Some("session/resume"), Some(id), Some(sid)) => {
                self.pending.insert(id_key(&id), Pending::Resume(sid));
                vec![Out::Agent(text.to_owned())]
            }
            (Some(m @ ("session/cancel" | "session/close")), _, Some(sid)) => {
                let mut out = self.refuse_held(&sid, m);
                out.insert(0, Out::Agent(text.to_owned()));
                out
            }
            _ => vec![Out::Agent(text.to_owned())],
        }
    }

    /// Hands a prompt to the agent as the session's running turn.
    fn start(&mut self, sid: &str, id: Value, request: Map<String, Value>) -> Out {
        let message_id = self.mint("msg");
        self.pending
            .insert(id_key(&id), Pending::Prompt(sid.to_owned()));
        let prompt = request
            .get("params")
            .and_then(|p| p.get("prompt"))
            .cloned()
            .unwrap_or(Value::Null);
        let session = self.sessions.entry(sid.to_owned()).or_default();
        // A new turn's messages get new ids.
        session.messages.clear();
        session.turn = Some(Turn {
            id,
            prompt,
            accepted: false,
            message_id,
        });
        Out::Agent(line(&request))
    }

    /// Answers the prompts held for `sid` with an error: `session/cancel`
    /// and `session/close` cancel them before they are inserted.
    fn refuse_held(&mut self, sid: &str, why: &str) -> Vec<Out> {
        let Some(session) = self.sessions.get_mut(sid) else {
            return Vec::new();
        };
        session
            .held
            .drain(..)
            .filter_map(|m| m.get("id").cloned())
            .map(|id| {
                Out::Client(line(&json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": -32800,
                        "message": format!("{why} arrived before this prompt was inserted"),
                    },
                })))
            })
            .collect()
    }

    /// The receipt, the echo and `running`, once per turn, before the
    /// first message about the turn's session.
    fn accept(&mut self, sid: &str) -> Vec<Out> {
        let Some(turn) = self
            .sessions
            .get_mut(sid)
            .and_then(|s| s.turn.as_mut())
            .filter(|t| !t.accepted)
        else {
            return Vec::new();
        };
        turn.accepted = true;
        let content = serde_json::from_value(turn.prompt.clone()).ok();
        let echo = UserMessage::new(turn.message_id.clone()).content(content);
        vec![
            Out::Client(response(
                &turn.id,
                PromptResponse::new(turn.message_id.clone()),
            )),
            Out::Client(notification(sid, SessionUpdate::UserMessage(echo))),
            Out::Client(notification(
                sid,
                SessionUpdate::StateUpdate(StateUpdate::Running(RunningStateUpdate::new())),
            )),
        ]
    }

    /// Translates one line from the agent.
    pub(crate) fn agent_line(&mut self, text: &str) -> Vec<Out> {
        let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(text) else {
            return vec![Out::Client(text.to_owned())];
        };
        let pending = match (m.get("method"), m.get("id")) {
            (None, Some(id)) => self.pending.remove(&id_key(id)),
            _ => None,
        };
        match pending {
            Some(Pending::Initialize) => return vec![Out::Client(initialize_answer(m))],
            Some(Pending::Prompt(sid)) => return self.turn_end(&sid, m),
            Some(Pending::Resume(sid)) => {
                let idle = StateUpdate::Idle(IdleStateUpdate::new());
                return vec![
                    Out::Client(notification(&sid, SessionUpdate::StateUpdate(idle))),
                    Out::Client(text.to_owned()),
                ];
            }
            None => {}
        }
        let Some(sid) = session_of(m.get("params")) else {
            return vec![Out::Client(text.to_owned())];
        };
        let mut out = self.accept(&sid);
        let rewritten = (m.get("method").and_then(Value::as_str) == Some("session/update"))
            .then(|| m.get_mut("params").and_then(|p| p.get_mut("update")))
            .flatten()
            .is_some_and(|u| self.update(&sid, u));
        out.push(Out::Client(if rewritten {
            line(&m)
        } else {
            text.to_owned()
        }));
        out
    }

    /// Rewrites a v1 `session/update` into its v2 form; whether it changed.
    fn update(&mut self, sid: &str, update: &mut Value) -> bool {
        let Some(u) = update.as_object_mut() else {
            return false;
        };
        let tag = u.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        let kind = match tag {
            "agent_message_chunk" => "agent",
            "agent_thought_chunk" => "thought",
            "user_message_chunk" => "user",
            "tool_call" => {
                u.insert("sessionUpdate".into(), json!("tool_call_update"));
                return true;
            }
            "plan" => {
                let entries = u.remove("entries").unwrap_or_else(|| json!([]));
                u.insert("sessionUpdate".into(), json!("plan_update"));
                u.insert(
                    "plan".into(),
                    json!({"type": "items", "planId": format!("plan-{sid}"), "entries": entries}),
                );
                return true;
            }
            _ => return false,
        };
        if u.get("messageId").is_some_and(Value::is_string) {
            return false;
        }
        let next = self.mint("msg");
        let session = self.sessions.entry(sid.to_owned()).or_default();
        let id = session.messages.entry(kind).or_insert(next).clone();
        u.insert("messageId".into(), json!(id));
        true
    }

    /// The agent answered a prompt: the turn ends with `idle`, or (refused
    /// before it began) the error goes back as it is. The next held prompt
    /// of the session is inserted.
    fn turn_end(&mut self, sid: &str, mut answer: Map<String, Value>) -> Vec<Out> {
        let accepted = self
            .sessions
            .get(sid)
            .and_then(|s| s.turn.as_ref())
            .is_some_and(|t| t.accepted);
        let mut out = Vec::new();
        match answer.remove("result") {
            Some(Value::Object(mut result)) => {
                out.extend(self.accept(sid));
                let stop = result.remove("stopReason").and_then(|s| {
                    serde_json::from_value::<StopReason>(json!({"stopReason": s})).ok()
                });
                let usage = result
                    .remove("usage")
                    .and_then(|u| serde_json::from_value::<Usage>(u).ok());
                let meta = match result.remove("_meta") {
                    Some(Value::Object(meta)) => Some(meta),
                    _ => None,
                };
                let idle = IdleStateUpdate::new()
                    .stop_reason(stop)
                    .usage(usage)
                    .meta(meta);
                out.push(Out::Client(notification(
                    sid,
                    SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
                )));
            }
            other => {
                if let Some(result) = other {
                    answer.insert("result".into(), result);
                }
                if accepted {
                    // The turn failed after its receipt: the receipt stays
                    // its answer, and the idle's stop reason is `error`
                    // with the error object.
                    let error = answer
                        .get("error")
                        .and_then(|e| serde_json::from_value(e.clone()).ok());
                    let stop = StopReason::Error(ErrorStopReason::new().error(error));
                    let idle = IdleStateUpdate::new().stop_reason(stop);
                    out.push(Out::Client(notification(
                        sid,
                        SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
                    )));
                } else {
                    out.push(Out::Client(line(&answer)));
                }
            }
        }
        // The session's next held prompt is inserted; with none, nothing
        // of the session is kept (a long connection's closed sessions
        // leave nothing behind).
        match self.sessions.get_mut(sid).map(|s| s.held.pop_front()) {
            Some(Some(next)) => {
                let id = next.get("id").cloned().unwrap_or(Value::Null);
                out.push(self.start(sid, id, next));
            }
            _ => {
                self.sessions.remove(sid);
            }
        }
        out
    }
}

/// A v1 `initialize` answer as v2's.
fn initialize_answer(mut m: Map<String, Value>) -> String {
    let Some(Value::Object(v1)) = m.remove("result") else {
        return line(&m);
    };
    let info = v1
        .get("agentInfo")
        .and_then(|i| serde_json::from_value::<Implementation>(i.clone()).ok())
        .unwrap_or_else(|| Implementation::new("acp-ext-serve", env!("CARGO_PKG_VERSION")));
    let caps = v1.get("agentCapabilities");
    let mut session = Map::new();
    if let Some(Value::Object(prompt)) = caps.and_then(|c| c.get("promptCapabilities")) {
        // v1's booleans are v2's objects.
        let prompt: Map<String, Value> = prompt
            .iter()
            .filter(|(k, v)| !k.starts_with('_') && v.as_bool() == Some(true))
            .map(|(k, _)| (k.clone(), json!({})))
            .collect();
        session.insert("prompt".into(), Value::Object(prompt));
    }
    if caps
        .and_then(|c| c.get("sessionCapabilities"))
        .and_then(|s| s.get("fork"))
        .is_some()
    {
        session.insert("fork".into(), json!({}));
    }
    let mut capabilities = json!({"session": session});
    if let Some(meta) = caps.and_then(|c| c.get("_meta")) {
        capabilities["_meta"] = meta.clone();
    }
    let capabilities: AgentCapabilities = serde_json::from_value(capabilities).unwrap_or_default();
    let meta = match v1.get("_meta") {
        Some(Value::Object(meta)) => Some(meta.clone()),
        _ => None,
    };
    let answer = InitializeResponse::new(ProtocolVersion::from(2_u16), info)
        .capabilities(capabilities)
        .meta(meta);
    response(m.get("id").unwrap_or(&Value::Null), answer)
}

/// Serves one v2 client whose first line is `first`, the rest of its lines
/// coming from `incoming` and the answers going to `outgoing`.
pub(crate) async fn run(
    options: ServeOptions,
    first: String,
    incoming: impl Stream<Item = io::Result<String>> + Send + Unpin + 'static,
    outgoing: impl Sink<String, Error = io::Error> + Send + Unpin + 'static,
) -> anyhow::Result<()> {
    let face = Arc::new(Mutex::new(Face::default()));
    let (to_agent, agent_in) = unbounded::<io::Result<String>>();
    let (to_client, client_out) = unbounded::<String>();
    let route = {
        let (to_agent, to_client) = (to_agent.clone(), to_client.clone());
        move |outs: Vec<Out>| {
            for out in outs {
                // A closed channel means that side has gone: nothing to do.
                let _ = match out {
                    Out::Agent(l) => to_agent.unbounded_send(Ok(l)).map_err(drop),
                    Out::Client(l) => to_client.unbounded_send(l).map_err(drop),
                };
            }
        }
    };
    let agent_out = {
        let (face, route) = (face.clone(), route.clone());
        futures::sink::unfold((), move |(), l: String| {
            let outs = face
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .agent_line(&l);
            route(outs);
            async { Ok::<_, io::Error>(()) }
        })
    };
    let reader = {
        let to_agent = to_agent.clone();
        async move {
            let mut lines = futures::stream::iter([Ok(first)]).chain(incoming);
            while let Some(Ok(l)) = lines.next().await {
                let outs = face
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .client_line(&l);
                route(outs);
            }
            // The client's end of input is the agent's.
            to_agent.close_channel();
        }
    };
    let agent = async move {
        let result = super::run(options, Lines::new(Box::pin(agent_out), agent_in)).await;
        to_client.close_channel();
        result
    };
    let writer = client_out.map(Ok).forward(outgoing);
    let ((), result, written) = futures::join!(reader, agent, writer);
    drop(to_agent);
    if let Err(e) = written {
        eprintln!("acp-ext serve: connection ended: {e}");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `outs` going to the client (`to_client`) or to the
    /// agent, as JSON.
    fn lines_to(outs: &[Out], to_client: bool) -> Vec<Value> {
        outs.iter()
            .filter_map(|o| match o {
                Out::Client(l) if to_client => serde_json::from_str(l).ok(),
                Out::Agent(l) if !to_client => serde_json::from_str(l).ok(),
                _ => None,
            })
            .collect()
    }

    fn client(outs: &[Out]) -> Vec<Value> {
        lines_to(outs, true)
    }

    fn agent(outs: &[Out]) -> Vec<Value> {
        lines_to(outs, false)
    }

    fn prompt(id: u64, sid: &str, text: &str) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    }

    #[test]
    fn asks_for_v2_reads_the_requested_version() {
        let init = |v: Value| {
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": v}})
                .to_string()
        };
        assert!(asks_for_v2(&init(json!(2))));
        assert!(asks_for_v2(&init(json!(3))));
        assert!(!asks_for_v2(&init(json!(1))));
        assert!(!asks_for_v2(&init(json!("2"))));
        assert!(!asks_for_v2("not json"));
        assert!(!asks_for_v2(
            r#"{"method":"session/new","params":{"protocolVersion":2}}"#
        ));
    }

    #[test]
    fn initialize_goes_to_the_agent_as_v1_and_comes_back_as_v2() {
        let mut face = Face::default();
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 2, "info": {"name": "c", "version": "1"},
            "capabilities": {"_meta": {"lody": {"usage": {"version": 1}}}}}});
        let to_agent = agent(&face.client_line(&request.to_string()));
        let params = &to_agent[0]["params"];
        assert_eq!(params["protocolVersion"], 1);
        assert_eq!(
            params["clientCapabilities"],
            request["params"]["capabilities"]
        );
        assert_eq!(params["clientInfo"]["name"], "c");

        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": 1, "agentInfo": {"name": "acp-ext-serve", "version": "9"},
            "agentCapabilities": {"loadSession": true,
                "promptCapabilities": {"image": false, "embeddedContext": true},
                "sessionCapabilities": {"fork": {}, "list": {}},
                "_meta": {"lody": {"usage": {"version": 1}}}}}});
        let back = client(&face.agent_line(&answer.to_string()));
        assert_eq!(
            back,
            [json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": 2,
                "info": {"name": "acp-ext-serve", "version": "9"},
                "capabilities": {
                    "session": {"prompt": {"embeddedContext": {}}, "fork": {}},
                    "_meta": {"lody": {"usage": {"version": 1}}}}}})]
        );
    }

    #[test]
    fn a_prompt_is_a_receipt_then_updates_then_idle() {
        let mut face = Face::default();
        let sent = face.client_line(&prompt(5, "s", "hi"));
        assert_eq!(
            agent(&sent)[0]["id"],
            5,
            "the prompt goes to the agent as it is"
        );
        assert!(
            client(&sent).is_empty(),
            "no receipt before the agent starts"
        );

        let chunk = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}}});
        let first = client(&face.agent_line(&chunk.to_string()));
        assert_eq!(first.len(), 4);
        let message_id = first[0]["result"]["messageId"].as_str().unwrap().to_owned();
        assert_eq!(first[0]["id"], 5);
        assert_eq!(
            first[1]["params"]["update"]["sessionUpdate"],
            "user_message"
        );
        assert_eq!(
            first[1]["params"]["update"]["messageId"],
            message_id.as_str()
        );
        assert_eq!(first[1]["params"]["update"]["content"][0]["text"], "hi");
        assert_eq!(
            first[2]["params"]["update"],
            json!({"sessionUpdate": "state_update", "state": "running"})
        );
        let chunk_id = first[3]["params"]["update"]["messageId"].clone();
        assert!(chunk_id.is_string());
        assert_ne!(chunk_id, json!(message_id));
        // The turn's next chunk is the same message; the receipt is not repeated.
        let second = client(&face.agent_line(&chunk.to_string()));
        assert_eq!(second.len(), 1);
        assert_eq!(second[0]["params"]["update"]["messageId"], chunk_id);

        let tool = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read"}}});
        let tool = client(&face.agent_line(&tool.to_string()));
        assert_eq!(
            tool[0]["params"]["update"]["sessionUpdate"],
            "tool_call_update"
        );
        let plan = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "plan", "entries": [{"content": "x", "priority": "high", "status": "pending"}]}}});
        let plan = client(&face.agent_line(&plan.to_string()));
        assert_eq!(
            plan[0]["params"]["update"],
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "plan-s",
                "entries": [{"content": "x", "priority": "high", "status": "pending"}]}})
        );

        let done = json!({"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn",
            "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1},
            "_meta": {"lody": {"turnId": "turn-1"}}}});
        let end = client(&face.agent_line(&done.to_string()));
        assert_eq!(
            end,
            [
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                    "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1},
                    "_meta": {"lody": {"turnId": "turn-1"}}}}})
            ]
        );
    }

    #[test]
    fn a_refused_prompt_gets_its_error_and_no_receipt() {
        let mut face = Face::default();
        face.client_line(&prompt(1, "s", "hi"));
        let refusal =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no"}});
        assert_eq!(client(&face.agent_line(&refusal.to_string())), [refusal]);
    }

    #[test]
    fn a_turn_that_fails_after_its_receipt_ends_idle_with_error() {
        let mut face = Face::default();
        face.client_line(&prompt(1, "s", "hi"));
        let note = json!({"jsonrpc": "2.0", "method": "_lody/session/activity_update",
            "params": {"sessionId": "s", "level": "busy"}});
        assert_eq!(
            client(&face.agent_line(&note.to_string()))[0]["id"],
            1,
            "receipt first"
        );
        let failure =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}});
        assert_eq!(
            client(&face.agent_line(&failure.to_string())),
            [
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "error",
                    "error": {"code": -32603, "message": "boom"}}}})
            ]
        );
    }

    #[test]
    fn a_prompt_during_a_turn_is_held_until_idle_and_cancel_refuses_the_rest() {
        let mut face = Face::default();
        face.client_line(&prompt(1, "s", "one"));
        assert!(face.client_line(&prompt(2, "s", "two")).is_empty(), "held");
        assert!(
            face.client_line(&prompt(3, "s", "three")).is_empty(),
            "held"
        );
        let done = |id: u64, stop: &str| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": stop}}).to_string()
        };
        let outs = face.agent_line(&done(1, "end_turn"));
        let c = client(&outs);
        assert_eq!(
            c[0]["id"], 1,
            "the receipt of a turn that sent nothing comes at its end"
        );
        assert_eq!(c.last().unwrap()["params"]["update"]["state"], "idle");
        assert_eq!(agent(&outs)[0]["id"], 2, "the next held prompt is inserted");

        // Each turn's message has its own id, held turns included.
        let chunk = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}}})
        .to_string();
        let message_id = |face: &mut Face| {
            client(&face.agent_line(&chunk)).last().unwrap()["params"]["update"]["messageId"]
                .clone()
        };
        let second = message_id(&mut face);
        assert_eq!(agent(&face.agent_line(&done(2, "end_turn")))[0]["id"], 3);
        assert_ne!(second, message_id(&mut face));

        assert!(face.client_line(&prompt(4, "s", "four")).is_empty(), "held");
        let cancel =
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}});
        let outs = face.client_line(&cancel.to_string());
        assert_eq!(agent(&outs)[0]["method"], "session/cancel");
        let refused = client(&outs);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0]["id"], 4);
        assert_eq!(refused[0]["error"]["code"], -32800);
        // The last turn's end leaves nothing of the session behind.
        face.agent_line(&done(3, "cancelled"));
        assert!(face.sessions.is_empty(), "{:?}", face.sessions);
    }

    #[test]
    fn resume_answers_after_an_idle_snapshot_and_extensions_pass() {
        let mut face = Face::default();
        let resume = json!({"jsonrpc": "2.0", "id": 4, "method": "session/resume",
            "params": {"sessionId": "s", "cwd": "/"}});
        face.client_line(&resume.to_string());
        let answer = json!({"jsonrpc": "2.0", "id": 4, "result": {}});
        let c = client(&face.agent_line(&answer.to_string()));
        assert_eq!(
            c[0]["params"]["update"],
            json!({"sessionUpdate": "state_update", "state": "idle"})
        );
        assert_eq!(c[1], answer);

        let ext = r#"{"jsonrpc":"2.0","method":"_lody/session/usage_update","params":{"sessionId":"x","b":1}}"#;
        assert_eq!(face.agent_line(ext), [Out::Client(ext.to_owned())]);
        let ext = r#"{"jsonrpc":"2.0","id":9,"method":"_lody/rate_limits/get","params":{}}"#;
        assert_eq!(face.client_line(ext), [Out::Agent(ext.to_owned())]);
    }
}
