//! The rule table: every finding's id, severity and meaning.
//!
//! Ids are stable kebab-case strings (they appear in `--json` output and in
//! the rule table of `docs/check.md`); [`ALL`] lists every rule in table order.

use super::Severity;

/// One rule of the linter: its stable id, its severity and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RuleInfo {
    /// Stable kebab-case id, such as `usage-delta-mismatch`.
    pub id: &'static str,
    /// How bad a finding of this rule is.
    pub severity: Severity,
    /// What the rule checks, in one sentence (the rule table's text).
    pub summary: &'static str,
}

impl RuleInfo {
    const fn new(id: &'static str, severity: Severity, summary: &'static str) -> Self {
        Self {
            id,
            severity,
            summary,
        }
    }

    /// The rule with this id.
    pub fn by_id(id: &str) -> Option<&'static RuleInfo> {
        ALL.iter().find(|r| r.id == id)
    }
}

use Severity::{Error, Info, Warning};

/// Input: a line (or value) is not JSON at all (tap's `raw` records, broken
/// lines, truncated files).
pub const NOT_JSON: RuleInfo = RuleInfo::new(
    "not-json",
    Error,
    "A line of the transcript (or bytes a peer wrote on the wire) is not JSON; ACP's stdio framing carries one JSON-RPC message per line.",
);
/// Input: a line longer than the reader accepts.
pub const INPUT_TOO_LARGE: RuleInfo = RuleInfo::new(
    "input-too-large",
    Error,
    "A single line or value is larger than the checker's limit (16 MiB); it is skipped so that memory stays bounded.",
);
/// A JSON value that is not a JSON-RPC request, notification or response.
pub const NOT_A_MESSAGE: RuleInfo = RuleInfo::new(
    "not-a-message",
    Error,
    "A value where a JSON-RPC message was expected is not an object with `\"jsonrpc\": \"2.0\"` and `method`, or with `id` and `result`/`error`.",
);
/// Shape: an extension payload or `_meta.<ns>` field breaks its type.
pub const SHAPE: RuleInfo = RuleInfo::new(
    "shape",
    Error,
    "An extension method's params or result, a capability object, or a `_meta.<ns>` field breaks the contract's type (as `acp-ext validate` reports it; the message names the field rule); or a standard message the consumer state folds cannot be placed (a `session/update` without an object `params`, a non-empty `sessionId` or an `update`) or breaks its shape (`state::standard_update_violations`: a tool call without `toolCallId`, a `notice` without `severity` or `title`, a `compaction_update` without `compactionId`, a `usage_update` with a negative `used`, `size` or cost, a `subagent_update` without `sessionId`, a v2 `state_update` without `state` or with a `background` item that is no object with a `type`; `state::call_violations`: a `session/load`, `resume`, `close`, `delete` or `prompt` without a non-empty `sessionId`; `state::result_violation`: a result that is no object, a `session/new` or `fork` result without `sessionId`).",
);
/// A `_ua/…` / `_lody/…` (or `_acp_ext:*`) method that the contract does not define.
pub const UNKNOWN_METHOD: RuleInfo = RuleInfo::new(
    "unknown-method",
    Error,
    "A method in the contract's namespace (`_lody/…`, `_ua/…`) that the contract does not define: a typo, or a method of a newer contract version that this connection did not negotiate (`acp-ext validate` rejects it too); or an `_acp_ext:*` method that is not one of the legacy API's.",
);
/// A `session/update` with a `sessionUpdate` tag of no dialect the state reads.
pub const UNKNOWN_SESSION_UPDATE: RuleInfo = RuleInfo::new(
    "unknown-session-update",
    Warning,
    "A `session/update` whose `sessionUpdate` is neither an ACP v1 or v2 update nor one of the dialects the consumer state reads (AIR's subagents and async tasks) nor a custom update (`_` first, which receivers preserve and otherwise ignore); a client drops it.",
);
/// The legacy `_acp_ext:*` API from an adapter.
pub const LEGACY_METHOD: RuleInfo = RuleInfo::new(
    "legacy-method",
    Warning,
    "An `_acp_ext:*` message (the legacy 0.0.5 API): the contract forbids adapters to emit it; consumers read it only for compatibility. An unknown `_acp_ext:*` method is `unknown-method`.",
);
/// Unknown keys under `_meta.<ns>` or in a capability advertisement.
pub const UNKNOWN_META_KEY: RuleInfo = RuleInfo::new(
    "unknown-meta-key",
    Info,
    "A key under `_meta.lody` / `_meta.ua` (on a message or in capabilities) that the contract does not define: contract drift or a private extension in the shared namespace.",
);
/// Negotiation: a feature used that the agent did not advertise.
pub const NOT_ADVERTISED: RuleInfo = RuleInfo::new(
    "not-advertised",
    Error,
    "An extension method or `_meta.<ns>` field is used although the peer that must advertise its capability did not (for example `_lody/session/usage_update` without `usage`). Judged only once the initialize exchange was seen.",
);
/// Negotiation: the feature is advertised, but not the option this use needs.
pub const FLAG_NOT_ADVERTISED: RuleInfo = RuleInfo::new(
    "flag-not-advertised",
    Error,
    "The capability is advertised but not the option this use needs: `rate_limits/get` without `rateLimits.query`, `subagents/list|cancel|output` without the matching flag, steering on a transport the agent did not advertise, background/scheduled tasks without the flag.",
);
/// Negotiation: a goal action on a transport that does not list it.
pub const GOAL_ACTION_NOT_ADVERTISED: RuleInfo = RuleInfo::new(
    "goal-action-not-advertised",
    Error,
    "A goal action sent on the `session/goal` request that is not in `goal.controlActions`, or in prompt `_meta.<ns>.goalControl` that is not in `goal.promptActions`.",
);
/// Negotiation: subagent events without both peers advertising them.
pub const SUBAGENT_EVENTS_NOT_NEGOTIATED: RuleInfo = RuleInfo::new(
    "subagent-events-not-negotiated",
    Error,
    "`subagents/event` sent although the agent or the client did not advertise `subagentEvents` (both must).",
);
/// Negotiation: answer notes sent to a client that cannot keep them.
pub const ANSWER_NOTES_NOT_ADVERTISED: RuleInfo = RuleInfo::new(
    "answer-notes-not-advertised",
    Error,
    "`elicitation/create` carries a `noteFor` property although the client did not advertise `elicitation: {version: 1, answerNotes: true}` and form elicitation.",
);
/// Negotiation: a capability advertised by the wrong peer.
pub const WRONG_SIDE_CAPABILITY: RuleInfo = RuleInfo::new(
    "wrong-side-capability",
    Warning,
    "A peer advertises a capability that belongs to the other side (for example `elicitation`, a client capability, in `agentCapabilities`); it is ignored.",
);
/// Subagent runs: the first event of a run must be a snapshot.
pub const SUBAGENT_FIRST_NOT_SNAPSHOT: RuleInfo = RuleInfo::new(
    "subagent-first-not-snapshot",
    Error,
    "A subagent run's first event is a progress or output event (and every later one until its first snapshot); a run starts with a snapshot.",
);
/// Subagent runs: nothing after a terminal snapshot.
pub const SUBAGENT_AFTER_TERMINAL: RuleInfo = RuleInfo::new(
    "subagent-after-terminal",
    Error,
    "A subagent event for a run whose snapshot was already terminal (completed, failed, cancelled), other than a snapshot repeating that state; a new execution needs a new run id. `unknown` is not terminal.",
);
/// Subagent runs: run ids never reuse native ids.
pub const SUBAGENT_RUN_ID_NATIVE: RuleInfo = RuleInfo::new(
    "subagent-run-id-native",
    Error,
    "A subagent run id equals a native id seen in the same session (tool call, task, turn or parent tool call id); run ids are opaque and never reuse native ids.",
);
/// Usage: cumulative totals never decrease within a scope.
pub const USAGE_TOTAL_DECREASED: RuleInfo = RuleInfo::new(
    "usage-total-decreased",
    Error,
    "Within one `usageScopeId` (or an unscoped session), a model's cumulative `modelUsage` counter or known cost is lower than in the previous update.",
);
/// Usage: delta equals the change of the cumulative totals.
pub const USAGE_DELTA_MISMATCH: RuleInfo = RuleInfo::new(
    "usage-delta-mismatch",
    Error,
    "`delta.modelUsage` differs from the change of `modelUsage` since the previous update of the same scope (the first update of a scope is measured from zero), or carries a cost the total does not know.",
);
/// Usage: a finished scope is never re-entered.
pub const USAGE_SCOPE_REENTERED: RuleInfo = RuleInfo::new(
    "usage-scope-reentered",
    Error,
    "A `usageScopeId` reappears after another scope began in the same session; scope ids are never reused by a later accounting lifetime.",
);
/// Time: epoch seconds that look like milliseconds.
pub const EPOCH_MILLISECONDS: RuleInfo = RuleInfo::new(
    "epoch-milliseconds",
    Warning,
    "An `…EpochSeconds` value over 10^11 (year 5138): almost certainly milliseconds. Legal for the contract's types (any finite number >= 0), so a warning.",
);
/// claude's rate limit: a utilization outside 0..1.
pub const UTILIZATION_CLAMPED: RuleInfo = RuleInfo::new(
    "utilization-clamped",
    Warning,
    "A `_claude/rateLimit` `utilization` (a fraction) outside 0..1; the consumer state shows it clamped to 0..100 %. Times in that object over 10^12 are milliseconds (`epoch-milliseconds`); both by `standard::claude_rate_limit_adjustments`.",
);
/// Time: fractional epoch seconds.
pub const EPOCH_FRACTIONAL: RuleInfo = RuleInfo::new(
    "epoch-fractional",
    Warning,
    "An `…EpochSeconds` value with a fraction (typically milliseconds divided by 1000 without rounding); legal, but consumers read whole seconds (the Lody host drops a rate-limit snapshot with a fractional reset time). `wire::EpochSeconds::now()` writes whole seconds.",
);
/// Time: epoch zero used as a placeholder.
pub const EPOCH_ZERO: RuleInfo = RuleInfo::new(
    "epoch-zero",
    Warning,
    "An `…EpochSeconds` value of 0 (1970-01-01): a placeholder rather than a time; omit the optional field instead.",
);
/// Titles: tagged titles when `sessionTitle` is advertised.
pub const TITLE_WITHOUT_SOURCE: RuleInfo = RuleInfo::new(
    "title-without-source",
    Error,
    "A `session_info_update` with a `title` but no `_meta.<ns>.titleSource` from an agent that advertised `sessionTitle` (version 1 requires tagged titles).",
);
/// Steering: applied steers were requested.
pub const STEER_UNKNOWN_ID: RuleInfo = RuleInfo::new(
    "steer-unknown-id",
    Error,
    "`session/steer_applied` names a steer id the client never sent (on `session/steer` or in prompt `_meta.<ns>.steer`). Judged only when the transcript has client traffic.",
);

