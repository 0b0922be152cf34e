//! The bridge's translation, line by line, with no process: what each line
//! from the client or the agent becomes (see the [module docs](super)).

// No line a peer sends may panic what reads it: denied here.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::collections::HashMap;

use acp_extension_core::capabilities::{
    AgentExtensionCapabilities, ClientExtensionCapabilities, ConfigPolicy, Feature, FeatureOptions,
    RateLimitsCapability, Side, SteeringCapability, SteeringTransport, UpstreamTurn,
    VersionOneCapability,
};
use acp_extension_core::connection::{
    Answer, Call, Connection, Direction, Line, Message, Observer, Pairing, PendingRequests, Reads,
};
use acp_extension_core::methods::{ContractMethod, contract_method, method_kind};
use acp_extension_core::namespace::Namespace;
use acp_extension_core::negotiation::{advertised_namespaces, write_namespace};
use acp_extension_core::standard::{
    CoreSubagents, GOAL_METHOD, STEERING_METHOD, StandardSubagents, SteeringRequest,
    SteeringResponse, advertises_steering, claude_rate_limits, client_reads_subagent_updates,
    prompt_model_usage, standard_prompt_usage,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::dialect::ClientDialect;

/// What the client reads, as `--to` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BridgeTarget {
    /// ACP Extension Core: `subagents/event`, `_<ns>/session/steer`.
    Core,
    /// Standard ACP: `subagent_update` and child sessions,
    /// `_session/steering`, `_session/goal`.
    Standard,
    /// What the client's `initialize` advertises: Core when it advertised
    /// `subagentEvents`, standard when it advertised standard `subagents`,
    /// otherwise nothing is translated.
    #[default]
    Auto,
}

crate::choice::choices!(BridgeTarget, "bridge target" {
    Core = "core",
    Standard = "standard",
    Auto = "auto",
});

/// Where the bridge translates, once both halves of `initialize` were seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Nothing to translate (or `initialize` not seen yet): every line
    /// passes as it is.
    Pass,
    /// A Core agent for a client of standard ACP.
    ToStandard,
    /// An agent of standard ACP for a Core client.
    ToCore,
}

impl Mode {
    /// `pass`, `to_standard` or `to_core`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Pass => "pass",
            Mode::ToStandard => "to_standard",
            Mode::ToCore => "to_core",
        }
    }
}

/// One line the bridge writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// To the agent's stdin.
    ToAgent(Vec<u8>),
    /// To the client (this process's stdout).
    ToClient(Vec<u8>),
}

/// A client request whose answer the bridge translates (the connection
/// pairs the answer with the request; this says what the bridge made of
/// it).
#[derive(Debug, Clone, Copy)]
enum Answered {
    /// `_session/steering` sent on as a Core steer.
    Steering { prompt_required: bool },
    /// `_session/goal` sent on as a Core goal request.
    Goal,
    /// A Core steer sent on as `_session/steering`.
    CoreSteer,
    /// A `session/prompt`, passed as it is: its result carries the turn's
    /// usage in the agent's dialect.
    Prompt,
}

/// The bridge: the connection as both peers wrote it, and what it
/// translates.
///
/// Each line is read once and followed by a [`Connection`] (the lines as
/// the peers wrote them, before any translation): it tells a call from an
/// answer, pairs each answer with its request in its bounded table, and
/// reads both peers' advertisements with the negotiation's own reader.
#[derive(Debug, Clone)]
pub struct Translator {
    connection: Connection,
    translation: Translation,
    /// Lines translated, by the way they went (from the client, from the
    /// agent).
    pub translated: [u64; 2],
}

