//! Session extensions: tool names, activity and task metadata, goals,
//! steering, subagent task queries, notices, titles, message phases,
//! worktree projects, session config, session activity and history reads.
//!
//! Most of these ride on standard ACP messages as `_meta.<ns>.<field>`
//! (`tool_call`, `session_info_update`, `session/prompt`, `session/new`, …);
//! the rest are the params and results of `_lody/…` methods. Numbers are
//! JavaScript numbers: epoch seconds, durations and counters are
//! [`NonNegF64`], so fractional epoch seconds (`1710000000.5`) are valid.
//!
//! ```
//! use acp_extension_core::session::{GoalControlRequest, GoalSnapshot, GoalStatus};
//!
//! let goal: GoalSnapshot = serde_json::from_str(
//!     r#"{"objective":"Ship it","status":"active","tokenBudget":null,"createdAtEpochSeconds":0}"#,
//! )?;
//! assert_eq!(goal.status, GoalStatus::Active);
//! assert!(goal.token_budget.is_null());
//!
//! let req: GoalControlRequest =
//!     serde_json::from_str(r#"{"sessionId":"s1","action":"pause"}"#)?;
//! assert_eq!(req.tag(), "pause");
//! # Ok::<_, serde_json::Error>(())
//! ```

#[cfg(feature = "schema")]
use std::borrow::Cow;

use agent_client_protocol::v1::schema::{
    AudioContent, ContentBlock, EmbeddedResource, ImageContent, ResourceLink, TextContent,
};
use indexmap::IndexMap;
#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::violation::{Check, Rule, Violation, child};
use crate::wire::{Count, EpochSeconds, NonNegF64, Version1};

/// Provider-neutral tool names sent as `_meta.<ns>.toolName` on ACP
/// `tool_call` / `tool_call_update`.
///
/// Adapters map their native tool names onto these so that consumers never
/// infer behaviour from titles.
pub mod tool_names {
    /// An image generation tool.
    pub const IMAGE_GENERATION: &str = "ImageGeneration";
    /// Creates a scheduled (cron) job.
    pub const CRON_CREATE: &str = "CronCreate";
    /// Deletes a scheduled (cron) job.
    pub const CRON_DELETE: &str = "CronDelete";
    /// Lists scheduled (cron) jobs.
    pub const CRON_LIST: &str = "CronList";
    /// Schedules the agent to wake up later.
    pub const SCHEDULE_WAKEUP: &str = "ScheduleWakeup";

    /// Every tool name, in contract order.
    pub const ALL: &[&str] = &[
        IMAGE_GENERATION,
        CRON_CREATE,
        CRON_DELETE,
        CRON_LIST,
        SCHEDULE_WAKEUP,
    ];
}

// ---------------------------------------------------------------------------
// Activity and tasks (`_meta.<ns>.activity`, `_meta.<ns>.task`)
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// What an activity tool call stands for.
    pub enum ActivityKind {
        /// The agent compacted its context window.
        ContextCompaction = "context_compaction",
        /// The agent retried a failed model request.
        Retry = "retry",
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.activity` on `tool_call` / `tool_call_update`: marks the
    /// call as a context compaction or a retry rather than a real tool.
    ///
    /// ```
    /// use acp_extension_core::meta::{fields, MetaExt};
    /// use acp_extension_core::session::{ActivityKind, ActivityMeta};
    /// use acp_extension_core::Namespace;
    /// use agent_client_protocol::v1::schema::ToolCall;
    ///
    /// let call = ToolCall::new("c1", "Compacting context")
    ///     .with_ext::<fields::Activity>(Namespace::Lody, ActivityMeta::new(ActivityKind::ContextCompaction));
    /// let wire = serde_json::to_value(&call)?;
    /// assert_eq!(wire["_meta"]["lody"]["activity"], serde_json::json!({"version": 1, "kind": "context_compaction"}));
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct ActivityMeta {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// What the activity is.
            kind: ActivityKind = "kind",
        }
        opt {
            /// Whether the agent started it on its own.
            automatic: bool = "automatic",
            /// Context tokens in use before the activity.
            used_tokens_before: NonNegF64 = "usedTokensBefore",
            /// Context tokens in use after the activity.
            used_tokens_after: NonNegF64 = "usedTokensAfter",
            /// How long it took, in milliseconds.
            duration_ms: NonNegF64 = "durationMs",
            /// Why it failed, if it did.
            failure_reason: String = "failureReason",
        }
    }
}