/// Namespaces: traffic in a namespace the receiver does not read.
pub const NAMESPACE_MISMATCH: RuleInfo = RuleInfo::new(
    "namespace-mismatch",
    Error,
    "An extension method or a `_meta.<ns>` field in a namespace the receiving peer did not advertise and that the write rule does not give (`ua` only to a peer whose capabilities carry `_meta.ua` and no `_meta.lody`, else `lody`): that peer may drop it. Judged once the receiver's initialize was seen.",
);
/// Namespaces: one peer writing both spellings on one connection.
pub const NAMESPACE_MIXED: RuleInfo = RuleInfo::new(
    "namespace-mixed",
    Warning,
    "One peer writes both `lody` and `ua` (methods or `_meta.<ns>` fields) on one connection; every feature should use the one namespace the write rule gives.",
);
/// Steering: a steer sent mid-turn but answered after the turn ended.
pub const STEER_ANSWERED_AFTER_TURN: RuleInfo = RuleInfo::new(
    "steer-answered-after-turn",
    Warning,
    "A `session/steer` sent while a prompt of its session was running is answered only after that prompt's response: the agent handled the prompt on its dispatch loop, so the steer waited for the turn to end (run the turn off the loop). On a slow link a steer that crossed the turn's end looks the same, hence a warning.",
);
/// Steering: an injected steer never confirmed.
pub const STEER_NOT_APPLIED: RuleInfo = RuleInfo::new(
    "steer-not-applied",
    Warning,
    "A steer answered `injected` without a `session/steer_applied` for its id before its turn ended; the client cannot tell whether it was applied.",
);
/// Sessions: a notification for a session never opened.
pub const UNKNOWN_SESSION: RuleInfo = RuleInfo::new(
    "unknown-session",
    Error,
    "A contract notification of the agent (`session/activity_update`, `session/usage_update`, `session/steer_applied`, `subagents/event`) names a session this connection never opened: no `session/new` answer, `session/load`, `resume`, `fork` or prompt named it. Judged only when the transcript starts at `initialize` and opens sessions; a client has no session to show it in.",
);

