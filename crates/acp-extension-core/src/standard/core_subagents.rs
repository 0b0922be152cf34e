//! The other way: a standard agent's `subagent_update`s and child sessions
//! as Core subagent events ([`CoreSubagents`]).

use super::*;

/// The kinds of a child's update that a Core run carries as `output`.
const OUTPUT_KINDS: &[&str] = &[
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

/// One standard child session, as [`CoreSubagents`] follows it.
#[derive(Debug, Clone, Default)]
struct StandardChild {
    /// The root session it belongs to.
    root: String,
    /// The child session it was announced on; `None` for the root.
    parent: Option<String>,
    title: Option<String>,
    description: Option<String>,
    cancel: bool,
    /// `state` as last sent (`None`: never sent, as codex announces).
    state: Option<Value>,
    /// Its current Core run, and whether that run ended.
    run: Option<(String, bool)>,
    /// The last snapshot written for the current run.
    last: Option<Value>,
}

/// Standard subagent traffic (`subagent_update` on a parent session, and
/// each child session's own `session/update`s) read as Core subagent
/// events, for a client that reads `subagents/event`: what a bridge
/// writes for a Core client in front of an official adapter
/// (as the official adapters are documented, adapter to Core).
///
/// A standard child is reusable and a Core run is not: each time a child
/// goes back to `running` after it ended, a new run begins (run ids are
/// opaque, `std-run-<n>`; the child's session id is never one). The
/// snapshot carries `name` (`title`), `description`, `parentRunId` (`null`
/// on the root, the parent child's current run when nested), and `support`
/// (`stream` of every output kind, `cancel` from `capabilities.cancel`).
/// States: `running` and `requires_action` are `running` (the blocked flag
/// is lost); a child announced without a state is `pending`; `idle` with
/// `end_turn`, `max_tokens`, `max_turn_requests` or `refusal` is
/// `completed`; `cancelled` is `cancelled`; `error` is `failed` with
/// `reason {code: "error", message}`; `idle` without a stop reason is
/// `unknown` with `outputIncomplete` and reason `lost`; `unknown` is
/// `unknown` with reason `disconnected`. A child's `agent_message_chunk`,
/// `agent_thought_chunk`, `tool_call`, `tool_call_update` and `plan` are
/// `output` (output of a child that is not running begins a new `running`
/// run first: it works again); its other updates (usage, config, titles, session messages)
/// have no Core slot and are dropped. `cwd` and `additionalDirectories`
/// are lost.
///
/// ```
/// use acp_extension_core::standard::CoreSubagents;
/// use serde_json::json;
///
/// let mut runs = CoreSubagents::new();
/// let events = runs.session_update(&json!({"sessionId": "root", "update": {
///     "sessionUpdate": "subagent_update", "sessionId": "child", "title": "Explorer",
///     "capabilities": {"cancel": {}}, "state": {"state": "running"}}})).unwrap();
/// let snapshot = events[0].snapshot().unwrap();
/// assert_eq!(snapshot.name.as_deref(), Some("Explorer"));
/// assert!(snapshot.support.cancel);
/// // The child's own chunk is the run's output.
/// let chunk = runs.session_update(&json!({"sessionId": "child", "update": {
///     "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}})).unwrap();
/// assert_eq!(chunk[0].run_id, events[0].run_id);
/// // Anything else is not subagent traffic.
/// assert!(runs.session_update(&json!({"sessionId": "root", "update": {
///     "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}})).is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CoreSubagents {
    children: std::collections::HashMap<String, StandardChild>,
    runs: u64,
}

impl CoreSubagents {
    /// Follows no child yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `session_id` is a child session announced so far.
    pub fn is_child(&self, session_id: &str) -> bool {
        self.children.contains_key(session_id)
    }

    /// The child session whose run is `run_id` (a Core client cancels a run
    /// by its task: the child session).
    pub fn child_of_run(&self, run_id: &str) -> Option<&str> {
        self.children
            .iter()
            .find(|(_, c)| c.run.as_ref().is_some_and(|(r, _)| r == run_id))
            .map(|(id, _)| id.as_str())
    }

    /// Reads one `session/update`'s params. `None` when it is not subagent
    /// traffic (pass it on as it is); otherwise the Core events that
    /// replace it (none for an update Core has no slot for).
    pub fn session_update(
        &mut self,
        params: &Value,
    ) -> Option<Vec<crate::subagent_events::SubagentEvent>> {
        let sid = params.get("sessionId")?.as_str()?;
        let update = params.get("update")?;
        let kind = update.get("sessionUpdate")?.as_str()?;
        if kind == "subagent_update" {
            let child = update.get("sessionId")?.as_str()?;
            if child == sid || child.is_empty() {
                return None;
            }
            return Some(self.subagent_update(sid, child, update));
        }
        let child = self.children.get_mut(sid)?;
        if !OUTPUT_KINDS.contains(&kind) {
            return Some(Vec::new());
        }
        // Output of a child that is not running (codex streams a resumed
        // child's first chunk before its `running`): it works again, so a
        // new run begins.
        let mut out = Vec::new();
        if !matches!(&child.run, Some((_, false))) {
            child.state = Some(serde_json::json!({"state": "running"}));
            out = self.snapshot(sid);
        }
        let child = self.children.get(sid)?;
        let Some((run, false)) = &child.run else {
            return Some(out);
        };
        let event = serde_json::json!({"version": 1, "sessionId": child.root, "runId": run,
            "type": "output", "update": update});
        out.extend(serde_json::from_value(event).ok());
        Some(out)
    }

