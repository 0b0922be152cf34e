//! One subagent run as the state holds it: [`RunState`], and a standard
//! run's own fields ([`StandardRun`]).

use super::*;

/// One subagent run, folded from its events (or from standard
/// `subagent_update`s).
///
/// # Example
///
/// ```
/// use acp_extension_core::state::{ConnectionState, Direction, Dialect};
/// use serde_json::json;
///
/// let mut state = ConnectionState::new();
/// let support = json!({"stream": ["text"], "progress": false, "outputRead": "none", "cancel": false});
/// for params in [
///     json!({"version": 1, "sessionId": "s", "runId": "r", "type": "snapshot",
///         "snapshot": {"state": "running", "name": "Reviewer", "support": support}}),
///     json!({"version": 1, "sessionId": "s", "runId": "r", "type": "output",
///         "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Looks good."}}}),
/// ] {
///     state.notification(Direction::AgentToClient, "_lody/subagents/event", &params);
/// }
/// let run = &state.session("s").unwrap().subagent_runs["r"];
/// assert_eq!((run.state_name(), run.name()), ("running", Some("Reviewer")));
/// assert!(run.is_live());
/// assert_eq!(run.last_line(), Some("Looks good."));
/// assert_eq!(run.dialect, Dialect::Extension);
///
/// // A standard `subagent_update` makes a run too, with only its own fields.
/// state.notification(Direction::AgentToClient, "session/update", &json!({"sessionId": "s", "update": {"sessionUpdate": "subagent_update",
///     "sessionId": "child", "title": "Worker", "state": {"state": "idle", "stopReason": "end_turn"}}}));
/// let child = &state.session("s").unwrap().subagent_runs["child"];
/// assert_eq!((child.state_name(), child.snapshot.is_none()), ("idle", true));
/// assert_eq!(child.standard.as_ref().unwrap().title.as_deref(), Some("Worker"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunState {
    /// The latest extension snapshot, as sent (a snapshot replaces all
    /// metadata). Absent for a standard run, which has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SubagentSnapshot>,
    /// A standard run's fields, as its `subagent_update`s patched them
    /// (absent for an extension run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard: Option<StandardRun>,
    /// The parent run: `Null` a direct child of the root, `Undefined`
    /// lineage not known yet (never attached to the root by default).
    #[serde(skip_serializing_if = "MaybeUndefined::is_undefined")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Option<String>>"))]
    pub parent_run_id: MaybeUndefined<String>,
    /// The spawning tool call, fixed at the first snapshot that names one
    /// (for claude's standard runs, the hidden launch call: the `messageId`
    /// of the prompt's `session_message`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Sticky: some output may be missing (set by a snapshot, by a
    /// non-text message chunk, by an invalid output event, or by a
    /// disconnect).
    pub output_incomplete: bool,
    /// Progress folded sparse and absolute: a key replaces, `null` clears.
    pub progress: Map<String, Value>,
    /// Message text: the chunks of one message appended as sent; a message
    /// that follows a tool call or a plan, or that has another `messageId`,
    /// starts on a new line (bounded mode keeps the tail).
    #[serde(serialize_with = "crate::state::compact::serialize_text")]
    pub text: String,
    /// Tool calls by id (read them with [`RunState::tool_calls`]), each
    /// kept as its compact JSON text: a run may hold tens of thousands.
    pub(crate) tool_calls: IdMap<CompactObject>,
    /// The latest plan (replaced whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// Output events folded.
    pub output_events: u64,
    /// Which form the run arrived in.
    pub dialect: Dialect,
    /// The last output event ended a message: the next text starts a line.
    #[serde(skip)]
    pub(crate) message_ended: bool,
    /// The `messageId` of the last text chunk, when the agent sends one.
    #[serde(skip)]
    pub(crate) message_id: Option<String>,
    /// How many bytes at the end of `text` are the last message's: a v2
    /// whole-message update with its `messageId` replaces them.
    #[serde(skip)]
    pub(crate) message_len: usize,
}