crate::wire_enum! {
    /// The kind of work a task tool call tracks.
    pub enum TaskKind {
        /// A subagent run.
        Subagent = "subagent",
        /// A background process or shell.
        Background = "background",
        /// A scheduled job.
        Scheduled = "scheduled",
    }
}

crate::wire_enum! {
    /// The lifecycle state of a task.
    pub enum TaskStatus {
        /// Not started yet.
        Pending = "pending",
        /// Running.
        InProgress = "in_progress",
        /// Finished successfully.
        Completed = "completed",
        /// Finished with an error.
        Failed = "failed",
    }
}

crate::wire_struct! {
    /// Resource use of a task (`TaskMeta.usage`).
    pub struct TaskUsage {
        opt {
            /// Tokens used in total.
            total_tokens: NonNegF64 = "totalTokens",
            /// Number of tool calls made.
            tool_uses: NonNegF64 = "toolUses",
            /// Wall time, in milliseconds.
            duration_ms: NonNegF64 = "durationMs",
        }
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.task` on `tool_call` / `tool_call_update`: the tool call
    /// stands for a subagent, background or scheduled task.
    ///
    /// ```
    /// use acp_extension_core::session::{TaskKind, TaskMeta, TaskStatus};
    /// use acp_extension_core::wire::EpochSeconds;
    ///
    /// let task = TaskMeta::new("task-1", TaskKind::Background, TaskStatus::InProgress)
    ///     .started_at_epoch_seconds(EpochSeconds::from_secs(1_710_000_000));
    /// assert_eq!(serde_json::to_value(&task)?["startedAtEpochSeconds"], 1_710_000_000);
    /// let parsed: TaskMeta = serde_json::from_value(serde_json::json!(
    ///     {"version": 1, "taskId": "t", "kind": "scheduled", "status": "pending"}))?;
    /// assert_eq!(parsed.kind, TaskKind::Scheduled);
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct TaskMeta {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// The task's id.
            task_id: String = "taskId",
            /// What kind of task it is.
            kind: TaskKind = "kind",
            /// Its lifecycle state.
            status: TaskStatus = "status",
        }
        opt {
            /// Human-readable description.
            description: String = "description",
            /// Who runs it (for example a subagent type).
            actor: String = "actor",
            /// The parent task, for nested tasks.
            parent_task_id: String = "parentTaskId",
            /// The tool call that started it.
            parent_tool_call_id: String = "parentToolCallId",
            /// The model it runs on.
            model_id: String = "modelId",
            /// Summary of its result.
            summary: String = "summary",
            /// Error message when it failed.
            error: String = "error",
            /// The last tool it used.
            last_tool_name: String = "lastToolName",
            /// Start time, Unix epoch seconds.
            started_at_epoch_seconds: EpochSeconds = "startedAtEpochSeconds",
            /// End time, Unix epoch seconds.
            ended_at_epoch_seconds: EpochSeconds = "endedAtEpochSeconds",
            /// Resource use.
            usage: TaskUsage = "usage",
            /// Whether clients should keep it out of the transcript.
            skip_transcript: bool = "skipTranscript",
        }
    }
}

// ---------------------------------------------------------------------------
// Goals
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// The state of a session goal.
    pub enum GoalStatus {
        /// Being worked on.
        Active = "active",
        /// Paused by the user.
        Paused = "paused",
        /// Cannot progress without help.
        Blocked = "blocked",
        /// Stopped by a budget limit.
        Limited = "limited",
        /// Done.
        Complete = "complete",
    }
}

crate::wire_struct! {
    /// A session goal as the agent publishes it at `_meta.<ns>.goal` of
    /// `session_info_update` (where `null` means "no goal") and in
    /// [`GoalControlResponse`].
    pub struct GoalSnapshot {
        req {
            /// What the goal is.
            objective: String = "objective",
            /// Its state.
            status: GoalStatus = "status",
        }
        opt {
            /// Turns spent on it so far.
            iterations: NonNegF64 = "iterations",
            /// Creation time, Unix epoch seconds (`0` is a legal placeholder).
            created_at_epoch_seconds: EpochSeconds = "createdAtEpochSeconds",
            /// Last update time, Unix epoch seconds.
            updated_at_epoch_seconds: EpochSeconds = "updatedAtEpochSeconds",
            /// Tokens spent on it so far.
            tokens_used: NonNegF64 = "tokensUsed",
            /// Time spent on it so far, in seconds.
            time_used_seconds: NonNegF64 = "timeUsedSeconds",
        }
        nullable {
            /// Why the status last changed; `null` for no reason.
            last_reason: String = "lastReason",
            /// Token budget; `null` means unlimited.
            token_budget: NonNegF64 = "tokenBudget",
        }
    }
}

