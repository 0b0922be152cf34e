//! The one dispatch of the sequence rules: a call or an answer, typed by
//! its contract method (or its standard ACP method), to the rules that
//! remember.

use serde_json::Value;

use super::{SequenceFinding, SequenceTracker};
use crate::connection::{Answer, Call, Direction, is_prompt_receipt, prompt_steer_id};
use crate::methods::{ContractMethod, contract_method};
use crate::violation::child;

const NULL: Value = Value::Null;

impl SequenceTracker {
    /// The sequence rules of a call, once per message: its findings, and
    /// whether a subagent event is folded. `client_seen`: whether the
    /// client has spoken on this connection yet.
    pub(crate) fn call(&mut self, m: &Call<'_>, client_seen: bool) -> (Vec<SequenceFinding>, bool) {
        let mut out = Vec::new();
        let mut run_accepted = true;
        let method = m.method;
        let params = &m.params;
        let sid = m.session_id();
        let contract = contract_method(method);
        // A session-scoped notification of the agent's (every
        // agent-to-client contract method that names a session).
        if m.direction != Direction::ClientToAgent
            && contract.is_some()
            && Direction::of_method(method) == Direction::AgentToClient
            && let Some(sid) = sid
        {
            out.extend(self.session_notification(sid, client_seen));
        }
        match (method, contract) {
            ("session/load" | "session/resume", _) => {
                if let Some(sid) = sid {
                    self.session_started(sid);
                }
            }
            ("session/close" | "session/delete", _) => {
                if let Some(sid) = sid {
                    self.session_closed(sid);
                }
            }
            ("session/prompt", _) if m.direction != Direction::AgentToClient => {
                if let Some(sid) = sid {
                    self.prompt_sent(sid);
                    if let Some(id) = prompt_steer_id(params.tree()) {
                        self.steer_sent(sid, id, false);
                    }
                }
            }
            ("session/update", _) => {
                let update = params.tree().get("update").unwrap_or(&NULL);
                // ACP v2: an idle `state_update` ends foreground work.
                if let Some(sid) = sid
                    && update.get("sessionUpdate").and_then(Value::as_str) == Some("state_update")
                    && update.get("state").and_then(Value::as_str) == Some("idle")
                {
                    out.extend(self.prompt_answered(sid));
                }
                if let (Some(sid), Some("tool_call" | "tool_call_update"), Some(id)) = (
                    sid,
                    update.get("sessionUpdate").and_then(Value::as_str),
                    update.get("toolCallId").and_then(Value::as_str),
                ) {
                    out.extend(self.native_id(sid, id, "/params/update/toolCallId"));
                }
            }
            (_, Some(ContractMethod::SubagentEvent)) => {
                // A verified event's facts are read from its type (or,
                // sifted, from its text): its JSON tree is never built
                // here.
                let v = match params.line() {
                    Some(line) => self.subagent_event(line.facts()),
                    None => match params.event() {
                        Some(event) => self.subagent_event(event),
                        // An event that breaks the contract is none of its
                        // run's (an invalid snapshot does not start it); it
                        // is recorded where it is folded.
                        None => Default::default(),
                    },
                };
                run_accepted = v.accepted;
                out.extend(v.findings);
            }
            (_, Some(ContractMethod::SessionUsageUpdate)) => {
                out.extend(self.usage_update(params.tree()))
            }
            (_, Some(ContractMethod::SessionSteer)) => {
                if let (Some(sid), Some(id)) =
                    (sid, params.tree().get("steerId").and_then(Value::as_str))
                {
                    self.steer_sent(sid, id, true);
                }
            }
            (_, Some(ContractMethod::SessionSteerApplied)) => {
                if let (Some(sid), Some(id)) =
                    (sid, params.tree().get("steerId").and_then(Value::as_str))
                {
                    out.extend(self.steer_applied(sid, id, client_seen));
                }
            }
            (
                _,
                Some(
                    ContractMethod::SubagentsList
                    | ContractMethod::SubagentsCancel
                    | ContractMethod::SubagentsOutput,
                ),
            ) => {
                if let (Some(sid), Some(task)) =
                    (sid, params.tree().get("taskId").and_then(Value::as_str))
                {
                    out.extend(self.native_id(sid, task, "/params/taskId"));
                }
            }
            _ => {}
        }
        if contract.is_none() {
            self.meta_native_ids(sid, params.tree(), "/params", &mut out);
        }
        if m.bare_event {
            // Bare events are read as `subagents/event` notifications above;
            // their pointers have no `/params` prefix.
            for f in &mut out {
                if let Some(rest) = f.pointer.strip_prefix("/params") {
                    f.pointer = rest.to_owned();
                }
            }
        }
        (out, run_accepted)
    }

    /// The sequence rules of an answer, once per message; `v2` when the
    /// connection speaks ACP v2 (a prompt's result is a receipt).
    pub(crate) fn answer(&mut self, m: &Answer<'_>, v2: bool) -> Vec<SequenceFinding> {
        let mut out = Vec::new();
        let Some(request) = &m.request else {
            return out;
        };
        let method = request.method.as_str();
        let sid = request.session_id.as_deref();
        let contract = contract_method(method);
        if let Some(result) = m.result() {
            match (method, contract) {
                ("session/new" | "session/fork", _) => {
                    if let Some(new) = result.get("sessionId").and_then(Value::as_str) {
                        self.session_started(new);
                    }
                }
                (_, Some(ContractMethod::SubagentsList)) => {
                    let tasks = result.get("tasks").and_then(Value::as_array);
                    if let (Some(sid), Some(tasks)) = (sid, tasks) {
                        for (i, task) in tasks.iter().enumerate() {
                            if let Some(id) = task.get("taskId").and_then(Value::as_str) {
                                out.extend(self.native_id(
                                    sid,
                                    id,
                                    &format!("/result/tasks/{i}/taskId"),
                                ));
                            }
                        }
                    }
                }
                _ => {}
            }
            if contract.is_none() {
                let rsid = result.get("sessionId").and_then(Value::as_str);
                self.meta_native_ids(rsid, result, "/result", &mut out);
            }
        }
        if let Some(sid) = sid {
            if method == "session/prompt" && !m.result().is_some_and(|r| is_prompt_receipt(r, v2)) {
                out.extend(self.prompt_answered(sid));
            } else if contract == Some(ContractMethod::SessionSteer)
                && let Some(id) = request.steer_id.as_deref()
            {
                let injected = m
                    .result()
                    .and_then(|r| r.get("outcome"))
                    .and_then(Value::as_str)
                    == Some("injected");
                out.extend(self.steer_answered(sid, id, injected));
            }
        }
        out
    }

    /// Native ids in `_meta.<ns>` sections of a standard message: a
    /// task's `taskId`, a `turnId`.
    fn meta_native_ids(
        &mut self,
        sid: Option<&str>,
        value: &Value,
        at: &str,
        out: &mut Vec<SequenceFinding>,
    ) {
        let Some(sid) = sid else { return };
        let found = crate::meta::sections(value, at);
        for section in found.iter().filter(|s| !s.capabilities) {
            let (at, map) = (&section.pointer, section.fields);
            if let Some(id) = map
                .get("task")
                .and_then(|t| t.get("taskId"))
                .and_then(Value::as_str)
            {
                let at = child(&child(at, "task"), "taskId");
                out.extend(self.native_id(sid, id, &at));
            }
            if let Some(id) = map.get("turnId").and_then(Value::as_str) {
                out.extend(self.native_id(sid, id, &child(at, "turnId")));
            }
        }
    }
}