/// The rule of the table that a sequence rule of the library is.
pub fn of_sequence(
    rule: acp_extension_core::connection::sequence::SequenceRule,
) -> &'static RuleInfo {
    use acp_extension_core::connection::sequence::SequenceRule as S;
    match rule {
        S::SubagentFirstNotSnapshot => &SUBAGENT_FIRST_NOT_SNAPSHOT,
        S::SubagentAfterTerminal => &SUBAGENT_AFTER_TERMINAL,
        S::SubagentRunIdNative => &SUBAGENT_RUN_ID_NATIVE,
        S::UsageTotalDecreased => &USAGE_TOTAL_DECREASED,
        S::UsageDeltaMismatch => &USAGE_DELTA_MISMATCH,
        S::UsageScopeReentered => &USAGE_SCOPE_REENTERED,
        S::SteerUnknownId => &STEER_UNKNOWN_ID,
        S::SteerAnsweredAfterTurn => &STEER_ANSWERED_AFTER_TURN,
        // A new rule of the library is reported under its own id as an
        // error until the table names it.
        S::SteerNotApplied => &STEER_NOT_APPLIED,
        S::SessionNotOpened => &UNKNOWN_SESSION,
        _ => &SHAPE,
    }
}

/// Every rule, in the order of the rule table (`docs/check.md`).
pub const ALL: &[RuleInfo] = &[
    NOT_JSON,
    INPUT_TOO_LARGE,
    NOT_A_MESSAGE,
    SHAPE,
    UNKNOWN_METHOD,
    UNKNOWN_SESSION_UPDATE,
    LEGACY_METHOD,
    UNKNOWN_META_KEY,
    NOT_ADVERTISED,
    FLAG_NOT_ADVERTISED,
    GOAL_ACTION_NOT_ADVERTISED,
    SUBAGENT_EVENTS_NOT_NEGOTIATED,
    ANSWER_NOTES_NOT_ADVERTISED,
    WRONG_SIDE_CAPABILITY,
    SUBAGENT_FIRST_NOT_SNAPSHOT,
    SUBAGENT_AFTER_TERMINAL,
    SUBAGENT_RUN_ID_NATIVE,
    USAGE_TOTAL_DECREASED,
    USAGE_DELTA_MISMATCH,
    USAGE_SCOPE_REENTERED,
    EPOCH_MILLISECONDS,
    UTILIZATION_CLAMPED,
    EPOCH_FRACTIONAL,
    EPOCH_ZERO,
    TITLE_WITHOUT_SOURCE,
    STEER_UNKNOWN_ID,
    STEER_ANSWERED_AFTER_TURN,
    STEER_NOT_APPLIED,
    NAMESPACE_MISMATCH,
    NAMESPACE_MIXED,
    UNKNOWN_SESSION,
];