/// Both sides' dialects, the requests whose answer is translated, and each
/// dialect's run tables.
#[derive(Debug, Clone)]
struct Translation {
    target: BridgeTarget,
    client: Option<ClientDialect>,
    /// The client advertised no extension at all.
    client_plain: bool,
    /// The namespace the client reads (events written to it).
    client_ns: Namespace,
    /// The namespace the agent reads (requests written to it).
    agent_ns: Namespace,
    mode: Mode,
    /// Client requests whose answer the bridge translates (bounded: the
    /// oldest of an agent that never answers are forgotten).
    answered: PendingRequests<Answered>,
    to_standard: HashMap<String, StandardSubagents>,
    to_core: CoreSubagents,
    /// The agent's `agentInfo.name` (the provider of its rate limits).
    agent_name: String,
    /// Per session, the Core ledger a standard agent's turn usage is
    /// accounted in (one scope per connection).
    ledgers: HashMap<String, SessionUsageAccumulator>,
    /// Per session, the last turn usage a Core agent reported.
    last_usage: HashMap<String, ModelUsage>,
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// How many translated requests may await their response at once.
const PENDING_CAP: usize = 4096;

fn line(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The object at `path` below `v`, created (as empty objects) where
/// absent; `None` when something on the way is not an object.
fn object_at<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut here = v.as_object_mut()?;
    for key in path {
        here = here
            .entry(*key)
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()?;
    }
    Some(here)
}

/// One line followed: the message the connection made of it, translated
/// (`None`: the line passes as it is).
struct Step<'a> {
    translation: &'a mut Translation,
    raw: &'a [u8],
    out: Option<Vec<Out>>,
}

impl Observer for Step<'_> {
    fn message(&mut self, connection: &Connection, message: &Message<'_>) {
        // A batch passes as it is, and so does a bare subagent event (the
        // connection reads one as the event's notification; on the wire it
        // is no JSON-RPC message).
        if message.batch_index().is_some()
            || matches!(message, Message::Call(call) if call.bare_event)
        {
            return;
        }
        let t = &mut *self.translation;
        self.out = match message {
            Message::Call(call) if call.direction == Direction::ClientToAgent => call
                .id
                .and_then(|id| t.client_request(connection, call, id)),
            Message::Call(call) if call.id.is_none() => t.notification(call, self.raw),
            Message::Answer(answer) if answer.direction == Direction::AgentToClient => {
                t.answer(connection, answer)
            }
            _ => None,
        };
    }
}

impl Translator {
    /// A bridge writing `target` to its client.
    pub fn new(target: BridgeTarget) -> Self {
        Self {
            connection: Connection::new(),
            translation: Translation {
                target,
                client: None,
                client_plain: false,
                client_ns: Namespace::Lody,
                agent_ns: Namespace::Lody,
                mode: Mode::Pass,
                answered: PendingRequests::default(),
                to_standard: HashMap::new(),
                to_core: CoreSubagents::new(),
                agent_name: String::new(),
                ledgers: HashMap::new(),
                last_usage: HashMap::new(),
            },
            translated: [0, 0],
        }
    }

    /// Where it translates (known once `initialize` was answered).
    pub fn mode(&self) -> Mode {
        self.translation.mode
    }

    /// One line from the client: what to write, and where.
    pub fn from_client(&mut self, raw: &[u8]) -> Vec<Out> {
        match self.follow(Direction::ClientToAgent, raw) {
            Some(out) => {
                self.translated[0] += 1;
                out
            }
            None => vec![Out::ToAgent(raw.to_vec())],
        }
    }

    /// One line from the agent: what to write, and where.
    pub fn from_agent(&mut self, raw: &[u8]) -> Vec<Out> {
        match self.follow(Direction::AgentToClient, raw) {
            Some(out) => {
                self.translated[1] += 1;
                out
            }
            None => vec![Out::ToClient(raw.to_vec())],
        }
    }

    /// Follows one line (with or without its line feed) that went
    /// `direction`: what it is translated to, if anything.
    fn follow(&mut self, direction: Direction, raw: &[u8]) -> Option<Vec<Out>> {
        let text = raw.strip_suffix(b"\n").unwrap_or(raw);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let read = Line::read(text, Reads::Event);
        let mut step = Step {
            translation: &mut self.translation,
            raw,
            out: None,
        };
        self.connection
            .follow_read(direction, &read, &mut [&mut step]);
        step.out
    }
}

impl Translation {
    /// A request from the client: `initialize`, a prompt whose result is
    /// translated, or a request of the other dialect.
    fn client_request(
        &mut self,
        connection: &Connection,
        call: &Call<'_>,
        id: &Value,
    ) -> Option<Vec<Out>> {
        if call.method == "initialize" {
            let mut msg = call.value().clone();
            return self
                .initialize_request(connection, &mut msg)
                .then(|| vec![Out::ToAgent(line(&msg))]);
        }
        if call.method == "session/prompt"
            && self.mode != Mode::Pass
            && let Some(sid) = call.session_id()
        {
            // Passed as it is; its result's usage is translated.
            self.last_usage.remove(sid);
            self.answered
                .insert(Direction::ClientToAgent, id, Answered::Prompt, PENDING_CAP);
            return None;
        }
        let params = call.params.tree();
        let out = match self.mode {
            Mode::ToStandard => self.standard_request(call.method, id, params),
            Mode::ToCore => self.core_request(call.method, id, params),
            Mode::Pass => None,
        };
        out.map(|o| vec![o])
    }