crate::wire_struct! {
    /// The keys of the `set` action of [`GoalControlRequest`] besides `action`.
    pub struct GoalSetRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The new objective.
            objective: String = "objective",
        }
    }
}

crate::wire_struct! {
    /// The keys of the status-only actions of [`GoalControlRequest`]
    /// (`pause`, `resume`, `clear`) besides `action`.
    pub struct GoalSessionRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
        }
    }
}

crate::wire_union! {
    /// Params of `_lody/session/goal`, discriminated by `action`.
    ///
    /// Status-only actions are accepted mid-prompt and start no turn; `set`
    /// and `resume` start work and normally travel as [`GoalPromptControl`]
    /// on `session/prompt` instead (read the transport from the goal
    /// capability's `controlActions` / `promptActions`).
    pub enum GoalControlRequest tag "action" {
        /// Sets a new objective.
        Set(GoalSetRequest) = "set",
        /// Pauses the goal.
        Pause(GoalSessionRequest) = "pause",
        /// Resumes the goal.
        Resume(GoalSessionRequest) = "resume",
        /// Clears the goal.
        Clear(GoalSessionRequest) = "clear",
    }
}

impl GoalControlRequest {
    /// A `set` request.
    pub fn set(session_id: impl Into<String>, objective: impl Into<String>) -> Self {
        Self::Set(GoalSetRequest::new(session_id, objective))
    }

    /// A `pause` request.
    pub fn pause(session_id: impl Into<String>) -> Self {
        Self::Pause(GoalSessionRequest::new(session_id))
    }

    /// A `resume` request.
    pub fn resume(session_id: impl Into<String>) -> Self {
        Self::Resume(GoalSessionRequest::new(session_id))
    }

    /// A `clear` request.
    pub fn clear(session_id: impl Into<String>) -> Self {
        Self::Clear(GoalSessionRequest::new(session_id))
    }