/// The rule table as Markdown (`| rule | severity | meaning |`), for `docs/check.md`.
pub fn markdown_table() -> String {
    let mut s = String::from("| rule | severity | meaning |\n|---|---|---|\n");
    for r in ALL {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            r.id,
            r.severity.name(),
            r.summary.replace('|', "\\|")
        ));
    }
    s
}

/// Writes the rule table for `acp-ext check --rules`: for people, one rule
/// per row with its meaning wrapped under it; with `json`, one
/// `{"rule","severity","meaning"}` object per line.
pub fn write_table(out: &mut impl std::io::Write, json: bool) -> std::io::Result<()> {
    if json {
        for r in ALL {
            let line = serde_json::json!({
                "rule": r.id,
                "severity": r.severity.name(),
                "meaning": r.summary,
            });
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    let width = ALL.iter().map(|r| r.id.len()).max().unwrap_or(0);
    writeln!(out, "{:<width$}  {:<8}  meaning", "rule", "severity")?;
    let indent = width + 12;
    for r in ALL {
        let mut lines = wrap(r.summary, 100usize.saturating_sub(indent).max(40)).into_iter();
        writeln!(
            out,
            "{:<width$}  {:<8}  {}",
            r.id,
            r.severity.name(),
            lines.next().unwrap_or_default()
        )?;
        for l in lines {
            writeln!(out, "{:indent$}{l}", "")?;
        }
    }
    Ok(())
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