    /// Decides what the client reads and adds what the agent must see to
    /// write what the bridge translates; whether the request changed.
    fn initialize_request(&mut self, connection: &Connection, msg: &mut Value) -> bool {
        let caps = msg
            .pointer("/params/clientCapabilities")
            .unwrap_or(&Value::Null);
        self.client_plain = advertised_namespaces(caps).is_none();
        self.client_ns = write_namespace(caps);
        let core = connection
            .advertisement(Side::Client)
            .is_some_and(|a| a.supports(Feature::SubagentEvents));
        let client = match self.target {
            BridgeTarget::Core => ClientDialect::Core,
            BridgeTarget::Standard => ClientDialect::Standard,
            BridgeTarget::Auto if core => ClientDialect::Core,
            BridgeTarget::Auto if client_reads_subagent_updates(caps) => ClientDialect::Standard,
            BridgeTarget::Auto => ClientDialect::Plain,
        };
        self.client = Some(client);
        match client {
            // A Core agent writes subagent events only to a client that
            // advertised them; a standard agent reads `subagents`.
            ClientDialect::Standard if !core => {
                let Some(meta) = object_at(msg, &["params", "clientCapabilities", "_meta"]) else {
                    return false;
                };
                ClientExtensionCapabilities::new()
                    .subagent_events(VersionOneCapability::new())
                    .write_meta(meta, self.client_ns.into());
                true
            }
            ClientDialect::Core if !client_reads_subagent_updates(caps) => {
                let Some(caps) = object_at(msg, &["params", "clientCapabilities"]) else {
                    return false;
                };
                caps.insert("subagents".into(), Value::Object(Map::new()));
                true
            }
            _ => false,
        }
    }

    /// The agent's `initialize` result: what the agent writes, hence the
    /// mode; the advertisement the client reads.
    fn initialize_result(&mut self, connection: &Connection, result: &mut Value) -> bool {
        let caps = result.get("agentCapabilities").unwrap_or(&Value::Null);
        self.agent_ns = write_namespace(caps);
        self.agent_name = result
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("agent")
            .to_owned();
        let agent = match connection
            .advertisement(Side::Agent)
            .map(|a| a.supports(Feature::SubagentEvents))
        {
            Some(true) => ClientDialect::Core,
            _ => ClientDialect::Standard,
        };
        self.mode = match (agent, self.client) {
            (ClientDialect::Core, Some(ClientDialect::Standard)) => Mode::ToStandard,
            (ClientDialect::Standard, Some(ClientDialect::Core)) => Mode::ToCore,
            _ => Mode::Pass,
        };
        match self.mode {
            Mode::ToStandard => {
                let steers_by_request = connection
                    .advertisement(Side::Agent)
                    .and_then(|a| a.get(Feature::Steering))
                    .and_then(|f| f.options())
                    .is_some_and(|o| {
                        matches!(o, FeatureOptions::Steering(s)
                            if s.transport == SteeringTransport::Request)
                    });
                if !steers_by_request || advertises_steering(result) {
                    return false;
                }
                match object_at(result, &["_meta"]) {
                    Some(meta) => {
                        meta.insert("steering".into(), json!({"supported": true}));
                        true
                    }
                    None => false,
                }
            }
            Mode::ToCore => {
                let absent = |key: &str| {
                    caps.pointer(&format!("/_meta/{}/{key}", self.client_ns.key()))
                        .is_none()
                };
                // Turn usage and claude's rate limits, translated below.
                let mut section = AgentExtensionCapabilities::new()
                    .subagent_events(VersionOneCapability::new())
                    .usage(absent("usage").then(VersionOneCapability::new))
                    .rate_limits(absent("rateLimits").then(RateLimitsCapability::new));
                if advertises_steering(result) {
                    section = section.steering(SteeringCapability::new(
                        SteeringTransport::Request,
                        UpstreamTurn::Same,
                        ConfigPolicy::Active,
                    ));
                }
                let Some(meta) = object_at(result, &["agentCapabilities", "_meta"]) else {
                    return false;
                };
                section.write_meta(meta, self.client_ns.into());
                true
            }
            Mode::Pass => false,
        }
    }

