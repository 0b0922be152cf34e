//! How each message changes the state.

use serde_json::{Map, Value, json};

use super::legacy;
use super::tasks;
use super::*;
use crate::capabilities::Feature;
use crate::connection::{STANDARD_STEERING, prompt_steer_id, standard_steer_id};
use crate::meta::{self, MetaError, fields};
use crate::methods::{ExtensionNotification, ExtensionRequest, ExtensionResponse, method_kind};
use crate::namespace::{self, split_method};
use crate::negotiation::{Advertisement, initialize_capabilities};
use crate::rate_limits::RateLimitsSnapshot;
use crate::sequence::SequenceFinding;
use crate::session::{ActivityKind, GoalSnapshot, NoticeLevel, SessionActivityState};

use crate::violation::Violation;

/// The session updates of ACP v1 (schema 1.17, unstable ones included).
const STANDARD_UPDATES: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
    "plan_update",
    "plan_removed",
    "subagent_update",
    "session_message",
    "session_message_chunk",
];

/// Whether `tag` is a session update of ACP v1, or one of v2's (whole
/// messages, `state_update`, `terminal_update`).
pub(super) fn is_standard_update(tag: &str) -> bool {
    STANDARD_UPDATES.contains(&tag) || V2_UPDATES.contains(&tag)
}

/// Session updates of ACP v2 that v1 lacks.
const V2_UPDATES: &[&str] = &[
    "user_message",
    "agent_message",
    "agent_thought",
    "state_update",
    "terminal_update",
];

/// The session updates outside ACP that the state reads: AIR's subagent
/// draft and its async tasks (v2 with a leading `_`).
const AIR_UPDATES: &[&str] = &[
    "subagent_spawned",
    "subagent_state_update",
    "_subagent_update",
    "async_task_spawned",
    "async_task_progress",
    "async_task_state_update",
    "_async_task_spawned",
    "_async_task_progress",
    "_async_task_state_update",
];

/// Whether the state reads a `session/update` with this `sessionUpdate`
/// tag: ACP v1's and v2's updates and AIR's. `acp-ext check` warns on any
/// other (`unknown-session-update`), as the state records it.
pub fn is_known_session_update(tag: &str) -> bool {
    is_standard_update(tag) || AIR_UPDATES.contains(&tag)
}

/// A standard `notice`'s level and text (its `title`, with its
/// `description`).
pub(super) fn notice_of(update: &Value) -> (NoticeLevel, String) {
    let level = match str_at(update, "severity") {
        Some("error") => NoticeLevel::Error,
        Some("warning") => NoticeLevel::Warning,
        _ => NoticeLevel::Info,
    };
    let mut message = str_at(update, "title").unwrap_or("").to_owned();
    if let Some(d) = str_at(update, "description") {
        message = format!("{message}: {d}");
    }
    (level, message)
}

pub(super) fn meta_of(v: &Value) -> Option<&Map<String, Value>> {
    v.get("_meta").and_then(Value::as_object)
}