    fn subagent_update(
        &mut self,
        parent: &str,
        child: &str,
        update: &Value,
    ) -> Vec<crate::subagent_events::SubagentEvent> {
        let (root, parent_child) = match self.children.get(parent) {
            Some(p) => (p.root.clone(), Some(parent.to_owned())),
            None => (parent.to_owned(), None),
        };
        let entry = self
            .children
            .entry(child.to_owned())
            .or_insert_with(|| StandardChild {
                root,
                parent: parent_child,
                ..StandardChild::default()
            });
        let text = |v: &Value| v.as_str().map(str::to_owned);
        if let Some(t) = update.get("title") {
            entry.title = text(t);
        }
        if let Some(d) = update.get("description") {
            entry.description = text(d);
        }
        if let Some(c) = update.get("capabilities") {
            entry.cancel = c.get("cancel").is_some_and(Value::is_object);
        }
        if let Some(st) = update.get("state") {
            entry.state = st.is_object().then(|| st.clone());
        }
        self.snapshot(child)
    }

    /// The snapshot event of `child` as it now stands (starting a run when
    /// it has none, or when an ended child runs again); none when nothing
    /// changed.
    fn snapshot(&mut self, child: &str) -> Vec<crate::subagent_events::SubagentEvent> {
        let Some(entry) = self.children.get_mut(child) else {
            return Vec::new();
        };
        let (state, reason, incomplete) = core_state(entry.state.as_ref());
        let live = matches!(state, "pending" | "running");
        // A new run when there is none, or when an ended child runs again.
        let new_run = match &entry.run {
            None => true,
            Some((_, ended)) => *ended && live,
        };
        if new_run {
            self.runs += 1;
            entry.run = Some((format!("std-run-{}", self.runs), false));
            entry.last = None;
        }
        let (run_id, ended) = entry.run.clone().unwrap_or_default();
        if ended {
            // An ended run stays ended: nothing to say until it runs again.
            return Vec::new();
        }
        let (parent, cancel, title, description) = (
            entry.parent.clone(),
            entry.cancel,
            entry.title.clone(),
            entry.description.clone(),
        );
        let parent_run = match &parent {
            None => Value::Null,
            Some(p) => match self.children.get(p).and_then(|p| p.run.as_ref()) {
                Some((r, _)) => Value::String(r.clone()),
                None => Value::Null,
            },
        };
        let mut snapshot = serde_json::Map::new();
        snapshot.insert("state".into(), state.into());
        snapshot.insert("parentRunId".into(), parent_run);
        snapshot.insert(
            "support".into(),
            serde_json::json!({"stream": ["text", "thought", "tool", "plan"], "progress": false,
                "outputRead": "none", "cancel": cancel}),
        );
        if let Some(t) = title {
            snapshot.insert("name".into(), Value::String(t));
        }
        if let Some(d) = description {
            snapshot.insert("description".into(), Value::String(d));
        }
        if let Some(r) = reason {
            snapshot.insert("reason".into(), r);
        }
        if incomplete {
            snapshot.insert("outputIncomplete".into(), Value::Bool(true));
        }
        let snapshot = Value::Object(snapshot);
        let Some(entry) = self.children.get_mut(child) else {
            return Vec::new();
        };
        if entry.last.as_ref() == Some(&snapshot) {
            return Vec::new();
        }
        entry.last = Some(snapshot.clone());
        if !live {
            entry.run = Some((run_id.clone(), true));
        }
        let event = serde_json::json!({"version": 1, "sessionId": entry.root, "runId": run_id,
            "type": "snapshot", "snapshot": snapshot});
        serde_json::from_value(event).ok().into_iter().collect()
    }
}

/// A standard `state` object as a Core state, reason and
/// `outputIncomplete`.
fn core_state(state: Option<&Value>) -> (&'static str, Option<Value>, bool) {
    let Some(state) = state else {
        return ("pending", None, false);
    };
    match state.get("state").and_then(Value::as_str) {
        Some("running" | "requires_action") => ("running", None, false),
        Some("idle") => match state.get("stopReason").and_then(Value::as_str) {
            Some("cancelled") => ("cancelled", None, false),
            Some("error") => {
                let message = state
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("the subagent failed");
                (
                    "failed",
                    Some(serde_json::json!({"code": "error", "message": message})),
                    false,
                )
            }
            None => ("unknown", Some(serde_json::json!({"code": "lost"})), true),
            Some(_) => ("completed", None, false),
        },
        _ => (
            "unknown",
            Some(serde_json::json!({"code": "disconnected"})),
            true,
        ),
    }
}
