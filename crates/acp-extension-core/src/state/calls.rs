//! How calls change the state: requests and notifications, the answers
//! to requests, advertisements, steers, the agent's own requests and the
//! extension methods.

use serde_json::{Value, json};

use super::extensions::TreeEvent;
use super::legacy;
use super::tasks;
use super::*;
use crate::capabilities::Feature;
use crate::connection::sequence::SequenceFinding;
use crate::connection::{prompt_steer_id, standard_steer_id};
use crate::meta::MetaError;
use crate::methods::{ContractMethod, ExtensionResponse, contract_method, method_kind};
use crate::namespace::{self, split_method};
use crate::negotiation::{Advertisement, initialize_capabilities};
use crate::standard::STEERING_METHOD;

use super::rules::ext_key;
use crate::violation::Violation;

fn id_text(id: &Value) -> String {
    id.to_string()
}

impl ConnectionState {
    pub(super) fn on_call(
        &mut self,
        dir: Direction,
        method: &str,
        id: Option<&Value>,
        params: &Value,
        read: TreeEvent<'_>,
        out: &mut Changes,
    ) {
        let sid = str_at(params, "sessionId").map(str::to_owned);
        let problems = call_violations(method, params);
        if !problems.is_empty() {
            for v in &problems {
                self.record(
                    out,
                    Record::new(
                        v.pointer.as_str(),
                        v.rule.id(),
                        format!("`{method}`: `{}` {}; not folded", v.pointer, v.rule),
                    )
                    .method(method),
                );
            }
            return;
        }
        let converted = self.epoch_records(method, sid.as_deref(), params, "/params", out);
        // Params with an epoch converted are read again.
        let read = if converted.is_some() {
            TreeEvent::Unread
        } else {
            read
        };
        let params = converted.as_ref().unwrap_or(params);
        match method {
            "initialize" => self.read_advertisement(params, Side::Client, out),
            "session/load" | "session/resume" => {
                if let Some(sid) = sid {
                    if id.is_some() && !self.resuming.contains(&sid) {
                        self.resuming.push(sid.clone());
                    }
                    self.runs_lost(&sid, out);
                    self.current_session = Some(sid.clone());
                    self.session_mut(&sid).closed = false;
                    out.add(|| Change::SessionStarted { session_id: sid });
                }
            }
            "session/close" | "session/delete" => {
                if let Some(sid) = sid {
                    self.session_mut(&sid).closed = true;
                    out.add(|| Change::SessionClosed { session_id: sid });
                }
            }
            "session/prompt" if dir != Direction::AgentToClient => {
                if let Some(sid) = sid {
                    let steer = prompt_steer_id(params);
                    self.current_session = Some(sid.clone());
                    let s = self.session_mut(&sid);
                    s.turns.prompts += 1;
                    s.turns.running = true;
                    s.turns.awaiting_answer = true;
                    out.add(|| Change::Turn {
                        session_id: sid.clone(),
                    });
                    if let Some(steer_id) = steer.map(str::to_owned) {
                        self.steer(&sid, &steer_id, "prompt", SteerStatus::Pending, out);
                    }
                }
            }
            "session/update" => self.session_update(method, params, out),
            STEERING_METHOD if dir != Direction::AgentToClient => match (sid, id) {
                (Some(sid), Some(id)) => {
                    let steer_id = standard_steer_id(params, id);
                    self.steer(
                        &sid,
                        &steer_id,
                        "session/steering",
                        SteerStatus::Pending,
                        out,
                    );
                }
                _ => self.record(out, Record::new("/params/sessionId", "required", "`_session/steering` needs a string `sessionId` and a request id; not folded"
                        .to_owned()).method(method)),
            },
            "session/request_permission" | "elicitation/create" => match (sid, id) {
                (Some(sid), Some(id)) => self.agent_request(method, &sid, id, params, out),
                // Without an id (a fixture's), nothing can answer it.
                (Some(_), None) => out.ignore(IgnoredKind::Call, || Change::Seen {
                    method: Some(method.to_owned()),
                }),
                (None, _) => self.record(out, Record::new("/params/sessionId", "required", format!("`{method}` without a string `sessionId`; not folded")).method(method)),
            },
            _ if legacy::is_legacy(method) => self.legacy(method, params, out),
            _ if tasks::is_lifecycle(method) => self.task_lifecycle(method, params, out),
            _ => {
                if split_method(method).is_some() && method_kind(method).is_some() {
                    self.extension_call(method, params, read, out);
                } else if split_method(method).is_some() || method.starts_with("_acp_ext:") {
                    self.record(out, Record::new("/method", "unknown-extension-method", format!("`{method}` is not a method of the contract")).method(method).session_opt(sid.as_deref()));
                } else {
                    out.ignore(IgnoredKind::Call, || Change::Seen {
                        method: Some(method.to_owned()),
                    });
                }
            }
        }
    }

