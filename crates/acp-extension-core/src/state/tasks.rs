//! Task rows from the dialects outside Core: the vendors' task lifecycles
//! (`_claude/taskLifecycle`, `_kimi/taskLifecycle`) and AIR's async tasks
//! (`async_task_spawned`, `async_task_progress`, `async_task_state_update`,
//! v2 with a leading `_`). Each becomes a [`TaskState`] whose
//! [`TaskMeta`] is built from the fields the dialect sent.
//!
//! * **Lifecycles**: the row's tool call is
//!   `task:<task_id>`; `kind` is `background` once `is_backgrounded`, else
//!   `subagent`; started and progress are `in_progress`; completed,
//!   succeeded and success are `completed`; failed, killed, cancelled,
//!   stopped and error are `failed`. The prompt and the output file are
//!   never copied.
//! * **AIR async tasks** are `background` rows keyed by `asyncTaskId`;
//!   `running` and `paused` are `in_progress`, `stopped` is `failed`.

use serde_json::{Map, Value, json};

use super::str_at;
use super::*;
use crate::session::{TaskKind, TaskMeta, TaskStatus};

/// The vendors' task lifecycle notifications.
pub(super) fn is_lifecycle(method: &str) -> bool {
    matches!(method, "_claude/taskLifecycle" | "_kimi/taskLifecycle")
}

fn lifecycle_status(s: &str) -> Option<TaskStatus> {
    match s {
        "started" | "task_started" | "progress" | "task_progress" | "running" | "in_progress" => {
            Some(TaskStatus::InProgress)
        }
        "completed" | "succeeded" | "success" => Some(TaskStatus::Completed),
        "failed" | "killed" | "cancelled" | "stopped" | "error" => Some(TaskStatus::Failed),
        "pending" => Some(TaskStatus::Pending),
        _ => None,
    }
}

