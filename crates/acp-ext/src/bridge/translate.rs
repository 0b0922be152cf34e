//! The bridge's translation, line by line, with no process: what each line
//! from the client or the agent becomes (see the [module docs](super)).

// No line a peer sends may panic what reads it: denied here.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::collections::HashMap;

use acp_extension_core::connection::{Direction, PendingRequests};
use acp_extension_core::methods::{ContractMethod, ExtensionNotificationMethod, contract_method};
use acp_extension_core::namespace::{Namespace, split_method};
use acp_extension_core::negotiation::{supports_subagent_events, write_namespace};
use acp_extension_core::standard::{
    CoreSubagents, GOAL_METHOD, STEERING_METHOD, StandardSubagents, SteeringRequest,
    SteeringResponse, advertises_steering, claude_rate_limits, prompt_model_usage,
    standard_prompt_usage,
};
use acp_extension_core::subagent_events::SubagentEvent;
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

/// A translated request awaiting its response.
#[derive(Debug, Clone)]
enum Pending {
    /// `_session/steering` sent on as a Core steer.
    Steering { prompt_required: bool },
    /// `_session/goal` sent on as a Core goal request.
    Goal,
    /// A Core steer sent on as `_session/steering`.
    CoreSteer {
        session_id: String,
        steer_id: String,
    },
    /// A `session/prompt`, passed as it is: its result carries the turn's
    /// usage in the agent's dialect.
    Prompt { session_id: String },
}

/// The bridge's state: both sides' dialects, the translated requests in
/// flight, and each dialect's run tables.
#[derive(Debug, Clone)]
pub struct Translator {
    target: BridgeTarget,
    init_id: Option<Value>,
    client: Option<ClientDialect>,
    /// The client advertised no extension at all.
    client_plain: bool,
    /// The namespace the client reads (events written to it).
    client_ns: Namespace,
    /// The namespace the agent reads (requests written to it).
    agent_ns: Namespace,
    mode: Mode,
    /// Client requests whose response the bridge translates (bounded: the
    /// oldest of an agent that never answers are forgotten).
    pending: PendingRequests<Pending>,
    to_standard: HashMap<String, StandardSubagents>,
    to_core: CoreSubagents,
    /// The agent's `agentInfo.name` (the provider of its rate limits).
    agent_name: String,
    /// Per session, the Core ledger a standard agent's turn usage is
    /// accounted in (one scope per connection).
    ledgers: HashMap<String, SessionUsageAccumulator>,
    /// Per session, the last turn usage a Core agent reported.
    last_usage: HashMap<String, ModelUsage>,
    /// Lines translated, by the way they went.
    pub translated: [u64; 2],
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

impl Translator {
    /// A bridge writing `target` to its client.
    pub fn new(target: BridgeTarget) -> Self {
        Self {
            target,
            init_id: None,
            client: None,
            client_plain: false,
            client_ns: Namespace::Lody,
            agent_ns: Namespace::Lody,
            mode: Mode::Pass,
            pending: PendingRequests::default(),
            to_standard: HashMap::new(),
            to_core: CoreSubagents::new(),
            agent_name: String::new(),
            ledgers: HashMap::new(),
            last_usage: HashMap::new(),
            translated: [0, 0],
        }
    }