    pub(super) fn on_answer(
        &mut self,
        call: Call,
        id: &Value,
        outcome: Result<&Value, &Value>,
        out: &mut Changes,
    ) {
        let before = out.len();
        if let Ok(result) = outcome
            && let Some(v) = result_violation(&call.method, result)
        {
            self.record(
                out,
                Record::new(
                    v.pointer.as_str(),
                    v.rule.id(),
                    format!(
                        "the `{}` result{}; nothing of it is folded",
                        call.method,
                        super::rules::result_words(&v)
                    ),
                )
                .method(&call.method)
                .session_opt(call.session.as_deref()),
            );
            return;
        }
        let converted = match outcome {
            Ok(result) => self.epoch_records(
                &call.method,
                call.session.as_deref(),
                result,
                "/result",
                out,
            ),
            Err(_) => None,
        };
        let outcome = match (&converted, outcome) {
            (Some(c), Ok(_)) => Ok(c),
            (_, o) => o,
        };
        self.answer(&call, id, outcome, out);
        if out.len() == before {
            out.ignore(IgnoredKind::Call, || Change::Seen {
                method: Some(call.method),
            });
        }
    }

    /// A `session/prompt` answered: in ACP v1 the turn's end with its stop
    /// reason and usage; in v2 a receipt (`{messageId}`), the turn going on
    /// until an `idle` `state_update` ends it. A v2 error ends the turn
    /// only when no foreground work was reported (rejecting a prompt does
    /// not end work in progress).
    fn prompt_answer(
        &mut self,
        method: &str,
        sid: &str,
        steer_id: Option<&str>,
        outcome: Result<&Value, &Value>,
        out: &mut Changes,
    ) {
        let v2 = self.negotiation.is_v2();
        self.session_mut(sid).turns.awaiting_answer = false;
        match outcome {
            Ok(r) if crate::connection::is_prompt_receipt(r, v2) => {
                let s = self.session_mut(sid);
                s.turns.accepted += 1;
                s.turns.message_id = str_at(r, "messageId").map(str::to_owned);
                s.turns.prompt_steer = steer_id.map(str::to_owned);
                out.add(|| Change::Turn {
                    session_id: sid.to_owned(),
                });
            }
            Ok(r) => {
                let stop = str_at(r, "stopReason").map(str::to_owned);
                self.end_turn(sid, stop, steer_id, out);
                self.turn_usage(method, sid, "/result", r, out);
            }
            Err(_) if v2 && self.session_mut(sid).activity.busy() => {
                out.ignore(IgnoredKind::Call, || Change::Seen {
                    method: Some(method.to_owned()),
                });
            }
            Err(_) => self.end_turn(sid, Some("error".to_owned()), steer_id, out),
        }
    }

    /// A turn ended (with `stop_reason`): a steer injected in it (or sent
    /// as its prompt, `prompt_steer`) and never applied has an unknown
    /// outcome, and is never resent.
    pub(super) fn end_turn(
        &mut self,
        sid: &str,
        stop_reason: Option<String>,
        prompt_steer: Option<&str>,
        out: &mut Changes,
    ) {
        let s = self.session_mut(sid);
        s.turns.running = false;
        s.turns.last_stop_reason = stop_reason;
        let mut ended = Vec::new();
        for (id, st) in s.steers.iter_mut() {
            let this = prompt_steer == Some(id.as_str());
            // No notification confirms `_session/steering`: its `injected`
            // is as far as the traffic tells.
            if st.transport == "session/steering" {
                continue;
            }
            if st.outcome == SteerStatus::Injected || (this && st.outcome == SteerStatus::Pending) {
                st.outcome = SteerStatus::Unknown;
                ended.push(id.clone());
            }
        }
        out.add(|| Change::Turn {
            session_id: sid.to_owned(),
        });
        for steer_id in ended {
            out.add(|| Change::Steer {
                session_id: sid.to_owned(),
                steer_id,
            });
        }
    }

