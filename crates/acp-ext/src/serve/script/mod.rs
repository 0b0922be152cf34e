//! `session/prompt`: the scripted turns.
//!
//! The prompt text picks a script (see `docs/serve.md`); every script ends with
//! a final answer, usage accounting and the prompt response. A turn runs in
//! its own task so the connection keeps serving while it waits (for time,
//! for a permission or an elicitation answer, for a steer or a cancel).
//!
//! This module holds the turn itself (parsing the command, the prompt
//! slot, the primitives every script uses, accounting, the response); each
//! command family has a file of its own: `tools` (`/tool`, `/app`),
//! `subagents`, `tasks` (`/background`, `/schedule`, `/compact`), `goal`,
//! `ask`, `title`, `steering` (`/slow`), `limits`, `fail`.

use acp_extension_core::methods::ContractMethod;
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
    ActivityKind, ActivityMeta, GoalPromptControl, GoalStatus, MessagePhase, NoticeLevel,
    NoticeMeta, TaskKind, TaskMeta, TaskStatus, TaskUsage, TitleSource, tool_names,
};
use acp_extension_core::subagent_emitter::SnapshotPatch;
use acp_extension_core::subagent_events::{
    OutputRead, SubagentEvent, SubagentProgress, SubagentSnapshot, SubagentState, SubagentStream,
    SubagentSupport,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageUpdate, sum_model_usage};
use acp_extension_core::wire::NonNegF64;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, CreateElicitationRequest, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, EnumOption, Meta, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionInfoUpdate,
    SessionUpdate, StopReason, StringPropertySchema, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, Usage, UsageUpdate,
};
use agent_client_protocol::{Error, ErrorCode, RequestCancellation, UntypedMessage};
use indexmap::IndexMap;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::cancel::Cancel;
use super::ext;
use super::params::{self, invalid_params, invalid_state, unknown_session};
use super::runs::{SUBAGENT_TOOL, cancel_run, fail_call, tool_meta};
use super::state::{
    AppCall, Background, CONTEXT_WINDOW, Counters, Goal, Live, Session, Shared, Steer, TurnRecord,
    TurnSlot,
};
use super::wire::{Cx, MetaBuilder, Reply, nn};
use crate::time;

mod ask;
mod fail;
mod goal;
mod limits;
mod steering;
mod subagents;
mod tasks;
mod title;
mod tools;

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
    reads_runs: bool,
    answer_notes: bool,
    elicitation_form: bool,
    mcp_apps: bool,
    text: String,
    command: Command,
    goal_control: Option<GoalCmd>,
    cancel: Cancel,
    steer_rx: mpsc::UnboundedReceiver<Steer>,
    request_cancel: Option<RequestCancellation>,
    /// The turn's tokens once accounted (input, output, cache reads): the
    /// prompt response's standard `usage`.
    accounted: Option<(u64, u64, u64)>,
    answer: String,
    /// Messages said in this turn (each its own `messageId`).
    messages: std::sync::Mutex<u64>,
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
    shared.sync_activity(&session_id, live);
    Ok(Turn {
        shared: shared.clone(),
        cx: cx.clone(),
        session_id,
        turn_id,
        generation,
        ns: client.ns,
        reads_runs: client.reads_runs,
        answer_notes: client.answer_notes,
        elicitation_form: client.elicitation_form,
        mcp_apps: client.mcp_apps,
        text,
        command,
        goal_control,
        cancel,
        steer_rx,
        request_cancel: None,
        accounted: None,
        answer: String::new(),
        messages: std::sync::Mutex::new(0),
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
                shared.sync_activity(&self.session_id, live);
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
        self.shared.update(&self.session_id, update);
    }

    fn say(&self, phase: &str, text: &str) {
        let phase = if phase == "commentary" {
            MessagePhase::Commentary
        } else {
            MessagePhase::FinalAnswer
        };
        // Each message of the turn has its own `messageId`; commentary ends
        // with a blank line, for clients that join every chunk they receive
        // (the final answer stays clean for those that show it alone).
        let n = {
            let mut count = self.messages.lock().unwrap_or_else(|p| p.into_inner());
            *count += 1;
            *count
        };
        let text = match phase {
            MessagePhase::Commentary => format!("{text}\n\n"),
            _ => text.to_owned(),
        };
        self.send(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(ContentBlock::from(text))
                .message_id(agent_client_protocol::v1::schema::MessageId::new(format!(
                    "{}:{n}",
                    self.turn_id
                )))
                .meta(
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
        let (shared, id) = (&self.shared, &self.session_id);
        let _ = self.live(|live| {
            if waiting {
                live.waiting += 1;
            } else {
                live.waiting = live.waiting.saturating_sub(1);
            }
            shared.sync_activity(id, live);
        });
    }

    /// Sends subagent events, only when both peers negotiated them.
    fn emit_events(&self, events: Vec<SubagentEvent>) {
        if self.reads_runs {
            for e in events {
                self.shared.subagent_event(e);
            }
        }
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
        self.accounted = Some((input, output, cache));
        let cost = round_cost(input as f64 * 3e-6 + output as f64 * 15e-6 + cache as f64 * 3e-7);
        let (sid, turn_id) = (self.session_id.clone(), self.turn_id.clone());
        let (ext_update, used, total_cost) = self.with(|session, _| {
            let mut rows = IndexMap::new();
            rows.insert(
                session.model_id.clone(),
                ModelUsage::new(input, output, cache)
                    .cost_usd(NonNegF64::new(cost).unwrap_or_default()),
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
            self.shared
                .send(ContractMethod::SessionUsageUpdate.path(), |ext| {
                    ext.usage_update(update)
                });
        }
        Ok(())
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
                shared.sync_activity(&self.session_id, live);
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
        // The turn's tokens in the standard form too (what a client of the
        // official adapters reads).
        let usage = self.accounted.map(|(input, output, cache)| {
            Usage::new(input + output + cache, input, output).cached_read_tokens(cache)
        });
        serde_json::to_value(PromptResponse::new(stop).usage(usage).meta(meta))
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
            u.cost_usd = NonNegF64::new(round_cost(f64::from(c))).ok();
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
#[cfg(test)]
mod tests {
    use super::title::generated_title;
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
        let serve_md = include_str!("../../../docs/serve.md");
        for c in super::super::help::PROMPT_COMMANDS.iter().skip(1) {
            let word = c.usage.split_whitespace().next().unwrap();
            assert!(
                serve_md.contains(&format!("| `{word}")),
                "docs/serve.md lacks {word}"
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
