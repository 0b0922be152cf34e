//! How each message changes the state.

use serde_json::{Map, Value, json};

use super::legacy;
use super::*;
use crate::capabilities::Feature;
use crate::meta::{self, MetaError, fields};
use crate::methods::{ExtensionNotification, ExtensionRequest, ExtensionResponse, method_kind};
use crate::namespace::{self, split_method};
use crate::negotiation::{Advertisement, initialize_capabilities};
use crate::rate_limits::RateLimitsSnapshot;
use crate::sequence::SequenceFinding;
use crate::session::{ActivityKind, NoticeLevel, SessionActivityState};
use crate::subagent_events::{SubagentEvent, SubagentEventPayload, SubagentSnapshot};
use crate::usage::{ModelUsage, SessionUsageUpdate, sum_model_usage};
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

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn meta_of(v: &Value) -> Option<&Map<String, Value>> {
    v.get("_meta").and_then(Value::as_object)
}

/// `key` of the contract section (`_meta.ua` first, then `_meta.lody`).
fn ext_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
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
        match method {
            "initialize" => self.read_advertisement(params, Side::Client, out),
            "session/load" | "session/resume" => {
                if let Some(sid) = sid {
                    self.runs_lost(&sid, out);
                    self.current_session = Some(sid.clone());
                    self.seq.session_started(&sid);
                    self.session_mut(&sid).closed = false;
                    out.push(Change::SessionStarted { session_id: sid });
                }
            }
            "session/close" | "session/delete" => {
                if let Some(sid) = sid {
                    self.seq.session_closed(&sid);
                    self.session_mut(&sid).closed = true;
                    out.push(Change::SessionClosed { session_id: sid });
                }
            }
            "session/prompt" if dir != Direction::AgentToClient => {
                if let Some(sid) = sid {
                    self.seq.prompt_sent(&sid);
                    let steer = ext_key(params, "steer").and_then(|s| str_at(s, "id"));
                    self.current_session = Some(sid.clone());
                    let s = self.session_mut(&sid);
                    s.turns.prompts += 1;
                    s.turns.running = true;
                    out.push(Change::Turn {
                        session_id: sid.clone(),
                    });
                    if let Some(steer_id) = steer.map(str::to_owned) {
                        self.seq.steer_sent(&sid, &steer_id, false);
                        self.steer(&sid, &steer_id, "prompt", SteerOutcome::Pending, out);
                    }
                }
            }
            "session/update" => self.session_update(method, params, out),
            "session/request_permission" | "elicitation/create" => {
                if let (Some(sid), Some(id)) = (sid, id) {
                    self.agent_request(method, &sid, id, params, out);
                }
            }
            _ if legacy::is_legacy(method) => self.legacy(method, params, out),
            _ => {
                if split_method(method).is_some() && method_kind(method).is_some() {
                    self.extension_call(method, params, out);
                } else if split_method(method).is_some() {
                    self.record_invalid(
                        out,
                        Some(method),
                        sid.as_deref(),
                        "/method",
                        "unknown-extension-method",
                        format!("`{method}` is not a method of the contract"),
                        false,
                    );
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
        let method = call.method.as_str();
        let sid = call.session.as_deref();
        match (method, outcome) {
            ("initialize", Ok(result)) => self.read_advertisement(result, Side::Agent, out),
            ("session/new" | "session/fork", Ok(result)) => {
                if let Some(new) = str_at(result, "sessionId") {
                    self.current_session = Some(new.to_owned());
                    self.seq.session_started(new);
                    self.session_mut(new).closed = false;
                    out.push(Change::SessionStarted {
                        session_id: new.to_owned(),
                    });
                }
            }
            ("session/prompt", _) => {
                if let Some(sid) = sid {
                    let findings = self.seq.prompt_answered(sid);
                    self.sequence_findings(method, sid, findings, out);
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
                    for steer_id in ended {
                        out.push(Change::Steer {
                            session_id: sid.to_owned(),
                            steer_id,
                        });
                    }
                }
            }
            ("session/request_permission" | "elicitation/create", _) => {
                if let Some(sid) = sid
                    && self
                        .session_mut(sid)
                        .pending_requests
                        .shift_remove(&id_text(id))
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
                            self.steer_answer(method, sid, steer_id, outcome, out);
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
        *peer = PeerFeatures {
            seen: true,
            ..PeerFeatures::default()
        };
        for f in &adv.features {
            if f.is_valid() {
                peer.features
                    .insert(f.feature.key().to_owned(), f.raw.clone());
            } else {
                peer.invalid.push(f.feature.key().to_owned());
            }
        }
        let key = if message.get(side.capabilities_key()).is_some() {
            side.capabilities_key()
        } else {
            "capabilities"
        };
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

    fn sequence_findings(
        &mut self,
        method: &str,
        sid: &str,
        findings: Vec<SequenceFinding>,
        out: &mut Vec<Change>,
    ) {
        for f in findings {
            self.record_invalid(
                out,
                Some(method),
                Some(sid),
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
        method: &str,
        sid: &str,
        steer_id: &str,
        outcome: Result<&Value, &Value>,
        out: &mut Vec<Change>,
    ) {
        let (result, injected) = match outcome {
            Ok(r) => {
                let o = str_at(r, "outcome");
                let res = match o {
                    Some("injected") => SteerOutcome::Injected,
                    Some("failed") => SteerOutcome::Failed,
                    _ => SteerOutcome::Unknown,
                };
                (res, o == Some("injected"))
            }
            Err(e) => {
                let refused = e.get("code").and_then(Value::as_i64) == Some(-32600);
                let res = if refused {
                    SteerOutcome::Refused
                } else {
                    SteerOutcome::Unknown
                };
                (res, false)
            }
        };
        let findings = self.seq.steer_answered(sid, steer_id, injected);
        self.sequence_findings(method, sid, findings, out);
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
        let s = self.session_mut(sid);
        let run_live = run_id.as_ref().map(|r| {
            s.subagent_runs.get(r).is_some_and(|run| {
                matches!(
                    run.snapshot.state,
                    crate::subagent_events::SubagentState::Pending
                        | crate::subagent_events::SubagentState::Running
                )
            })
        });
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
                    self.seq.steer_sent(&sid, &steer_id, true);
                    self.steer(&sid, &steer_id, "request", SteerOutcome::Pending, out);
                }
                Ok(_) => {}
                Err(e) => {
                    let sid = sid.map(str::to_owned);
                    self.violations(out, method, sid.as_deref(), "/params", &e.violations, false)
                }
            }
            return;
        }
        match ExtensionNotification::parse(method, params) {
            Ok(Some((_, n))) => self.extension_notification(method, n, params, out),
            Ok(None) => {}
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
                self.violations(out, method, sid.as_deref(), "/params", &e.violations, false)
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
                let client_seen = self.client_seen;
                if let Some(f) = self.seq.steer_applied(&sid, &steer_id, client_seen) {
                    self.sequence_findings(method, &sid, vec![f], out);
                }
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
        let Some(sid) = str_at(params, "sessionId").map(str::to_owned) else {
            self.record_invalid(
                out,
                Some(method),
                None,
                "/params/sessionId",
                "required",
                "`session/update` without a string `sessionId`".to_owned(),
                false,
            );
            return;
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
        if let Some(root) = self.standard_run_root(&sid) {
            self.child_session_update(method, &root, &sid, tag, update, out);
            return;
        }
        self.turn_meta(&sid, tag, update, out);
        match tag {
            "tool_call" | "tool_call_update" => self.tool_call(method, &sid, update, out),
            "session_info_update" => self.session_info(method, &sid, update, out),
            "usage_update" => {
                let (Some(used), Some(size)) = (
                    update.get("used").and_then(Value::as_u64),
                    update.get("size").and_then(Value::as_u64),
                ) else {
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(&sid),
                        "/params/update",
                        "shape",
                        "`usage_update` needs non-negative integers `used` and `size`".to_owned(),
                        false,
                    );
                    return;
                };
                let cost = update.get("cost").filter(|c| c.is_object()).cloned();
                self.session_mut(&sid).usage.context = Some(ContextUsage { used, size, cost });
                out.push(Change::Context { session_id: sid });
            }
            "notice" => {
                let level = match str_at(update, "severity") {
                    Some("error") => NoticeLevel::Error,
                    Some("warning") => NoticeLevel::Warning,
                    _ => NoticeLevel::Info,
                };
                let mut message = str_at(update, "title").unwrap_or("").to_owned();
                if let Some(d) = str_at(update, "description") {
                    message = format!("{message}: {d}");
                }
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
                patch_str(&mut e.summary, update.get("summary"));
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
                    out.push(Change::Activity { session_id: sid });
                }
            }
            t if STANDARD_UPDATES.contains(&t) => {}
            other => {
                self.record_invalid(
                    out,
                    Some(method),
                    Some(&sid),
                    "/params/update/sessionUpdate",
                    "unknown-session-update",
                    format!("`{other}` is not a session update of ACP v1; not folded"),
                    false,
                );
            }
        }
    }

    fn turn_meta(&mut self, sid: &str, tag: &str, update: &Value, out: &mut Vec<Change>) {
        let turn_id = ext_key(update, "turnId").and_then(Value::as_str);
        let phase = if tag.ends_with("message_chunk") {
            ext_key(update, "messagePhase").and_then(Value::as_str)
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
        if let Some(f) = self
            .seq
            .native_id(sid, &tool_call_id, "/params/update/toolCallId")
        {
            self.sequence_findings(method, sid, vec![f], out);
        }
        let empty = Map::new();
        let m = meta_of(update).unwrap_or(&empty);
        let title = str_at(update, "title").map(str::to_owned);
        match meta::read::<fields::Task>(m) {
            Ok(Some(task)) => {
                let task_id = task.task_id.clone();
                if let Some(f) = self.seq.native_id(sid, &task_id, "/params/update/_meta") {
                    self.sequence_findings(method, sid, vec![f], out);
                }
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
        self.title(method, sid, update, source, out);
        match meta::read::<fields::Goal>(m) {
            Ok(Some(goal)) => {
                self.session_mut(sid).goal = goal;
                out.push(Change::Goal {
                    session_id: sid.to_owned(),
                });
            }
            Ok(None) => {}
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
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

    fn notice(
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
    // Subagent runs

    /// Folds a subagent event's params (valid by now): the sequence rules
    /// decide whether it is folded.
    pub(super) fn subagent_event(
        &mut self,
        method: &str,
        params: &Value,
        typed: Option<SubagentEvent>,
        dialect: Dialect,
        out: &mut Vec<Change>,
    ) {
        let (Some(sid), Some(run_id)) = (str_at(params, "sessionId"), str_at(params, "runId"))
        else {
            return;
        };
        let (sid, run_id) = (sid.to_owned(), run_id.to_owned());
        let verdict = self.seq.subagent_event(params);
        let accepted = verdict.accepted;
        self.sequence_findings(method, &sid, verdict.findings, out);
        if !accepted {
            return;
        }
        let limits = self.limits;
        let lineage = self.lineage_problem(&sid, &run_id, params);
        if let Some((rule, message)) = &lineage {
            self.record_invalid(
                out,
                Some(method),
                Some(&sid),
                "/params/snapshot/parentRunId",
                rule,
                message.clone(),
                true,
            );
        }
        let s = self.session_mut(&sid);
        match str_at(params, "type") {
            Some("snapshot") => {
                let Some(raw) = params.get("snapshot") else {
                    return;
                };
                // The typed parse that validated the event has the snapshot.
                let snapshot = match typed.map(|e| e.payload) {
                    Some(SubagentEventPayload::Snapshot(s)) => s,
                    _ => match serde_json::from_value::<SubagentSnapshot>(raw.clone()) {
                        Ok(s) => s,
                        Err(_) => return,
                    },
                };
                let incomplete = snapshot.output_incomplete.is_some();
                // A parent that would make a cycle or cross roots stays
                // unresolved (reported above).
                let parent_run = raw
                    .as_object()
                    .and_then(|o| o.get("parentRunId"))
                    .map(|p| p.as_str().map(str::to_owned))
                    .filter(|_| lineage.is_none());
                let parent_tool = snapshot.parent_tool_call_id.clone();
                match s.subagent_runs.get_mut(&run_id) {
                    Some(run) => {
                        run.snapshot = snapshot;
                        run.output_incomplete |= incomplete;
                        if run.parent_run_id.is_none() {
                            run.parent_run_id = parent_run;
                        }
                        if run.parent_tool_call_id.is_none() {
                            run.parent_tool_call_id = parent_tool;
                        }
                    }
                    None => {
                        s.subagent_runs.insert(
                            run_id.clone(),
                            RunState {
                                snapshot,
                                parent_run_id: parent_run,
                                parent_tool_call_id: parent_tool,
                                output_incomplete: incomplete,
                                progress: Map::new(),
                                text: String::new(),
                                tool_calls: IndexMap::new(),
                                plan: None,
                                output_events: 0,
                                dialect,
                                message_ended: false,
                                message_id: None,
                            },
                        );
                        cap_map(&mut s.subagent_runs, limits.runs_per_session);
                        if dialect == Dialect::Standard {
                            self.standard_children.insert(run_id.clone(), sid.clone());
                            let cap = limits.sessions.saturating_mul(limits.runs_per_session);
                            cap_map(&mut self.standard_children, cap);
                        }
                    }
                }
            }
            Some("progress") => {
                let (Some(run), Some(p)) = (
                    s.subagent_runs.get_mut(&run_id),
                    params.get("progress").and_then(Value::as_object),
                ) else {
                    return;
                };
                for (k, v) in p {
                    if v.is_null() {
                        run.progress.remove(k);
                    } else {
                        run.progress.insert(k.clone(), v.clone());
                    }
                }
            }
            Some("output") => {
                let (Some(run), Some(update)) =
                    (s.subagent_runs.get_mut(&run_id), params.get("update"))
                else {
                    return;
                };
                fold_output(run, update, &limits);
            }
            _ => return,
        }
        out.push(Change::SubagentRun {
            session_id: sid,
            run_id,
        });
    }

    /// Whether a snapshot's `parentRunId` would close a cycle in the run
    /// tree of `sid`, or name a run of another root session: the rule and
    /// a message, or `None` when the lineage is fine (or not given).
    fn lineage_problem(
        &self,
        sid: &str,
        run_id: &str,
        params: &Value,
    ) -> Option<(&'static str, String)> {
        let parent = params.get("snapshot")?.get("parentRunId")?.as_str()?;
        let runs = self.sessions.get(sid).map(|s| &s.subagent_runs);
        // Walk up from the parent; the tree is acyclic, so this ends.
        let mut at = Some(parent);
        let mut steps = 0;
        while let Some(id) = at {
            if id == run_id {
                return Some((
                    "subagent-tree-cycle",
                    format!(
                        "run {run_id:?} names {parent:?} as its parent, which would make a cycle; its lineage stays unresolved"
                    ),
                ));
            }
            steps += 1;
            if steps > runs.map_or(0, IndexMap::len) {
                break;
            }
            at = runs
                .and_then(|r| r.get(id))
                .and_then(|r| r.parent_run_id.as_ref())
                .and_then(|p| p.as_deref());
        }
        let here = runs.is_some_and(|r| r.contains_key(parent));
        let elsewhere = !here
            && self
                .sessions
                .iter()
                .any(|(other, s)| other != sid && s.subagent_runs.contains_key(parent));
        elsewhere.then(|| {
            (
                "subagent-cross-root",
                format!("run {run_id:?} names {parent:?}, a run of another root session, as its parent; its lineage stays unresolved"),
            )
        })
    }

    /// Every live run of `sid` becomes `unknown`, `outputIncomplete`,
    /// reason `disconnected` (a reconnect or a lost connection).
    pub(super) fn runs_lost(&mut self, sid: &str, out: &mut Vec<Change>) {
        use crate::subagent_events::{SubagentReason, SubagentReasonCode, SubagentState};
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let mut lost = Vec::new();
        for (id, run) in s.subagent_runs.iter_mut() {
            if matches!(
                run.snapshot.state,
                SubagentState::Pending | SubagentState::Running
            ) {
                run.snapshot.state = SubagentState::Unknown;
                run.snapshot.output_incomplete = Some(crate::wire::True);
                run.snapshot.reason = Some(SubagentReason::new(SubagentReasonCode::Disconnected));
                run.output_incomplete = true;
                lost.push(id.clone());
            }
        }
        for run_id in lost {
            out.push(Change::SubagentRun {
                session_id: sid.to_owned(),
                run_id,
            });
        }
    }

    /// The root session and run of a session that a standard
    /// `subagent_update` announced.
    fn standard_run_root(&self, sid: &str) -> Option<String> {
        let root = self.standard_children.get(sid)?;
        self.sessions
            .get(root)
            .and_then(|s| s.subagent_runs.get(sid))
            .filter(|r| r.dialect == Dialect::Standard)
            .map(|_| root.clone())
    }

    /// A standard `subagent_update` on session `sid`: a run that is a
    /// child session, folded as a snapshot event of the root session.
    fn standard_subagent(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Vec<Change>,
    ) {
        let Some(child) = str_at(update, "sessionId") else {
            self.record_invalid(
                out,
                Some(method),
                Some(sid),
                "/params/update/sessionId",
                "required",
                "`subagent_update` without a string `sessionId`".to_owned(),
                false,
            );
            return;
        };
        // Announced on its immediate parent: the parent is the root, or a
        // run of the root.
        let (root, parent_run) = match self.standard_run_root(sid) {
            Some(root) => (root, Value::String(sid.to_owned())),
            None => (sid.to_owned(), Value::Null),
        };
        let prev = self
            .session(&root)
            .and_then(|s| s.subagent_runs.get(child))
            .map(|r| serde_json::to_value(&r.snapshot).unwrap_or(Value::Null));
        let mut snap = match prev {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        if let Some(state) = update.get("state").filter(|s| s.is_object()) {
            let mapped = match str_at(state, "state") {
                Some("running" | "requires_action") => "running",
                Some("idle") => match str_at(state, "stopReason") {
                    Some("cancelled") => "cancelled",
                    Some("error" | "refusal") => "failed",
                    _ => "completed",
                },
                _ => "unknown",
            };
            snap.insert("state".into(), json!(mapped));
        }
        snap.entry("state").or_insert(json!("running"));
        for (from, to) in [("title", "name"), ("description", "description")] {
            match update.get(from) {
                Some(Value::String(t)) => {
                    snap.insert(to.into(), json!(t));
                }
                Some(Value::Null) => {
                    snap.remove(to);
                }
                _ => {}
            }
        }
        let cancel = update
            .get("capabilities")
            .and_then(|c| c.get("cancel"))
            .is_some_and(Value::is_object);
        snap.entry("support").or_insert(json!({
            "stream": ["text", "thought", "tool", "plan"],
            "progress": false,
            "outputRead": "none",
            "cancel": cancel,
        }));
        snap.insert("parentRunId".into(), parent_run);
        if let Some(meta) = meta_of(update) {
            for key in ["parentToolCallId", "outputIncomplete"] {
                let v = namespace::read_key(meta, key)
                    .map(|(_, v)| v)
                    .or_else(|| meta.get(key));
                if let Some(v) = v {
                    snap.insert(key.into(), v.clone());
                }
            }
        }
        let event = json!({"version": 1, "sessionId": root, "runId": child,
            "type": "snapshot", "snapshot": Value::Object(snap)});
        let typed = match ExtensionNotification::parse("_lody/subagents/event", &event) {
            Ok(Some((_, ExtensionNotification::SubagentEvent(e)))) => Some(e),
            Ok(_) => None,
            Err(e) => {
                // Pointers name the snapshot the update maps to.
                for v in &e.violations {
                    self.record_invalid(
                        out,
                        Some(method),
                        Some(sid),
                        "/params/update",
                        v.rule.id(),
                        format!(
                            "the `subagent_update` maps to an invalid snapshot ({}): {}",
                            v.pointer,
                            v.message()
                        ),
                        false,
                    );
                }
                return;
            }
        };
        self.subagent_event(method, &event, typed, Dialect::Standard, out);
        let progress = meta_of(update)
            .and_then(|m| {
                namespace::read_key(m, "progress")
                    .map(|(_, v)| v)
                    .or(m.get("progress"))
            })
            .filter(|p| p.is_object());
        if let Some(p) = progress {
            let event = json!({"version": 1, "sessionId": root, "runId": child,
                "type": "progress", "progress": p});
            self.subagent_event(method, &event, None, Dialect::Standard, out);
        }
    }

    /// An update of a session that is a standard subagent run: its output.
    fn child_session_update(
        &mut self,
        method: &str,
        root: &str,
        child: &str,
        tag: &str,
        update: &Value,
        out: &mut Vec<Change>,
    ) {
        match tag {
            "agent_message_chunk"
            | "agent_thought_chunk"
            | "tool_call"
            | "tool_call_update"
            | "plan" => {
                let event = json!({"version": 1, "sessionId": root, "runId": child,
                    "type": "output", "update": update});
                self.subagent_event(method, &event, None, Dialect::Standard, out);
            }
            "subagent_update" => self.standard_subagent(method, child, update, out),
            _ => {}
        }
    }

    // -----------------------------------------------------------------
    // Usage and rate limits

    pub(super) fn usage_update(
        &mut self,
        method: &str,
        u: &SessionUsageUpdate,
        params: &Value,
        dialect: Dialect,
        out: &mut Vec<Change>,
    ) {
        let sid = u.session_id.to_string();
        let findings = self.seq.usage_update(params);
        let incomplete = findings.iter().any(|f| {
            matches!(
                f.rule,
                crate::sequence::SequenceRule::UsageTotalDecreased
                    | crate::sequence::SequenceRule::UsageScopeReentered
            )
        });
        self.sequence_findings(method, &sid, findings, out);
        let scope_id = ext_key(params, "usageScopeId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let key = scope_id
            .as_ref()
            .map_or("session".to_owned(), |id| format!("scope:{id}"));
        let cap = self.limits.scopes_per_session;
        let models_cap = self.limits.sequence.models_per_scope;
        let s = self.session_mut(&sid);
        let scope = s.usage.scopes.entry(key.clone()).or_insert(ScopeUsage {
            usage_scope_id: scope_id,
            usage: u.usage.clone(),
            model_usage: IndexMap::new(),
            delta: None,
            updates: 0,
            incomplete: false,
            dialect,
        });
        scope.updates += 1;
        scope.usage = u.usage.clone();
        scope.incomplete |= incomplete;
        scope.delta = u.delta.clone();
        if let Some(rows) = &u.model_usage {
            for (model, row) in rows {
                if scope.model_usage.contains_key(model) || scope.model_usage.len() < models_cap {
                    scope.model_usage.insert(model.clone(), row.clone());
                }
            }
        }
        cap_map(&mut s.usage.scopes, cap);
        s.usage.totals = totals(&s.usage.scopes);
        let all: IndexMap<String, ModelUsage> = s
            .usage
            .scopes
            .iter()
            .map(|(k, v)| (k.clone(), v.usage.clone()))
            .collect();
        s.usage.total = Some(sum_model_usage(&all));
        out.push(Change::Usage {
            session_id: sid,
            scope: key,
        });
    }

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

/// Per model, the sum over scopes (an unknown cost stays unknown).
fn totals(scopes: &IndexMap<String, ScopeUsage>) -> IndexMap<String, ModelUsage> {
    let mut per_model: IndexMap<String, IndexMap<String, ModelUsage>> = IndexMap::new();
    for (key, scope) in scopes {
        for (model, row) in &scope.model_usage {
            per_model
                .entry(model.clone())
                .or_default()
                .insert(key.clone(), row.clone());
        }
    }
    per_model
        .into_iter()
        .map(|(model, rows)| (model, sum_model_usage(&rows)))
        .collect()
}

/// A patch field: omitted keeps, `null` clears, a string replaces.
fn patch_str(field: &mut Option<String>, v: Option<&Value>) {
    match v {
        None => {}
        Some(Value::String(s)) => *field = Some(s.clone()),
        Some(Value::Null) => *field = None,
        Some(_) => {}
    }
}

/// Folds one output update into a run: text appends (a new message on a
/// new line), tool calls merge by id, a plan replaces; a non-text message
/// chunk marks the run incomplete.
fn fold_output(run: &mut RunState, update: &Value, limits: &Limits) {
    run.output_events += 1;
    match str_at(update, "sessionUpdate") {
        Some("agent_message_chunk") => {
            let content = update.get("content");
            match content.and_then(|c| str_at(c, "type")) {
                Some("text") => {
                    if let Some(t) = content
                        .and_then(|c| str_at(c, "text"))
                        .filter(|t| !t.is_empty())
                    {
                        let id = str_at(update, "messageId");
                        let other_message = id.is_some()
                            && run.message_id.is_some()
                            && run.message_id.as_deref() != id;
                        if (run.message_ended || other_message)
                            && !run.text.is_empty()
                            && !run.text.ends_with('\n')
                            && !t.starts_with('\n')
                        {
                            run.text.push('\n');
                        }
                        run.message_ended = false;
                        if other_message || (id.is_some() && run.message_id.is_none()) {
                            run.message_id = id.map(str::to_owned);
                        }
                        run.text.push_str(t);
                        cap_text(&mut run.text, limits.text_per_run);
                    }
                }
                _ => run.output_incomplete = true,
            }
        }
        Some("agent_thought_chunk") => {}
        Some("tool_call") | Some("tool_call_update") => {
            run.message_ended = true;
            let Some(id) = str_at(update, "toolCallId") else {
                return;
            };
            let entry = run
                .tool_calls
                .entry(id.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Value::Object(into), Some(from)) = (entry, update.as_object()) {
                for (k, v) in from {
                    if k != "sessionUpdate" {
                        into.insert(k.clone(), v.clone());
                    }
                }
            }
            cap_map(&mut run.tool_calls, limits.tool_calls_per_run);
        }
        Some("plan") => {
            run.message_ended = true;
            run.plan = Some(update.clone());
        }
        _ => {}
    }
}
