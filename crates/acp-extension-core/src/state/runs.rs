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

use serde_json::{Map, Value, json};

use super::str_at;
use super::updates::{is_custom_update, is_standard_update, meta_of, notice_of, patch_str};
use super::*;
use crate::connection::{EventLine, SiftedOutput};
use crate::meta::{self, fields};
use crate::namespace;
use crate::subagent_events::{
    SubagentContentBlock, SubagentEvent, SubagentEventPayload, SubagentOutput,
};
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
        let (sid, run_id) = (event.session_id(), event.run_id.as_str());
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

/// Progress folded sparse and absolute, key by key as
/// [`SubagentProgress::merge_into`](crate::subagent_events::SubagentProgress::merge_into)
/// folds a Core event's: a key replaces, `null` clears (the other keys keep
/// their order).
fn fold_progress(run: &mut RunState, progress: Map<String, Value>) {
    for (k, v) in progress {
        crate::wire::merge_entry(&mut run.progress, &k, Ok(v));
    }
}

/// Folds one output update into a run: text appends (a new message on a
/// new line), tool calls merge by id, a plan replaces; a non-text message
/// chunk marks the run incomplete.
fn fold_output(run: &mut RunState, update: &Value, limits: &StateLimits) {
    run.output_events += 1;
    match str_at(update, "sessionUpdate") {
        Some("agent_message_chunk") => {
            let content = update.get("content");
            match content.and_then(|c| str_at(c, "type")) {
                Some("text") => {
                    let text = content.and_then(|c| str_at(c, "text")).unwrap_or("");
                    append_text(run, text, str_at(update, "messageId"), limits);
                }
                _ => run.output_incomplete = true,
            }
        }
        Some("agent_thought_chunk") => {}
        Some("tool_call") | Some("tool_call_update") => fold_tool_call(run, Some(update), limits),
        Some("plan") => {
            run.message_ended = true;
            run.plan = Some(update.clone());
        }
        // ACP v2.
        Some("agent_message") => upsert_message(run, update, limits),
        Some("tool_call_content_chunk") => append_tool_content(run, update, limits),
        Some("plan_update") => match update.get("plan").filter(|p| p.is_object()) {
            Some(plan) => {
                run.message_ended = true;
                run.plan = Some(plan.clone());
            }
            None => run.output_incomplete = true,
        },
        Some("plan_removed") => run.plan = None,
        _ => {}
    }
}

/// [`fold_output`] of a typed update (a Core event's); a tool call is
/// kept as it came, from `source`.
fn fold_typed_output(
    run: &mut RunState,
    update: &SubagentOutput,
    source: EventSource<'_>,
    limits: &StateLimits,
) {
    run.output_events += 1;
    match update {
        SubagentOutput::AgentMessageChunk(chunk) => match &chunk.content {
            SubagentContentBlock::Text(t) => {
                let id = match &chunk.message_id {
                    MaybeUndefined::Value(id) => Some(id.as_str()),
                    _ => None,
                };
                append_text(run, &t.text, id, limits);
            }
            _ => run.output_incomplete = true,
        },
        SubagentOutput::AgentThoughtChunk(_) => {}
        SubagentOutput::ToolCall(_) | SubagentOutput::ToolCallUpdate(_) => match source {
            EventSource::Tree(params) => fold_tool_call(run, params.get("update"), limits),
            EventSource::Line(line) => match line.update_text() {
                Some(text) => fold_tool_call_text(run, text, limits),
                None => fold_tool_call(run, line.to_value().pointer("/params/update"), limits),
            },
        },
        SubagentOutput::Plan(_) => {
            run.message_ended = true;
            run.plan = serde_json::to_value(update).ok();
        }
    }
}