    /// The session the action applies to.
    pub fn session_id(&self) -> &str {
        match self {
            Self::Set(r) => &r.session_id,
            Self::Pause(r) | Self::Resume(r) | Self::Clear(r) => &r.session_id,
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/session/goal`: the goal after the action, `null`
    /// after `clear`. The `goal` key is always present.
    pub struct GoalControlResponse {
        req {
            /// The goal, or `None` (written as `null`) when there is none.
            goal: Option<GoalSnapshot> = "goal",
        }
    }
}

crate::wire_struct! {
    /// The keys of the `set` action of [`GoalPromptControl`] besides `action`.
    pub struct GoalPromptSet {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// The new objective.
            objective: String = "objective",
        }
    }
}

crate::wire_struct! {
    /// The keys of the status-only actions of [`GoalPromptControl`] besides
    /// `action`.
    pub struct GoalPromptStatus {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
        }
    }
}

crate::wire_union! {
    /// `_meta.<ns>.goalControl` on `session/prompt`, client to agent.
    ///
    /// The agent applies the action first, adopts any turn it starts
    /// natively and keeps the prompt open for the goal's turns; the prompt's
    /// content blocks are a fallback when no native turn started.
    pub enum GoalPromptControl tag "action" {
        /// Sets a new objective.
        Set(GoalPromptSet) = "set",
        /// Pauses the goal.
        Pause(GoalPromptStatus) = "pause",
        /// Resumes the goal.
        Resume(GoalPromptStatus) = "resume",
        /// Clears the goal.
        Clear(GoalPromptStatus) = "clear",
    }
}

impl GoalPromptControl {
    /// A `set` action.
    pub fn set(objective: impl Into<String>) -> Self {
        Self::Set(GoalPromptSet::new(objective))
    }

    /// A `pause` action.
    pub fn pause() -> Self {
        Self::Pause(GoalPromptStatus::new())
    }

    /// A `resume` action.
    pub fn resume() -> Self {
        Self::Resume(GoalPromptStatus::new())
    }

    /// A `clear` action.
    pub fn clear() -> Self {
        Self::Clear(GoalPromptStatus::new())
    }
}

// ---------------------------------------------------------------------------
// Steering
// ---------------------------------------------------------------------------

crate::wire_struct! {
    /// `_meta.<ns>.steer` on `session/prompt` when steering uses the prompt
    /// transport: the prompt steers the running turn.
    pub struct SteerPromptMeta {
        req {
            /// The steer id, echoed by [`SteerApplied`].
            id: String = "id",
        }
    }
}

/// The type values of ACP content blocks.
const CONTENT_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource_link", "resource"];

/// One ACP content block of a [`SteerRequest`] prompt.
///
/// It must parse as the SDK's [`ContentBlock`], which
/// [`block`](Self::block) returns; the JSON it was read from is kept as is
/// and written back unchanged, so keys the SDK type does not know survive a
/// relay.
///
/// ```
/// use acp_extension_core::session::AcpContentBlock;
/// use agent_client_protocol::v1::schema::ContentBlock;
///
/// let b: AcpContentBlock = serde_json::from_str(r#"{"type":"text","text":"hi","x":1}"#)?;
/// assert!(matches!(b.block(), ContentBlock::Text(t) if t.text == "hi"));
/// assert_eq!(serde_json::to_string(&b)?, r#"{"type":"text","text":"hi","x":1}"#);
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AcpContentBlock {
    block: ContentBlock,
    raw: Value,
}

impl AcpContentBlock {
    /// The block as the SDK type.
    pub fn block(&self) -> &ContentBlock {
        &self.block
    }

    /// The block as the SDK type, by value.
    pub fn into_block(self) -> ContentBlock {
        self.block
    }

    /// The JSON it was read from (or serialized to, if built from a
    /// [`ContentBlock`]).
    pub fn as_value(&self) -> &Value {
        &self.raw
    }

    /// Reads a block from JSON, or returns every violation found.
    pub fn from_value(raw: Value) -> Result<Self, Vec<Violation>> {
        match ContentBlock::deserialize(&raw) {
            Ok(block) => Ok(Self { block, raw }),
            Err(e) => {
                let mut out = Vec::new();
                Self::check(&raw, "", &mut out);
                if out.is_empty() {
                    out.push(Violation::new(
                        "",
                        Rule::Relation {
                            id: CONTENT_BLOCK_RULE,
                            message: e.to_string(),
                        },
                    ));
                }
                Err(out)
            }
        }
    }
}

/// Rule id of content blocks that do not parse as ACP content blocks.
const CONTENT_BLOCK_RULE: &str = "acp-content-block";

impl From<ContentBlock> for AcpContentBlock {
    fn from(block: ContentBlock) -> Self {
        // Serializing an SDK content block cannot fail (no maps with
        // non-string keys); fall back to `null` rather than panic.
        let raw = serde_json::to_value(&block).unwrap_or(Value::Null);
        Self { block, raw }
    }
}

impl From<AcpContentBlock> for ContentBlock {
    fn from(b: AcpContentBlock) -> Self {
        b.block
    }
}

impl PartialEq for AcpContentBlock {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Serialize for AcpContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for AcpContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(d)?;
        Self::from_value(raw).map_err(|v| match v.first() {
            Some(first) => de::Error::custom(first),
            None => de::Error::custom("not an ACP content block"),
        })
    }
}

/// Checks `v` as the SDK type `T`, reporting the first error at its pointer.
fn check_as<T: DeserializeOwned>(v: &Value, at: &str, out: &mut Vec<Violation>) {
    if let Err(e) = serde_path_to_error::deserialize::<_, T>(v) {
        let mut pointer = at.to_owned();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => {
                    pointer = format!("{pointer}/{index}");
                }
                serde_path_to_error::Segment::Map { key } => pointer = child(&pointer, key),
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {}
            }
        }
        let message = e.into_inner().to_string();
        // serde names a missing key at its parent; point at the key itself.
        let rule = match message
            .strip_prefix("missing field `")
            .and_then(|m| m.split('`').next())
        {
            Some(field) => {
                pointer = child(&pointer, field);
                Rule::Required {
                    expected: "a value",
                }
            }
            None => Rule::Relation {
                id: CONTENT_BLOCK_RULE,
                message,
            },
        };
        out.push(Violation::new(pointer, rule));
    }
}

