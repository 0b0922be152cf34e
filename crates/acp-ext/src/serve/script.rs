//! `session/prompt`: the scripted turns.
//!
//! The prompt text picks a script (see `SERVE.md`); every script ends with
//! a final answer, usage accounting and the prompt response. A turn runs in
//! its own task so the connection keeps serving while it waits (for time,
//! for a permission or an elicitation answer, for a steer or a cancel).

use std::sync::Arc;
use std::time::Duration;

use acp_extension_core::capabilities::Feature;
use acp_extension_core::elicitation::{
    ElicitationAnswerNote, ElicitationMeta, ElicitationOption, ElicitationQuestion,
};
use acp_extension_core::mcp_apps::{McpAppDisplayMode, McpAppToolCallMeta, McpCallToolResult};
use acp_extension_core::meta::{self, fields};
use acp_extension_core::namespace::Namespace;
use acp_extension_core::session::{
    ActivityKind, ActivityMeta, GoalPromptControl, GoalStatus, MessagePhase, Notice, NoticeLevel,
    SteerApplied, TaskKind, TaskMeta, TaskStatus, TaskUsage, TitleSource, tool_names,
};
use acp_extension_core::subagent_emitter::SnapshotPatch;
use acp_extension_core::subagent_events::{
    OutputRead, SubagentEvent, SubagentProgress, SubagentReason, SubagentReasonCode,
    SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageUpdate, sum_model_usage};
use acp_extension_core::wire::FiniteF64;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, CreateElicitationRequest, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, EnumOption, Meta, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionInfoUpdate,
    SessionUpdate, StopReason, StringPropertySchema, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use agent_client_protocol::{Error, ErrorCode, RequestCancellation, UntypedMessage};
use indexmap::IndexMap;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::cancel::Cancel;
use super::ext;
use super::params::{self, invalid_params, invalid_state, unknown_session};
use super::state::{
    AppCall, Background, CONTEXT_WINDOW, Counters, Goal, Live, Session, Shared, Steer, TurnRecord,
    TurnSlot,
};
use super::time;
use super::wire::{self, Cx, MetaBuilder, Reply, nn};

/// Why a turn stopped early.
enum Stop {
    /// `session/cancel`, `$/cancel_request`, close or EOF: `cancelled`.
    Cancelled,
    /// `/fail`: the prompt gets this JSON-RPC error.
    Failed(Error),
}

type Step<T = ()> = Result<T, Stop>;

/// A goal action, from `/goal …` or `_meta.<ns>.goalControl`.
#[derive(Debug, Clone, PartialEq)]
enum GoalCmd {
    Set(String),
    Pause,
    Resume,
    Clear,
}

/// The script a prompt selects.
#[derive(Debug, Clone, PartialEq)]
enum Command {
    Plain,
    Tool,
    Subagents { count: usize, secs: f64 },
    Background { secs: f64 },
    Schedule { secs: f64 },
    Compact,
    Goal(GoalCmd),
    Ask,
    Title(Option<String>),
    Slow { secs: f64 },
    Limits,
    App,
    Fail,
    Unknown(String),
}

fn seconds(cmd: &str, arg: Option<&str>, default: f64) -> Result<f64, Error> {
    let Some(arg) = arg else { return Ok(default) };
    match arg.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => Ok(s),
        _ => Err(invalid_params(
            "prompt",
            format!("{cmd} expects a number of seconds between 0 and 3600, got {arg:?}"),
        )),
    }
}

fn parse_command(text: &str) -> Result<Command, Error> {
    let text = text.trim();
    if !text.starts_with('/') {
        return Ok(Command::Plain);
    }
    let mut words = text.split_whitespace();
    let cmd = words.next().unwrap_or("/");
    let args: Vec<&str> = words.collect();
    let arg = args.first().copied();
    Ok(match cmd {
        "/tool" => Command::Tool,
        "/subagents" => {
            let count = match arg {
                None => 2,
                Some(a) => match a.parse::<usize>() {
                    Ok(n) if (1..=32).contains(&n) => n,
                    _ => {
                        return Err(invalid_params(
                            "prompt",
                            format!("/subagents expects a count between 1 and 32, got {a:?}"),
                        ));
                    }
                },
            };
            Command::Subagents {
                count,
                secs: seconds("/subagents", args.get(1).copied(), 0.0)?,
            }
        }
        "/background" => Command::Background {
            secs: seconds("/background", arg, 0.3)?,
        },
        "/schedule" => Command::Schedule {
            secs: seconds("/schedule", arg, 0.3)?,
        },
        "/compact" => Command::Compact,
        "/goal" => Command::Goal(match arg {
            Some("set") => {
                let objective = text
                    .split_once("set")
                    .map(|(_, rest)| rest.trim())
                    .unwrap_or_default();
                if objective.is_empty() {
                    return Err(invalid_params("prompt", "/goal set expects an objective"));
                }
                GoalCmd::Set(objective.to_owned())
            }
            Some("pause") => GoalCmd::Pause,
            Some("resume") => GoalCmd::Resume,
            Some("clear") => GoalCmd::Clear,
            other => {
                return Err(invalid_params(
                    "prompt",
                    format!("/goal expects set TEXT, pause, resume or clear, got {other:?}"),
                ));
            }
        }),
        "/ask" => Command::Ask,
        "/title" => Command::Title((!args.is_empty()).then(|| args.join(" "))),
        "/slow" => Command::Slow {
            secs: seconds("/slow", arg, 1.0)?,
        },
        "/limits" => Command::Limits,
        "/app" => Command::App,
        "/fail" => Command::Fail,
        other => Command::Unknown(other.to_owned()),
    })
}

