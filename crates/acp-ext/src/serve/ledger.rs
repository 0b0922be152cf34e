//! Subagent runs of one session lifetime: their event stream and the task
//! records that `_<ns>/subagents/list|output|cancel` read.

use acp_extension_core::session::{SubagentTask, SubagentTaskStatus};
use serde_json::{Value, json};

use super::time;

/// One subagent run and its task record.
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    pub(crate) task_id: String,
    pub(crate) run_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) description: String,
    pub(crate) status: SubagentTaskStatus,
    pub(crate) started: u64,
    pub(crate) ended: Option<u64>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) output: String,
    pub(crate) tool_uses: u64,
    snapshot: Value,
}

impl RunRecord {
    /// Whether the run can still change (`pending` or `running`).
    pub(crate) fn live(&self) -> bool {
        matches!(self.snapshot["state"].as_str(), Some("pending" | "running"))
    }

    /// The contract's SubagentTask.
    pub(crate) fn task(&self) -> SubagentTask {
        let mut t = SubagentTask::new(
            self.task_id.clone(),
            self.description.clone(),
            self.status,
            super::wire::nn(self.started as f64),
            self.ended.map(|e| super::wire::nn(e as f64)),
        )
        .agent_id(self.run_id.clone())
        .subagent_type("worker")
        .model_id(super::state::DEFAULT_MODEL);
        if let Some(r) = &self.stop_reason {
            t = t.stop_reason(r.clone());
        }
        t
    }
}

/// The subagent runs of one session lifetime, and their event stream.
#[derive(Debug)]
pub(crate) struct Runs {
    session_id: String,
    records: Vec<RunRecord>,
}

impl Runs {
    pub(crate) fn new(session_id: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            records: Vec::new(),
        }
    }

    fn event(&self, run_id: &str, kind: &str, key: &str, payload: Value) -> Value {
        json!({
            "version": 1,
            "sessionId": self.session_id,
            "runId": run_id,
            "type": kind,
            key: payload,
        })
    }

    pub(crate) fn get(&self, task_id: &str) -> Option<&RunRecord> {
        self.records.iter().find(|r| r.task_id == task_id)
    }

    fn get_mut(&mut self, task_id: &str) -> Option<&mut RunRecord> {
        self.records.iter_mut().find(|r| r.task_id == task_id)
    }

    /// Starts a run; returns its events.
    pub(crate) fn start(
        &mut self,
        task_id: &str,
        run_id: &str,
        tool_call_id: &str,
        description: &str,
        snapshot: Value,
    ) -> Vec<Value> {
        let now = time::now();
        let record = RunRecord {
            task_id: task_id.to_owned(),
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            description: description.to_owned(),
            status: SubagentTaskStatus::Running,
            started: now,
            ended: None,
            stop_reason: None,
            output: String::new(),
            tool_uses: 0,
            snapshot: snapshot.clone(),
        };
        self.records.push(record);
        vec![self.event(run_id, "snapshot", "snapshot", snapshot)]
    }

    /// Merges `patch` into a live run's snapshot.
    pub(crate) fn snapshot(&mut self, task_id: &str, patch: Value) -> Vec<Value> {
        let Some(rec) = self.get_mut(task_id) else {
            return Vec::new();
        };
        if !rec.live() {
            return Vec::new();
        }
        if let (Some(snap), Some(patch)) = (rec.snapshot.as_object_mut(), patch.as_object()) {
            for (k, v) in patch {
                snap.insert(k.clone(), v.clone());
            }
        }
        let (run_id, snap) = (rec.run_id.clone(), rec.snapshot.clone());
        vec![self.event(&run_id, "snapshot", "snapshot", snap)]
    }

    /// Progress of a live run.
    pub(crate) fn progress(&mut self, task_id: &str, progress: Value) -> Vec<Value> {
        match self.get(task_id) {
            Some(rec) if rec.live() => {
                let run_id = rec.run_id.clone();
                vec![self.event(&run_id, "progress", "progress", progress)]
            }
            _ => Vec::new(),
        }
    }

    /// Output of a live run (text chunks are also kept for `subagents/output`).
    pub(crate) fn output(&mut self, task_id: &str, update: Value) -> Vec<Value> {
        let Some(rec) = self.get_mut(task_id) else {
            return Vec::new();
        };
        if !rec.live() {
            return Vec::new();
        }
        if update["sessionUpdate"] == "agent_message_chunk"
            && let Some(text) = update["content"]["text"].as_str()
        {
            rec.output.push_str(text);
            rec.output.push('\n');
        }
        if update["sessionUpdate"] == "tool_call" {
            rec.tool_uses += 1;
        }
        let run_id = rec.run_id.clone();
        vec![self.event(&run_id, "output", "update", update)]
    }

    /// Ends a live run: `completed`, or `cancelled` (task status `killed`).
    pub(crate) fn finish(
        &mut self,
        task_id: &str,
        state: &'static str,
        patch: Value,
    ) -> Vec<Value> {
        let now = time::now();
        let mut patch = patch;
        patch["state"] = json!(state);
        patch["endedAtEpochSeconds"] = json!(now);
        let events = self.snapshot(task_id, patch);
        if let Some(rec) = self.get_mut(task_id)
            && rec.ended.is_none()
        {
            rec.ended = Some(now);
            rec.status = match state {
                "completed" => SubagentTaskStatus::Completed,
                "cancelled" => SubagentTaskStatus::Killed,
                _ => SubagentTaskStatus::Failed,
            };
            rec.stop_reason = Some(state.to_owned());
        }
        events
    }

    /// Marks every live run `unknown` / disconnected.
    pub(crate) fn disconnect(&mut self) -> Vec<Value> {
        let ids: Vec<String> = self
            .records
            .iter()
            .filter(|r| r.live())
            .map(|r| r.task_id.clone())
            .collect();
        let mut events = Vec::new();
        for id in ids {
            events.extend(self.snapshot(
                &id,
                json!({"state": "unknown", "outputIncomplete": true, "reason": {"code": "disconnected"}}),
            ));
            if let Some(rec) = self.get_mut(&id) {
                rec.status = SubagentTaskStatus::Lost;
            }
        }
        events
    }

    /// The task records, oldest first.
    pub(crate) fn tasks(&self, active_only: bool) -> Vec<SubagentTask> {
        self.records
            .iter()
            .filter(|r| !active_only || r.status == SubagentTaskStatus::Running)
            .map(RunRecord::task)
            .collect()
    }
}
