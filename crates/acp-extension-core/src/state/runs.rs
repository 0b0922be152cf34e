//! Subagent runs: the extension's `subagents/event` (a snapshot replaces
//! the run's metadata, progress is sparse, output appends), the standard
//! `subagent_update` patches with the child session's own traffic, and
//! `session_message`s.
//!
//! # Generations of a standard run
//!
//! A standard child session is one run for its whole life. `idle` is not
//! terminal: when an idle child runs again (codex's `send_input`, claude's
//! re-delegation) the run begins a new generation
//! ([`StandardRun::generations`]); its output is kept and the text it
//! sends after an `idle` starts on a new line; `stopReason` and `error` are the
//! latest idle's, cleared when it runs again.

use serde_json::Value;

use super::rules::{is_custom_update, is_standard_update, meta_of, notice_of};
use super::run_output::{
    append_text, fold_output, fold_progress, fold_tool_call_text, fold_typed_output,
};
use super::str_at;
use super::updates::patch_str;
use super::*;
use crate::connection::{EventLine, SiftedOutput};
use crate::meta::{self, fields};
use crate::namespace;
use crate::subagent_events::{SubagentEvent, SubagentEventPayload};
use crate::wire::MaybeUndefined;
use crate::wire::WireObject;

/// Where a Core event came from, for what the fold keeps as it came (a
/// tool call, its keys in their order).
#[derive(Clone, Copy)]
pub(super) enum EventSource<'a> {
    /// Its params' JSON tree.
    Tree(&'a Value),
    /// Its line, read straight into its type.
    Line(&'a EventLine),
}

impl ConnectionState {
    /// Folds a (valid) subagent event: the sequence rules decide whether
    /// it is folded. The event is typed however it was read (straight from
    /// the line, or from its JSON tree), so both readings fold the same.
    pub(super) fn subagent_event(
        &mut self,
        method: &str,
        event: &SubagentEvent,
        source: EventSource<'_>,
        out: &mut Changes,
    ) {
        if !self.now.run_accepted {
            return;
        }
        let (sid, run_id) = (event.session_id.as_str(), event.run_id.as_str());
        if let SubagentEventPayload::Output(output) = &event.payload {
            let update = &output.update;
            let fold =
                |run: &mut RunState, l: &StateLimits| fold_typed_output(run, update, source, l);
            return self.run_output(sid, run_id, fold, out);
        }
        let limits = self.limits;
        let snapshot = match &event.payload {
            SubagentEventPayload::Snapshot(s) => Some(s),
            _ => None,
        };
        let parent = snapshot.and_then(|s| match &s.parent_run_id {
            MaybeUndefined::Value(p) => Some(p.as_str()),
            _ => None,
        });
        let lineage = parent.and_then(|p| self.lineage_problem(sid, run_id, p));
        if let Some((rule, message)) = &lineage {
            self.record(
                out,
                Record::new("/params/snapshot/parentRunId", *rule, message.clone())
                    .method(method)
                    .session(sid)
                    .folded(),
            );
        }
        let s = self.session_mut(sid);
        match &event.payload {
            SubagentEventPayload::Snapshot(snapshot) => {
                let incomplete = snapshot.output_incomplete.is_some();
                // A parent that would make a cycle or cross roots stays
                // unresolved (reported above).
                let parent_run = match lineage {
                    None => snapshot.parent_run_id.clone(),
                    Some(_) => MaybeUndefined::Undefined,
                };
                let parent_tool = snapshot.parent_tool_call_id.clone();
                match s.subagent_runs.get_mut(run_id) {
                    Some(run) => {
                        run.snapshot = Some(snapshot.clone());
                        run.output_incomplete |= incomplete;
                        if run.parent_run_id.is_undefined() {
                            run.parent_run_id = parent_run;
                        }
                        if run.parent_tool_call_id.is_none() {
                            run.parent_tool_call_id = parent_tool;
                        }
                    }
                    None => {
                        let mut run = RunState::new(Dialect::Extension);
                        run.snapshot = Some(snapshot.clone());
                        run.parent_run_id = parent_run;
                        run.parent_tool_call_id = parent_tool;
                        run.output_incomplete = incomplete;
                        s.subagent_runs.insert(run_id.to_owned(), run);
                        cap_map(&mut s.subagent_runs, limits.runs_per_session);
                    }
                }
            }
            SubagentEventPayload::Progress(progress) => {
                let Some(run) = s.subagent_runs.get_mut(run_id) else {
                    return;
                };
                // Folded as the JSON it writes, key by key, without building
                // that object.
                progress.merge_into(&mut run.progress);
            }
            // Folded above.
            SubagentEventPayload::Output(_) => return,
        }
        out.add(|| Change::SubagentRun {
            session_id: sid.to_owned(),
            run_id: run_id.to_owned(),
        });
    }

    /// [`Self::subagent_event`] of an output event read from its line,
    /// unbuilt: a text chunk or a tool call.
    pub(super) fn subagent_sifted_output(
        &mut self,
        sid: &str,
        run_id: &str,
        output: SiftedOutput<'_>,
        out: &mut Changes,
    ) {
        if !self.now.run_accepted {
            return;
        }
        let fold = |run: &mut RunState, limits: &StateLimits| {
            run.output_events += 1;
            match output {
                SiftedOutput::TextChunk(chunk) => {
                    append_text(run, chunk.text, chunk.message_id, limits)
                }
                SiftedOutput::ToolCall(update) => fold_tool_call_text(run, update, limits),
            }
        };
        self.run_output(sid, run_id, fold, out);
    }

    /// Folds an output event into its run with `fold` (nothing for a run
    /// not seen yet: it starts with a snapshot).
    fn run_output(
        &mut self,
        sid: &str,
        run_id: &str,
        fold: impl FnOnce(&mut RunState, &StateLimits),
        out: &mut Changes,
    ) {
        let limits = self.limits;
        let Some(run) = self.session_mut(sid).subagent_runs.get_mut(run_id) else {
            return;
        };
        fold(run, &limits);
        out.add(|| Change::SubagentRun {
            session_id: sid.to_owned(),
            run_id: run_id.to_owned(),
        });
    }

    /// Whether a snapshot's `parentRunId` would close a cycle in the run
    /// tree of `sid`, or name a run of another root session: the rule and
    /// a message, or `None` when the lineage is fine (or not given).
    fn lineage_problem(
        &self,
        sid: &str,
        run_id: &str,
        parent: &str,
    ) -> Option<(&'static str, String)> {
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
                .and_then(|r| r.parent_run_id.value())
                .map(String::as_str);
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
    pub(super) fn runs_lost(&mut self, sid: &str, out: &mut Changes) {
        use crate::subagent_events::{SubagentReason, SubagentReasonCode, SubagentState};
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let mut lost = Vec::new();
        for (id, run) in s.subagent_runs.iter_mut() {
            if !run.is_live() {
                continue;
            }
            if let Some(snapshot) = &mut run.snapshot {
                snapshot.state = SubagentState::Unknown;
                snapshot.output_incomplete = Some(crate::wire::True);
                snapshot.reason = Some(SubagentReason::new(SubagentReasonCode::Disconnected));
            }
            if let Some(standard) = &mut run.standard {
                standard.state = Some("unknown".to_owned());
            }
            run.output_incomplete = true;
            lost.push(id.clone());
        }
        for run_id in lost {
            out.add(|| Change::SubagentRun {
                session_id: sid.to_owned(),
                run_id,
            });
        }
    }

    /// The root session and run of a session that a standard
    /// `subagent_update` announced.
    pub(super) fn standard_run_root(&self, sid: &str) -> Option<String> {
        let root = self.standard_children.get(sid)?;
        self.sessions
            .get(root)
            .and_then(|s| s.subagent_runs.get(sid))
            .filter(|r| matches!(r.dialect, Dialect::Standard | Dialect::Air))
            .map(|_| root.clone())
    }

    /// Run `run_id` of session `sid`, to change.
    pub(super) fn run_mut(&mut self, sid: &str, run_id: &str) -> Option<&mut RunState> {
        self.sessions
            .get_mut(sid)
            .and_then(|s| s.subagent_runs.get_mut(run_id))
    }

    /// The run of child session `child`, announced on session `sid` (its
    /// immediate parent: the root, or a run of the root), created on first
    /// sight in `dialect` under the root; returns the root session.
    fn child_run(&mut self, sid: &str, child: &str, dialect: Dialect) -> String {
        let (root, parent_run) = match self.standard_run_root(sid) {
            Some(root) => (root, MaybeUndefined::Value(sid.to_owned())),
            None => (sid.to_owned(), MaybeUndefined::Null),
        };
        let limits = self.limits;
        let s = self.session_mut(&root);
        if !s.subagent_runs.contains_key(child) {
            let mut run = RunState::new(dialect);
            run.standard = Some(StandardRun::default());
            run.parent_run_id = parent_run;
            s.subagent_runs.insert(child.to_owned(), run);
            cap_map(&mut s.subagent_runs, limits.runs_per_session);
            self.standard_children
                .insert(child.to_owned(), root.clone());
            let cap = limits.sessions.saturating_mul(limits.runs_per_session);
            cap_map(&mut self.standard_children, cap);
        }
        root
    }

    /// A standard `subagent_update` on session `sid` (its immediate
    /// parent): a patch of the child's run. Omitted keeps, `null` clears;
    /// `idle` is not terminal, so a child that runs again is the same run
    /// in a new generation, its output kept.
    pub(super) fn standard_subagent(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        // Recorded by `standard_update_violations` when missing or empty.
        let Some(child) = str_at(update, "sessionId").filter(|c| !c.is_empty()) else {
            return;
        };
        if child == sid {
            self.record(
                out,
                Record::new(
                    "/params/update/sessionId",
                    "subagent-tree-cycle",
                    "a `subagent_update` names its own session as its child; not folded".to_owned(),
                )
                .method(method)
                .session(sid),
            );
            return;
        }
        let meta_key = |key: &str| {
            meta_of(update).and_then(|m| {
                namespace::read_key(m, key)
                    .map(|(_, v)| v)
                    .or_else(|| m.get(key))
            })
        };
        let parent_tool = meta_key("parentToolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let flagged_incomplete = meta_key("outputIncomplete") == Some(&Value::Bool(true));
        let progress = meta_key("progress").and_then(Value::as_object).cloned();
        let root = self
            .standard_run_root(sid)
            .unwrap_or_else(|| sid.to_owned());
        let other_dialect = self
            .session(&root)
            .and_then(|s| s.subagent_runs.get(child))
            .is_some_and(|r| r.dialect != Dialect::Standard);
        if other_dialect {
            self.record(out, Record::new("/params/update/sessionId", "dialect-conflict", format!("`{child}` is already a run of another dialect; the standard update is not folded into it")).method(method).session(sid));
            return;
        }
        let root = self.child_run(sid, child, Dialect::Standard);
        let Some(run) = self.run_mut(&root, child) else {
            // A cap of zero runs keeps nothing.
            return;
        };
        if run.parent_tool_call_id.is_none() {
            run.parent_tool_call_id = parent_tool;
        }
        run.output_incomplete |= flagged_incomplete;
        if let Some(p) = progress {
            fold_progress(run, p);
        }
        let std = run.standard.get_or_insert_with(StandardRun::default);
        patch_str(&mut std.title, update.get("title"));
        patch_str(&mut std.description, update.get("description"));
        patch_str(&mut std.cwd, update.get("cwd"));
        match update.get("additionalDirectories") {
            Some(Value::Null) => std.additional_directories = None,
            Some(Value::Array(dirs)) => {
                std.additional_directories = Some(
                    dirs.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                )
            }
            _ => {}
        }
        match update.get("capabilities") {
            Some(Value::Null) => std.capabilities = None,
            Some(c @ Value::Object(_)) => std.capabilities = Some(c.clone()),
            _ => {}
        }
        match update.get("state") {
            Some(Value::Null) => {
                std.state = None;
                std.stop_reason = None;
                std.error = None;
            }
            Some(state) if state.is_object() => {
                let next = str_at(state, "state").unwrap_or("unknown").to_owned();
                let was_idle = std.state.as_deref() == Some("idle");
                let runs = matches!(next.as_str(), "running" | "requires_action");
                if runs && (was_idle || std.generations == 0) {
                    std.generations += 1;
                    if was_idle {
                        // The next generation's text starts on a new line.
                        run.message_ended = true;
                    }
                }
                if next == "idle" {
                    std.stop_reason = str_at(state, "stopReason").map(str::to_owned);
                    std.error = state.get("error").filter(|e| !e.is_null()).cloned();
                    // Whatever it says next is another message, even when
                    // it comes before its `running` (codex streams a
                    // resumed child's first chunk first).
                    run.message_ended = true;
                } else {
                    std.stop_reason = None;
                    std.error = None;
                }
                std.state = Some(next);
            }
            Some(_) => {
                self.record(out, Record::new("/params/update/state", "type-object", "a `subagent_update` state must be an object (`{\"state\": …}`) or null; the other fields are folded".to_owned()).method(method).session(sid).folded());
            }
            None => {}
        }
        out.add(|| Change::SubagentRun {
            session_id: root,
            run_id: child.to_owned(),
        });
    }

    /// AIR's draft: `subagent_spawned` announces a child session
    /// (`subagentSessionId`, `name`, `task`, `prompt`), and
    /// `subagent_state_update` gives its terminal state (`completed`,
    /// `failed`, `cancelled`, `disconnected`); v2's `_subagent_update` is
    /// either, told apart by its fields. The run is folded like a standard
    /// one, in [`Dialect::Air`].
    pub(super) fn air_subagent(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        let Some(child) = str_at(update, "subagentSessionId").filter(|c| !c.is_empty()) else {
            self.record(
                out,
                Record::new(
                    "/params/update/subagentSessionId",
                    "required",
                    "an AIR subagent update without a non-empty string `subagentSessionId`"
                        .to_owned(),
                )
                .method(method)
                .session(sid),
            );
            return;
        };
        let root = self.child_run(sid, child, Dialect::Air);
        let Some(run) = self.run_mut(&root, child) else {
            return;
        };
        let std = run.standard.get_or_insert_with(StandardRun::default);
        patch_str(&mut std.title, update.get("name"));
        patch_str(&mut std.description, update.get("task"));
        patch_str(&mut std.prompt, update.get("prompt"));
        if let Some(c) = update.get("capabilities").filter(|c| c.is_object()) {
            std.capabilities = Some(c.clone());
        }
        if str_at(update, "name").is_some() && std.generations == 0 {
            std.generations = 1;
        }
        if let Some(state) = str_at(update, "state") {
            std.state = Some(state.to_owned());
            if state == "disconnected" {
                run.output_incomplete = true;
            }
        }
        out.add(|| Change::SubagentRun {
            session_id: root,
            run_id: child.to_owned(),
        });
    }

    /// An update of a session that is a standard subagent run: its output
    /// (messages, thoughts, tool calls, plans), its own children, its
    /// session messages; anything else is the child session's own state.
    pub(super) fn child_session_update(
        &mut self,
        method: &str,
        root: &str,
        child: &str,
        tag: &str,
        update: &Value,
        out: &mut Changes,
    ) -> bool {
        match tag {
            // Its output, v2's whole messages, tool-call content chunks and
            // plans by id included.
            "agent_message_chunk"
            | "agent_thought_chunk"
            | "tool_call"
            | "tool_call_update"
            | "plan"
            | "agent_message"
            | "agent_thought"
            | "tool_call_content_chunk"
            | "plan_update"
            | "plan_removed" => {
                let limits = self.limits;
                match self.run_mut(root, child) {
                    Some(run) => {
                        fold_output(run, update, &limits);
                        out.add(|| Change::SubagentRun {
                            session_id: root.to_owned(),
                            run_id: child.to_owned(),
                        });
                    }
                    None => self.run_dropped(child, tag, out),
                }
                true
            }
            "subagent_update" => {
                self.standard_subagent(method, child, update, out);
                true
            }
            "subagent_spawned" | "subagent_state_update" | "_subagent_update" => {
                self.air_subagent(method, child, update, out);
                true
            }
            "session_message" | "session_message_chunk" => {
                self.session_message(child, update, out);
                true
            }
            // The child's context occupancy (codex reports each thread's).
            "usage_update" => {
                let (Some(used), Some(size)) = (
                    update.get("used").and_then(Value::as_u64),
                    update.get("size").and_then(Value::as_u64),
                ) else {
                    return false;
                };
                match self.run_mut(root, child) {
                    Some(run) => {
                        let std = run.standard.get_or_insert_with(StandardRun::default);
                        let cost = update
                            .get("cost")
                            .filter(|c| c.is_object())
                            .cloned()
                            .or_else(|| std.context.as_ref().and_then(|c| c.cost.clone()));
                        std.context = Some(ContextUsage { used, size, cost });
                        out.add(|| Change::SubagentRun {
                            session_id: root.to_owned(),
                            run_id: child.to_owned(),
                        });
                    }
                    None => self.run_dropped(child, tag, out),
                }
                true
            }
            // Its title is the run's; a notice is the root session's,
            // naming the child; a goal has no place in a run: its output is
            // incomplete.
            "session_info_update" => {
                self.child_session_info(method, root, child, update, out);
                true
            }
            // Child work a run cannot hold (Core's output is messages, tool
            // calls and plans): lost, and said so.
            "compaction_update"
            | "compaction_summary_chunk"
            | "async_task_spawned"
            | "async_task_progress"
            | "async_task_state_update"
            | "_async_task_spawned"
            | "_async_task_progress"
            | "_async_task_state_update" => {
                self.child_output_lost(root, child, tag, out);
                true
            }
            // A child's notice is the root session's, naming the child.
            "notice" => {
                let (level, message) = notice_of(update);
                self.notice(
                    root,
                    level,
                    message,
                    Some(child.to_owned()),
                    Dialect::Standard,
                    out,
                );
                true
            }
            // The rest of a child's standard traffic (and its v2
            // `state_update`, which mirrors the run's state) is its
            // transcript.
            t if is_standard_update(t) || is_custom_update(t) => {
                out.ignore(IgnoredKind::Transcript, || Change::Transcript {
                    session_id: child.to_owned(),
                    update: t.to_owned(),
                });
                true
            }
            _ => false,
        }
    }

    /// A child session's `session_info_update`: its title is its run's; a
    /// `_meta.<ns>.notice` is the root session's, naming the child; a goal
    /// marks the run's output incomplete.
    fn child_session_info(
        &mut self,
        method: &str,
        root: &str,
        child: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        let before = out.len();
        match update.get("title") {
            None => {}
            Some(t @ (Value::String(_) | Value::Null)) => {
                let title = t.as_str().map(|t| t.trim().to_owned());
                if let Some(run) = self.run_mut(root, child) {
                    run.standard.get_or_insert_with(StandardRun::default).title = title;
                    out.add(|| Change::SubagentRun {
                        session_id: root.to_owned(),
                        run_id: child.to_owned(),
                    });
                }
            }
            Some(other) => self.record(
                out,
                Record::new(
                    "/params/update/title",
                    "type",
                    format!(
                        "a title must be a string or null, found {}; ignored",
                        crate::wire::json_type(other)
                    ),
                )
                .method(method)
                .session(root),
            ),
        }
        let mut rest = false;
        if let Some(m) = meta_of(update) {
            match meta::read::<fields::Notice>(m) {
                Ok(Some(n)) => self.notice(
                    root,
                    n.level,
                    n.message.clone(),
                    Some(child.to_owned()),
                    Dialect::Extension,
                    out,
                ),
                Ok(None) => {}
                Err(e) => self.meta_error(out, method, root, "/params/update", &e),
            }
            // A goal (of the contract or a vendor's) has no place in a run.
            rest = crate::namespace::read_key(m, "goal").is_some()
                || m.contains_key("goal")
                || self
                    .vendor_meta(update, "codex")
                    .is_some_and(|c| c.contains_key("goal"));
        }
        if rest {
            self.child_output_lost(root, child, "session_info_update", out);
        } else if out.len() == before {
            out.ignore(IgnoredKind::Transcript, || Change::Transcript {
                session_id: child.to_owned(),
                update: "session_info_update".to_owned(),
            });
        }
    }

    /// A child session's update that its run cannot hold: the run's output
    /// is marked incomplete (a change the first time; after that the update
    /// is transcript the flag already accounts for).
    fn child_output_lost(&mut self, root: &str, child: &str, tag: &str, out: &mut Changes) {
        match self.run_mut(root, child) {
            Some(run) if !run.output_incomplete => {
                run.output_incomplete = true;
                out.add(|| Change::SubagentRun {
                    session_id: root.to_owned(),
                    run_id: child.to_owned(),
                });
            }
            Some(_) => out.ignore(IgnoredKind::Transcript, || Change::Transcript {
                session_id: child.to_owned(),
                update: tag.to_owned(),
            }),
            None => self.run_dropped(child, tag, out),
        }
    }

    /// An update of a child session whose run the state no longer holds
    /// (dropped by [`StateLimits`]): nothing to change.
    fn run_dropped(&mut self, child: &str, tag: &str, out: &mut Changes) {
        out.ignore(IgnoredKind::Transcript, || Change::Transcript {
            session_id: child.to_owned(),
            update: tag.to_owned(),
        });
    }

    /// A `session_message` (or chunk) on session `sid`: the prompt a
    /// standard run was given (the message whose recipient is the run; its
    /// `messageId` is the hidden launch tool call) and the reply it sent
    /// back (sender is the run), both kept on the run.
    pub(super) fn session_message(&mut self, sid: &str, update: &Value, out: &mut Changes) {
        let text = match update.get("content") {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| str_at(b, "text"))
                .collect::<Vec<_>>()
                .join(""),
            Some(block) => str_at(block, "text").unwrap_or("").to_owned(),
            None => String::new(),
        };
        let message_id = str_at(update, "messageId");
        let chunk = str_at(update, "sessionUpdate") == Some("session_message_chunk");
        // The run it is about: the recipient or sender that is a standard
        // run, else the session it came on when that is one.
        let candidates = [
            (str_at(update, "recipientSessionId"), true),
            (str_at(update, "senderSessionId"), false),
            (Some(sid), str_at(update, "senderSessionId").is_none()),
        ];
        for (run_id, to_run) in candidates {
            let Some(run_id) = run_id else { continue };
            let Some(root) = self.standard_run_root(run_id) else {
                continue;
            };
            let Some(run) = self.run_mut(&root, run_id) else {
                continue;
            };
            let std = run.standard.get_or_insert_with(StandardRun::default);
            let field = if to_run {
                &mut std.prompt
            } else {
                &mut std.reply
            };
            match field {
                Some(t) if chunk => t.push_str(&text),
                _ => *field = Some(text),
            }
            if to_run
                && run.parent_tool_call_id.is_none()
                && let Some(id) = message_id
            {
                run.parent_tool_call_id = Some(id.to_owned());
            }
            out.add(|| Change::SubagentRun {
                session_id: root,
                run_id: run_id.to_owned(),
            });
            return;
        }
    }
}