/// Reads `_meta.<ns>.goalControl` (when `goal` is advertised).
fn goal_control(shared: &Shared, params: &Value) -> Result<Option<GoalCmd>, Error> {
    if !shared.has(Feature::Goal) {
        return Ok(None);
    }
    let Some(meta) = super::sessions::request_meta(params)? else {
        return Ok(None);
    };
    let control = meta::read::<fields::GoalControl>(meta).map_err(super::sessions::meta_error)?;
    Ok(control.map(|c| match c {
        GoalPromptControl::Set(s) => GoalCmd::Set(s.objective),
        GoalPromptControl::Pause(_) => GoalCmd::Pause,
        GoalPromptControl::Resume(_) => GoalCmd::Resume,
        _ => GoalCmd::Clear,
    }))
}

/// The prompt's content as text; unsupported content is invalid params.
fn prompt_text(request: &PromptRequest) -> Result<String, Error> {
    if request.prompt.is_empty() {
        return Err(invalid_params(
            "prompt",
            "must contain at least one content block",
        ));
    }
    let mut parts = Vec::new();
    for (i, block) in request.prompt.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!(
                    "[resource_link name={} uri={}]",
                    link.name, link.uri
                ));
            }
            ContentBlock::Image(_) => {
                return Err(invalid_params(
                    &format!("prompt[{i}]"),
                    "image content is not supported (promptCapabilities.image is false)",
                ));
            }
            ContentBlock::Audio(_) => {
                return Err(invalid_params(
                    &format!("prompt[{i}]"),
                    "audio content is not supported (promptCapabilities.audio is false)",
                ));
            }
            _ => {
                return Err(invalid_params(
                    &format!("prompt[{i}]"),
                    "embedded resources are not supported (promptCapabilities.embeddedContext is false)",
                ));
            }
        }
    }
    Ok(parts.join("\n"))
}

/// A turn that owns its session's prompt slot.
pub(crate) struct Turn {
    shared: Arc<Shared>,
    cx: Cx,
    session_id: String,
    turn_id: String,
    generation: u64,
    ns: Namespace,
    subagent_events: bool,
    answer_notes: bool,
    elicitation_form: bool,
    mcp_apps: bool,
    text: String,
    command: Command,
    goal_control: Option<GoalCmd>,
    cancel: Cancel,
    steer_rx: mpsc::UnboundedReceiver<Steer>,
    request_cancel: Option<RequestCancellation>,
    answer: String,
    finished: bool,
}

/// Validates a prompt and claims the session's prompt slot.
pub(crate) fn prepare(shared: &Arc<Shared>, params: &Value, cx: &Cx) -> Result<Turn, Error> {
    let request: PromptRequest = params::parse(params)?;
    let text = prompt_text(&request)?;
    let goal_control = goal_control(shared, params)?;
    let command = parse_command(&text)?;
    let session_id = request.session_id.to_string();

    let mut guard = shared.lock();
    let inner = &mut *guard;
    if !inner.initialized {
        return Err(invalid_state("send `initialize` first"));
    }
    if inner.closing {
        return Err(invalid_state("the connection is closing"));
    }
    let client = inner.client;
    let Some(session) = inner.sessions.get_mut(&session_id) else {
        return Err(unknown_session(&session_id));
    };
    let Some(live) = session.live.as_mut() else {
        return Err(unknown_session(&session_id));
    };
    if let Some(running) = &live.turn {
        return Err(invalid_state(format!(
            "session {session_id:?} already has a prompt in flight ({}); wait for its response or send session/cancel",
            running.turn_id
        )));
    }
    let turn_id = inner.counters.turn();
    inner.counters.prompts += 1;
    let cancel = Cancel::new();
    let (steer_tx, steer_rx) = mpsc::unbounded_channel();
    let live = inner
        .sessions
        .get_mut(&session_id)
        .and_then(|s| s.live.as_mut())
        .expect("checked above");
    live.turn = Some(TurnSlot {
        turn_id: turn_id.clone(),
        cancel: cancel.clone(),
        steer: steer_tx,
    });
    let generation = live.generation;
    shared.sync_activity(cx, client.ns, &session_id, live);
    Ok(Turn {
        shared: shared.clone(),
        cx: cx.clone(),
        session_id,
        turn_id,
        generation,
        ns: client.ns,
        subagent_events: client.subagent_events,
        answer_notes: client.answer_notes,
        elicitation_form: client.elicitation_form,
        mcp_apps: client.mcp_apps,
        text,
        command,
        goal_control,
        cancel,
        steer_rx,
        request_cancel: None,
        answer: String::new(),
        finished: false,
    })
}

/// Runs `turn` in its own task; the task answers the prompt.
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    mut turn: Turn,
    responder: Reply,
    cx: Cx,
) -> Result<(), Error> {
    let guard = shared.task_guard();
    turn.request_cancel = Some(responder.cancellation());
    cx.spawn(async move {
        let _guard = guard;
        turn.run(responder).await;
        Ok(())
    })
}

