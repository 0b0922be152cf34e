//! Contract linter for recorded or live traffic: consumes messages one by
//! one and yields findings. Shared by `acp-ext check`, `tap` and `probe`.
//!
//! A [`Checker`] follows one connection: it remembers what each peer
//! advertised in `initialize`, which requests await a response, and a
//! bounded amount of per-session state (subagent runs, native ids, usage
//! scopes, steer ids; see [`SequenceLimits`]). Every message yields the
//! [`Finding`]s of the rules in [`rules::ALL`], each with a stable id, a
//! [`Severity`] and a JSON pointer inside the message.
//!
//! Negotiation rules are judged only once the checker has seen the
//! initialize exchange (the agent's response for agent features, the
//! client's request for client features): loose fixtures without it never
//! produce "not advertised" findings.
//!
//! The engine (this module: directions, findings, the pending requests and
//! the dispatch of each message) is apart from the rules, one file per
//! family: `negotiation_rules` (what each peer advertised), `method_rules`
//! (extension methods and standard calls and results), `meta_rules`
//! (`_meta.<ns>` fields, timestamps, percentages), `subagent_rules` and
//! `usage_rules`; [`rules`] is the table of ids and severities.
//!
//! ```
//! use acp_ext::check::{Checker, Direction, Severity};
//! use serde_json::json;
//!
//! let mut checker = Checker::new();
//! // The agent advertises nothing…
//! checker.message(Direction::ClientToAgent, &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
//!     "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
//! checker.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0", "id": 0,
//!     "result": {"protocolVersion": 1, "agentCapabilities": {}}}));
//! // …yet sends usage with a timestamp in milliseconds.
//! let findings = checker.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
//!     "method": "_lody/rate_limits/update", "params": {"rateLimits": [], "fetchedAtEpochSeconds": 1710000000000u64}}));
//! let rules: Vec<_> = findings.iter().map(|f| f.rule).collect();
//! assert_eq!(rules, ["not-advertised", "epoch-milliseconds"]);
//! assert_eq!(findings[0].severity, Severity::Error);
//! assert_eq!(findings[1].severity, Severity::Warning);
//! assert_eq!(findings[1].path, "/params/fetchedAtEpochSeconds");
//! ```

// No line a peer sends may panic what reads it: denied here.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod input;
mod meta_rules;
mod method_rules;
mod namespace_rules;
mod negotiation_rules;
pub mod report;
pub mod rules;
pub mod run;

// The rule families' helpers, for each other (through `use super::*`).
use negotiation_rules::{advertisement_findings, capabilities_of};

use acp_extension_core::capabilities::{
    Feature, FeatureOptions, FeatureSide, Side, SteeringTransport,
};
use acp_extension_core::methods::{ExtensionResponse, MethodKind, method_kind};
use acp_extension_core::namespace::{self, Namespace, split_method};
use acp_extension_core::negotiation::{self, Advertisement, ProblemKind};
use acp_extension_core::validate::{Kind, child, validate_value};
use serde_json::Value;

pub use crate::finding::{Finding, Severity};
pub use acp_extension_core::connection::Direction;
use acp_extension_core::connection::sequence::SequenceLimits;
use acp_extension_core::connection::sequence::{SequenceFinding, TrackedState};
use acp_extension_core::connection::{Call, Connection, Line, Message, Observer, Reads};
pub use rules::RuleInfo;

impl From<SequenceFinding> for Finding {
    fn from(f: SequenceFinding) -> Self {
        Finding::of(rules::of_sequence(f.rule), f.pointer, f.message)
    }
}

impl Finding {
    /// A finding of a rule of the table (its id and severity) at `path`.
    pub fn of(rule: &RuleInfo, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule.id, rule.severity, path, message)
    }
}

const NULL: Value = Value::Null;

/// What the checker knows about one peer's support of a feature.
enum Support<'a> {
    /// The initialize exchange of that peer was not seen.
    Unknown,
    /// Not advertised (or advertised invalidly).
    Missing,
    /// Advertised with these options.
    Present(&'a FeatureOptions),
}