    pub(super) fn answer(
        &mut self,
        call: &Call,
        id: &Value,
        outcome: Result<&Value, &Value>,
        out: &mut Changes,
    ) {
        let method = call.method.as_str();
        let sid = call.session.as_deref();
        if call.new_session
            && outcome.is_err()
            && matches!(method, "session/load" | "session/resume" | "session/prompt")
            && let Some(sid) = sid
            && self.sessions.get(sid).is_some_and(SessionState::named_only)
        {
            self.sessions.shift_remove(sid);
            if self.current_session.as_deref() == Some(sid) {
                self.current_session = None;
            }
            out.add(|| Change::SessionDiscarded {
                session_id: sid.to_owned(),
            });
            return;
        }
        if matches!(method, "session/load" | "session/resume") {
            self.resuming.retain(|r| Some(r.as_str()) != sid);
        }
        match (method, outcome) {
            ("initialize", Ok(result)) => self.read_advertisement(result, Side::Agent, out),
            ("session/new" | "session/fork", Ok(result)) => {
                if let Some(new) = str_at(result, "sessionId") {
                    self.current_session = Some(new.to_owned());
                    self.session_mut(new).closed = false;
                    out.add(|| Change::SessionStarted {
                        session_id: new.to_owned(),
                    });
                }
            }
            ("session/prompt", _) => {
                if let Some(sid) = sid {
                    self.prompt_answer(method, sid, call.steer_id.as_deref(), outcome, out);
                }
            }
            (STEERING_METHOD, _) => {
                if let (Some(sid), Some(steer_id)) = (sid, call.steer_id.as_deref()) {
                    let result = match outcome {
                        Ok(r) => match str_at(r, "outcome") {
                            Some("injected") => SteerStatus::Injected,
                            Some("startedNewTurn") => SteerStatus::StartedNewTurn,
                            Some("promptRequired") => SteerStatus::PromptRequired,
                            Some("failed") => SteerStatus::Failed,
                            _ => SteerStatus::Unknown,
                        },
                        Err(e) if e.get("code").and_then(Value::as_i64) == Some(-32600) => {
                            SteerStatus::Refused
                        }
                        Err(_) => SteerStatus::Unknown,
                    };
                    self.steer(sid, steer_id, "session/steering", result, out);
                }
            }
            ("session/request_permission" | "elicitation/create", _) => {
                // A standard child's request is pending on its root.
                let sid = sid.map(|s| self.standard_run_root(s).unwrap_or_else(|| s.to_owned()));
                let sid = sid.as_deref();
                if let Some(sid) = sid
                    && self
                        .sessions
                        .get_mut(sid)
                        .and_then(|s| s.pending_requests.shift_remove(&id_text(id)))
                        .is_some()
                {
                    out.add(|| Change::RequestResolved {
                        session_id: sid.to_owned(),
                        request_id: id_text(id),
                    });
                }
            }
            _ => {
                let Some(contract) = contract_method(method) else {
                    return;
                };
                match (contract, outcome) {
                    (ContractMethod::SessionSteer, _) => {
                        if let (Some(sid), Some(steer_id)) = (sid, call.steer_id.as_deref()) {
                            self.steer_answer(sid, steer_id, outcome, out);
                        }
                    }
                    (ContractMethod::RateLimitsGet, Ok(result)) => {
                        match ExtensionResponse::parse(method, result) {
                            Ok(ExtensionResponse::RateLimitsGet(snapshot)) => {
                                self.upsert_rate_limits(snapshot, Dialect::Extension, out)
                            }
                            Ok(_) => {}
                            Err(e) => {
                                self.violations(out, method, None, "/result", &e.violations, false)
                            }
                        }
                    }
                    // A failed query keeps every row's data, marked stale.
                    (ContractMethod::RateLimitsGet, Err(_)) => {
                        let ids: Vec<String> = self
                            .rate_limits
                            .iter_mut()
                            .filter(|(_, e)| !e.stale)
                            .map(|(id, e)| {
                                e.stale = true;
                                id.clone()
                            })
                            .collect();
                        if !ids.is_empty() {
                            out.add(|| Change::RateLimits { limit_ids: ids });
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    pub(super) fn read_advertisement(&mut self, message: &Value, side: Side, out: &mut Changes) {
        let caps = initialize_capabilities(message, side).unwrap_or(&Value::Null);
        let reader = Some(crate::negotiation::NamespaceReader::of(caps));
        match side {
            Side::Agent => self.readers.agent = reader,
            _ => {
                // A new connection: the agent's answer is still to come.
                self.readers.client = reader;
                self.readers.agent = None;
            }
        }
        let adv = Advertisement::read(caps, side);
        let peer = self.negotiation.side_mut(side);
        let info_key = if side == Side::Agent {
            "agentInfo"
        } else {
            "clientInfo"
        };
        *peer = PeerFeatures {
            seen: true,
            protocol_version: message.get("protocolVersion").and_then(Value::as_u64),
            info: message
                .get(info_key)
                .or_else(|| message.get("info"))
                .filter(|i| i.is_object())
                .cloned(),
            ..PeerFeatures::default()
        };
        let caps_key = if message.get(side.capabilities_key()).is_some() {
            side.capabilities_key()
        } else {
            "capabilities"
        };
        let vendor_meta = message
            .get("_meta")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (format!("_meta.{k}"), v))
            .chain(
                caps.get("_meta")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| {
                        !namespace::Namespace::ALL
                            .iter()
                            .any(|ns| ns.key() == k.as_str())
                    })
                    .map(|(k, v)| (format!("{caps_key}._meta.{k}"), v)),
            );
        for (k, v) in vendor_meta {
            peer.vendor.insert(k, v.clone());
        }
        for f in &adv.features {
            if f.parsed.is_ok() {
                peer.features
                    .insert(f.feature.key().to_owned(), f.raw.clone());
            } else {
                peer.invalid.push(f.feature.key().to_owned());
            }
        }
        // kimi's compatibility key stands for `subagents` when the
        // contract's own key is absent.
        if !peer.features.contains_key(Feature::Subagents.key())
            && !peer.invalid.iter().any(|k| k == Feature::Subagents.key())
            && let Some(features) = caps
                .get("_meta")
                .and_then(|m| m.get("lody.ai/kimi"))
                .and_then(|k| k.get("features"))
        {
            let on = |k: &str| features.get(k).and_then(Value::as_bool) == Some(true);
            if on("subagentLifecycle") || on("subagentManagement") {
                let mut sub = serde_json::Map::new();
                sub.insert("version".into(), json!(1));
                // The contract's `lifecycle` is the literal `true`: either
                // flag stands for it.
                sub.insert("lifecycle".into(), json!(true));
                if on("subagentManagement") {
                    for k in ["list", "cancel", "output"] {
                        sub.insert(k.into(), json!(true));
                    }
                }
                peer.features
                    .insert(Feature::Subagents.key().to_owned(), Value::Object(sub));
            }
        }
        let key = caps_key;
        let at = if side == Side::Agent {
            "/result"
        } else {
            "/params"
        };
        let method = Some("initialize");
        for f in &adv.features {
            let base = format!("{at}/{key}");
            for v in f.violations() {
                self.record(
                    out,
                    Record::new(
                        format!("{base}{}", v.pointer),
                        v.rule.id(),
                        format!(
                            "capability `{}` is invalid and ignored (the others stand): {}",
                            f.feature.key(),
                            v.message()
                        ),
                    )
                    .method_opt(method),
                );
            }
        }
        out.add(|| Change::Negotiated { side });
    }

    /// The epoch rules a linter applies ([`crate::meta::epoch_findings`]),
    /// recorded. A time in milliseconds is read as seconds: the value to
    /// fold instead is returned (`None`: fold it as sent).
    pub(super) fn epoch_records(
        &mut self,
        method: &str,
        sid: Option<&str>,
        value: &Value,
        at: &str,
        out: &mut Changes,
    ) -> Option<Value> {
        let ext = split_method(method).is_some() && method_kind(method).is_some();
        let mut converted: Option<Value> = None;
        for f in crate::meta::epoch_findings(value, at, ext) {
            let mut message = f.message;
            if f.rule == crate::meta::EpochRule::Milliseconds
                && let Some(inner) = f.pointer.strip_prefix(at)
            {
                let v = converted.get_or_insert_with(|| value.clone());
                if let Some(slot) = v.pointer_mut(inner)
                    && let Some(ms) = slot.as_f64()
                {
                    let secs = (ms / 1000.0).floor();
                    *slot = json!(secs as u64);
                    message.push_str(&format!("; read as {secs} seconds"));
                }
            }
            self.record(
                out,
                Record::new(&f.pointer, f.rule.id(), message)
                    .method(method)
                    .session_opt(sid)
                    .folded(),
            );
        }
        converted
    }

    /// Whether the agent's advertisement was seen and lacks `feature`.
    pub(super) fn agent_lacks(&self, feature: Feature) -> bool {
        self.negotiation.agent.seen && !self.negotiation.agent.features.contains_key(feature.key())
    }

    pub(super) fn violations(
        &mut self,
        out: &mut Changes,
        method: &str,
        sid: Option<&str>,
        prefix: &str,
        violations: &[Violation],
        folded: bool,
    ) {
        for v in violations {
            self.record(
                out,
                Record::new(format!("{prefix}{}", v.pointer), v.rule.id(), v.message())
                    .method(method)
                    .session_opt(sid)
                    .folded_if(folded),
            );
        }
    }

    pub(super) fn meta_error(
        &mut self,
        out: &mut Changes,
        method: &str,
        sid: &str,
        prefix: &str,
        e: &MetaError,
    ) {
        let prefix = format!("{prefix}/_meta");
        let violations = e.violations.clone();
        self.violations(out, method, Some(sid), &prefix, &violations, false);
    }

    pub(super) fn sequence_findings(
        &mut self,
        method: &str,
        sid: Option<&str>,
        findings: Vec<SequenceFinding>,
        out: &mut Changes,
    ) {
        for f in findings {
            self.record(
                out,
                Record::new(&f.pointer, f.rule.id(), f.message)
                    .method(method)
                    .session_opt(sid),
            );
        }
    }

    pub(super) fn steer(
        &mut self,
        sid: &str,
        steer_id: &str,
        transport: &str,
        outcome: SteerStatus,
        out: &mut Changes,
    ) {
        let cap = self.limits.steers_per_session;
        let s = self.session_mut(sid);
        match s.steers.get_mut(steer_id) {
            Some(st) => st.outcome = outcome,
            None => {
                s.steers.insert(
                    steer_id.to_owned(),
                    SteerState {
                        transport: transport.to_owned(),
                        outcome,
                    },
                );
                cap_map(&mut s.steers, cap);
            }
        }
        out.add(|| Change::Steer {
            session_id: sid.to_owned(),
            steer_id: steer_id.to_owned(),
        });
    }

    pub(super) fn steer_answer(
        &mut self,
        sid: &str,
        steer_id: &str,
        outcome: Result<&Value, &Value>,
        out: &mut Changes,
    ) {
        let result = match outcome {
            Ok(r) => match str_at(r, "outcome") {
                Some("injected") => SteerStatus::Injected,
                Some("failed") => SteerStatus::Failed,
                _ => SteerStatus::Unknown,
            },
            Err(e) if e.get("code").and_then(Value::as_i64) == Some(-32600) => SteerStatus::Refused,
            Err(_) => SteerStatus::Unknown,
        };
        // An applied steer stays applied when its answer comes late.
        let already = self
            .session(sid)
            .and_then(|s| s.steers.get(steer_id))
            .is_some_and(|s| s.outcome == SteerStatus::Applied);
        if !already {
            self.steer(sid, steer_id, "request", result, out);
        }
    }

    pub(super) fn agent_request(
        &mut self,
        method: &str,
        sid: &str,
        id: &Value,
        params: &Value,
        out: &mut Changes,
    ) {
        let tool_call = params.get("toolCall");
        let tool_call_id = tool_call
            .and_then(|t| str_at(t, "toolCallId"))
            .or_else(|| str_at(params, "toolCallId"))
            .map(str::to_owned);
        let routed = tool_call
            .and_then(|t| ext_key(t, "subagentRunId"))
            .is_some();
        let source = if routed { tool_call } else { Some(params) };
        let run_id = source
            .and_then(|s| ext_key(s, "subagentRunId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let child_tool = source
            .and_then(|s| ext_key(s, "subagentToolCallId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        // A standard child asks on its own session: the request is its
        // run's, pending on the root session.
        let (sid, run_id) = match self.standard_run_root(sid) {
            Some(root) => (root, run_id.or_else(|| Some(sid.to_owned()))),
            None => (sid.to_owned(), run_id),
        };
        let sid = sid.as_str();
        let s = self.session_mut(sid);
        let run_live = run_id
            .as_ref()
            .map(|r| s.subagent_runs.get(r).is_some_and(RunState::is_live));
        s.pending_requests.insert(
            id_text(id),
            PendingRequest {
                method: method.to_owned(),
                tool_call_id,
                subagent_run_id: run_id,
                subagent_tool_call_id: child_tool,
                run_live,
            },
        );
        out.add(|| Change::RequestPending {
            session_id: sid.to_owned(),
            request_id: id_text(id),
        });
    }
}