/// Completes when the turn is cancelled by any path.
async fn interrupted(cancel: Cancel, request: Option<RequestCancellation>) {
    let by_request = async move {
        match request {
            Some(r) => r.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = by_request => {}
    }
}

impl Drop for Turn {
    /// A turn dropped without finishing (its task was dropped with the
    /// connection) still frees the prompt slot.
    fn drop(&mut self) {
        if !self.finished {
            let shared = self.shared.clone();
            let mut inner = shared.lock();
            if let Some(live) = inner
                .sessions
                .get_mut(&self.session_id)
                .and_then(|s| s.live.as_mut())
                .filter(|l| l.generation == self.generation)
                && live
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.turn_id == self.turn_id)
            {
                live.turn = None;
                live.waiting = 0;
                shared.sync_activity(&self.cx, self.ns, &self.session_id, live);
            }
        }
    }
}

impl Turn {
    async fn run(&mut self, responder: Reply) {
        let mut result = self.execute().await;
        if result.is_ok() {
            result = self.account();
        }
        let response = self.finish(result);
        let _ = match response {
            Ok(v) => responder.respond(v),
            Err(e) => responder.respond_with_error(e),
        };
    }

    async fn execute(&mut self) -> Step {
        if let Some(g) = self.goal_control.take() {
            return self.goal(g).await;
        }
        match self.command.clone() {
            Command::Plain => self.plain().await,
            Command::Tool => self.tool().await,
            Command::Subagents { count, secs } => self.subagents(count, secs).await,
            Command::Background { secs } => self.background(TaskKind::Background, secs),
            Command::Schedule { secs } => self.background(TaskKind::Scheduled, secs),
            Command::Compact => self.compact(),
            Command::Goal(g) if self.shared.has(Feature::Goal) => self.goal(g).await,
            Command::Goal(_) => {
                self.final_answer("Goals are not enabled on this agent (see --only).");
                Ok(())
            }
            Command::Ask => self.ask().await,
            Command::Title(text) => self.title(text),
            Command::Slow { secs } => self.slow(secs).await,
            Command::Limits => self.limits(),
            Command::App => self.app(),
            Command::Fail => self.fail(),
            Command::Unknown(cmd) => {
                self.final_answer(&format!(
                    "Unknown command {cmd}. Commands: {}.",
                    super::help::command_list()
                ));
                Ok(())
            }
        }
    }

    // ---- primitives -------------------------------------------------------

    /// Runs `f` on this turn's session lifetime; `Cancelled` if it ended.
    fn with<R>(&self, f: impl FnOnce(&mut Session, &mut Counters) -> R) -> Step<R> {
        let mut guard = self.shared.lock();
        let inner = &mut *guard;
        match inner.sessions.get_mut(&self.session_id) {
            Some(s)
                if s.live
                    .as_ref()
                    .is_some_and(|l| l.generation == self.generation) =>
            {
                Ok(f(s, &mut inner.counters))
            }
            _ => Err(Stop::Cancelled),
        }
    }

    fn live<R>(&self, f: impl FnOnce(&mut Live) -> R) -> Step<R> {
        self.with(|s, _| f(s.live.as_mut().expect("checked by with")))
    }

    fn check(&self) -> Step {
        let by_request = self
            .request_cancel
            .as_ref()
            .is_some_and(RequestCancellation::is_cancelled);
        if self.cancel.is_cancelled() || by_request {
            Err(Stop::Cancelled)
        } else {
            Ok(())
        }
    }

