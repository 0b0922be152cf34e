//! `/background`, `/schedule` (tasks that outlive their turn) and `/compact`.

use super::*;
use acp_extension_core::wire::WireEnum;

impl Turn {
    pub(super) fn background(&mut self, kind: TaskKind, secs: f64) -> Step {
        let (task, call) = self.with(|_, c| (c.task(), c.call()))?;
        let (title, tool, status, task_status, description) = if kind == TaskKind::Background {
            (
                "Run a background job",
                BACKGROUND_TOOL,
                ToolCallStatus::InProgress,
                TaskStatus::InProgress,
                format!("Background job ({secs} s)"),
            )
        } else {
            (
                "Schedule a wakeup",
                tool_names::SCHEDULE_WAKEUP,
                ToolCallStatus::Pending,
                TaskStatus::Pending,
                format!("Wake up in {secs} s"),
            )
        };
        // A scheduled task starts at its wakeup; until then it is pending
        // and has no start time.
        let started = (kind == TaskKind::Background).then(time::now);
        let mut meta =
            TaskMeta::new(task.clone(), kind, task_status).description(description.clone());
        if let Some(at) = started {
            meta = meta.started_at_epoch_seconds(at);
        }
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), title)
                .kind(ToolKind::Execute)
                .status(status)
                .meta(self.tool_meta(tool, Some(meta))),
        ));
        let cancel = Cancel::new();
        let (shared, sid) = (&self.shared, &self.session_id);
        self.live(|l| {
            l.background.insert(
                task.clone(),
                Background {
                    task_id: task.clone(),
                    tool_call_id: call.clone(),
                    kind,
                    description: description.clone(),
                    started,
                    cancel: cancel.clone(),
                },
            );
            shared.sync_activity(sid, l);
        })?;
        let job = BackgroundJob {
            shared: self.shared.clone(),
            ns: self.ns,
            session_id: self.session_id.clone(),
            generation: self.generation,
            task_id: task.clone(),
            secs,
            cancel,
        };
        let guard = self.shared.task_guard();
        let _ = self.cx.spawn(async move {
            let _guard = guard;
            job.run().await;
            Ok(())
        });
        self.final_answer(&format!(
            "Started {} task {task}; it finishes in {secs} seconds.",
            kind.as_str()
        ));
        Ok(())
    }

    pub(super) fn compact(&mut self) -> Step {
        let before = self.with(|s, _| s.context_used)?;
        if before == 0 {
            // A fresh session has nothing to compact: no compaction runs.
            self.final_answer("Nothing to compact: the context is empty.");
            return Ok(());
        }
        let call = self.with(|_, c| c.call())?;
        let after = before / 4;
        let activity = self.shared.has(Feature::Compaction);
        let meta = |done: bool| {
            let mut a = ActivityMeta::new(ActivityKind::ContextCompaction)
                .automatic(false)
                .used_tokens_before(nn(before as f64));
            if done {
                a = a.used_tokens_after(nn(after as f64)).duration_ms(nn(0.0));
            }
            let mut b = self.mb();
            if activity {
                b = b.with::<fields::Activity>(a);
            }
            b.build()
        };
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), "Compacting the context")
                .kind(ToolKind::Other)
                .status(ToolCallStatus::InProgress)
                .meta(meta(false)),
        ));
        self.with(|s, _| s.context_used = after)?;
        self.send(SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(
                call,
                ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
            )
            .meta(meta(true)),
        ));
        self.final_answer(&format!(
            "Compacted the context from {before} to {after} tokens."
        ));
        Ok(())
    }
}

/// A `/background` or `/schedule` task after its turn ended.
pub(super) struct BackgroundJob {
    shared: Arc<Shared>,
    ns: Namespace,
    session_id: String,
    generation: u64,
    task_id: String,
    secs: f64,
    cancel: Cancel,
}

impl BackgroundJob {
    async fn run(self) {
        let done = tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs_f64(self.secs)) => true,
            _ = self.cancel.cancelled() => false,
        };
        let shared = self.shared.clone();
        let mut inner = shared.lock();
        let Some(live) = inner
            .sessions
            .get_mut(&self.session_id)
            .and_then(|s| s.live.as_mut())
            .filter(|l| l.generation == self.generation)
        else {
            return;
        };
        let Some(task) = live.background.remove(&self.task_id) else {
            return;
        };
        let tool = if task.kind == TaskKind::Background {
            BACKGROUND_TOOL
        } else {
            tool_names::SCHEDULE_WAKEUP
        };
        // A scheduled task that ran started at its wakeup, now.
        let started = task.started.or(done.then(time::now));
        let send =
            |status: ToolCallStatus, task_status: TaskStatus, ended: bool, error: Option<&str>| {
                let mut t = TaskMeta::new(task.task_id.clone(), task.kind, task_status)
                    .description(task.description.clone());
                if let Some(at) = started {
                    t = t.started_at_epoch_seconds(at);
                }
                if ended {
                    t = t
                        .ended_at_epoch_seconds(time::now())
                        .usage(TaskUsage::new().duration_ms(nn((self.secs * 1000.0).round())));
                }
                if let Some(e) = error {
                    t = t.error(e);
                }
                self.shared.update(
                    &self.session_id,
                    SessionUpdate::ToolCallUpdate(
                        ToolCallUpdate::new(
                            task.tool_call_id.clone(),
                            ToolCallUpdateFields::new().status(status),
                        )
                        .meta(tool_meta(&shared, self.ns, tool, Some(t))),
                    ),
                );
            };
        if done {
            if task.kind == TaskKind::Scheduled {
                send(
                    ToolCallStatus::InProgress,
                    TaskStatus::InProgress,
                    false,
                    None,
                );
            }
            send(ToolCallStatus::Completed, TaskStatus::Completed, true, None);
        } else {
            send(
                ToolCallStatus::Failed,
                TaskStatus::Failed,
                true,
                Some("cancelled"),
            );
        }
        shared.sync_activity(&self.session_id, live);
    }
}