impl ConnectionState {
    /// `_claude/taskLifecycle` / `_kimi/taskLifecycle`.
    pub(super) fn task_lifecycle(&mut self, method: &str, params: &Value, out: &mut Changes) {
        let sid = str_at(params, "acpSessionId").or_else(|| str_at(params, "sessionId"));
        let message = params.get("message");
        let task_id = message.and_then(|m| str_at(m, "task_id"));
        let (Some(sid), Some(m), Some(task_id)) = (sid, message, task_id) else {
            self.record(out, Record::new("/params", "required", "a task lifecycle needs `sessionId` (or `acpSessionId`) and `message.task_id`; not folded".to_owned()).method(method));
            return;
        };
        let (sid, task_id) = (sid.to_owned(), task_id.to_owned());
        let status = str_at(m, "status")
            .and_then(lifecycle_status)
            .or_else(|| str_at(m, "subtype").and_then(lifecycle_status));
        let backgrounded = m.get("is_backgrounded").and_then(Value::as_bool) == Some(true);
        let mut fields = Map::new();
        for (from, to) in [
            ("description", "description"),
            ("subagent_type", "actor"),
            ("summary", "summary"),
            ("tool_use_id", "parentToolCallId"),
        ] {
            if let Some(v) = str_at(m, from) {
                fields.insert(to.into(), json!(v));
            }
        }
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            let mut usage = Map::new();
            for (from, to) in [
                ("total_tokens", "totalTokens"),
                ("tool_uses", "toolUses"),
                ("duration_ms", "durationMs"),
            ] {
                if let Some(n) = u.get(from).or_else(|| u.get(to)).filter(|n| n.is_number()) {
                    usage.insert(to.into(), n.clone());
                }
            }
            fields.insert("usage".into(), Value::Object(usage));
        }
        if m.get("skip_transcript").and_then(Value::as_bool) == Some(true) {
            fields.insert("skipTranscript".into(), json!(true));
        }
        let kind = backgrounded.then_some(TaskKind::Background);
        let tool_call = format!("task:{task_id}");
        self.upsert_task(
            method, &sid, &task_id, &tool_call, kind, status, fields, out,
        );
    }

    /// AIR's async task updates (`async_task_*`, v2 `_async_task_*`) on
    /// session `sid`.
    pub(super) fn async_task(
        &mut self,
        method: &str,
        sid: &str,
        tag: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        let Some(task_id) = str_at(update, "asyncTaskId").map(str::to_owned) else {
            self.record(
                out,
                Record::new(
                    "/params/update/asyncTaskId",
                    "required",
                    format!("`{tag}` without a string `asyncTaskId`; not folded"),
                )
                .method(method)
                .session(sid),
            );
            return;
        };
        let mut fields = Map::new();
        let described = str_at(update, "description").or_else(|| str_at(update, "name"));
        if let Some(d) = described {
            fields.insert("description".into(), json!(d));
        }
        // `taskType`, `canStop` and `outputFilePath` have no place in a
        // task row (lost in the mapping).
        for (from, to) in [
            ("summary", "summary"),
            ("lastToolName", "lastToolName"),
            ("toolCallId", "parentToolCallId"),
        ] {
            if let Some(v) = str_at(update, from) {
                fields.insert(to.into(), json!(v));
            }
        }
        if let Some(u) = update.get("usage").filter(|u| u.is_object()) {
            fields.insert("usage".into(), u.clone());
        }
        if update.get("showInTranscript").and_then(Value::as_bool) == Some(false) {
            fields.insert("skipTranscript".into(), json!(true));
        }
        let status = match tag.trim_start_matches('_') {
            "async_task_spawned" => Some(TaskStatus::InProgress),
            _ => match str_at(update, "state") {
                Some("running" | "paused") => Some(TaskStatus::InProgress),
                Some("completed") => Some(TaskStatus::Completed),
                Some("failed" | "stopped") => Some(TaskStatus::Failed),
                _ => None,
            },
        };
        // Its own tool call when it names one (and once named, kept), else
        // the row's `task:<id>`.
        let tool_call = match str_at(update, "toolCallId") {
            Some(id) => id.to_owned(),
            None => self
                .session(sid)
                .and_then(|s| s.tasks.get(&task_id))
                .map(|t| t.tool_call_id.clone())
                .unwrap_or_else(|| format!("task:{task_id}")),
        };
        let name = str_at(update, "name").map(str::to_owned);
        self.upsert_task(
            method,
            sid,
            &task_id,
            &tool_call,
            Some(TaskKind::Background),
            status,
            fields,
            out,
        );
        // Its `name` is the row's title (the description is its own).
        if let Some(name) = name
            && let Some(row) = self
                .sessions
                .get_mut(sid)
                .and_then(|s| s.tasks.get_mut(&task_id))
        {
            row.title = Some(name);
        }
    }

    /// Merges `fields` into the row `task_id` (creating it), with `kind`
    /// and `status` when given; the result must be a valid [`TaskMeta`].
    #[allow(clippy::too_many_arguments)]
    fn upsert_task(
        &mut self,
        method: &str,
        sid: &str,
        task_id: &str,
        tool_call: &str,
        kind: Option<TaskKind>,
        status: Option<TaskStatus>,
        fields: Map<String, Value>,
        out: &mut Changes,
    ) {
        let cap = self.limits.tasks_per_session;
        let s = self.session_mut(sid);
        let mut task = match s.tasks.get(task_id) {
            Some(t) => serde_json::to_value(&t.task).unwrap_or(Value::Null),
            None => {
                json!({"version": 1, "taskId": task_id, "kind": "subagent", "status": "pending"})
            }
        };
        if let Some(o) = task.as_object_mut() {
            o.extend(fields);
            if let Some(k) = kind {
                o.insert("kind".into(), json!(k));
            }
            if let Some(st) = status {
                o.insert("status".into(), json!(st));
            }
        }
        match serde_json::from_value::<TaskMeta>(task) {
            Ok(task) => {
                let title = s.tasks.get(task_id).and_then(|t| t.title.clone());
                s.tasks.insert(
                    task_id.to_owned(),
                    TaskState {
                        tool_call_id: tool_call.to_owned(),
                        title,
                        task,
                    },
                );
                cap_map(&mut s.tasks, cap);
                out.add(|| Change::Task {
                    session_id: sid.to_owned(),
                    task_id: task_id.to_owned(),
                });
            }
            Err(e) => self.record(
                out,
                Record::new(
                    "/params",
                    "shape",
                    format!("the task maps to no valid task row: {e}"),
                )
                .method(method)
                .session(sid),
            ),
        }
    }
}