    async fn sleep(&self, secs: f64) -> Step {
        self.check()?;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => Ok(()),
            _ = interrupted(self.cancel.clone(), self.request_cancel.clone()) => Err(Stop::Cancelled),
        }
    }

    fn mb(&self) -> MetaBuilder {
        MetaBuilder::new(self.ns)
    }

    fn send(&self, update: SessionUpdate) {
        wire::update(&self.cx, &self.session_id, update);
    }

    fn say(&self, phase: &str, text: &str) {
        let phase = if phase == "commentary" {
            MessagePhase::Commentary
        } else {
            MessagePhase::FinalAnswer
        };
        self.send(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(ContentBlock::from(text.to_owned())).meta(
                self.mb()
                    .with::<fields::MessagePhase>(phase)
                    .with::<fields::TurnId>(self.turn_id.clone())
                    .build(),
            ),
        ));
    }

    fn final_answer(&mut self, text: &str) {
        self.say("final_answer", text);
        self.answer = text.to_owned();
    }

    fn plan(&self, done: usize) {
        let steps = ["Read the prompt", "Draft the answer", "Reply"];
        let entries = steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let status = if i < done {
                    PlanEntryStatus::Completed
                } else if i == done {
                    PlanEntryStatus::InProgress
                } else {
                    PlanEntryStatus::Pending
                };
                PlanEntry::new(*s, PlanEntryPriority::Medium, status)
            })
            .collect();
        self.send(SessionUpdate::Plan(Plan::new(entries)));
    }

    fn set_waiting(&self, waiting: bool) {
        let (shared, cx, ns, id) = (&self.shared, &self.cx, self.ns, &self.session_id);
        let _ = self.live(|live| {
            if waiting {
                live.waiting += 1;
            } else {
                live.waiting = live.waiting.saturating_sub(1);
            }
            shared.sync_activity(cx, ns, id, live);
        });
    }

    /// Sends subagent events, only when both peers negotiated them.
    fn emit_events(&self, events: Vec<SubagentEvent>) {
        if self.subagent_events {
            for e in events {
                wire::notify(&self.cx, self.ns, e);
            }
        }
    }

    /// Ends a subagent run of this turn whose tool call is still open:
    /// through [`cancel_run`] while the run is live; a run the connection's
    /// end marked disconnected gets its root tool call's `failed` update
    /// directly.
    fn fail_subagent_call(&self, task_id: &str, call_id: &str) {
        let (ns, events) = (self.ns, self.subagent_events);
        let (shared, cx, sid) = (&self.shared, &self.cx, &self.session_id);
        // A closed session's runs were ended by `session/close`.
        let _ = self.live(|l| {
            let cancelled = cancel_run(
                shared,
                cx,
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
                fail_call(
                    shared,
                    cx,
                    ns,
                    sid,
                    task_id,
                    call_id,
                    "the connection ended",
                );
            }
        });
    }

    fn tool_meta(&self, tool: &str, task: Option<TaskMeta>) -> Meta {
        tool_meta(&self.shared, self.ns, tool, task)
    }

    /// Tokens of this turn: deterministic in the prompt and answer.
    fn tokens(&self) -> (u64, u64, u64) {
        (
            100 + self.text.chars().count() as u64,
            20 + self.answer.chars().count() as u64,
            64,
        )
    }

    /// Usage accounting for the finished turn: `usage_update` and
    /// `_<ns>/session/usage_update` from the session's accumulator (the
    /// turn id is the operation id).
    fn account(&mut self) -> Step {
        let (input, output, cache) = self.tokens();
        let cost = round_cost(input as f64 * 3e-6 + output as f64 * 15e-6 + cache as f64 * 3e-7);
        let (sid, turn_id) = (self.session_id.clone(), self.turn_id.clone());
        let (ext_update, used, total_cost) = self.with(|session, _| {
            let mut rows = IndexMap::new();
            rows.insert(
                session.model_id.clone(),
                ModelUsage::new(input, output, cache)
                    .cost_usd(FiniteF64::new(cost).unwrap_or_default()),
            );
            session.context_used =
                (session.context_used + input + output + cache).min(CONTEXT_WINDOW);
            let live = session.live.as_mut().expect("checked by with");
            let mut update = live.ledger.update(&sid, &turn_id, &rows);
            if let Some(update) = &mut update {
                round_costs(update);
            }
            if let Some(totals) = update.as_ref().and_then(|u| u.model_usage.as_ref()) {
                live.total_cost = sum_model_usage(totals)
                    .cost_usd
                    .map(f64::from)
                    .map(round_cost);
            }
            (update, session.context_used, live.total_cost)
        })?;
        self.send(SessionUpdate::UsageUpdate(
            UsageUpdate::new(used, CONTEXT_WINDOW).cost(total_cost.map(|c| Cost::new(c, "USD"))),
        ));
        if let Some(update) = ext_update
            && self.shared.has(Feature::Usage)
        {
            self.shared.notify(&self.cx, self.ns, update);
        }
        Ok(())
    }

    fn apply_steer(&self, steer: &Steer, announce: bool) {
        self.shared.notify(
            &self.cx,
            self.ns,
            SteerApplied::new(self.session_id.clone(), steer.steer_id.clone()),
        );
        if announce {
            self.say("commentary", &format!("Steering applied: {}", steer.text));
        }
    }

    /// Releases the prompt slot and builds the prompt response.
    fn finish(&mut self, result: Step) -> Result<Value, Error> {
        let shared = self.shared.clone();
        {
            let mut inner = shared.lock();
            if let Some(session) = inner.sessions.get_mut(&self.session_id).filter(|s| {
                s.live
                    .as_ref()
                    .is_some_and(|l| l.generation == self.generation)
            }) {
                // Steers that arrived after the last checkpoint are applied at the turn's end.
                while let Ok(steer) = self.steer_rx.try_recv() {
                    self.apply_steer(&steer, false);
                }
                if result.is_ok() {
                    session.history.push(TurnRecord {
                        turn_id: self.turn_id.clone(),
                        user_text: self.text.clone(),
                        answer: self.answer.clone(),
                    });
                }
                session.updated_at = time::now();
                let live = session.live.as_mut().expect("filtered above");
                if live
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.turn_id == self.turn_id)
                {
                    live.turn = None;
                }
                live.waiting = 0;
                shared.sync_activity(&self.cx, self.ns, &self.session_id, live);
            }
            self.finished = true;
        }
        let meta = self
            .mb()
            .with::<fields::TurnId>(self.turn_id.clone())
            .build();
        let stop = match result {
            Ok(()) => StopReason::EndTurn,
            Err(Stop::Cancelled) => StopReason::Cancelled,
            Err(Stop::Failed(e)) => return Err(e),
        };
        serde_json::to_value(PromptResponse::new(stop).meta(meta))
            .map_err(Error::into_internal_error)
    }

    // ---- scripts ----------------------------------------------------------

    async fn plain(&mut self) -> Step {
        let plan_mode = self.with(|s, _| s.plan_mode)?;
        self.plan(0);
        self.say(
            "commentary",
            &format!(
                "Reading your prompt ({} characters).",
                self.text.chars().count()
            ),
        );
        self.plan(1);
        self.sleep(0.0).await?;
        self.plan(3);
        if plan_mode {
            self.final_answer(&format!(
                "Plan mode is on, so nothing was changed. Plan: read the prompt, draft the answer, reply to: {}",
                self.text
            ));
        } else {
            self.final_answer(&format!("You said: {}", self.text));
        }
        Ok(())
    }

    async fn tool(&mut self) -> Step {
        let call = self.with(|_, c| c.call())?;
        let title = "Generate an image";
        let name_meta = || self.tool_meta(tool_names::IMAGE_GENERATION, None);
        self.say("commentary", "Calling the image generation tool.");
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), title)
                .kind(ToolKind::Other)
                .status(ToolCallStatus::Pending)
                .raw_input(json!({"prompt": self.text}))
                .meta(name_meta()),
        ));
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(
                call.clone(),
                ToolCallUpdateFields::new()
                    .title(title.to_owned())
                    .status(ToolCallStatus::Pending),
            )
            .meta(name_meta()),
            vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
            ],
        );
        self.set_waiting(true);
        let sent = self.cx.send_request(request);
        let outcome = tokio::select! {
            r = sent.block_task() => Some(r),
            _ = interrupted(self.cancel.clone(), self.request_cancel.clone()) => None,
        };
        self.set_waiting(false);
        let failed = |why: &str| {
            SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(vec![ToolCallContent::from(why.to_owned())]),
                )
                .meta(name_meta()),
            )
        };
        let allowed = match outcome {
            None => {
                self.send(failed("Cancelled."));
                return Err(Stop::Cancelled);
            }
            Some(Ok(response)) => match response.outcome {
                RequestPermissionOutcome::Selected(s) => &*s.option_id.0 == "allow",
                RequestPermissionOutcome::Cancelled => {
                    self.send(failed("Cancelled."));
                    return Err(Stop::Cancelled);
                }
                _ => false,
            },
            Some(Err(_)) => false,
        };
        if allowed {
            self.send(SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                )
                .meta(name_meta()),
            ));
            self.send(SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(vec![ToolCallContent::from(
                            "Generated image (synthetic).".to_owned(),
                        )])
                        .raw_output(json!({"ok": true})),
                )
                .meta(name_meta()),
            ));
            self.final_answer("The tool ran: permission was granted.");
        } else {
            self.send(failed("Permission denied."));
            self.final_answer("The tool did not run: permission was denied.");
        }
        Ok(())
    }

    async fn subagents(&mut self, count: usize, secs: f64) -> Step {
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
                                    .model_id(super::state::DEFAULT_MODEL)
                                    .started_at_epoch_seconds(nn(now as f64)),
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
                    .model_id(super::state::DEFAULT_MODEL)
                    .started_at_epoch_seconds(nn(now as f64));
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
                                .ended_at_epoch_seconds(nn(time::now() as f64))
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

    fn background(&mut self, kind: TaskKind, secs: f64) -> Step {
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
            meta = meta.started_at_epoch_seconds(nn(at as f64));
        }
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), title)
                .kind(ToolKind::Execute)
                .status(status)
                .meta(self.tool_meta(tool, Some(meta))),
        ));
        let cancel = Cancel::new();
        let (shared, cx, ns, sid) = (&self.shared, &self.cx, self.ns, &self.session_id);
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
            shared.sync_activity(cx, ns, sid, l);
        })?;
        let job = BackgroundJob {
            shared: self.shared.clone(),
            cx: self.cx.clone(),
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

    fn compact(&mut self) -> Step {
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

    fn goal_info(&self, goal: Option<&Goal>) {
        self.send(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().meta(
                self.mb()
                    .with::<fields::Goal>(goal.map(Goal::snapshot))
                    .build(),
            ),
        ));
    }

    async fn goal(&mut self, cmd: GoalCmd) -> Step {
        let now = time::now();
        match cmd {
            GoalCmd::Set(objective) => {
                let goal = self.with(|s, _| {
                    s.goal = Some(Goal {
                        objective,
                        status: GoalStatus::Active,
                        iterations: 0,
                        last_reason: None,
                        created: now,
                        updated: now,
                        tokens_used: 0,
                    });
                    s.goal.clone()
                })?;
                self.goal_info(goal.as_ref());
                self.goal_step().await
            }
            GoalCmd::Resume => {
                let goal = self.with(|s, _| {
                    if let Some(g) = &mut s.goal {
                        g.status = GoalStatus::Active;
                        g.last_reason = None;
                        g.updated = now;
                    }
                    s.goal.clone()
                })?;
                match goal {
                    Some(g) => {
                        self.goal_info(Some(&g));
                        self.goal_step().await
                    }
                    None => {
                        self.final_answer("There is no goal to resume.");
                        Ok(())
                    }
                }
            }
            GoalCmd::Pause => {
                let goal = self.with(|s, _| {
                    if let Some(g) = &mut s.goal {
                        g.status = GoalStatus::Paused;
                        g.last_reason = Some("paused by the client".to_owned());
                        g.updated = now;
                    }
                    s.goal.clone()
                })?;
                match goal {
                    Some(g) => {
                        self.goal_info(Some(&g));
                        self.final_answer(&format!("Goal paused: {}", g.objective));
                    }
                    None => self.final_answer("There is no goal to pause."),
                }
                Ok(())
            }
            GoalCmd::Clear => {
                self.with(|s, _| s.goal = None)?;
                self.goal_info(None);
                self.final_answer("Goal cleared.");
                Ok(())
            }
        }
    }

    async fn goal_step(&mut self) -> Step {
        let goal = self.with(|s, _| {
            s.goal.as_mut().map(|g| {
                g.iterations += 1;
                g.clone()
            })
        })?;
        let Some(goal) = goal else {
            self.final_answer("The goal was cleared.");
            return Ok(());
        };
        self.say(
            "commentary",
            &format!(
                "Working toward the goal: {} (iteration {}).",
                goal.objective, goal.iterations
            ),
        );
        self.sleep(0.0).await?;
        self.final_answer(&format!(
            "Goal iteration {} done: {}",
            goal.iterations, goal.objective
        ));
        let (input, output, cache) = self.tokens();
        let goal = self.with(|s, _| {
            if let Some(g) = &mut s.goal {
                g.tokens_used += input + output + cache;
                g.updated = time::now();
            }
            s.goal.clone()
        })?;
        self.goal_info(goal.as_ref());
        Ok(())
    }

    async fn ask(&mut self) -> Step {
        if !self.elicitation_form {
            self.final_answer(
                "The client did not advertise form elicitation, so there is nothing to ask.",
            );
            return Ok(());
        }
        let question = "Which approach should I take?";
        let elicitation = |m: ElicitationMeta| self.mb().with::<fields::Elicitation>(m).build();
        let mut schema = ElicitationSchema::new().property(
            "approach",
            StringPropertySchema::new()
                .title("Approach".to_owned())
                .description(question.to_owned())
                .one_of(vec![
                    EnumOption::new("Small change", "Small change"),
                    EnumOption::new("Rewrite", "Rewrite"),
                ]),
            true,
        );
        let mut q = ElicitationQuestion::new(
            question,
            "Approach",
            vec![
                ElicitationOption::new("Small change").description("Touch as little as possible."),
                ElicitationOption::new("Rewrite").description("Start the module over."),
            ],
            false,
        )
        .id("approach");
        if self.answer_notes {
            // The note travels beside the answer and never replaces it.
            schema = schema.property(
                "approach_note",
                StringPropertySchema::new()
                    .title("Note".to_owned())
                    .description("Anything to keep in mind?".to_owned())
                    .meta(elicitation(ElicitationMeta::new().note_for("approach"))),
                false,
            );
            q = q
                .allow_custom_answer(false)
                .note(ElicitationAnswerNote::new("approach_note").title("Note"));
        } else {
            // Legacy flow: a custom answer that replaces the selection.
            schema = schema.property(
                "approach_custom",
                StringPropertySchema::new()
                    .title("Something else".to_owned())
                    .meta(elicitation(
                        ElicitationMeta::new().custom_answer_for("approach"),
                    )),
                false,
            );
            q = q.allow_custom_answer(true);
        }
        let request = CreateElicitationRequest::new(
            ElicitationFormMode::new(
                ElicitationSessionScope::new(self.session_id.clone()),
                schema,
            ),
            question,
        )
        .meta(elicitation(ElicitationMeta::new().questions(vec![q])));
        let Ok(params) = serde_json::to_value(request) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        let Ok(message) = UntypedMessage::new("elicitation/create", params) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        self.set_waiting(true);
        let sent = self.cx.send_request(message);
        let outcome = tokio::select! {
            r = sent.block_task() => Some(r),
            _ = interrupted(self.cancel.clone(), self.request_cancel.clone()) => None,
        };
        self.set_waiting(false);
        let Some(outcome) = outcome else {
            return Err(Stop::Cancelled);
        };
        let answer = match outcome {
            Ok(v) => match v.get("action").and_then(Value::as_str) {
                Some("accept") => {
                    let content = v.get("content").cloned().unwrap_or_default();
                    let choice = content
                        .get("approach_custom")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .or_else(|| content.get("approach").and_then(Value::as_str))
                        .unwrap_or("(nothing)");
                    match content.get("approach_note").and_then(Value::as_str) {
                        Some(note) if !note.is_empty() => {
                            format!("You chose: {choice} (note: {note})")
                        }
                        _ => format!("You chose: {choice}"),
                    }
                }
                Some("decline") => "You declined the question.".to_owned(),
                _ => "You dismissed the question.".to_owned(),
            },
            Err(e) => format!("The question failed: {}", e.message),
        };
        self.final_answer(&answer);
        Ok(())
    }

    fn title(&mut self, text: Option<String>) -> Step {
        let source = match text {
            Some(t) => t,
            None => self
                .with(|s, _| s.history.first().map(|t| t.user_text.clone()))?
                .unwrap_or_else(|| "Untitled session".to_owned()),
        };
        let title = generated_title(&source);
        let now = time::now();
        self.with(|s, _| {
            s.title = Some(title.clone());
            s.updated_at = now;
        })?;
        let mut update = SessionInfoUpdate::new()
            .title(title.clone())
            .updated_at(time::rfc3339(now));
        if self.shared.has(Feature::SessionTitle) {
            update = update.meta(
                self.mb()
                    .with::<fields::TitleSource>(TitleSource::Generated)
                    .build(),
            );
        }
        self.send(SessionUpdate::SessionInfoUpdate(update));
        self.final_answer(&format!("Title: {title}"));
        Ok(())
    }

    async fn slow(&mut self, secs: f64) -> Step {
        self.say("commentary", &format!("Working for {secs} seconds."));
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
        let stop = interrupted(self.cancel.clone(), self.request_cancel.clone());
        tokio::pin!(stop);
        let mut applied = Vec::new();
        self.check()?;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                Some(steer) = self.steer_rx.recv() => {
                    self.apply_steer(&steer, true);
                    applied.push(steer.text);
                }
                _ = &mut stop => return Err(Stop::Cancelled),
            }
        }
        if applied.is_empty() {
            self.final_answer(&format!("Finished after {secs} seconds."));
        } else {
            self.final_answer(&format!(
                "Finished after {secs} seconds, steered by: {}",
                applied.join("; ")
            ));
        }
        Ok(())
    }

    fn limits(&mut self) -> Step {
        if !self.shared.has(Feature::RateLimits) {
            self.final_answer("Rate limits are not enabled on this agent (see --only).");
            return Ok(());
        }
        let snapshot = {
            let inner = self.shared.lock();
            ext::rate_limits(&inner)
        };
        let used: Vec<f64> = snapshot
            .rate_limits
            .iter()
            .flat_map(|l| l.windows.iter().map(|w| f64::from(w.used_percent)))
            .collect();
        self.shared.notify(&self.cx, self.ns, snapshot);
        self.final_answer(&format!(
            "Rate limits: 5-hour window {}% used, weekly window {}% used.",
            used.first().copied().unwrap_or_default(),
            used.get(1).copied().unwrap_or_default()
        ));
        Ok(())
    }

    /// `/app`: a tool call of the `demo` MCP server's `chart` tool, which
    /// declares a UI resource; tagged with `_meta.<ns>.mcpApp` and served
    /// through `_<ns>/mcp_apps/*` only when `mcpApps` is negotiated.
    fn app(&mut self) -> Step {
        let call = self.with(|_, c| c.call())?;
        let Value::Object(input) = json!({"series": [1, 2, 3]}) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        let mut tool_call = ToolCall::new(call.clone(), "Draw a chart")
            .kind(ToolKind::Other)
            .status(ToolCallStatus::InProgress)
            .raw_input(Value::Object(input.clone()));
        let key = (self.session_id.clone(), call.clone());
        if self.mcp_apps {
            let app = McpAppToolCallMeta::new(APP_SERVER, APP_TOOL, APP_RESOURCE)
                .app_name("Chart")
                .preferred_display_mode(McpAppDisplayMode::Inline);
            tool_call = tool_call.meta(self.mb().with::<fields::McpApp>(app.clone()).build());
            // Known before the client sees the tool call, so it can load at once.
            self.shared.lock().apps.insert(
                key.clone(),
                AppCall {
                    app,
                    input,
                    result: None,
                },
            );
        }
        self.send(SessionUpdate::ToolCall(tool_call));
        let text = "Chart drawn: 3 points.";
        let result = McpCallToolResult::new(vec![json!({"type": "text", "text": text})]);
        if let Some(app) = self.shared.lock().apps.get_mut(&key) {
            app.result = Some(result.clone());
        }
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call,
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .content(vec![ToolCallContent::from(text.to_owned())])
                .raw_output(serde_json::to_value(result).unwrap_or_default()),
        )));
        self.final_answer(if self.mcp_apps {
            "The chart app is ready."
        } else {
            "Chart drawn (the client did not advertise mcpApps, so there is no app)."
        });
        Ok(())
    }

    fn fail(&mut self) -> Step {
        let message = "Simulated failure requested with /fail.";
        self.send(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(ContentBlock::from(message.to_owned())).meta(
                self.mb()
                    .with::<fields::TurnId>(self.turn_id.clone())
                    .with::<fields::Notice>(
                        Notice::new(NoticeLevel::Error, message).source("acp-ext serve"),
                    )
                    .build(),
            ),
        ));
        Err(Stop::Failed(Error::new(
            ErrorCode::INTERNAL_ERROR,
            "Turn failed: simulated failure requested with /fail",
        )))
    }
}