/// `key` of the contract section (`_meta.ua` first, then `_meta.lody`).
pub(super) fn ext_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    meta_of(v)
        .and_then(|m| namespace::read_key(m, key))
        .map(|(_, v)| v)
}

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
        out: &mut Vec<Change>,
    ) {
        let sid = str_at(params, "sessionId").map(str::to_owned);
        let converted = self.epoch_records(method, sid.as_deref(), params, "/params", out);
        let params = converted.as_ref().unwrap_or(params);
        match method {
            "initialize" => self.read_advertisement(params, Side::Client, out),
            "session/load" | "session/resume" => {
                if let Some(sid) = sid {
                    self.runs_lost(&sid, out);
                    self.current_session = Some(sid.clone());
                    self.session_mut(&sid).closed = false;
                    out.push(Change::SessionStarted { session_id: sid });
                }
            }
            "session/close" | "session/delete" => {
                if let Some(sid) = sid {
                    self.session_mut(&sid).closed = true;
                    out.push(Change::SessionClosed { session_id: sid });
                }
            }
            "session/prompt" if dir != Direction::AgentToClient => {
                if let Some(sid) = sid {
                    let steer = prompt_steer_id(params);
                    self.current_session = Some(sid.clone());
                    let s = self.session_mut(&sid);
                    s.turns.prompts += 1;
                    s.turns.running = true;
                    out.push(Change::Turn {
                        session_id: sid.clone(),
                    });
                    if let Some(steer_id) = steer.map(str::to_owned) {
                        self.steer(&sid, &steer_id, "prompt", SteerOutcome::Pending, out);
                    }
                }
            }
            "session/update" => self.session_update(method, params, out),
            STANDARD_STEERING if dir != Direction::AgentToClient => match (sid, id) {
                (Some(sid), Some(id)) => {
                    let steer_id = standard_steer_id(params, id);
                    self.steer(
                        &sid,
                        &steer_id,
                        "session/steering",
                        SteerOutcome::Pending,
                        out,
                    );
                }
                _ => self.record_invalid(
                    out,
                    Some(method),
                    None,
                    "/params/sessionId",
                    "required",
                    "`_session/steering` needs a string `sessionId` and a request id; not folded"
                        .to_owned(),
                    false,
                ),
            },
            "session/request_permission" | "elicitation/create" => match (sid, id) {
                (Some(sid), Some(id)) => self.agent_request(method, &sid, id, params, out),
                // Without an id (a fixture's), nothing can answer it.
                (Some(_), None) => out.push(Change::Seen {
                    method: Some(method.to_owned()),
                }),
                (None, _) => self.record_invalid(
                    out,
                    Some(method),
                    None,
                    "/params/sessionId",
                    "required",
                    format!("`{method}` without a string `sessionId`; not folded"),
                    false,
                ),
            },
            _ if legacy::is_legacy(method) => self.legacy(method, params, out),
            _ if tasks::is_lifecycle(method) => self.task_lifecycle(method, params, out),
            _ => {
                if split_method(method).is_some() && method_kind(method).is_some() {
                    self.extension_call(method, params, out);
                } else if split_method(method).is_some() || method.starts_with("_acp_ext:") {
                    self.record_invalid(
                        out,
                        Some(method),
                        sid.as_deref(),
                        "/method",
                        "unknown-extension-method",
                        format!("`{method}` is not a method of the contract"),
                        false,
                    );
                } else {
                    out.push(Change::Seen {
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
        out: &mut Vec<Change>,
    ) {
        let before = out.len();
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
            out.push(Change::Seen {
                method: Some(call.method),
            });
        }
    }

    fn answer(
        &mut self,
        call: &Call,
        id: &Value,
        outcome: Result<&Value, &Value>,
        out: &mut Vec<Change>,
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
            out.push(Change::SessionDiscarded {
                session_id: sid.to_owned(),
            });
            return;
        }
        match (method, outcome) {
            ("initialize", Ok(result)) => self.read_advertisement(result, Side::Agent, out),
            ("session/new" | "session/fork", Ok(result)) => {
                if let Some(new) = str_at(result, "sessionId") {
                    self.current_session = Some(new.to_owned());
                    self.session_mut(new).closed = false;
                    out.push(Change::SessionStarted {
                        session_id: new.to_owned(),
                    });
                }
            }
            ("session/prompt", _) => {
                if let Some(sid) = sid {
                    let s = self.session_mut(sid);
                    s.turns.running = false;
                    s.turns.last_stop_reason = match outcome {
                        Ok(r) => str_at(r, "stopReason").map(str::to_owned),
                        Err(_) => Some("error".to_owned()),
                    };
                    // The turn is over: a steer injected in it (or sent as
                    // this prompt) and never applied has an unknown outcome,
                    // and is never resent.
                    let mut ended = Vec::new();
                    for (id, st) in s.steers.iter_mut() {
                        let this = call.steer_id.as_deref() == Some(id.as_str());
                        // No notification confirms `_session/steering`:
                        // its `injected` is as far as the traffic tells.
                        if st.transport == "session/steering" {
                            continue;
                        }
                        if st.outcome == SteerOutcome::Injected
                            || (this && st.outcome == SteerOutcome::Pending)
                        {
                            st.outcome = SteerOutcome::Unknown;
                            ended.push(id.clone());
                        }
                    }
                    out.push(Change::Turn {
                        session_id: sid.to_owned(),
                    });
                    if let Ok(result) = outcome {
                        self.turn_usage(method, sid, "/result", result, out);
                    }
                    for steer_id in ended {
                        out.push(Change::Steer {
                            session_id: sid.to_owned(),
                            steer_id,
                        });
                    }
                }
            }
            (STANDARD_STEERING, _) => {
                if let (Some(sid), Some(steer_id)) = (sid, call.steer_id.as_deref()) {
                    let result = match outcome {
                        Ok(r) => match str_at(r, "outcome") {
                            Some("injected") => SteerOutcome::Injected,
                            Some("startedNewTurn") => SteerOutcome::StartedNewTurn,
                            Some("promptRequired") => SteerOutcome::PromptRequired,
                            Some("failed") => SteerOutcome::Failed,
                            _ => SteerOutcome::Unknown,
                        },
                        Err(e) if e.get("code").and_then(Value::as_i64) == Some(-32600) => {
                            SteerOutcome::Refused
                        }
                        Err(_) => SteerOutcome::Unknown,
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
                    out.push(Change::RequestResolved {
                        session_id: sid.to_owned(),
                        request_id: id_text(id),
                    });
                }
            }
            _ => {
                let Some((_, path)) = split_method(method) else {
                    return;
                };
                match (path, outcome) {
                    ("session/steer", _) => {
                        if let (Some(sid), Some(steer_id)) = (sid, call.steer_id.as_deref()) {
                            self.steer_answer(sid, steer_id, outcome, out);
                        }
                    }
                    ("rate_limits/get", Ok(result)) => {
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
                    ("rate_limits/get", Err(_)) => {
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
                            out.push(Change::RateLimits { limit_ids: ids });
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn read_advertisement(&mut self, message: &Value, side: Side, out: &mut Vec<Change>) {
        let caps = initialize_capabilities(message, side).unwrap_or(&Value::Null);
        let adv = Advertisement::read(caps, side);
        let peer = self.negotiation.side_mut(side);
        let info_key = if side == Side::Agent {
            "agentInfo"
        } else {
            "clientInfo"
        };
        *peer = PeerFeatures {
            seen: true,
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
            if f.is_valid() {
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
                let mut sub = json!({"version": 1, "lifecycle": on("subagentLifecycle")});
                if on("subagentManagement") {
                    for k in ["list", "cancel", "output"] {
                        sub[k] = json!(true);
                    }
                }
                peer.features
                    .insert(Feature::Subagents.key().to_owned(), sub);
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
                self.record_invalid(
                    out,
                    method,
                    None,
                    &format!("{base}{}", v.pointer),
                    v.rule.id(),
                    format!(
                        "capability `{}` is invalid and ignored (the others stand): {}",
                        f.feature.key(),
                        v.message()
                    ),
                    false,
                );
            }
        }
        out.push(Change::Negotiated { side });
    }

    /// The epoch rules `acp-ext check` applies ([`crate::meta::epoch_findings`]),
    /// recorded. A time in milliseconds is read as seconds: the value to
    /// fold instead is returned (`None`: fold it as sent).
    fn epoch_records(
        &mut self,
        method: &str,
        sid: Option<&str>,
        value: &Value,
        at: &str,
        out: &mut Vec<Change>,
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
            self.record_invalid(
                out,
                Some(method),
                sid,
                &f.pointer,
                f.rule.id(),
                message,
                true,
            );
        }
        converted
    }

    /// Whether the agent's advertisement was seen and lacks `feature`.
    fn agent_lacks(&self, feature: Feature) -> bool {
        self.negotiation.agent.seen && !self.negotiation.agent.features.contains_key(feature.key())
    }

    fn violations(
        &mut self,
        out: &mut Vec<Change>,
        method: &str,
        sid: Option<&str>,
        prefix: &str,
        violations: &[Violation],
        folded: bool,
    ) {
        for v in violations {
            self.record_invalid(
                out,
                Some(method),
                sid,
                &format!("{prefix}{}", v.pointer),
                v.rule.id(),
                v.message(),
                folded,
            );
        }
    }

    fn meta_error(
        &mut self,
        out: &mut Vec<Change>,
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
        out: &mut Vec<Change>,
    ) {
        for f in findings {
            self.record_invalid(
                out,
                Some(method),
                sid,
                &f.pointer,
                f.rule.id(),
                f.message,
                false,
            );
        }
    }

    fn steer(
        &mut self,
        sid: &str,
        steer_id: &str,
        transport: &str,
        outcome: SteerOutcome,
        out: &mut Vec<Change>,
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
        out.push(Change::Steer {
            session_id: sid.to_owned(),
            steer_id: steer_id.to_owned(),
        });
    }

    fn steer_answer(
        &mut self,
        sid: &str,
        steer_id: &str,
        outcome: Result<&Value, &Value>,
        out: &mut Vec<Change>,
    ) {
        let result = match outcome {
            Ok(r) => match str_at(r, "outcome") {
                Some("injected") => SteerOutcome::Injected,
                Some("failed") => SteerOutcome::Failed,
                _ => SteerOutcome::Unknown,
            },
            Err(e) if e.get("code").and_then(Value::as_i64) == Some(-32600) => {
                SteerOutcome::Refused
            }
            Err(_) => SteerOutcome::Unknown,
        };
        // An applied steer stays applied when its answer comes late.
        let already = self
            .session(sid)
            .and_then(|s| s.steers.get(steer_id))
            .is_some_and(|s| s.outcome == SteerOutcome::Applied);
        if !already {
            self.steer(sid, steer_id, "request", result, out);
        }
    }

    fn agent_request(
        &mut self,
        method: &str,
        sid: &str,
        id: &Value,
        params: &Value,
        out: &mut Vec<Change>,
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
        out.push(Change::RequestPending {
            session_id: sid.to_owned(),
            request_id: id_text(id),
        });
    }

    fn extension_call(&mut self, method: &str, params: &Value, out: &mut Vec<Change>) {
        let sid = str_at(params, "sessionId");
        if method_kind(method) == Some(crate::methods::MethodKind::Request) {
            match ExtensionRequest::parse(method, params) {
                Ok(Some((_, ExtensionRequest::SessionSteer(r)))) => {
                    let (sid, steer_id) = (r.session_id.clone(), r.steer_id.clone());
                    self.steer(&sid, &steer_id, "request", SteerOutcome::Pending, out);
                }
                // Goal control, queries: read; the state changes through
                // the agent's updates and the answers.
                Ok(_) => out.push(Change::Seen {
                    method: Some(method.to_owned()),
                }),
                Err(e) => {
                    let sid = sid.map(str::to_owned);
                    self.violations(out, method, sid.as_deref(), "/params", &e.violations, false)
                }
            }
            return;
        }
        match ExtensionNotification::parse(method, params) {
            Ok(Some((_, n))) => self.extension_notification(method, n, params, out),
            Ok(None) => out.push(Change::Seen {
                method: Some(method.to_owned()),
            }),
            Err(e) => {
                let sid = sid.map(str::to_owned);
                if let Some(sid) = sid.as_deref()
                    && split_method(method).map(|(_, p)| p) == Some("session/usage_update")
                    && let Some(stripped) = legacy::without_bad_scope(params, &e.violations)
                    && let Ok(Some((_, n))) = ExtensionNotification::parse(method, &stripped)
                {
                    // An invalid scope id falls back to unscoped (the Lody
                    // client's rule), reported.
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(sid),
                        "/params/_meta",
                        "scope-id-fallback",
                        "invalid `usageScopeId`; the update is folded as unscoped".to_owned(),
                        true,
                    );
                    self.extension_notification(method, n, &stripped, out);
                    return;
                }
                self.violations(out, method, sid.as_deref(), "/params", &e.violations, false);
                // An output event that cannot be read still means the live
                // run it names has output the state does not hold.
                if split_method(method).map(|(_, p)| p) == Some("subagents/event")
                    && str_at(params, "type") == Some("output")
                    && let (Some(sid), Some(run_id)) = (sid, str_at(params, "runId"))
                    && let Some(run) = self.run_mut(&sid, run_id)
                    && run.is_live()
                    && !run.output_incomplete
                {
                    run.output_incomplete = true;
                    out.push(Change::SubagentRun {
                        session_id: sid,
                        run_id: run_id.to_owned(),
                    });
                }
            }
        }
    }

    fn extension_notification(
        &mut self,
        method: &str,
        n: ExtensionNotification,
        params: &Value,
        out: &mut Vec<Change>,
    ) {
        match n {
            ExtensionNotification::SubagentEvent(event) => {
                if self.agent_lacks(Feature::SubagentEvents) {
                    let sid = str_at(params, "sessionId").map(str::to_owned);
                    self.record_invalid(
                        out,
                        Some(method),
                        sid.as_deref(),
                        "/method",
                        "not-negotiated",
                        "a subagent event from an agent that did not advertise `subagentEvents`; dropped".to_owned(),
                        false,
                    );
                    return;
                }
                self.subagent_event(method, params, Some(event), Dialect::Extension, out);
            }
            ExtensionNotification::SessionUsageUpdate(u) => {
                self.usage_update(method, &u, params, Dialect::Extension, out)
            }
            ExtensionNotification::RateLimitsUpdate(snapshot) => {
                self.upsert_rate_limits(snapshot, Dialect::Extension, out)
            }
            ExtensionNotification::SessionSteerApplied(a) => {
                let (sid, steer_id) = (a.session_id.clone(), a.steer_id.clone());
                let transport = self
                    .session(&sid)
                    .and_then(|s| s.steers.get(&steer_id))
                    .map_or("request".to_owned(), |s| s.transport.clone());
                self.steer(&sid, &steer_id, &transport, SteerOutcome::Applied, out);
            }
            ExtensionNotification::SessionActivityUpdate(a) => {
                let sid = a.session_id.clone();
                let s = self.session_mut(&sid);
                s.activity.state = Some(a.state);
                s.activity.background_task_count = Some(a.background_task_count.get());
                out.push(Change::Activity { session_id: sid });
            }
        }
    }

    // -----------------------------------------------------------------
    // session/update

    fn session_update(&mut self, method: &str, params: &Value, out: &mut Vec<Change>) {
        let sid = match str_at(params, "sessionId") {
            Some(sid) => sid.to_owned(),
            None => {
                // Fixtures keep updates without their session: such an
                // update belongs to the current session (or the only
                // one), else to the unnamed session `""`.
                let only = (self.sessions.len() == 1)
                    .then(|| self.sessions.keys().next().cloned())
                    .flatten();
                let sid = self.current_session.clone().or(only).unwrap_or_default();
                let mut params = params.clone();
                params["sessionId"] = Value::String(sid);
                return self.session_update(method, &params, out);
            }
        };
        let Some(update) = params.get("update") else {
            self.record_invalid(
                out,
                Some(method),
                Some(&sid),
                "/params/update",
                "required",
                "`session/update` without `update`".to_owned(),
                false,
            );
            return;
        };
        let tag = str_at(update, "sessionUpdate").unwrap_or("");
        // A session that is a standard subagent run: its updates are the
        // run's output.
        if let Some(root) = self.standard_run_root(&sid)
            && self.child_session_update(method, &root, &sid, tag, update, out)
        {
            return;
        }
        let before = out.len();
        self.turn_meta(&sid, tag, update, out);
        self.session_update_tag(method, &sid, tag, update, out);
        if out.len() == before && is_standard_update(tag) {
            out.push(Change::Transcript {
                session_id: sid,
                update: tag.to_owned(),
            });
        }
    }

    fn session_update_tag(
        &mut self,
        method: &str,
        sid: &str,
        tag: &str,
        update: &Value,
        out: &mut Vec<Change>,
    ) {
        let sid = sid.to_owned();
        match tag {
            "tool_call" | "tool_call_update" => self.tool_call(method, &sid, update, out),
            "session_info_update" => self.session_info(method, &sid, update, out),
            "usage_update" => self.standard_usage_update(method, &sid, update, out),
            "notice" => {
                let (level, message) = notice_of(update);
                self.notice(&sid, level, message, None, Dialect::Standard, out);
            }
            "compaction_update" => {
                let Some(id) = str_at(update, "compactionId").map(str::to_owned) else {
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(&sid),
                        "/params/update/compactionId",
                        "required",
                        "`compaction_update` without a string `compactionId`".to_owned(),
                        false,
                    );
                    return;
                };
                let cap = self.limits.activities_per_session;
                let s = self.session_mut(&sid);
                let e = s.activities.entry(id.clone()).or_insert(ActivityEntry {
                    kind: ActivityKind::ContextCompaction,
                    status: None,
                    error: None,
                    summary: None,
                    used_tokens_before: None,
                    used_tokens_after: None,
                    dialect: Dialect::Standard,
                });
                // A patch: omitted keeps, null clears.
                patch_str(&mut e.status, update.get("status"));
                // The summary is a string or (as sent by claude) content blocks.
                match update.get("summary") {
                    Some(Value::Array(blocks)) => {
                        e.summary = Some(
                            blocks
                                .iter()
                                .filter_map(|b| str_at(b, "text"))
                                .collect::<Vec<_>>()
                                .join("\n"),
                        )
                    }
                    other => patch_str(&mut e.summary, other),
                }
                patch_str(&mut e.error, update.get("error"));
                cap_map(&mut s.activities, cap);
                out.push(Change::ActivityEntry {
                    session_id: sid,
                    id,
                });
            }
            "compaction_summary_chunk" => {
                if let Some(id) = str_at(update, "compactionId").map(str::to_owned) {
                    let text = update
                        .get("content")
                        .and_then(|c| str_at(c, "text"))
                        .unwrap_or("")
                        .to_owned();
                    let s = self.session_mut(&sid);
                    if let Some(e) = s.activities.get_mut(&id) {
                        e.summary.get_or_insert_with(String::new).push_str(&text);
                        out.push(Change::ActivityEntry {
                            session_id: sid,
                            id,
                        });
                    }
                }
            }
            "subagent_update" => self.standard_subagent(method, &sid, update, out),
            "session_message" | "session_message_chunk" => self.session_message(&sid, update, out),
            "subagent_spawned" | "subagent_state_update" | "_subagent_update" => {
                self.air_subagent(method, &sid, update, out)
            }
            "async_task_spawned"
            | "async_task_progress"
            | "async_task_state_update"
            | "_async_task_spawned"
            | "_async_task_progress"
            | "_async_task_state_update" => self.async_task(method, &sid, tag, update, out),
            // ACP v2's `state_update`: the activity level, and the
            // background work when reported (omitted is not zero).
            "state_update" => {
                let level = str_at(update, "state")
                    .and_then(|t| serde_json::from_value::<SessionActivityState>(json!(t)).ok());
                let background = update
                    .get("background")
                    .and_then(Value::as_array)
                    .map(|b| b.len() as u64);
                let s = self.session_mut(&sid);
                if level.is_some() {
                    s.activity.state = level;
                }
                if background.is_some() {
                    s.activity.background_task_count = background;
                }
                if level.is_some() || background.is_some() {
                    out.push(Change::Activity {
                        session_id: sid.clone(),
                    });
                }
                // The v2 turn's end carries the prompt result's usage.
                if level == Some(SessionActivityState::Idle) {
                    self.turn_usage(method, &sid, "/params/update", update, out);
                }
            }
            "plan" | "plan_update" => {
                let plan = if tag == "plan" {
                    update.clone()
                } else {
                    update.get("plan").cloned().unwrap_or(Value::Null)
                };
                if plan.is_object() {
                    self.session_mut(&sid).plan = Some(plan);
                    out.push(Change::Plan { session_id: sid });
                } else {
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(&sid),
                        "/params/update/plan",
                        "type-object",
                        "`plan_update` without a plan object".to_owned(),
                        false,
                    );
                }
            }
            "plan_removed" => {
                let s = self.session_mut(&sid);
                let id = str_at(update, "planId");
                let current = s.plan.as_ref().and_then(|p| str_at(p, "planId"));
                if s.plan.is_some() && (id.is_none() || id == current) {
                    s.plan = None;
                    out.push(Change::Plan { session_id: sid });
                }
            }
            t if is_standard_update(t) => {}
            other => {
                self.record_invalid(
                    out,
                    Some(method),
                    Some(&sid),
                    "/params/update/sessionUpdate",
                    "unknown-session-update",
                    format!("`{other}` is not a session update of ACP (v1 or v2) or of a dialect the state reads; not folded"),
                    false,
                );
            }
        }
    }

    fn turn_meta(&mut self, sid: &str, tag: &str, update: &Value, out: &mut Vec<Change>) {
        let turn_id = ext_key(update, "turnId").and_then(Value::as_str);
        let phase = if tag.ends_with("message_chunk") {
            ext_key(update, "messagePhase")
                .or_else(|| self.vendor_meta(update, "codex")?.get("phase"))
                .and_then(Value::as_str)
        } else {
            None
        };
        let origin = ext_key(update, "turnOrigin");
        let ended = tag == "session_info_update"
            && ext_key(update, "turnEnded").and_then(Value::as_bool) == Some(true);
        if turn_id.is_none() && phase.is_none() && !ended {
            return;
        }
        let s = self.session_mut(sid);
        let before = s.turns.clone();
        if let Some(t) = turn_id {
            s.turns.turn_id = Some(t.to_owned());
            if (t.starts_with("auto:") || origin.is_some())
                && s.turns.engine_turn.as_ref().is_none_or(|e| e.turn_id != t)
                && !ended
            {
                let kind = origin
                    .and_then(|o| str_at(o, "kind").or(o.as_str()))
                    .unwrap_or("engine");
                s.turns.engine_turn = Some(EngineTurn {
                    turn_id: t.to_owned(),
                    origin: kind.to_owned(),
                });
                s.turns.engine_turns += 1;
            }
        }
        if let Some(p) = phase {
            s.turns.message_phase = Some(p.to_owned());
        }
        if ended {
            s.turns.engine_turn = None;
        }
        if s.turns != before {
            out.push(Change::Turn {
                session_id: sid.to_owned(),
            });
        }
    }

    fn tool_call(&mut self, method: &str, sid: &str, update: &Value, out: &mut Vec<Change>) {
        let Some(tool_call_id) = str_at(update, "toolCallId").map(str::to_owned) else {
            return;
        };
        let empty = Map::new();
        let m = meta_of(update).unwrap_or(&empty);
        let title = str_at(update, "title").map(str::to_owned);
        match meta::read::<fields::Task>(m) {
            Ok(Some(task)) => {
                let task_id = task.task_id.clone();
                let cap = self.limits.tasks_per_session;
                let s = self.session_mut(sid);
                let title = title.or_else(|| s.tasks.get(&task_id).and_then(|t| t.title.clone()));
                s.tasks.insert(
                    task_id.clone(),
                    TaskState {
                        tool_call_id: tool_call_id.clone(),
                        title: title.clone(),
                        task,
                    },
                );
                cap_map(&mut s.tasks, cap);
                out.push(Change::Task {
                    session_id: sid.to_owned(),
                    task_id,
                });
            }
            Ok(None) => {}
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
        match meta::read::<fields::Activity>(m) {
            Ok(Some(a)) => {
                let status = str_at(update, "status").map(|s| match s {
                    "pending" => "in_progress".to_owned(),
                    other => other.to_owned(),
                });
                let cap = self.limits.activities_per_session;
                let s = self.session_mut(sid);
                let e = s
                    .activities
                    .entry(tool_call_id.clone())
                    .or_insert(ActivityEntry {
                        kind: a.kind,
                        status: None,
                        error: None,
                        summary: None,
                        used_tokens_before: None,
                        used_tokens_after: None,
                        dialect: Dialect::Extension,
                    });
                e.kind = a.kind;
                if status.is_some() {
                    e.status = status;
                }
                if let Some(r) = &a.failure_reason {
                    e.error = Some(r.clone());
                }
                if let Some(n) = a.used_tokens_before {
                    e.used_tokens_before = Some(n.get());
                }
                if let Some(n) = a.used_tokens_after {
                    e.used_tokens_after = Some(n.get());
                }
                cap_map(&mut s.activities, cap);
                out.push(Change::ActivityEntry {
                    session_id: sid.to_owned(),
                    id: tool_call_id,
                });
            }
            Ok(None) => {
                // A later update of a known activity row (its status).
                let status = str_at(update, "status").map(str::to_owned);
                let s = self.session_mut(sid);
                if let (Some(e), Some(status)) = (s.activities.get_mut(&tool_call_id), status)
                    && e.dialect == Dialect::Extension
                {
                    e.status = Some(status);
                    out.push(Change::ActivityEntry {
                        session_id: sid.to_owned(),
                        id: tool_call_id,
                    });
                }
            }
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
    }

    fn session_info(&mut self, method: &str, sid: &str, update: &Value, out: &mut Vec<Change>) {
        let Some(m) = meta_of(update) else {
            self.title(method, sid, update, None, out);
            return;
        };
        let source = match meta::read::<fields::TitleSource>(m) {
            Ok(s) => s.map(Ok),
            Err(_) => Some(Err(())),
        };
        // Without a contract tag, codex's own `titleSource` (codex only).
        let source = source.or_else(|| {
            let tag = self.vendor_meta(update, "codex")?.get("titleSource")?;
            match serde_json::from_value::<crate::session::TitleSource>(tag.clone()) {
                Ok(s) => Some(Ok(s)),
                Err(_) => Some(Err(())),
            }
        });
        self.title(method, sid, update, source, out);
        match meta::read::<fields::Goal>(m) {
            Ok(Some(goal)) => self.set_goal(sid, goal, out),
            Ok(None) => self.vendor_goal(method, sid, update, out),
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
        self.thread_status(sid, update, out);
        match meta::read::<fields::Notice>(m) {
            Ok(Some(n)) => {
                let source = n.source.clone();
                self.notice(
                    sid,
                    n.level,
                    n.message.clone(),
                    source,
                    Dialect::Extension,
                    out,
                )
            }
            Ok(None) => {}
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
    }

    fn set_goal(&mut self, sid: &str, goal: Option<GoalSnapshot>, out: &mut Vec<Change>) {
        self.session_mut(sid).goal = Some(goal);
        out.push(Change::Goal {
            session_id: sid.to_owned(),
        });
    }

    /// `_meta.<vendor>` of `v`, unless the agent said it is someone else
    /// (`agentInfo.name` without the vendor's name): vendor keys are read
    /// for their provider only.
    pub(super) fn vendor_meta<'a>(
        &self,
        v: &'a Value,
        vendor: &str,
    ) -> Option<&'a Map<String, Value>> {
        let section = meta_of(v)?.get(vendor)?.as_object()?;
        match self.agent_name() {
            Some(name) if !name.to_ascii_lowercase().contains(vendor) => None,
            _ => Some(section),
        }
    }

    /// A goal in another carrier, by precedence: the legacy top-level
    /// `_meta.goal`, codex's `_meta.codex.goal`, AIR's
    /// `_meta.jetbrains.air.goal`. Their times are epoch milliseconds
    /// (`createdAt`, `updatedAt`), converted to seconds; codex's
    /// `usageLimited`/`budgetLimited` read as `limited`, `cleared` clears.
    fn vendor_goal(&mut self, method: &str, sid: &str, update: &Value, out: &mut Vec<Change>) {
        let meta = meta_of(update);
        let (at, raw) = if let Some(g) = meta.and_then(|m| m.get("goal")) {
            ("/params/update/_meta/goal", g)
        } else if let Some(g) = self
            .vendor_meta(update, "codex")
            .and_then(|c| c.get("goal"))
        {
            ("/params/update/_meta/codex/goal", g)
        } else if let Some(g) = meta
            .and_then(|m| m.get("jetbrains"))
            .and_then(|j| j.get("air"))
            .and_then(|a| a.get("goal"))
        {
            ("/params/update/_meta/jetbrains/air/goal", g)
        } else {
            return;
        };
        let Some(o) = raw.as_object() else {
            if raw.is_null() {
                self.set_goal(sid, None, out);
            } else {
                self.record_invalid(
                    out,
                    Some(method),
                    Some(sid),
                    at,
                    "type-object",
                    "a goal must be an object or null; the old one is kept".to_owned(),
                    false,
                );
            }
            return;
        };
        let mut goal = o.clone();
        match o.get("status").and_then(Value::as_str) {
            Some("cleared") => return self.set_goal(sid, None, out),
            Some("usageLimited" | "budgetLimited") => {
                goal.insert("status".into(), json!("limited"));
            }
            _ => {}
        }
        for (ms, secs) in [
            ("createdAt", "createdAtEpochSeconds"),
            ("updatedAt", "updatedAtEpochSeconds"),
        ] {
            if let Some(t) = goal.remove(ms).and_then(|t| t.as_f64()) {
                goal.insert(secs.into(), json!((t / 1000.0).floor()));
            }
        }
        goal.remove("controlMethod");
        match serde_json::from_value::<GoalSnapshot>(Value::Object(goal.clone())) {
            Ok(g) => self.set_goal(sid, Some(g), out),
            Err(_) => {
                let violations = crate::violation::check::<GoalSnapshot>(&Value::Object(goal));
                self.violations(out, method, Some(sid), at, &violations, false);
            }
        }
    }

    /// codex's `_meta.codex.threadStatus {type: active|idle}` as the
    /// session's activity level.
    fn thread_status(&mut self, sid: &str, update: &Value, out: &mut Vec<Change>) {
        let level = match self
            .vendor_meta(update, "codex")
            .and_then(|c| c.get("threadStatus"))
            .and_then(|t| str_at(t, "type"))
        {
            Some("active") => SessionActivityState::Running,
            Some("idle") => SessionActivityState::Idle,
            _ => return,
        };
        let s = self.session_mut(sid);
        if s.activity.state != Some(level) {
            s.activity.state = Some(level);
            out.push(Change::Activity {
                session_id: sid.to_owned(),
            });
        }
    }

    fn title(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        source: Option<Result<crate::session::TitleSource, ()>>,
        out: &mut Vec<Change>,
    ) {
        let Some(raw) = update.get("title") else {
            return;
        };
        let advertised = self
            .negotiation
            .agent
            .features
            .contains_key(Feature::SessionTitle.key());
        let origin = match source {
            Some(Ok(s)) => match TitleOrigin::of(s) {
                Some(TitleOrigin::Generated) if self.agent_lacks(Feature::SessionTitle) => {
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(sid),
                        "/params/update/_meta",
                        "not-negotiated",
                        "a `generated` title from an agent that did not advertise `sessionTitle`; ignored".to_owned(),
                        false,
                    );
                    return;
                }
                Some(o) => o,
                // `unset`: no title to show.
                None => return,
            },
            // A malformed tag: the title is ignored, and that is reported.
            Some(Err(())) => {
                self.record_invalid(
                    out,
                    Some(method),
                    Some(sid),
                    "/params/update/_meta",
                    "title-source",
                    "malformed `titleSource`; the title is ignored".to_owned(),
                    false,
                );
                return;
            }
            None if advertised => {
                self.record_invalid(
                    out,
                    Some(method),
                    Some(sid),
                    "/params/update/title",
                    "title-without-source",
                    "an untagged title from an agent that advertised `sessionTitle`; ignored"
                        .to_owned(),
                    false,
                );
                return;
            }
            None => TitleOrigin::Untagged,
        };
        let s = self.session_mut(sid);
        let current = s.title_source;
        let allowed = match (origin, current) {
            (_, None) => true,
            (_, Some(TitleOrigin::User)) => false,
            (TitleOrigin::Explicit, _) => true,
            (TitleOrigin::Fallback, Some(_)) => s.title.is_none(),
            (o, Some(c)) => o >= c,
        };
        if !allowed {
            return;
        }
        match raw {
            Value::Null => {
                s.title = None;
                s.title_source = None;
            }
            Value::String(t) => {
                let t = t.trim();
                if t.is_empty() {
                    return;
                }
                s.title = Some(t.to_owned());
                s.title_source = Some(origin);
            }
            _ => return,
        }
        out.push(Change::Title {
            session_id: sid.to_owned(),
        });
    }

    pub(super) fn notice(
        &mut self,
        sid: &str,
        level: NoticeLevel,
        message: String,
        source: Option<String>,
        dialect: Dialect,
        out: &mut Vec<Change>,
    ) {
        let cap = self.limits.notices_per_session;
        let s = self.session_mut(sid);
        if cap == 0 {
            return;
        }
        while s.notices.len() >= cap {
            s.notices.remove(0);
        }
        s.notices.push(NoticeEntry {
            level,
            message,
            source,
            dialect,
        });
        out.push(Change::Notice {
            session_id: sid.to_owned(),
        });
    }

    // -----------------------------------------------------------------
    // Rate limits

    pub(super) fn upsert_rate_limits(
        &mut self,
        snapshot: RateLimitsSnapshot,
        dialect: Dialect,
        out: &mut Vec<Change>,
    ) {
        if snapshot.rate_limits.is_empty() {
            return;
        }
        let fetched = snapshot.fetched_at_epoch_seconds.map(|t| t.get());
        let mut ids = Vec::new();
        for limit in snapshot.rate_limits {
            let id = limit.limit_id.clone();
            // An older observation does not override a fresher one.
            let older = self.rate_limits.get(&id).is_some_and(|e| {
                matches!((fetched, e.fetched_at_epoch_seconds), (Some(new), Some(old)) if new < old)
            });
            if older {
                continue;
            }
            self.rate_limits.insert(
                id.clone(),
                RateLimitEntry {
                    rate_limit: limit,
                    fetched_at_epoch_seconds: fetched,
                    stale: false,
                    dialect,
                },
            );
            ids.push(id);
        }
        cap_map(&mut self.rate_limits, self.limits.rate_limits);
        if !ids.is_empty() {
            out.push(Change::RateLimits { limit_ids: ids });
        }
    }
}

/// A patch field: omitted keeps, `null` clears, a string replaces.
pub(super) fn patch_str(field: &mut Option<String>, v: Option<&Value>) {
    match v {
        None => {}
        Some(Value::String(s)) => *field = Some(s.clone()),
        Some(Value::Null) => *field = None,
        Some(_) => {}
    }
}