impl Check for AcpContentBlock {
    const EXPECTED: &'static str = "an ACP content block";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        let Some(obj) = v.as_object() else {
            out.push(Violation::new(at, Rule::type_of("an object", v)));
            return;
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("text") => check_as::<TextContent>(v, at, out),
            Some("image") => check_as::<ImageContent>(v, at, out),
            Some("audio") => check_as::<AudioContent>(v, at, out),
            Some("resource_link") => check_as::<ResourceLink>(v, at, out),
            Some("resource") => check_as::<EmbeddedResource>(v, at, out),
            _ => out.push(Violation::new(
                child(at, "type"),
                Rule::OneOf(CONTENT_BLOCK_TYPES),
            )),
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for AcpContentBlock {
    fn schema_name() -> Cow<'static, str> {
        "AcpContentBlock".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An ACP content block (https://agentclientprotocol.com/protocol/v1/content).",
            "type": "object",
            "properties": { "type": { "type": "string", "enum": CONTENT_BLOCK_TYPES } },
            "required": ["type"],
        })
    }
}

crate::wire_struct! {
    /// Params of `_lody/session/steer`: steers the running turn with extra
    /// prompt content (request transport).
    ///
    /// The agent answers [`SteerResponse`] at once (`injected` while a turn
    /// runs) and confirms with [`SteerApplied`] before the turn's prompt
    /// response. Handle prompts off the SDK's dispatch loop, or the steer
    /// waits for the turn to end (see [`crate::producer`]).
    ///
    /// ```
    /// use acp_extension_core::session::{SteerApplied, SteerRequest};
    ///
    /// let steer: SteerRequest = serde_json::from_value(serde_json::json!({
    ///     "sessionId": "s", "steerId": "st-1", "prompt": [{"type": "text", "text": "Keep the API stable"}]}))?;
    /// assert_eq!(steer.content_blocks().count(), 1);
    /// let applied = SteerApplied::new(steer.session_id.clone(), steer.steer_id.clone());
    /// assert_eq!(serde_json::to_string(&applied)?, r#"{"sessionId":"s","steerId":"st-1"}"#);
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct SteerRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The steering content, as ACP content blocks.
            prompt: Vec<AcpContentBlock> = "prompt",
            /// The steer id, echoed by [`SteerApplied`].
            steer_id: String = "steerId",
        }
    }
}

impl SteerRequest {
    /// The prompt as SDK content blocks.
    pub fn content_blocks(&self) -> impl Iterator<Item = &ContentBlock> {
        self.prompt.iter().map(AcpContentBlock::block)
    }
}

crate::wire_enum! {
    /// Whether a steer reached the running turn.
    pub enum SteerOutcome {
        /// The content was injected into the running turn.
        Injected = "injected",
        /// It could not be injected.
        Failed = "failed",
    }
}

crate::wire_struct! {
    /// Result of `_lody/session/steer`.
    pub struct SteerResponse {
        req {
            /// What happened.
            outcome: SteerOutcome = "outcome",
        }
    }
}

crate::wire_struct! {
    /// Params of the `_lody/session/steer_applied` notification: the agent
    /// confirms that the steer with this id was applied.
    pub struct SteerApplied {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The steer id from the request or prompt metadata.
            steer_id: String = "steerId",
        }
    }
}

// ---------------------------------------------------------------------------
// Subagent task queries
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// The state of a subagent task returned by `_lody/subagents/list`.
    pub enum SubagentTaskStatus {
        /// Still running.
        Running = "running",
        /// Finished successfully.
        Completed = "completed",
        /// Finished with an error.
        Failed = "failed",
        /// Ran out of time.
        TimedOut = "timed_out",
        /// Cancelled.
        Killed = "killed",
        /// Its state is no longer known.
        Lost = "lost",
    }
}