/// A title from text: its first six words, capitalized.
fn generated_title(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !w.starts_with('/'))
        .take(6)
        .collect();
    let joined = if words.is_empty() {
        "Untitled session".to_owned()
    } else {
        words.join(" ")
    };
    let mut chars = joined.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => joined,
    }
}

/// Cancels one live subagent run: `cancelled` snapshot, task `killed`,
/// its tool call `failed`. Returns whether it was live.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cancel_run(
    shared: &Shared,
    cx: &Cx,
    ns: Namespace,
    events_on: bool,
    session_id: &str,
    live: &mut Live,
    task_id: &str,
    reason: &str,
) -> bool {
    if !live.runs.live(task_id) {
        return false;
    }
    let Some(record) = live.runs.get(task_id).cloned() else {
        return false;
    };
    let events = live.runs.finish(
        task_id,
        SubagentState::Cancelled,
        SnapshotPatch::new()
            .reason(SubagentReason::new(SubagentReasonCode::Cancelled).message(reason)),
    );
    if events_on {
        for e in events {
            wire::notify(cx, ns, e);
        }
    }
    fail_call(
        shared,
        cx,
        ns,
        session_id,
        task_id,
        &record.tool_call_id,
        reason,
    );
    true
}

/// Sends a subagent's root tool call its terminal `failed` update (task
/// `failed`, with `reason`).
fn fail_call(
    shared: &Shared,
    cx: &Cx,
    ns: Namespace,
    session_id: &str,
    task_id: &str,
    call_id: &str,
    reason: &str,
) {
    let task = TaskMeta::new(task_id, TaskKind::Subagent, TaskStatus::Failed)
        .error(reason)
        .ended_at_epoch_seconds(nn(time::now() as f64));
    wire::update(
        cx,
        session_id,
        SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(
                call_id.to_owned(),
                ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
            )
            .meta(tool_meta(shared, ns, SUBAGENT_TOOL, Some(task))),
        ),
    );
}