/// A standard run (a child session announced by `subagent_update`), its
/// fields as sent: nothing the dialect does not carry is made up.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StandardRun {
    /// `title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description` (claude: the agent type; codex: the spawn prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `state.state`: `running`, `idle`, `requires_action`, `unknown` or
    /// another value as sent; absent until one arrived (codex announces
    /// without a state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The latest idle's `stopReason` (absent while it runs, or when the
    /// idle gave none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The latest idle's `error` (a JSON-RPC error object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// `capabilities` as last sent (`cancel: {}` while it can be cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// `cwd`, when it differs from the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `additionalDirectories`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_directories: Option<Vec<String>>,
    /// Times it began to run: the first start, then once per resumption
    /// after `idle`.
    pub generations: u64,
    /// The prompt it was given (`session_message` to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Its reply (`session_message` from it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Its own context occupancy (`usage_update` on the child session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

impl StandardRun {
    /// Whether `capabilities.cancel` is on.
    pub fn can_cancel(&self) -> bool {
        self.capabilities
            .as_ref()
            .and_then(|c| c.get("cancel"))
            .is_some_and(Value::is_object)
    }
}

impl RunState {
    /// An empty run of `dialect`.
    pub(crate) fn new(dialect: Dialect) -> Self {
        Self {
            snapshot: None,
            standard: None,
            parent_run_id: MaybeUndefined::Undefined,
            parent_tool_call_id: None,
            output_incomplete: false,
            progress: Map::new(),
            text: String::new(),
            tool_calls: IdMap::default(),
            plan: None,
            output_events: 0,
            dialect,
            message_ended: false,
            message_id: None,
            message_len: 0,
        }
    }

    /// Its state in a word: the snapshot's `state` (`pending`, `running`,
    /// `completed`, `failed`, `cancelled`, `unknown`), or the standard
    /// state as sent (`running`, `idle`, `requires_action`, `unknown`, …;
    /// `announced` before one arrived).
    pub fn state_name(&self) -> &str {
        if let Some(s) = &self.snapshot {
            return s.state.as_str();
        }
        self.standard
            .as_ref()
            .and_then(|s| s.state.as_deref())
            .unwrap_or("announced")
    }

    /// Whether it may still produce output: a snapshot `pending` or
    /// `running`; a standard run announced, `running` or `requires_action`.
    pub fn is_live(&self) -> bool {
        match (&self.snapshot, &self.standard) {
            (Some(s), _) => matches!(s.state, SubagentState::Pending | SubagentState::Running),
            (None, Some(s)) => matches!(
                s.state.as_deref(),
                None | Some("running" | "requires_action")
            ),
            (None, None) => false,
        }
    }

    /// Its name: the snapshot's `name`, or the standard `title`.
    pub fn name(&self) -> Option<&str> {
        match (&self.snapshot, &self.standard) {
            (Some(s), _) => s.name.as_deref(),
            (None, Some(s)) => s.title.as_deref(),
            _ => None,
        }
    }

    /// The last non-empty line of its message text.
    pub fn last_line(&self) -> Option<&str> {
        self.text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
    }

    /// Its tool calls by id, updates merged into them: every key as it
    /// came (but `sessionUpdate`), in the order the agent sent them, a key
    /// an update brings anew after the others. In the order the calls
    /// began; serialized, the run's `toolCalls` object.
    pub fn tool_calls(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&str, Map<String, Value>)> + ExactSizeIterator + '_ {
        self.tool_calls
            .iter()
            .map(|(id, call)| (id.as_str(), call.value()))
    }

    /// The tool call `id`, updates merged into it (see
    /// [`RunState::tool_calls`]).
    pub fn tool_call(&self, id: &str) -> Option<Map<String, Value>> {
        self.tool_calls.get(id).map(CompactObject::value)
    }
}