crate::wire_struct! {
    /// One subagent task of a session.
    pub struct SubagentTask {
        req {
            /// The task's id.
            task_id: String = "taskId",
            /// Human-readable description.
            description: String = "description",
            /// Its state.
            status: SubagentTaskStatus = "status",
            /// Start time, Unix epoch seconds.
            started_at_epoch_seconds: EpochSeconds = "startedAtEpochSeconds",
            /// End time, Unix epoch seconds; `None` (`null`) while running.
            ended_at_epoch_seconds: Option<EpochSeconds> = "endedAtEpochSeconds",
        }
        opt {
            /// The agent's id for it.
            agent_id: String = "agentId",
            /// The subagent type.
            subagent_type: String = "subagentType",
            /// The model it runs on.
            model_id: String = "modelId",
            /// The thinking effort it runs with.
            thinking_effort: String = "thinkingEffort",
            /// Why it stopped.
            stop_reason: String = "stopReason",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/subagents/list`.
    ///
    /// ```
    /// use acp_extension_core::session::SubagentsListRequest;
    ///
    /// let req = SubagentsListRequest::new("s").active_only(true);
    /// assert_eq!(serde_json::to_string(&req)?, r#"{"sessionId":"s","activeOnly":true}"#);
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct SubagentsListRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
        }
        opt {
            /// Only tasks still running.
            active_only: bool = "activeOnly",
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/subagents/list`.
    pub struct SubagentsListResponse {
        req {
            /// The session's subagent tasks.
            tasks: Vec<SubagentTask> = "tasks",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/subagents/cancel`; the result is [`EmptyResponse`].
    pub struct SubagentCancelRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The task to cancel.
            task_id: String = "taskId",
        }
        opt {
            /// Why.
            reason: String = "reason",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/subagents/output`.
    pub struct SubagentOutputRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The task.
            task_id: String = "taskId",
        }
        opt {
            /// Return only the last `tail` lines.
            tail: NonNegF64 = "tail",
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/subagents/output`.
    pub struct SubagentOutputResponse {
        req {
            /// The task's output.
            output: String = "output",
        }
    }
}

crate::wire_struct! {
    /// The `{}` result of `_lody/subagents/cancel` and
    /// `_lody/session/history/read`. Keys a peer adds anyway are kept
    /// ([`WireObject::extra`](crate::wire::WireObject::extra)).
    pub struct EmptyResponse {}
}

// ---------------------------------------------------------------------------
// Notices, titles, message phase
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// Severity of a [`NoticeMeta`].
    pub enum NoticeLevel {
        /// Informational.
        Info = "info",
        /// Something the user should know.
        Warning = "warning",
        /// Something went wrong.
        Error = "error",
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.notice`: a message for the user that is not part of the
    /// transcript (configuration warnings, advisories).
    ///
    /// Clients read it on `session_info_update`
    /// ([`crate::producer::AgentExtensions::notice`] sends it there).
    ///
    /// ```
    /// use acp_extension_core::session::{NoticeLevel, NoticeMeta};
    ///
    /// let n = NoticeMeta::new(NoticeLevel::Warning, "Using the fallback model").source("router");
    /// assert_eq!(serde_json::to_string(&n)?, r#"{"level":"warning","message":"Using the fallback model","source":"router"}"#);
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct NoticeMeta {
        req {
            /// Severity.
            level: NoticeLevel = "level",
            /// The text; may be empty.
            message: String = "message",
        }
        opt {
            /// Where it came from (free-form, such as `configWarning`).
            source: String = "source",
        }
    }
}

crate::wire_enum! {
    /// `_meta.<ns>.titleSource` on ACP `session_info_update`: how the title
    /// was made. `explicit` and `generated` are authoritative; `fallback`
    /// and `unset` are not.
    pub enum TitleSource {
        /// A deliberate name.
        Explicit = "explicit",
        /// Generated by a model.
        Generated = "generated",
        /// A stand-in such as a truncated first prompt.
        Fallback = "fallback",
        /// No title.
        Unset = "unset",
    }
}

impl TitleSource {
    /// Whether a client may trust the title as final (`explicit` or
    /// `generated`).
    pub fn is_authoritative(self) -> bool {
        matches!(self, Self::Explicit | Self::Generated)
    }
}

crate::wire_enum! {
    /// `_meta.<ns>.messagePhase` on agent message chunks.
    pub enum MessagePhase {
        /// Commentary while working.
        Commentary = "commentary",
        /// The final answer of the turn.
        FinalAnswer = "final_answer",
    }
}

// ---------------------------------------------------------------------------
// Session establishment metadata
// ---------------------------------------------------------------------------

crate::wire_struct! {
    /// `_meta.<ns>.worktreeProject` on `session/new|load|resume|fork`: the
    /// project a (possibly worktree) `cwd` belongs to. It changes neither
    /// `cwd` nor directory access.
    ///
    /// ```
    /// use acp_extension_core::session::WorktreeProject;
    ///
    /// let p: WorktreeProject = serde_json::from_value(serde_json::json!(
    ///     {"version": 1, "originProjectPath": "/src/app"}))?;
    /// assert_eq!(p.origin_project_path, "/src/app");
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct WorktreeProject {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// Absolute project root on the agent host.
            origin_project_path: String = "originProjectPath",
        }
    }
}

/// One value of [`SessionConfig::config_option_values`]: a select value id
/// (string) or a boolean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ConfigOptionValue {
    /// A select option's value id.
    String(String),
    /// A boolean option's value.
    Bool(bool),
}

