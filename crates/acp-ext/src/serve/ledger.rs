//! Subagent runs of one session lifetime: the library's
//! [`SubagentEmitter`] (one per root-session activation) and the task
//! records that `_<ns>/subagents/list|output|cancel` read.
//!
//! The emitter delivers into a `Vec` sink that never waits, so its calls
//! complete at once under the state lock; the caller sends the drained
//! events in order, and only when both peers negotiated `subagentEvents`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_extension_core::session::{SubagentTask, SubagentTaskStatus};
use acp_extension_core::subagent_emitter::{OutputIds, SnapshotPatch, SubagentEmitter};
use acp_extension_core::subagent_events::{
    SubagentEvent, SubagentProgress, SubagentSnapshot, SubagentState,
};
use acp_extension_core::wire::{EpochSeconds, NonEmptyString};
use futures::FutureExt;
use serde_json::Value;

use crate::time;
use acp_extension_core::wire::WireEnum;

/// The default model id of a session (overridable through `sessionConfig.modelId`).
pub(crate) const DEFAULT_MODEL: &str = "serve-model-1";

/// One subagent run and its task record (the native id is the task id).
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    pub(crate) task_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) description: String,
    pub(crate) status: SubagentTaskStatus,
    pub(crate) started: u64,
    pub(crate) ended: Option<u64>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) output: String,
    pub(crate) tool_uses: u64,
    agent_id: Option<String>,
}

impl RunRecord {
    /// The contract's SubagentTask.
    pub(crate) fn task(&self) -> SubagentTask {
        let mut t = SubagentTask::new(
            self.task_id.clone(),
            self.description.clone(),
            self.status,
            EpochSeconds::from_secs(self.started),
            self.ended.map(EpochSeconds::from_secs),
        )
        .subagent_type("worker")
        .model_id(DEFAULT_MODEL);
        if let Some(id) = &self.agent_id {
            t = t.agent_id(id.clone());
        }
        if let Some(r) = &self.stop_reason {
            t = t.stop_reason(r.clone());
        }
        t
    }
}

/// The subagent runs of one session lifetime, and their event stream.
pub(crate) struct Runs {
    emitter: SubagentEmitter<Vec<SubagentEvent>>,
    records: Vec<RunRecord>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("records", &self.records)
            .finish()
    }
}

/// Drives an emitter call: with a `Vec` sink it is ready at once.
fn now<F: std::future::Future>(f: F) {
    let _ = f.now_or_never();
}

impl Runs {
    /// Runs of root session `session_id`; run ids come from the
    /// connection's counter (`run-1`, `run-2`, …).
    pub(crate) fn new(session_id: &str, run_ids: Arc<AtomicU64>) -> Self {
        let session = NonEmptyString::new(session_id)
            .unwrap_or_else(|_| NonEmptyString::new("session").expect("non-empty literal"));
        let emitter = SubagentEmitter::new(session, Vec::new()).with_id_generator(move || {
            format!("run-{}", run_ids.fetch_add(1, Ordering::Relaxed) + 1)
        });
        Self {
            emitter,
            records: Vec::new(),
        }
    }

    fn drain(&mut self) -> Vec<SubagentEvent> {
        std::mem::take(self.emitter.sink_mut())
    }

    pub(crate) fn get(&self, task_id: &str) -> Option<&RunRecord> {
        self.records.iter().find(|r| r.task_id == task_id)
    }

    fn get_mut(&mut self, task_id: &str) -> Option<&mut RunRecord> {
        self.records.iter_mut().find(|r| r.task_id == task_id)
    }

    /// The task id of the run with this run id.
    pub(crate) fn task_of_run(&self, run_id: &str) -> Option<&str> {
        self.records
            .iter()
            .find(|r| r.agent_id.as_deref() == Some(run_id))
            .map(|r| r.task_id.as_str())
    }

    /// The task ids of the live runs, oldest first.
    pub(crate) fn live_task_ids(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| self.emitter.live(&r.task_id))
            .map(|r| r.task_id.clone())
            .collect()
    }

    /// Whether the run of `task_id` is live.
    pub(crate) fn live(&self, task_id: &str) -> bool {
        self.emitter.live(task_id)
    }

    /// Starts a run; returns its events.
    pub(crate) fn start(
        &mut self,
        task_id: &str,
        tool_call_id: &str,
        description: &str,
        snapshot: SubagentSnapshot,
    ) -> Vec<SubagentEvent> {
        now(self.emitter.start(task_id, snapshot));
        let agent_id = self
            .emitter
            .get(task_id)
            .map(|r| r.run_id.as_str().to_owned());
        self.records.push(RunRecord {
            task_id: task_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            description: description.to_owned(),
            status: SubagentTaskStatus::Running,
            started: time::now(),
            ended: None,
            stop_reason: None,
            output: String::new(),
            tool_uses: 0,
            agent_id,
        });
        self.drain()
    }

    /// Progress of a live run.
    pub(crate) fn progress(
        &mut self,
        task_id: &str,
        progress: SubagentProgress,
    ) -> Vec<SubagentEvent> {
        now(self.emitter.progress(task_id, progress));
        self.drain()
    }

    /// Output of a live run (an ACP session update as JSON); text chunks
    /// are also kept for `subagents/output`.
    pub(crate) fn output(&mut self, task_id: &str, update: Value) -> Vec<SubagentEvent> {
        if self.emitter.live(task_id)
            && let Some(rec) = self.get_mut(task_id)
        {
            if update["sessionUpdate"] == "agent_message_chunk"
                && let Some(text) = update["content"]["text"].as_str()
            {
                rec.output.push_str(text);
                rec.output.push('\n');
            }
            if update["sessionUpdate"] == "tool_call" {
                rec.tool_uses += 1;
            }
        }
        now(self.emitter.output_value(task_id, update, OutputIds::new()));
        self.drain()
    }

    /// Ends a live run in `state` (`completed`, or `cancelled`: task status
    /// `killed`), with `patch` merged into its last snapshot.
    pub(crate) fn finish(
        &mut self,
        task_id: &str,
        state: SubagentState,
        patch: SnapshotPatch,
    ) -> Vec<SubagentEvent> {
        if !self.emitter.live(task_id) {
            return Vec::new();
        }
        let ended = time::now();
        now(self
            .emitter
            .snapshot(task_id, patch.state(state).ended_at_epoch_seconds(ended)));
        if let Some(rec) = self.get_mut(task_id) {
            rec.ended = Some(ended);
            rec.status = match state {
                SubagentState::Completed => SubagentTaskStatus::Completed,
                SubagentState::Cancelled => SubagentTaskStatus::Killed,
                _ => SubagentTaskStatus::Failed,
            };
            rec.stop_reason = Some(state.as_str().to_owned());
        }
        self.drain()
    }

    /// Marks every live run `unknown` / disconnected (connection lost).
    pub(crate) fn disconnect(&mut self) -> Vec<SubagentEvent> {
        let live: Vec<String> = self
            .records
            .iter()
            .filter(|r| self.emitter.live(&r.task_id))
            .map(|r| r.task_id.clone())
            .collect();
        now(self.emitter.disconnect());
        for id in live {
            if let Some(rec) = self.get_mut(&id) {
                rec.status = SubagentTaskStatus::Lost;
            }
        }
        self.drain()
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
