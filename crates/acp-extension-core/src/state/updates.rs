//! How `session/update` changes the state: every standard update, the
//! contract's `_meta` on them, and the vendors' dialects.

use serde_json::{Map, Value, json};

use super::rules::{
    ext_key, is_custom_update, is_standard_update, meta_of, notice_of, session_update_parts,
};
use super::*;
use crate::capabilities::Feature;
use crate::meta::{self, fields};
use crate::rate_limits::RateLimitsSnapshot;
use crate::session::{ActivityKind, GoalSnapshot, NoticeLevel, SessionActivityState};
use crate::wire::{MaybeUndefined, WireEnum};

impl ConnectionState {
    pub(super) fn session_update(&mut self, method: &str, params: &Value, out: &mut Changes) {
        let (sid, update) = match session_update_parts(params) {
            Ok((sid, update)) => (sid.to_owned(), update),
            Err(v) => {
                self.record(
                    out,
                    Record::new(
                        v.pointer.as_str(),
                        v.rule.id(),
                        format!("`session/update`: `{}` {}; not placed", v.pointer, v.rule),
                    )
                    .method(method),
                );
                return;
            }
        };
        let tag = str_at(update, "sessionUpdate").unwrap_or("");
        let problems = standard_update_violations(update);
        if !problems.is_empty() {
            // A notice is shown with its defaults, an occupancy without a
            // bad cost; the rest has nothing to fold.
            let folded = tag == "notice"
                || (tag == "usage_update"
                    && problems
                        .iter()
                        .all(|v| v.pointer.starts_with("/params/update/cost")))
                || (tag == "state_update"
                    && problems
                        .iter()
                        .all(|v| v.pointer.starts_with("/params/update/background/")));
            for v in &problems {
                self.record(
                    out,
                    Record::new(
                        v.pointer.as_str(),
                        v.rule.id(),
                        format!(
                            "`{tag}`: `{}` {}{}",
                            v.pointer,
                            v.rule,
                            if folded { "" } else { "; not folded" }
                        ),
                    )
                    .method(method)
                    .session(&sid)
                    .folded_if(folded),
                );
            }
            if !folded {
                return;
            }
        }
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
        if out.len() == before && (is_standard_update(tag) || is_custom_update(tag)) {
            if !self.sessions.contains_key(&sid) {
                // A session that sent anything is a session.
                self.session_mut(&sid);
                out.add(|| Change::SessionStarted {
                    session_id: sid.clone(),
                });
            }
            out.ignore(IgnoredKind::Transcript, || Change::Transcript {
                session_id: sid,
                update: tag.to_owned(),
            });
        }
    }