/// Appends a text chunk: a new message (another message id, or after a
/// tool call or plan) starts on a new line.
fn append_text(run: &mut RunState, text: &str, message_id: Option<&str>, limits: &StateLimits) {
    if text.is_empty() {
        return;
    }
    let other_message =
        message_id.is_some() && run.message_id.is_some() && run.message_id.as_deref() != message_id;
    if (run.message_ended || other_message)
        && !run.text.is_empty()
        && !run.text.ends_with('\n')
        && !text.starts_with('\n')
    {
        run.text.push('\n');
    }
    if run.message_ended || other_message {
        run.message_len = 0;
    }
    run.message_ended = false;
    if other_message || (message_id.is_some() && run.message_id.is_none()) {
        run.message_id = message_id.map(str::to_owned);
    }
    reserve_text(&mut run.text, text.len(), limits.text_per_run);
    run.text.push_str(text);
    run.message_len += text.len();
    cap_text(&mut run.text, limits.text_per_run);
}

/// ACP v2's whole-message `agent_message` (`agent_thought`, like its
/// chunks, is no text of the run's): its text content is the message with
/// that `messageId`, replacing the text streamed or sent for it before
/// (when it is the run's last message), else a new message. Omitted
/// `content` patches only metadata; a block that is not text marks the
/// output incomplete.
fn upsert_message(run: &mut RunState, update: &Value, limits: &StateLimits) {
    let blocks = match update.get("content") {
        None => return,
        Some(Value::Array(blocks)) => blocks.as_slice(),
        Some(_) => &[],
    };
    let mut text = String::new();
    for block in blocks {
        match (str_at(block, "type"), str_at(block, "text")) {
            (Some("text"), Some(t)) => text.push_str(t),
            _ => run.output_incomplete = true,
        }
    }
    let id = str_at(update, "messageId");
    if id.is_some() && run.message_id.as_deref() == id && !run.message_ended {
        let keep = run.text.len().saturating_sub(run.message_len);
        run.text.truncate(keep);
        run.text.push_str(&text);
        run.message_len = text.len();
        cap_text(&mut run.text, limits.text_per_run);
    } else {
        run.message_ended = true;
        append_text(run, &text, id, limits);
        run.message_id = id.map(str::to_owned);
    }
}

/// ACP v2's `tool_call_content_chunk`: one content item appended to the
/// run's tool call with that id.
fn append_tool_content(run: &mut RunState, update: &Value, limits: &StateLimits) {
    let (Some(id), Some(item)) = (str_at(update, "toolCallId"), update.get("content")) else {
        run.output_incomplete = true;
        return;
    };
    let mut call = run
        .tool_calls
        .get(id)
        .map(CompactObject::value)
        .unwrap_or_else(|| Map::from_iter([("toolCallId".to_owned(), json!(id))]));
    match call.get_mut("content") {
        Some(Value::Array(items)) => items.push(item.clone()),
        _ => {
            call.insert("content".to_owned(), json!([item]));
        }
    }
    run.message_ended = true;
    merge_tool_call(run, id, &call, limits);
}

/// Makes room for `more` bytes in a run's text. Texts grow by appends
/// of a few hundred bytes up to megabytes; grown by doubling, a text is
/// copied into fresh memory at each step, and each fresh page costs a page
/// fault, the largest cost of folding long texts. A text that outgrows
/// 64 KiB (and the doubling that took it past) is given 4 MiB at once,
/// then grows eightfold: a text of a few megabytes is copied once, at
/// 128 KB, and the capacity not yet written is never faulted in
/// (BENCHMARKS.md: fewer page faults and less peak memory on the
/// benchmark's state than eightfold growth all the way). When that much
/// cannot be had (an address space or a commit limit), the text grows as
/// much as the append needs. A capped text is given no more room than its
/// cap lets it hold.
fn reserve_text(text: &mut String, more: usize, cap: usize) {
    const SMALL: usize = 64 << 10;
    const LARGE: usize = 4 << 20;
    let need = text.len().saturating_add(more).saturating_add(1);
    if need <= text.capacity() || need <= SMALL {
        return;
    }
    // A capped text never holds more than half as much again as its cap.
    let most = cap
        .saturating_add(cap / 2)
        .saturating_add(more)
        .saturating_add(1);
    let room = match text.capacity() {
        c if c < LARGE => LARGE,
        c => c.saturating_mul(8),
    };
    let target = room.min(most).max(need);
    if text.try_reserve_exact(target - text.len()).is_err() {
        text.reserve(need - text.len());
    }
}