/// A dollar amount at 10 decimal places (a ten-thousandth of a micro-dollar):
/// the binary noise of summing prices (`0.0008592000000000001`) goes, the
/// amounts stay within the checker's tolerance of each other.
fn round_cost(usd: f64) -> f64 {
    (usd * 1e10).round() / 1e10
}

/// Rounds every `costUSD` of a usage update the accumulator built: its
/// sums and differences of rounded costs carry binary noise again.
fn round_costs(update: &mut SessionUsageUpdate) {
    let round = |u: &mut ModelUsage| {
        if let Some(c) = u.cost_usd {
            u.cost_usd = FiniteF64::new(round_cost(f64::from(c))).ok();
        }
    };
    round(&mut update.usage);
    update
        .model_usage
        .iter_mut()
        .flat_map(|m| m.values_mut())
        .for_each(round);
    if let Some(delta) = &mut update.delta {
        round(&mut delta.usage);
        delta.model_usage.values_mut().for_each(round);
    }
}

/// The MCP server of the `/app` tool.
pub(crate) const APP_SERVER: &str = "demo";

/// The `/app` tool, which declares a UI resource.
pub(crate) const APP_TOOL: &str = "chart";

/// The `/app` tool's UI resource.
pub(crate) const APP_RESOURCE: &str = "ui://demo/chart";