    /// Where it translates (known once `initialize` was answered).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// One line from the client: what to write, and where.
    pub fn from_client(&mut self, raw: &[u8]) -> Vec<Out> {
        let pass = || vec![Out::ToAgent(raw.to_vec())];
        let Ok(mut msg) = serde_json::from_slice::<Value>(raw) else {
            return pass();
        };
        let (Some(method), Some(id)) = (
            msg.get("method").and_then(Value::as_str).map(str::to_owned),
            msg.get("id").cloned(),
        ) else {
            return pass();
        };
        if method == "initialize" {
            return match self.initialize_request(&mut msg, id) {
                true => {
                    self.translated[0] += 1;
                    vec![Out::ToAgent(line(&msg))]
                }
                false => pass(),
            };
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if method == "session/prompt"
            && self.mode != Mode::Pass
            && let Some(sid) = params.get("sessionId").and_then(Value::as_str)
        {
            // Passed as it is; its result's usage is translated.
            self.last_usage.remove(sid);
            self.pending.insert(
                Direction::ClientToAgent,
                &id,
                Pending::Prompt {
                    session_id: sid.to_owned(),
                },
                PENDING_CAP,
            );
            return pass();
        }
        let out = match self.mode {
            Mode::ToStandard => self.standard_request(&method, &id, &params),
            Mode::ToCore => self.core_request(&method, &id, &params),
            Mode::Pass => None,
        };
        match out {
            Some(out) => {
                self.translated[0] += 1;
                vec![out]
            }
            None => pass(),
        }
    }

    /// One line from the agent: what to write, and where.
    pub fn from_agent(&mut self, raw: &[u8]) -> Vec<Out> {
        let pass = || vec![Out::ToClient(raw.to_vec())];
        let Ok(mut msg) = serde_json::from_slice::<Value>(raw) else {
            return pass();
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let out = match (method, msg.get("id").cloned()) {
            (None, Some(id)) => self.response(&mut msg, &id),
            (Some(method), None) => self.notification(&method, &msg, raw),
            _ => None,
        };
        match out {
            Some(out) => {
                self.translated[1] += 1;
                out
            }
            None => pass(),
        }
    }

    /// Decides what the client reads and adds what the agent must see to
    /// write what the bridge translates; whether the request changed.
    fn initialize_request(&mut self, msg: &mut Value, id: Value) -> bool {
        self.init_id = Some(id);
        let caps = msg
            .pointer("/params/clientCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        self.client_plain = !Namespace::ALL
            .iter()
            .any(|ns| caps.get("_meta").and_then(|m| m.get(ns.key())).is_some());
        self.client_ns = write_namespace(&caps);
        let client = match self.target {
            BridgeTarget::Core => ClientDialect::Core,
            BridgeTarget::Standard => ClientDialect::Standard,
            BridgeTarget::Auto if supports_subagent_events(&caps) => ClientDialect::Core,
            BridgeTarget::Auto
                if acp_extension_core::standard::client_reads_subagent_updates(&caps) =>
            {
                ClientDialect::Standard
            }
            BridgeTarget::Auto => ClientDialect::Plain,
        };
        self.client = Some(client);
        let ns = self.client_ns.key();
        let Some(caps) = object_at(msg, &["params", "clientCapabilities"]) else {
            return false;
        };
        match client {
            // A Core agent writes subagent events only to a client that
            // advertised them; a standard agent reads `subagents`.
            ClientDialect::Standard if !supports_subagent_events(&Value::Object(caps.clone())) => {
                let Some(section) = object_at(msg, &["params", "clientCapabilities", "_meta", ns])
                else {
                    return false;
                };
                section.insert("subagentEvents".into(), json!({"version": 1}));
                true
            }
            ClientDialect::Core if !caps.get("subagents").is_some_and(Value::is_object) => {
                caps.insert("subagents".into(), json!({}));
                true
            }
            _ => false,
        }
    }

    /// The agent's `initialize` result: what the agent writes, hence the
    /// mode; the advertisement the client reads.
    fn initialize_result(&mut self, result: &mut Value) -> bool {
        let caps = result
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        self.agent_ns = write_namespace(&caps);
        self.agent_name = result
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("agent")
            .to_owned();
        let agent = if supports_subagent_events(&caps) {
            ClientDialect::Core
        } else {
            ClientDialect::Standard
        };
        self.mode = match (agent, self.client) {
            (ClientDialect::Core, Some(ClientDialect::Standard)) => Mode::ToStandard,
            (ClientDialect::Standard, Some(ClientDialect::Core)) => Mode::ToCore,
            _ => Mode::Pass,
        };
        match self.mode {
            Mode::ToStandard => {
                let steering = Namespace::ALL.iter().any(|ns| {
                    caps.pointer(&format!("/_meta/{}/steering/transport", ns.key()))
                        .and_then(Value::as_str)
                        == Some("request")
                });
                if !steering || advertises_steering(result) {
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
                let steering = advertises_steering(result);
                let ns = self.client_ns.key();
                let Some(section) = object_at(result, &["agentCapabilities", "_meta", ns]) else {
                    return false;
                };
                section.insert("subagentEvents".into(), json!({"version": 1}));
                // Turn usage and claude's rate limits, translated below.
                section
                    .entry("usage")
                    .or_insert_with(|| json!({"version": 1}));
                section
                    .entry("rateLimits")
                    .or_insert_with(|| json!({"version": 1}));
                if steering {
                    section.insert(
                        "steering".into(),
                        json!({"version": 1, "transport": "request", "upstreamTurn": "same",
                            "configPolicy": "active"}),
                    );
                }
                true
            }
            Mode::Pass => false,
        }
    }

    /// A standard client's request to a Core agent.
    fn standard_request(&mut self, method: &str, id: &Value, params: &Value) -> Option<Out> {
        match method {
            STEERING_METHOD => {
                let r = SteeringRequest::deserialize(params).ok()?;
                let steer_id = r.steer_id.clone().unwrap_or_else(|| format!("bridge:{id}"));
                let core = r.to_core(steer_id);
                self.pending.insert(
                    Direction::ClientToAgent,
                    id,
                    Pending::Steering {
                        prompt_required: r.prompt_required(),
                    },
                    PENDING_CAP,
                );
                let params = serde_json::to_value(core).ok()?;
                Some(Out::ToAgent(line(&json!({"jsonrpc": "2.0", "id": id,
                    "method": ContractMethod::SessionSteer.method(self.agent_ns), "params": params}))))
            }
            GOAL_METHOD => {
                self.pending
                    .insert(Direction::ClientToAgent, id, Pending::Goal, PENDING_CAP);
                Some(Out::ToAgent(line(&json!({"jsonrpc": "2.0", "id": id,
                    "method": ContractMethod::SessionGoal.method(self.agent_ns), "params": params}))))
            }
            _ => None,
        }
    }

    /// A Core client's request to a standard agent.
    fn core_request(&mut self, method: &str, id: &Value, params: &Value) -> Option<Out> {
        if contract_method(method) != Some(ContractMethod::SessionSteer) {
            return None;
        }
        let session_id = params.get("sessionId")?.as_str()?.to_owned();
        let steer_id = params.get("steerId")?.as_str()?.to_owned();
        let prompt = params.get("prompt").cloned().unwrap_or_else(|| json!([]));
        self.pending.insert(
            Direction::ClientToAgent,
            id,
            Pending::CoreSteer {
                session_id: session_id.clone(),
                steer_id: steer_id.clone(),
            },
            PENDING_CAP,
        );
        Some(Out::ToAgent(line(&json!({"jsonrpc": "2.0", "id": id,
            "method": STEERING_METHOD, "params": {"sessionId": session_id, "prompt": prompt,
                "steerId": steer_id, "_meta": {"steering": {"idleBehavior": "promptRequired"}}}}))))
    }

    /// A response from the agent: `initialize`'s, or a translated
    /// request's.
    fn response(&mut self, msg: &mut Value, id: &Value) -> Option<Vec<Out>> {
        if self.init_id.as_ref() == Some(id) {
            self.init_id = None;
            let result = msg.get_mut("result")?;
            return self
                .initialize_result(result)
                .then(|| vec![Out::ToClient(line(msg))]);
        }
        let pending = self.pending.take(Direction::AgentToClient, id)?;
        if let Pending::Prompt { session_id } = pending {
            return self.prompt_result(msg, id, &session_id);
        }
        let result = msg.get("result")?;
        let answer = match pending {
            Pending::Steering { prompt_required } => {
                let injected = result.get("outcome").and_then(Value::as_str) == Some("injected");
                let response = match (injected, prompt_required) {
                    (true, _) => SteeringResponse::Injected,
                    (false, true) => SteeringResponse::no_running_turn(),
                    (false, false) => SteeringResponse::Failed,
                };
                serde_json::to_value(response).ok()?
            }
            Pending::Goal => json!({}),
            Pending::Prompt { .. } => return None,
            Pending::CoreSteer {
                session_id,
                steer_id,
            } => {
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
    fn prompt_result(&mut self, msg: &mut Value, id: &Value, sid: &str) -> Option<Vec<Out>> {
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
                let result = msg.get_mut("result")?.as_object_mut()?;
                if result.contains_key("usage") {
                    return None;
                }
                result.insert("usage".into(), standard_prompt_usage(&usage));
                Some(vec![Out::ToClient(line(msg))])
            }
            Mode::Pass => None,
        }
    }

    /// A notification from the agent.
    fn notification(&mut self, method: &str, msg: &Value, raw: &[u8]) -> Option<Vec<Out>> {
        let params = msg.get("params")?;
        match self.mode {
            Mode::ToStandard => {
                let (_, path) = split_method(method)?;
                if path == SubagentEvent::PATH {
                    let event = SubagentEvent::deserialize(params).ok()?;
                    let root = event.session_id().to_owned();
                    let runs = self
                        .to_standard
                        .entry(root.clone())
                        .or_insert_with(|| StandardSubagents::new(root));
                    return Some(
                        runs.event(&event)
                            .iter()
                            .filter_map(|n| serde_json::to_value(n).ok())
                            .map(|p| {
                                Out::ToClient(line(&json!({"jsonrpc": "2.0",
                                    "method": "session/update", "params": p})))
                            })
                            .collect(),
                    );
                }
                if contract_method(method) == Some(ContractMethod::SessionUsageUpdate)
                    && let (Some(sid), Some(usage)) = (
                        params.get("sessionId").and_then(Value::as_str),
                        params
                            .get("usage")
                            .and_then(|u| ModelUsage::deserialize(u).ok()),
                    )
                {
                    self.last_usage.insert(sid.to_owned(), usage);
                }
                // The agent's own notifications a plain client would not
                // have got: the bridge made the client look extension-aware.
                (self.client_plain && acp_extension_core::methods::method_kind(method).is_some())
                    .then(Vec::new)
            }
            Mode::ToCore if method == "session/update" => {
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
