//! `/subagents`: root tool calls, subagent runs and their events; ending runs however a turn ends.

use super::*;

impl Turn {
    pub(super) async fn subagents(&mut self, count: usize, secs: f64) -> Step {
        struct Kid {
            task: String,
            call: String,
            name: String,
            /// Its root tool call got its terminal update.
            closed: std::sync::atomic::AtomicBool,
        }
        let now = time::now();
        let mut kids = Vec::new();
        let run = async {
            self.say("commentary", &format!("Starting {count} subagents."));
            for i in 1..=count {
                let (task, call) = self.with(|_, c| (c.task(), c.call()))?;
                let name = format!("worker-{i}");
                let description = format!("Subagent {i} of {count}");
                self.send(SessionUpdate::ToolCall(
                    ToolCall::new(call.clone(), description.clone())
                        .kind(ToolKind::Think)
                        .status(ToolCallStatus::InProgress)
                        .meta(
                            self.tool_meta(
                                SUBAGENT_TOOL,
                                Some(
                                    TaskMeta::new(
                                        task.clone(),
                                        TaskKind::Subagent,
                                        TaskStatus::InProgress,
                                    )
                                    .description(description.clone())
                                    .actor(name.clone())
                                    .model_id(super::super::ledger::DEFAULT_MODEL)
                                    .started_at_epoch_seconds(now),
                                ),
                            ),
                        ),
                ));
                let support = SubagentSupport::new(
                    vec![SubagentStream::Text, SubagentStream::Tool],
                    true,
                    OutputRead::LiveTail,
                    true,
                );
                let snapshot = SubagentSnapshot::new(SubagentState::Running, support)
                    .parent_tool_call_id(call.clone())
                    .name(name.clone())
                    .description(description.clone())
                    .model_id(super::super::ledger::DEFAULT_MODEL)
                    .started_at_epoch_seconds(now)
                    // A direct child of the root session.
                    .parent_run_id(None);
                kids.push(Kid {
                    task: task.clone(),
                    call: call.clone(),
                    name,
                    closed: std::sync::atomic::AtomicBool::new(false),
                });
                let events = self.live(|l| l.runs.start(&task, &call, &description, snapshot))?;
                self.emit_events(events);
            }
            let kids = &*kids;
            // Each step runs for every child still live, in order: the stream
            // interleaves deterministically.
            enum Out {
                Progress(SubagentProgress),
                Update(Value),
            }
            let step = |this: &Self, f: &dyn Fn(&Kid) -> Out| -> Step {
                for kid in kids {
                    let events = this.live(|l| match f(kid) {
                        Out::Progress(p) => l.runs.progress(&kid.task, p),
                        Out::Update(v) => l.runs.output(&kid.task, v),
                    })?;
                    this.emit_events(events);
                }
                Ok(())
            };
            let text = |s: String| {
                serde_json::to_value(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::from(s),
                )))
                .unwrap_or_default()
            };
            step(self, &|_| {
                Out::Progress(
                    SubagentProgress::new()
                        .summary(Some("Started".to_owned()))
                        .turn_count(Some(nn(1.0)))
                        .tool_call_count(Some(nn(0.0)))
                        .error_count(Some(nn(0.0))),
                )
            })?;
            step(self, &|k| {
                Out::Update(text(format!("{}: reading the task", k.name)))
            })?;
            step(self, &|k| {
                Out::Update(
                    serde_json::to_value(SessionUpdate::ToolCall(
                        ToolCall::new(format!("{}-read", k.task), "Read notes")
                            .kind(ToolKind::Read)
                            .status(ToolCallStatus::InProgress),
                    ))
                    .unwrap_or_default(),
                )
            })?;
            step(self, &|k| {
                Out::Update(
                    serde_json::to_value(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        format!("{}-read", k.task),
                        ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
                    )))
                    .unwrap_or_default(),
                )
            })?;
            step(self, &|_| {
                Out::Progress(
                    SubagentProgress::new()
                        .summary(Some("Working".to_owned()))
                        .tool_call_count(Some(nn(1.0)))
                        .last_tool_name(Some("Read".to_owned()))
                        .tools_used(Some(vec!["Read".to_owned()]))
                        .total_tokens(Some(nn(120.0))),
                )
            })?;
            self.sleep(secs).await?;
            step(self, &|k| Out::Update(text(format!("{}: done", k.name))))?;
            let mut completed = 0;
            for kid in kids {
                let summary = format!("{} finished", kid.name);
                let (events, tool_uses) = self.live(|l| {
                    if !l.runs.live(&kid.task) {
                        return (None, 0);
                    }
                    let events = l.runs.finish(
                        &kid.task,
                        SubagentState::Completed,
                        SnapshotPatch::new().summary(summary.clone()),
                    );
                    (
                        Some(events),
                        l.runs.get(&kid.task).map_or(0, |r| r.tool_uses),
                    )
                })?;
                let Some(events) = events else { continue };
                completed += 1;
                kid.closed.store(true, std::sync::atomic::Ordering::Relaxed);
                self.emit_events(events);
                self.send(SessionUpdate::ToolCallUpdate(
                    ToolCallUpdate::new(
                        kid.call.clone(),
                        ToolCallUpdateFields::new()
                            .status(ToolCallStatus::Completed)
                            .content(vec![ToolCallContent::from(summary.clone())]),
                    )
                    .meta(
                        self.tool_meta(
                            SUBAGENT_TOOL,
                            Some(
                                TaskMeta::new(
                                    kid.task.clone(),
                                    TaskKind::Subagent,
                                    TaskStatus::Completed,
                                )
                                .summary(summary.clone())
                                .ended_at_epoch_seconds(time::now())
                                .usage(
                                    TaskUsage::new()
                                        .total_tokens(nn(120.0))
                                        .tool_uses(nn(tool_uses as f64))
                                        .duration_ms(nn((secs * 1000.0).round())),
                                ),
                            ),
                        ),
                    ),
                ));
            }
            Ok(completed)
        };
        let completed = match run.await {
            Ok(completed) => completed,
            Err(stop) => {
                // However the turn ended (cancel, close, EOF), every root
                // tool call it opened gets a terminal update.
                for kid in kids
                    .iter()
                    .filter(|k| !k.closed.load(std::sync::atomic::Ordering::Relaxed))
                {
                    self.fail_subagent_call(&kid.task, &kid.call);
                }
                return Err(stop);
            }
        };
        self.final_answer(&format!(
            "Ran {count} subagents: {completed} completed, {} cancelled.",
            count - completed
        ));
        Ok(())
    }

    /// Ends a subagent run of this turn whose tool call is still open:
    /// through [`cancel_run`] while the run is live; a run the connection's
    /// end marked disconnected gets its root tool call's `failed` update
    /// directly.
    pub(super) fn fail_subagent_call(&self, task_id: &str, call_id: &str) {
        let (ns, events) = (self.ns, self.reads_runs);
        let (shared, sid) = (&self.shared, &self.session_id);
        // A closed session's runs were ended by `session/close`.
        let _ = self.live(|l| {
            let cancelled = cancel_run(
                shared,
                ns,
                events,
                sid,
                l,
                task_id,
                "the turn was cancelled",
            );
            let lost = l
                .runs
                .get(task_id)
                .is_some_and(|r| r.status == acp_extension_core::session::SubagentTaskStatus::Lost);
            if !cancelled && lost {
                fail_call(shared, ns, sid, task_id, call_id, "the connection ended");
            }
        });
    }
}
