//! Per-lifetime accounting and subagent runs.
//!
//! [`Ledger`] wraps the usage accumulator (one per session lifetime) and
//! [`Runs`] wraps the subagent emitter together with the task records that
//! `_<ns>/subagents/list|output|cancel` read.

use acp_extension_core::namespace::Namespace;
use serde_json::{Map, Value, json};

use super::time;

/// Usage accounting for one session lifetime.
#[derive(Debug)]
pub(crate) struct Ledger {
    scope_id: String,
    operations: Vec<(String, Map<String, Value>)>,
    totals: Map<String, Value>,
}

const COUNTERS: [&str; 6] = [
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "reasoningOutputTokens",
    "webSearchRequests",
];

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn sum(rows: &[&Value]) -> Value {
    let mut out = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0});
    if rows.is_empty() {
        return out;
    }
    for key in COUNTERS {
        let total: f64 = rows.iter().map(|r| num(r, key)).sum();
        out[key] = json!(total as u64);
    }
    if rows.iter().all(|r| r.get("costUSD").is_some()) {
        out["costUSD"] = json!(rows.iter().map(|r| num(r, "costUSD")).sum::<f64>());
    }
    out
}

impl Ledger {
    pub(crate) fn new() -> Self {
        Self {
            scope_id: format!("scope-{}-{}", time::now(), std::process::id()),
            operations: Vec::new(),
            totals: Map::new(),
        }
    }

    /// Records the latest snapshot of one operation; returns the
    /// `session/usage_update` params when anything changed.
    pub(crate) fn update(
        &mut self,
        ns: Namespace,
        session_id: &str,
        operation_id: &str,
        rows: &Map<String, Value>,
    ) -> Option<Value> {
        let idx = match self.operations.iter().position(|(id, _)| id == operation_id) {
            Some(i) => i,
            None => {
                self.operations.push((operation_id.to_owned(), Map::new()));
                self.operations.len() - 1
            }
        };
        let previous = self.operations[idx].1.clone();
        let mut merged = previous.clone();
        for (model, row) in rows {
            let start = merged
                .get(model)
                .cloned()
                .unwrap_or_else(|| json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0}));
            let mut next = json!({});
            for key in COUNTERS {
                next[key] = json!(num(&start, key).max(num(row, key)) as u64);
            }
            if let Some(c) = row.get("costUSD").and_then(Value::as_f64) {
                next["costUSD"] = json!(num(&start, "costUSD").max(c));
            } else if let Some(c) = start.get("costUSD") {
                next["costUSD"] = c.clone();
            }
            merged.insert(model.clone(), next);
        }
        if merged == previous {
            if previous.is_empty() {
                self.operations.remove(idx);
            }
            return None;
        }
        self.operations[idx].1 = merged.clone();
        let mut models: Vec<String> = Vec::new();
        for (_, op) in &self.operations {
            for model in op.keys() {
                if !models.contains(model) {
                    models.push(model.clone());
                }
            }
        }
        let mut totals = Map::new();
        let mut delta = Map::new();
        for model in &models {
            let rows: Vec<&Value> = self
                .operations
                .iter()
                .filter_map(|(_, op)| op.get(model))
                .collect();
            let total = sum(&rows);
            let old = self.totals.get(model);
            let mut d = json!({});
            for key in COUNTERS {
                d[key] = json!(num(&total, key) as i64 - old.map_or(0.0, |o| num(o, key)) as i64);
            }
            if total.get("costUSD").is_some() && old.is_none_or(|o| o.get("costUSD").is_some()) {
                d["costUSD"] = json!(num(&total, "costUSD") - old.map_or(0.0, |o| num(o, "costUSD")));
            }
            totals.insert(model.clone(), total);
            delta.insert(model.clone(), d);
        }
        self.totals = totals.clone();
        let merged_rows: Vec<&Value> = merged.values().collect();
        let delta_rows: Vec<&Value> = delta.values().collect();
        Some(json!({
            "sessionId": session_id,
            "usage": sum(&merged_rows),
            "modelUsage": totals,
            "delta": {"usage": sum(&delta_rows), "modelUsage": delta},
            "_meta": {ns.key(): {"usageScopeId": self.scope_id}},
        }))
    }

    /// Total known cost of the lifetime, if every model's cost is known.
    pub(crate) fn total_cost(&self) -> Option<f64> {
        let rows: Vec<&Value> = self.totals.values().collect();
        if rows.is_empty() {
            return None;
        }
        sum(&rows).get("costUSD").and_then(Value::as_f64)
    }
}

/// One subagent run and its task record.
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    pub(crate) task_id: String,
    pub(crate) run_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) description: String,
    pub(crate) status: &'static str,
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
    pub(crate) fn task(&self) -> Value {
        let mut v = json!({
            "taskId": self.task_id,
            "description": self.description,
            "status": self.status,
            "agentId": self.run_id,
            "subagentType": "worker",
            "modelId": super::state::DEFAULT_MODEL,
            "startedAtEpochSeconds": self.started,
            "endedAtEpochSeconds": self.ended,
        });
        if let Some(r) = &self.stop_reason {
            v["stopReason"] = json!(r);
        }
        v
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
            status: "running",
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
        if update["sessionUpdate"] == "agent_message_chunk" {
            if let Some(text) = update["content"]["text"].as_str() {
                rec.output.push_str(text);
                rec.output.push('\n');
            }
        }
        if update["sessionUpdate"] == "tool_call" {
            rec.tool_uses += 1;
        }
        let run_id = rec.run_id.clone();
        vec![self.event(&run_id, "output", "update", update)]
    }

    /// Ends a live run: `completed`, or `cancelled` (task status `killed`).
    pub(crate) fn finish(&mut self, task_id: &str, state: &'static str, patch: Value) -> Vec<Value> {
        let now = time::now();
        let mut patch = patch;
        patch["state"] = json!(state);
        patch["endedAtEpochSeconds"] = json!(now);
        let events = self.snapshot(task_id, patch);
        if let Some(rec) = self.get_mut(task_id) {
            if rec.ended.is_none() {
                rec.ended = Some(now);
                rec.status = match state {
                    "completed" => "completed",
                    "cancelled" => "killed",
                    _ => "failed",
                };
                rec.stop_reason = Some(state.to_owned());
            }
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
                rec.status = "lost";
            }
        }
        events
    }

    /// The task records, oldest first.
    pub(crate) fn tasks(&self, active_only: bool) -> Vec<Value> {
        self.records
            .iter()
            .filter(|r| !active_only || r.status == "running")
            .map(RunRecord::task)
            .collect()
    }
}
