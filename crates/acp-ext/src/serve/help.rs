//! The prompt commands, for `acp-ext serve --help` and the agent's answer to
//! an unknown command (`docs/serve.md` has the full table).

/// One prompt command of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptCommand {
    /// How it is typed: `/subagents [N] [SECONDS]`.
    pub usage: &'static str,
    /// What the agent sends for it, in one line.
    pub summary: &'static str,
}

const fn cmd(usage: &'static str, summary: &'static str) -> PromptCommand {
    PromptCommand { usage, summary }
}

/// Every prompt command, in `docs/serve.md`'s order; the first row is any other
/// text.
pub const PROMPT_COMMANDS: &[PromptCommand] = &[
    cmd(
        "TEXT",
        "a plan, a commentary chunk and the final answer `You said: TEXT`",
    ),
    cmd(
        "/tool",
        "a tool call that asks permission (allow once / reject once), then completes or fails",
    ),
    cmd(
        "/subagents [N] [SECONDS]",
        "N subagent runs (1-32, default 2): root tool calls with task metadata and subagent events; completed after SECONDS (default 0)",
    ),
    cmd(
        "/background [SECONDS]",
        "a background task that completes SECONDS (default 0.3) after the turn ended",
    ),
    cmd(
        "/schedule [SECONDS]",
        "a scheduled task: pending, then running and completed at the wakeup",
    ),
    cmd(
        "/compact",
        "a context compaction tool call with the tokens before and after",
    ),
    cmd(
        "/goal set TEXT|pause|resume|clear",
        "goal snapshots on session_info_update, and a goal turn for set and resume",
    ),
    cmd(
        "/ask",
        "a form elicitation with one question and a note (or a custom answer)",
    ),
    cmd(
        "/title [TEXT]",
        "a generated session title with titleSource `generated`",
    ),
    cmd(
        "/slow [SECONDS]",
        "a turn of SECONDS (default 1) that takes steers and can be cancelled",
    ),
    cmd(
        "/limits",
        "a rate-limit update: one limit, a 5-hour and a weekly window",
    ),
    cmd(
        "/app",
        "an MCP app tool call (ui://demo/chart), loadable through _<ns>/mcp_apps/*",
    ),
    cmd(
        "/fail",
        "an error notice on session_info_update, then the prompt fails with -32603",
    ),
];

/// The commands on one line: `/tool, /subagents [N] [SECONDS], …`.
pub(crate) fn command_list() -> String {
    PROMPT_COMMANDS
        .iter()
        .filter(|c| c.usage.starts_with('/'))
        .map(|c| c.usage)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text `acp-ext serve --help` ends with: the prompt command table.
pub fn prompt_help() -> String {
    let width = PROMPT_COMMANDS
        .iter()
        .map(|c| c.usage.len())
        .max()
        .unwrap_or(0);
    let mut s = String::from(
        "Prompt commands (the prompt text picks the script; every turn also sends activity, \
         message phases and usage):\n",
    );
    for c in PROMPT_COMMANDS {
        s.push_str(&format!("  {:<width$}  {}\n", c.usage, c.summary));
    }
    s.push_str(
        "\nSessions, namespaces, ids and errors: the serve page of acp-ext's documentation.",
    );
    s
}