impl ConfigOptionValue {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            Self::Bool(_) => None,
        }
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            Self::String(_) => None,
        }
    }
}

impl From<String> for ConfigOptionValue {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl From<&str> for ConfigOptionValue {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<bool> for ConfigOptionValue {
    fn from(b: bool) -> Self {
        Self::Bool(b)
    }
}

impl Check for ConfigOptionValue {
    const EXPECTED: &'static str = "a string or a boolean";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !(v.is_string() || v.is_boolean()) {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
        }
    }
}

crate::wire::inline_schema!(ConfigOptionValue, { "type": ["string", "boolean"] });

/// The `configOptionValues` map of [`SessionConfig`]: config option id to
/// value, in wire order. Dereferences to an [`IndexMap`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConfigOptionValues(pub IndexMap<String, ConfigOptionValue>);

impl std::ops::Deref for ConfigOptionValues {
    type Target = IndexMap<String, ConfigOptionValue>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ConfigOptionValues {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl From<IndexMap<String, ConfigOptionValue>> for ConfigOptionValues {
    fn from(m: IndexMap<String, ConfigOptionValue>) -> Self {
        Self(m)
    }
}

impl<K: Into<String>, V: Into<ConfigOptionValue>> FromIterator<(K, V)> for ConfigOptionValues {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl Check for ConfigOptionValues {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        <IndexMap<String, ConfigOptionValue> as Check>::check(v, at, out);
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for ConfigOptionValues {
    fn schema_name() -> Cow<'static, str> {
        "ConfigOptionValues".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "additionalProperties": g.subschema_for::<ConfigOptionValue>(),
        })
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.sessionConfig` on `session/new|load|resume|fork`:
    /// selections to apply before the native session is established.
    ///
    /// Absence keeps native defaults; an explicit `modelId` wins over a model
    /// config option. (The Codex adapter also rejects an empty `modelId`; the
    /// contract only says "string".)
    pub struct SessionConfig {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// Config option id to value, in wire order.
            config_option_values: ConfigOptionValues = "configOptionValues",
        }
        opt {
            /// The model to use.
            model_id: String = "modelId",
        }
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.forkAtTurn` on `session/fork`: fork the history at a turn.
    pub struct ForkAtTurn {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
        }
        opt {
            /// The turn to fork at (a `_meta.<ns>.turnId` value).
            turn_id: String = "turnId",
        }
    }
}

// ---------------------------------------------------------------------------
// Session activity (seed) and history read
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// The activity level of a session.
    pub enum SessionActivityState {
        /// Nothing running.
        Idle = "idle",
        /// Working.
        Running = "running",
        /// Waiting on the user.
        RequiresAction = "requires_action",
    }
}

crate::wire_struct! {
    /// Params of the `_ua|_lody/session/activity_update` notification (seed
    /// only): the agent's activity level, pushed whenever its state or its
    /// count of live background tasks changes. Each update replaces the
    /// previous one; with none received, assume `idle` with 0 tasks.
    ///
    /// The contract shows these four keys without marking optionality; they
    /// are all required here, because an update replaces the previous level
    /// and a missing key would leave it undefined.
    ///
    /// ```
    /// use acp_extension_core::session::{SessionActivityState, SessionActivityUpdate};
    ///
    /// let u = SessionActivityUpdate::new("s", SessionActivityState::Running, 2u32);
    /// assert_eq!(serde_json::to_value(&u)?["backgroundTaskCount"], 2);
    /// // A count is a non-negative integer.
    /// assert!(serde_json::from_value::<SessionActivityUpdate>(serde_json::json!(
    ///     {"version": 1, "sessionId": "s", "state": "idle", "backgroundTaskCount": 1.5})).is_err());
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct SessionActivityUpdate {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The activity level.
            state: SessionActivityState = "state",
            /// Live background tasks (shells, monitors, subagents).
            background_task_count: Count = "backgroundTaskCount",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/session/history/read`: re-read one session's native
    /// history. The result is [`EmptyResponse`].
    pub struct SessionHistoryReadRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
        }
    }
}