    /// A standard client's request to a Core agent.
    fn standard_request(&mut self, method: &str, id: &Value, params: &Value) -> Option<Out> {
        let (method, params, answered) = match method {
            STEERING_METHOD => {
                let r = SteeringRequest::deserialize(params).ok()?;
                let core = r.to_core(format!("bridge:{id}"));
                let answered = Answered::Steering {
                    prompt_required: r.prompt_required(),
                };
                (
                    ContractMethod::SessionSteer,
                    serde_json::to_value(core).ok()?,
                    answered,
                )
            }
            GOAL_METHOD => (ContractMethod::SessionGoal, params.clone(), Answered::Goal),
            _ => return None,
        };
        self.answered
            .insert(Direction::ClientToAgent, id, answered, PENDING_CAP);
        Some(Out::ToAgent(line(&json!({"jsonrpc": "2.0", "id": id,
            "method": method.method(self.agent_ns), "params": params}))))
    }

    /// A Core client's request to a standard agent.
    fn core_request(&mut self, method: &str, id: &Value, params: &Value) -> Option<Out> {
        if contract_method(method) != Some(ContractMethod::SessionSteer) {
            return None;
        }
        let session_id = params.get("sessionId")?.as_str()?;
        let steer_id = params.get("steerId")?.as_str()?;
        let prompt = params.get("prompt").cloned().unwrap_or_else(|| json!([]));
        self.answered.insert(
            Direction::ClientToAgent,
            id,
            Answered::CoreSteer,
            PENDING_CAP,
        );
        Some(Out::ToAgent(line(&json!({"jsonrpc": "2.0", "id": id,
            "method": STEERING_METHOD, "params": {"sessionId": session_id, "prompt": prompt,
                "steerId": steer_id, "_meta": {"steering": {"idleBehavior": "promptRequired"}}}}))))
    }

    /// A response from the agent: `initialize`'s, or a translated
    /// request's.
    fn answer(&mut self, connection: &Connection, answer: &Answer<'_>) -> Option<Vec<Out>> {
        let request = answer.request.as_ref()?;
        let id = answer.id?;
        if request.method == "initialize" && request.pairing == Pairing::Paired {
            let mut msg = answer.value.clone();
            let result = msg.get_mut("result")?;
            return self
                .initialize_result(connection, result)
                .then(|| vec![Out::ToClient(line(&msg))]);
        }
        let answered = self.answered.take(Direction::AgentToClient, id)?;
        let session_id = request.session_id.as_deref().unwrap_or_default();
        if let Answered::Prompt = answered {
            return self.prompt_result(answer.value, id, session_id);
        }
        let result = answer.outcome.ok()?;
        let answer = match answered {
            Answered::Steering { prompt_required } => {
                let injected = result.get("outcome").and_then(Value::as_str) == Some("injected");
                let response = match (injected, prompt_required) {
                    (true, _) => SteeringResponse::Injected,
                    (false, true) => SteeringResponse::no_running_turn(),
                    (false, false) => SteeringResponse::Failed,
                };
                serde_json::to_value(response).ok()?
            }
            Answered::Goal => json!({}),
            Answered::Prompt => return None,
            Answered::CoreSteer => {
                let steer_id = request.steer_id.as_deref().unwrap_or_default();
                return Some(match result.get("outcome").and_then(Value::as_str) {
                    // Accepted: a synthesized `steer_applied` first (the
                    // adapters send none; "applied" means "accepted").
                    Some("injected" | "startedNewTurn") => vec![
                        Out::ToClient(line(&json!({"jsonrpc": "2.0",
                            "method": ContractMethod::SessionSteerApplied.method(self.client_ns),
                            "params": {"sessionId": session_id, "steerId": steer_id}}))),
                        Out::ToClient(line(&json!({"jsonrpc": "2.0", "id": id,
                            "result": {"outcome": "injected"}}))),
                    ],
                    Some("promptRequired") => vec![Out::ToClient(line(&json!({"jsonrpc": "2.0",
                        "id": id, "error": {"code": -32600,
                            "message": "no turn is running; send session/prompt"}})))],
                    _ => vec![Out::ToClient(line(&json!({"jsonrpc": "2.0", "id": id,
                        "result": {"outcome": "failed"}})))],
                });
            }
        };
        Some(vec![Out::ToClient(line(
            &json!({"jsonrpc": "2.0", "id": id, "result": answer}),
        ))])
    }