/// A tool call or its update, as it came (its tree): it ends the message,
/// and merges by id, all its keys but `sessionUpdate`, in their order.
fn fold_tool_call(run: &mut RunState, update: Option<&Value>, limits: &StateLimits) {
    run.message_ended = true;
    if let Some(update) = update
        && let (Some(id), Some(from)) = (str_at(update, "toolCallId"), update.as_object())
    {
        merge_tool_call(run, id, from, limits);
    }
}

/// [`fold_tool_call`] of the update's text (as in its line): a call the
/// run does not know yet is kept as that text without `sessionUpdate`,
/// with no JSON tree between, where the text is already what the tree
/// would write ([`plain_without`]); anything else goes through the tree.
/// `update` is JSON a parser accepted: the update in a line read.
fn fold_tool_call_text(run: &mut RunState, update: &str, limits: &StateLimits) {
    if let Some((text, id)) = plain_without(update, "sessionUpdate", "toolCallId")
        // One lookup: a call the run does not know is the common case.
        && let indexmap::map::Entry::Vacant(call) = run.tool_calls.entry(id.to_owned())
    {
        run.message_ended = true;
        call.insert(CompactObject::from_plain(text));
        cap_map(&mut run.tool_calls, limits.tool_calls_per_run);
        return;
    }
    let tree = serde_json::from_str::<Value>(update).ok();
    fold_tool_call(run, tree.as_ref(), limits);
}

/// Merges a tool call or its update (all keys but `sessionUpdate`) into
/// the run's call with this id.
fn merge_tool_call(run: &mut RunState, id: &str, from: &Map<String, Value>, limits: &StateLimits) {
    let merged = match run.tool_calls.get(id) {
        Some(known) => {
            let mut into = known.value();
            for (k, v) in from {
                if k != "sessionUpdate" {
                    into.insert(k.clone(), v.clone());
                }
            }
            CompactObject::new(&into)
        }
        None => CompactObject::without(from, "sessionUpdate"),
    };
    run.tool_calls.insert(id.to_owned(), merged);
    cap_map(&mut run.tool_calls, limits.tool_calls_per_run);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_gets_4_mib_then_grows_eightfold_and_a_capped_one_within_its_cap() {
        let chunk = "x".repeat(1000);
        let mut text = String::new();
        let mut capacities = Vec::new();
        for _ in 0..5000 {
            reserve_text(&mut text, chunk.len(), usize::MAX);
            text.push_str(&chunk);
            if capacities.last() != Some(&text.capacity()) {
                capacities.push(text.capacity());
            }
        }
        // Doubling while the text fits in 64 KiB (the last doubling ends
        // past it), then 4 MiB at once (600 KB of text fits without another
        // copy), then eightfold: 5 MB of text after two large steps, not
        // six more doublings.
        assert!(capacities.contains(&128_000), "{capacities:?}");
        let large: Vec<_> = capacities.iter().filter(|&&c| c > 128 << 10).collect();
        assert_eq!(large.len(), 2, "{capacities:?}");
        assert_eq!(*large[0], 4 << 20, "{capacities:?}");
        assert_eq!(*large[1], 8 * large[0], "{capacities:?}");

        // A cap below the first large step: the room stops at what the
        // cap lets the text hold, not 4 MiB.
        let cap = 256 << 10;
        let mut capped = String::new();
        for _ in 0..600 {
            reserve_text(&mut capped, chunk.len(), cap);
            capped.push_str(&chunk);
            cap_text(&mut capped, cap);
            assert!(capped.capacity() <= 2 * cap, "{}", capped.capacity());
        }
    }
}