/// Checks a stream of messages of one connection: an [`Observer`] of the
/// library's [`Connection`], which classifies each message, pairs the
/// responses and runs the sequence rules once for every observer (the
/// consumer state beside it, in `watch`).
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct Checker {
    /// The connection the checker follows on its own (through
    /// [`Checker::message`]); unused when it observes another one.
    own: Option<Box<Connection>>,
    /// Findings made as an observer, until taken.
    observed: Vec<Finding>,
    agent: Option<Advertisement>,
    client: Option<Advertisement>,
    client_form_elicitation: bool,
    /// The namespaces each receiver reads, once its initialize was seen.
    agent_reads: Option<namespace_rules::Reader>,
    client_reads: Option<namespace_rules::Reader>,
    /// What each direction wrote: agent to client, then client to agent.
    written: [namespace_rules::Written; 2],
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Checker {
    /// A checker with no state and the default [`SequenceLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A checker with these state capacities.
    pub fn with_limits(limits: SequenceLimits) -> Self {
        Self {
            own: Some(Box::new(Connection::with_limits(limits))),
            ..Self::default()
        }
    }

    /// What the agent advertised, once its initialize response was seen.
    pub fn agent_advertisement(&self) -> Option<&Advertisement> {
        self.agent.as_ref()
    }

    /// What the client advertised, once its initialize request was seen.
    pub fn client_advertisement(&self) -> Option<&Advertisement> {
        self.client.as_ref()
    }

    /// How much state the checker's own connection holds right now
    /// (bounded by [`SequenceLimits`]).
    pub fn tracked_state(&self) -> TrackedState {
        self.own
            .as_deref()
            .map(Connection::tracked)
            .unwrap_or_default()
    }

    /// Checks one JSON-RPC message (or a batch) and updates the connection
    /// state. `direction` may be [`Direction::Unknown`]; it is then inferred
    /// from the method, or for a response from its request.
    pub fn message(&mut self, direction: Direction, message: &Value) -> Vec<Finding> {
        self.message_with_method(direction, message, None)
    }

    /// Like [`Checker::message`], naming the method of the request a
    /// response answers when that request is not part of the stream (loose
    /// fixtures keep responses on their own). Ignored for requests and
    /// notifications, and when the request was seen.
    pub fn message_with_method(
        &mut self,
        direction: Direction,
        message: &Value,
        request_method: Option<&str>,
    ) -> Vec<Finding> {
        // Taken out and put back as a box: the connection itself stays put.
        let mut own = self.own.take().unwrap_or_default();
        own.follow_with_method(direction, message, request_method, &mut [self]);
        self.own = Some(own);
        self.take_findings()
    }

    /// Checks one line read ahead by [`Line::read`] (perhaps on another
    /// thread; read it for [`Reads::RunFacts`], what the checker reads):
    /// the findings of its JSON tree.
    pub fn follow_read(&mut self, direction: Direction, line: &Line) -> Vec<Finding> {
        let mut own = self.own.take().unwrap_or_default();
        own.follow_read(direction, line, &mut [self]);
        self.own = Some(own);
        self.take_findings()
    }

    /// The findings made since the last call, when the checker observes a
    /// [`Connection`] it does not own (through [`Observer`]).
    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.observed)
    }

    fn one(&mut self, connection: &Connection, msg: &Message<'_>) -> Vec<Finding> {
        let mut out = Vec::new();
        let dir = msg.direction();
        match msg {
            Message::Invalid(i) => {
                out.push(Finding::of(
                    &rules::NOT_A_MESSAGE,
                    i.pointer,
                    i.problem.clone(),
                ));
                return out;
            }
            Message::Call(call) => {
                let method = call.method;
                if method == "initialize" && dir != Direction::AgentToClient {
                    self.client = connection.advertisement(Side::Client).cloned();
                }
                // A value the connection verified while reading it is valid
                // and has no `_meta` and no epoch field: the shape and
                // `_meta` rules have nothing to say, and its tree is never
                // built.
                let verified = call.params.is_verified();
                if !verified {
                    self.shape(call.value(), &mut out);
                }
                let split = split_method(method);
                if let Some((ns, _)) = split {
                    self.namespace_use(dir, ns, "/method", &|| format!("`{method}`"), &mut out);
                }
                let ext = split.is_some() && method_kind(method).is_some();
                self.on_call(dir, method, call, &mut out);
                if !verified {
                    self.common(
                        dir,
                        call.params.tree(),
                        if call.bare_event { "" } else { "/params" },
                        ext,
                        &mut out,
                    );
                }
            }
            Message::Answer(answer) => {
                let method = answer.method();
                let result = answer.result();
                if method == Some("initialize") && result.is_some() {
                    self.agent = connection.advertisement(Side::Agent).cloned();
                }
                self.shape(answer.value, &mut out);
                let ext = method.is_some_and(|m| method_kind(m) == Some(MethodKind::Request));
                if let (true, Some(m), Some(r)) = (ext, method, result)
                    && let Err(e) = ExtensionResponse::parse(m, r)
                {
                    for v in e.violations {
                        out.push(Finding::of(
                            &rules::SHAPE,
                            format!("/result{}", v.pointer),
                            format!("{} ({})", v.message(), v.rule.id()),
                        ));
                    }
                }
                if let Some(r) = result {
                    self.on_result(method, r, &mut out);
                    self.common(dir, r, "/result", ext, &mut out);
                }
            }
        }
        out.extend(msg.sequence().iter().cloned().map(Finding::from));
        out
    }

    /// The `shape` rule: everything `acp-ext validate` reports.
    fn shape(&self, msg: &Value, out: &mut Vec<Finding>) {
        for v in validate_value(Kind::AUTO, msg).violations {
            let rule = if v.rule.id() == "unknown-extension-method" {
                &rules::UNKNOWN_METHOD
            } else {
                &rules::SHAPE
            };
            let message = if rule.id == rules::SHAPE.id {
                format!("{} ({})", v.message(), v.rule.id())
            } else {
                v.message()
            };
            out.push(Finding::of(rule, v.pointer, message));
        }
    }
}

impl Observer for Checker {
    fn message(&mut self, connection: &Connection, message: &Message<'_>) {
        let findings = self.one(connection, message);
        for mut f in findings {
            if let Some(i) = message.batch_index() {
                f.path = format!("/{i}{}", f.path);
            }
            self.observed.push(f);
        }
    }

    fn unreadable(&mut self, _: &Connection, rule: &str, message: &str) {
        let info = rules::ALL
            .iter()
            .find(|r| r.id == rule)
            .unwrap_or(&rules::NOT_JSON);
        self.observed.push(Finding::of(info, "", message));
    }

    /// The rules read only a verified event's run facts: it is never built.
    fn reads(&self) -> Reads {
        Reads::RunFacts
    }
}