    /// A prompt's result: a standard agent's turn usage accounted into the
    /// session's Core ledger and sent before the answer; a Core agent's
    /// last turn usage added to the answer as its standard `usage`.
    fn prompt_result(&mut self, msg: &Value, id: &Value, sid: &str) -> Option<Vec<Out>> {
        match self.mode {
            Mode::ToCore => {
                let rows = prompt_model_usage(msg.get("result")?);
                if rows.is_empty() {
                    return None;
                }
                let ns = self.client_ns;
                let ledger = self
                    .ledgers
                    .entry(sid.to_owned())
                    .or_insert_with(|| SessionUsageAccumulator::new().with_namespace(ns));
                let update = ledger.update(sid, &id_key(id), &rows)?;
                let params = serde_json::to_value(update).ok()?;
                Some(vec![
                    Out::ToClient(line(&json!({"jsonrpc": "2.0",
                        "method": ContractMethod::SessionUsageUpdate.method(ns), "params": params}))),
                    Out::ToClient(line(msg)),
                ])
            }
            Mode::ToStandard => {
                let usage = self.last_usage.remove(sid)?;
                let mut msg = msg.clone();
                let result = msg.get_mut("result")?.as_object_mut()?;
                if result.contains_key("usage") {
                    return None;
                }
                result.insert("usage".into(), standard_prompt_usage(&usage));
                Some(vec![Out::ToClient(line(&msg))])
            }
            Mode::Pass => None,
        }
    }

    /// A notification from the agent.
    fn notification(&mut self, call: &Call<'_>, raw: &[u8]) -> Option<Vec<Out>> {
        let method = call.method;
        match self.mode {
            Mode::ToStandard => {
                if contract_method(method) == Some(ContractMethod::SubagentEvent) {
                    // Typed once, by the connection: read with its line,
                    // or from its tree.
                    let event = call.params.event()?;
                    let root = event.session_id.as_str().to_owned();
                    let runs = self
                        .to_standard
                        .entry(root.clone())
                        .or_insert_with(|| StandardSubagents::new(root));
                    return Some(
                        runs.event(event)
                            .iter()
                            .filter_map(|n| serde_json::to_value(n).ok())
                            .map(|p| {
                                Out::ToClient(line(&json!({"jsonrpc": "2.0",
                                    "method": "session/update", "params": p})))
                            })
                            .collect(),
                    );
                }
                let params = call.params.tree();
                if contract_method(method) == Some(ContractMethod::SessionUsageUpdate)
                    && let (Some(sid), Some(usage)) = (
                        call.session_id(),
                        params
                            .get("usage")
                            .and_then(|u| ModelUsage::deserialize(u).ok()),
                    )
                {
                    self.last_usage.insert(sid.to_owned(), usage);
                }
                // The agent's own notifications a plain client would not
                // have got: the bridge made the client look extension-aware.
                (self.client_plain && method_kind(method).is_some()).then(Vec::new)
            }
            Mode::ToCore if method == "session/update" => {
                let params = call.params.tree();
                let limits = params
                    .pointer("/update/_meta/_claude~1rateLimit")
                    .and_then(claude_rate_limits);
                let mut out: Vec<Out> = match self.to_core.session_update(params) {
                    Some(events) => events
                        .iter()
                        .filter_map(|e| serde_json::to_value(e).ok())
                        .map(|p| {
                            Out::ToClient(line(&json!({"jsonrpc": "2.0",
                                "method": ContractMethod::SubagentEvent.method(self.client_ns), "params": p})))
                        })
                        .collect(),
                    // Not subagent traffic: it passes as it is, and claude's
                    // rate limit follows it.
                    None if limits.is_some() => vec![Out::ToClient(raw.to_vec())],
                    None => return None,
                };
                if let Some(limits) = limits {
                    out.push(Out::ToClient(line(&json!({"jsonrpc": "2.0",
                        "method": ContractMethod::RateLimitsUpdate.method(self.client_ns), "params": limits}))));
                }
                Some(out)
            }
            _ => None,
        }
    }
}