    pub(super) fn session_update_tag(
        &mut self,
        method: &str,
        sid: &str,
        tag: &str,
        update: &Value,
        out: &mut Changes,
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
                // Recorded by `standard_update_violations` when missing.
                let Some(id) = str_at(update, "compactionId").map(str::to_owned) else {
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
                out.add(|| Change::ActivityEntry {
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
                        out.add(|| Change::ActivityEntry {
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
            "state_update" => self.state_update(method, &sid, update, out),
            "plan" | "plan_update" => {
                let plan = if tag == "plan" {
                    update.clone()
                } else {
                    update.get("plan").cloned().unwrap_or(Value::Null)
                };
                if plan.is_object() {
                    self.session_mut(&sid).plan = Some(plan);
                    out.add(|| Change::Plan { session_id: sid });
                } else {
                    self.record(
                        out,
                        Record::new(
                            "/params/update/plan",
                            "type-object",
                            "`plan_update` without a plan object".to_owned(),
                        )
                        .method(method)
                        .session(&sid),
                    );
                }
            }
            "plan_removed" => {
                let s = self.session_mut(&sid);
                let id = str_at(update, "planId");
                let current = s.plan.as_ref().and_then(|p| str_at(p, "planId"));
                if s.plan.is_some() && (id.is_none() || id == current) {
                    s.plan = None;
                    out.add(|| Change::Plan { session_id: sid });
                }
            }
            t if is_standard_update(t) || is_custom_update(t) => {}
            other => {
                self.record(out, Record::new("/params/update/sessionUpdate", "unknown-session-update", format!("`{other}` is not a session update of ACP (v1 or v2) or of a dialect the state reads; not folded")).method(method).session(&sid));
            }
        }
    }

    pub(super) fn turn_meta(&mut self, sid: &str, tag: &str, update: &Value, out: &mut Changes) {
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
            out.add(|| Change::Turn {
                session_id: sid.to_owned(),
            });
        }
    }

    pub(super) fn tool_call(&mut self, method: &str, sid: &str, update: &Value, out: &mut Changes) {
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
                out.add(|| Change::Task {
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
                out.add(|| Change::ActivityEntry {
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
                    out.add(|| Change::ActivityEntry {
                        session_id: sid.to_owned(),
                        id: tool_call_id,
                    });
                }
            }
            Err(e) => self.meta_error(out, method, sid, "/params/update", &e),
        }
    }

    pub(super) fn session_info(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Changes,
    ) {
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

    pub(super) fn set_goal(&mut self, sid: &str, goal: Option<GoalSnapshot>, out: &mut Changes) {
        self.session_mut(sid).goal = goal.map_or(MaybeUndefined::Null, MaybeUndefined::Value);
        out.add(|| Change::Goal {
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
    /// `_meta.jetbrains.air.goal`. Their times (`createdAt`, `updatedAt`)
    /// are read in each carrier's unit: epoch milliseconds for AIR's and
    /// the legacy key (converted to seconds), epoch seconds for codex's
    /// own (its native unit); codex's `usageLimited`/`budgetLimited` read
    /// as `limited`, `cleared` clears.
    pub(super) fn vendor_goal(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        let meta = meta_of(update);
        // Each carrier, and how many of its time units make a second.
        let (at, raw, per_second) = if let Some(g) = meta.and_then(|m| m.get("goal")) {
            ("/params/update/_meta/goal", g, 1000.0)
        } else if let Some(g) = self
            .vendor_meta(update, "codex")
            .and_then(|c| c.get("goal"))
        {
            ("/params/update/_meta/codex/goal", g, 1.0)
        } else if let Some(g) = meta
            .and_then(|m| m.get("jetbrains"))
            .and_then(|j| j.get("air"))
            .and_then(|a| a.get("goal"))
        {
            ("/params/update/_meta/jetbrains/air/goal", g, 1000.0)
        } else {
            return;
        };
        let Some(o) = raw.as_object() else {
            if raw.is_null() {
                self.set_goal(sid, None, out);
            } else {
                self.record(
                    out,
                    Record::new(
                        at,
                        "type-object",
                        "a goal must be an object or null; the old one is kept".to_owned(),
                    )
                    .method(method)
                    .session(sid),
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
        for (native, secs) in [
            ("createdAt", "createdAtEpochSeconds"),
            ("updatedAt", "updatedAtEpochSeconds"),
        ] {
            if let Some(t) = goal.remove(native).and_then(|t| t.as_f64()) {
                goal.insert(secs.into(), json!((t / per_second).floor()));
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

    /// ACP v2's `state_update`: the session's activity level (an `unknown`,
    /// custom or future state leaves it unconfirmed), its background work
    /// by type, and the end of foreground work: an `idle` after a reported
    /// busy state, or after a prompt's receipt, ends that work, with its
    /// stop reason and usage. The prompt's turn ends at the first idle
    /// after its receipt; an idle before it ends other work (an
    /// agent-initiated turn, such as claude's after a background task),
    /// whose usage and stop reason count all the same. A repeated idle,
    /// and the snapshot a `session/load` or `session/resume` sends before
    /// its answer, end nothing and count no usage.
    fn state_update(&mut self, method: &str, sid: &str, update: &Value, out: &mut Changes) {
        // [`standard_update_violations`] recorded one without a state.
        let Some(name) = str_at(update, "state") else {
            return;
        };
        let level = match name {
            "idle" | "running" | "requires_action" => SessionActivityState::from_wire(name),
            _ => None,
        };
        // Known states list their background work; a custom state's stays
        // among its own fields. A malformed list is not reported.
        let background = (level.is_some() || name == "unknown")
            .then(|| update.get("background").and_then(Value::as_array))
            .flatten()
            .and_then(|items| {
                let mut by_type = IndexMap::new();
                for item in items {
                    // A malformed list (recorded) is not reported.
                    *by_type.entry(str_at(item, "type")?.to_owned()).or_insert(0) += 1;
                }
                Some(by_type)
            });
        let snapshot = self.resuming.iter().any(|r| r == sid);
        let s = self.session_mut(sid);
        let prompt_ends = s.turns.running && !s.turns.awaiting_answer;
        let ends = level == Some(SessionActivityState::Idle)
            && !snapshot
            && (prompt_ends || s.activity.busy());
        s.activity.state = level;
        s.activity.unconfirmed = level.is_none().then(|| name.to_owned());
        if background.is_some() {
            s.activity.background = background;
        }
        out.add(|| Change::Activity {
            session_id: sid.to_owned(),
        });
        if ends {
            let stop = str_at(update, "stopReason").map(str::to_owned);
            if prompt_ends {
                let steer = self.session_mut(sid).turns.prompt_steer.take();
                self.end_turn(sid, stop, steer.as_deref(), out);
            } else {
                self.session_mut(sid).turns.last_stop_reason = stop;
                out.add(|| Change::Turn {
                    session_id: sid.to_owned(),
                });
            }
            self.turn_usage(method, sid, "/params/update", update, out);
        }
    }

    /// codex's `_meta.codex.threadStatus {type: active|idle}` as the
    /// session's activity level.
    pub(super) fn thread_status(&mut self, sid: &str, update: &Value, out: &mut Changes) {
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
            out.add(|| Change::Activity {
                session_id: sid.to_owned(),
            });
        }
    }

    pub(super) fn title(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        source: Option<Result<crate::session::TitleSource, ()>>,
        out: &mut Changes,
    ) {
        let Some(raw) = update.get("title") else {
            return;
        };
        if !matches!(raw, Value::String(_) | Value::Null) {
            self.record(
                out,
                Record::new(
                    "/params/update/title",
                    "type",
                    format!(
                        "a title must be a string or null, found {}; ignored",
                        crate::wire::json_type(raw)
                    ),
                )
                .method(method)
                .session(sid),
            );
            return;
        }
        let advertised = self
            .negotiation
            .agent
            .features
            .contains_key(Feature::SessionTitle.key());
        let origin = match source {
            Some(Ok(s)) => match TitleOrigin::of(s) {
                Some(TitleOrigin::Generated) if self.agent_lacks(Feature::SessionTitle) => {
                    self.record(out, Record::new("/params/update/_meta", "not-negotiated", "a `generated` title from an agent that did not advertise `sessionTitle`; ignored".to_owned()).method(method).session(sid));
                    return;
                }
                Some(o) => o,
                // `unset`: no title to show.
                None => return,
            },
            // A malformed tag: the title is ignored, and that is reported.
            Some(Err(())) => {
                self.record(
                    out,
                    Record::new(
                        "/params/update/_meta",
                        "title-source",
                        "malformed `titleSource`; the title is ignored".to_owned(),
                    )
                    .method(method)
                    .session(sid),
                );
                return;
            }
            None if advertised => {
                self.record(
                    out,
                    Record::new(
                        "/params/update/title",
                        "title-without-source",
                        "an untagged title from an agent that advertised `sessionTitle`; ignored"
                            .to_owned(),
                    )
                    .method(method)
                    .session(sid),
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
        out.add(|| Change::Title {
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
        out: &mut Changes,
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
        out.add(|| Change::Notice {
            session_id: sid.to_owned(),
        });
    }

    // -----------------------------------------------------------------
    // Rate limits

    pub(super) fn upsert_rate_limits(
        &mut self,
        snapshot: RateLimitsSnapshot,
        dialect: Dialect,
        out: &mut Changes,
    ) {
        if snapshot.rate_limits.is_empty() {
            return;
        }
        let fetched = snapshot.fetched_at_epoch_seconds;
        let mut ids = Vec::new();
        for limit in snapshot.rate_limits {
            let id = limit.limit_id.clone();
            // An older observation does not override a fresher one.
            let older = self.rate_limits.get(&id).is_some_and(|e| {
                matches!((fetched, e.fetched_at_epoch_seconds), (Some(new), Some(old)) if new.get() < old.get())
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
            out.add(|| Change::RateLimits { limit_ids: ids });
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