/// The canonical tool name of `/background` jobs (a shell, as agents name it).
const BACKGROUND_TOOL: &str = "Bash";

/// The canonical tool name of subagent tool calls.
const SUBAGENT_TOOL: &str = "Task";

/// `_meta.<ns>` of a tool call: its canonical tool name and, when `tasks`
/// is advertised, its task.
fn tool_meta(shared: &Shared, ns: Namespace, tool: &str, task: Option<TaskMeta>) -> Meta {
    let mut b = MetaBuilder::new(ns).with::<fields::ToolName>(tool.to_owned());
    if let Some(task) = task.filter(|_| shared.has(Feature::Tasks)) {
        b = b.with::<fields::Task>(task);
    }
    b.build()
}

/// A `/background` or `/schedule` task after its turn ended.
struct BackgroundJob {
    shared: Arc<Shared>,
    cx: Cx,
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
                    t = t.started_at_epoch_seconds(nn(at as f64));
                }
                if ended {
                    t = t
                        .ended_at_epoch_seconds(nn(time::now() as f64))
                        .usage(TaskUsage::new().duration_ms(nn((self.secs * 1000.0).round())));
                }
                if let Some(e) = error {
                    t = t.error(e);
                }
                wire::update(
                    &self.cx,
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
        shared.sync_activity(&self.cx, self.ns, &self.session_id, live);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_command_is_one_the_script_knows() {
        for c in super::super::help::PROMPT_COMMANDS {
            let word = c.usage.split_whitespace().next().unwrap();
            let cmd = match word {
                "TEXT" => parse_command("hello"),
                "/goal" => parse_command("/goal pause"),
                w => parse_command(w),
            }
            .unwrap();
            assert!(!matches!(cmd, Command::Unknown(_)), "{word}");
        }
        let serve_md = include_str!("../../SERVE.md");
        for c in super::super::help::PROMPT_COMMANDS.iter().skip(1) {
            let word = c.usage.split_whitespace().next().unwrap();
            assert!(
                serve_md.contains(&format!("| `{word}")),
                "SERVE.md lacks {word}"
            );
        }
    }

    #[test]
    fn commands_parse() {
        assert_eq!(parse_command("hello").unwrap(), Command::Plain);
        assert_eq!(
            parse_command("/slow 0.5").unwrap(),
            Command::Slow { secs: 0.5 }
        );
        assert_eq!(
            parse_command("/subagents 3 0.1").unwrap(),
            Command::Subagents {
                count: 3,
                secs: 0.1
            }
        );
        assert_eq!(
            parse_command("/goal set ship the parser").unwrap(),
            Command::Goal(GoalCmd::Set("ship the parser".into()))
        );
        assert_eq!(parse_command("/app").unwrap(), Command::App);
        assert!(parse_command("/slow forever").is_err());
        assert!(parse_command("/subagents 0").is_err());
        assert_eq!(
            parse_command("/nope").unwrap(),
            Command::Unknown("/nope".into())
        );
    }

    #[test]
    fn titles_are_generated_from_words() {
        assert_eq!(
            generated_title("fix the login bug please now really"),
            "Fix the login bug please now"
        );
        assert_eq!(generated_title(""), "Untitled session");
    }
}
