//! `acp-ext state`: the folded consumer state of each transcript, a thin
//! shell over [`acp_extension_core::state`].
//!
//! Reads every format `check` reads ([`crate::check::input`]). For people:
//! per session the title, goal, activity, turns, the run tree with each
//! run's state and last output line, tasks, usage per model with cost,
//! context, steers, pending requests and notices; then the rate-limit
//! windows and the records, by the severity `check` gives their rules. `--json`: one document per file (its
//! schema: `acp-ext schema state`).

// No line a peer sends may panic what reads it: denied here.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use acp_extension_core::connection::Reads;
use acp_extension_core::state::{ConnectionState, Direction, SessionState, StateLimits};
use acp_extension_core::usage::ModelUsage;
use serde_json::Value;

use crate::check::input::{self, Format, Item};
use crate::finding::Severity;
use crate::output::{Progress, Style};
use crate::present::{duration, serde_name, short_id, shorten};

/// How to fold and print.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Options {
    /// Input format.
    pub format: Format,
    /// One JSON document per file.
    pub json: bool,
    /// Fold with [`StateLimits::bounded`].
    pub bounded: bool,
    /// Colour.
    pub style: Style,
    /// Whether a progress bar may be drawn on the error output while a
    /// large file is read ([`Progress`]).
    pub progress: bool,
}

impl Options {
    /// Auto-detected format, people's output, unbounded, no progress bar.
    pub fn new(style: Style) -> Self {
        Self {
            format: Format::Auto,
            json: false,
            bounded: false,
            style,
            progress: false,
        }
    }

    /// Sets the input format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Sets the JSON document instead of the view for people.
    pub fn json(mut self, json: bool) -> Self {
        self.json = json;
        self
    }

    /// Sets the bounded state ([`StateLimits::bounded`]).
    pub fn bounded(mut self, bounded: bool) -> Self {
        self.bounded = bounded;
        self
    }

    /// Sets whether a progress bar may be drawn ([`Progress::allowed`]).
    pub fn progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }
}

/// Folds everything `reader` holds in `format`.
pub fn fold_reader(
    reader: impl io::BufRead + Send,
    format: Format,
    limits: StateLimits,
) -> io::Result<ConnectionState> {
    fold_ticking(reader, format, limits, || {})
}

/// [`fold_reader`], calling `tick` after each batch of lines.
fn fold_ticking(
    reader: impl io::BufRead + Send,
    format: Format,
    limits: StateLimits,
    tick: impl FnMut(),
) -> io::Result<ConnectionState> {
    let mut state = ConnectionState::with_limits(limits);
    // Only the state it ends in is printed: its changes need not be built.
    state.set_list_changes(false);
    // Lines are parsed on another thread while the state folds on this one;
    // the fold reads every event, so each is built with its line, but a
    // chunk of plain text or a tool call, which the fold reads from the
    // line.
    let reads = Reads::of(&[&state]);
    let fold = |item: &Item| match item {
        Item::Record(r) => {
            state.set_line(Some(r.line));
            state.message_with_method(r.direction, &r.message, r.request_method.as_deref());
        }
        Item::Event { line, read } => {
            state.set_line(Some(*line));
            state.follow_read(Direction::Unknown, read);
        }
        Item::Problem { line, finding } => {
            state.set_line(Some(*line));
            state.unreadable(finding.rule, &finding.message);
        }
    };
    input::read_parallel_batches(reader, format, reads, fold, tick)?;
    Ok(state)
}

/// Folds and prints each file (`-` or none: standard input). Exit code 0,
/// or 2 when a file could not be read.
pub fn run(
    files: &[PathBuf],
    options: Options,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let stdin = [PathBuf::from("-")];
    let files = if files.is_empty() { &stdin[..] } else { files };
    let limits = if options.bounded {
        StateLimits::bounded()
    } else {
        StateLimits::unbounded()
    };
    let mut code = 0;
    for (i, file) in files.iter().enumerate() {
        let folded = if file == Path::new("-") {
            fold_reader(BufReader::new(io::stdin()), options.format, limits)
        } else {
            File::open(file).and_then(|f| {
                let size = f.metadata().map_or(0, |m| m.len());
                let mut progress =
                    Progress::new(file.display().to_string(), size, options.progress);
                let reader = BufReader::new(progress.count(f));
                let folded = fold_ticking(reader, options.format, limits, || {
                    progress.update(&mut *err)
                });
                progress.finish(&mut *err);
                folded
            })
        };
        let state = match folded {
            Ok(s) => s,
            Err(e) => {
                writeln!(err, "acp-ext state: cannot read {}: {e}", file.display())?;
                code = 2;
                continue;
            }
        };
        if options.json {
            let name = file.display().to_string();
            // A document of tens of megabytes: written in large pieces.
            let mut w = io::BufWriter::with_capacity(1 << 20, &mut *out);
            serde_json::to_writer(&mut w, &Document::new(&name, &state))?;
            writeln!(w)?;
            w.flush()?;
        } else {
            // A file's view is written whole, in large pieces: through a
            // line-buffered handle, each of its lines (one per record, tens
            // of thousands for a large file) was a write of its own.
            let mut w = io::BufWriter::new(&mut *out);
            if i > 0 {
                writeln!(w)?;
            }
            print_state(&mut w, &file.display().to_string(), &state, options.style)?;
            w.flush()?;
        }
    }
    Ok(code)
}

/// The `--json` document of one file, `{"file", …state}`, serialized
/// without building a JSON tree of the state first.
#[derive(Debug, serde::Serialize)]
pub struct Document<'a> {
    /// The transcript read.
    pub file: &'a str,
    /// Its folded state.
    #[serde(flatten)]
    pub state: &'a ConnectionState,
}

impl<'a> Document<'a> {
    /// The document of `state` folded from `file`.
    pub fn new(file: &'a str, state: &'a ConnectionState) -> Self {
        Self { file, state }
    }
}

fn count(n: Option<acp_extension_core::usage::UsageCount>) -> u64 {
    n.map_or(0, |c| c.get())
}

fn cost(u: &ModelUsage) -> String {
    u.cost_usd
        .map_or("unknown".to_owned(), |c| format!("${:.4}", c.get()))
}

/// `{amount, currency}` as people read it.
fn money(c: &Value) -> String {
    let amount = c.get("amount").and_then(Value::as_f64).unwrap_or(0.0);
    match c.get("currency").and_then(Value::as_str) {
        Some("USD") | None => format!("${amount:.4}"),
        Some(cur) => format!("{amount:.4} {cur}"),
    }
}

/// Counters as `key n, key n`.
fn counters(m: &indexmap::IndexMap<String, u64>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_usage(out: &mut impl Write, s: &SessionState, style: Style) -> io::Result<()> {
    let u = &s.usage;
    let t = &u.turn_totals;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    if t.turns > 0 {
        writeln!(
            out,
            "  turn usage  {} turn{}: {}",
            t.turns,
            plural(t.turns),
            counters(&t.usage)
        )?;
    }
    if t.quota_turns > 0 && !t.quota.is_empty() {
        writeln!(
            out,
            "  quota       {} turn{}: {}",
            t.quota_turns,
            plural(t.quota_turns),
            counters(&t.quota)
        )?;
    }
    if let Some(x) = &u.unattributed {
        writeln!(
            out,
            "  unattributed  {} in, {} out {}",
            x.input_tokens.get(),
            x.output_tokens.get(),
            style.dim("(an update without modelUsage: in no total)")
        )?;
    }
    if s.usage.totals.is_empty() && s.usage.total.is_none() && s.usage.context.is_none() {
        return Ok(());
    }
    if !s.usage.totals.is_empty() {
        let width = s
            .usage
            .totals
            .keys()
            .map(String::len)
            .max()
            .unwrap_or(5)
            .max(5);
        writeln!(
            out,
            "  {}",
            style.dim(&format!(
                "usage  {:width$}  {:>10} {:>10} {:>10} {:>10}  cost",
                "model", "input", "output", "cache-read", "reasoning"
            ))
        )?;
        for (model, u) in &s.usage.totals {
            writeln!(
                out,
                "         {model:width$}  {:>10} {:>10} {:>10} {:>10}  {}",
                u.input_tokens.get(),
                u.output_tokens.get(),
                u.cache_read_input_tokens.get(),
                count(u.reasoning_output_tokens),
                cost(u)
            )?;
        }
        let scopes = s.usage.scopes.len();
        let incomplete = s.usage.scopes.values().filter(|x| x.incomplete).count();
        let mut note = format!("{scopes} scope{}", if scopes == 1 { "" } else { "s" });
        if incomplete > 0 {
            note.push_str(&format!(", {incomplete} incomplete"));
        }
        if let Some(t) = &s.usage.total
            && s.usage.totals.len() > 1
        {
            writeln!(
                out,
                "         {:width$}  {:>10} {:>10} {:>10} {:>10}  {}",
                "total",
                t.input_tokens.get(),
                t.output_tokens.get(),
                t.cache_read_input_tokens.get(),
                count(t.reasoning_output_tokens),
                cost(t)
            )?;
        }
        if let (Some(floor), Some(None)) = (
            s.usage.cost_usd_at_least,
            s.usage.total.as_ref().map(|t| t.cost_usd),
        ) {
            note.push_str(&format!(", cost at least ${floor:.4}"));
        }
        writeln!(out, "         {}", style.dim(&note))?;
    } else if let Some(u) = &s.usage.total {
        writeln!(
            out,
            "  usage    {} in, {} out, cost {} (no per-model rows)",
            u.input_tokens.get(),
            u.output_tokens.get(),
            cost(u)
        )?;
    }
    if let Some(c) = &s.usage.context {
        let cost = c
            .cost
            .as_ref()
            .map_or(String::new(), |c| format!(", cost {}", money(c)));
        writeln!(out, "  context  {} / {} tokens{cost}", c.used, c.size)?;
    }
    Ok(())
}

pub(crate) fn print_state(
    out: &mut impl Write,
    file: &str,
    state: &ConnectionState,
    style: Style,
) -> io::Result<()> {
    writeln!(
        out,
        "{}  {}",
        style.bold(file),
        style.dim(&format!(
            "{} messages, {} session{}, {}",
            state.messages(),
            state.sessions().len(),
            if state.sessions().len() == 1 { "" } else { "s" },
            records_summary(state)
        ))
    )?;
    let a = state.accounting();
    let k = a.ignored_kinds;
    let kinds: Vec<String> = [
        (k.transcript, "transcript"),
        (k.calls, "calls not modelled"),
        (k.unpaired_answers, "answers without their request"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let mut line = format!(
        "{} values: {} folded, {} ignored, {} recorded",
        a.values, a.folded, a.ignored, a.recorded
    );
    if !kinds.is_empty() {
        line.push_str(&format!(" (ignored: {})", kinds.join(", ")));
    }
    if a.unaccounted() > 0 {
        // A bug of the state: say so rather than hide it.
        line.push_str(&format!("; {} unaccounted", a.unaccounted()));
    }
    writeln!(out, "{}", style.dim(&line))?;
    let neg = state.negotiation();
    for (name, peer) in [("agent", &neg.agent), ("client", &neg.client)] {
        if peer.seen {
            let keys: Vec<&str> = peer.features.keys().map(String::as_str).collect();
            let mut line = if keys.is_empty() {
                "no extensions".to_owned()
            } else {
                keys.join(", ")
            };
            if !peer.invalid.is_empty() {
                line.push_str(&format!("; invalid: {}", peer.invalid.join(", ")));
            }
            if let Some(v) = peer.protocol_version.filter(|v| *v != 1) {
                line.push_str(&format!(" (ACP v{v})"));
            }
            writeln!(out, "{} {line}", style.dim(&format!("{name:<7}")))?;
        }
    }
    for (sid, s) in state.sessions() {
        writeln!(out)?;
        let title = match (&s.title, s.title_source) {
            (Some(t), Some(src)) => format!("{t:?} ({})", serde_name(&src)),
            (Some(t), None) => format!("{t:?}"),
            _ => style.dim("(untitled)"),
        };
        let closed = if s.closed {
            style.dim("  closed")
        } else {
            String::new()
        };
        writeln!(
            out,
            "{} {}  {title}{closed}",
            style.bold("session"),
            style.accent(sid)
        )?;
        if let Some(g) = s.current_goal() {
            writeln!(
                out,
                "  goal     {}  {:?}",
                serde_name(&g.status),
                g.objective
            )?;
        }
        if let Some(level) = s.activity.shown() {
            let mut line = level.to_owned();
            if let Some(name) = &s.activity.unconfirmed {
                line.push_str(&format!(" ({name})"));
            }
            if let Some(n) = s.activity.background_task_count {
                line.push_str(&format!(", {n} background"));
            }
            if let Some(by_type) = &s.activity.background {
                line.push_str(&format!(", background: {}", background_words(by_type)));
            }
            writeln!(out, "  activity {line}")?;
        }
        let t = &s.turns;
        if t.prompts > 0 || t.engine_turns > 0 {
            let mut line = format!(
                "{} prompt{}",
                t.prompts,
                if t.prompts == 1 { "" } else { "s" }
            );
            if t.accepted > 0 {
                line.push_str(&format!(", {} accepted", t.accepted));
            }
            if t.running {
                line.push_str(", running");
            }
            if let Some(r) = &t.last_stop_reason {
                line.push_str(&format!(", last stop {r}"));
            }
            if t.engine_turns > 0 {
                line.push_str(&format!(", {} engine turns", t.engine_turns));
            }
            writeln!(out, "  turns    {line}")?;
        }
        let tree = s.run_tree();
        if !tree.is_empty() {
            writeln!(out, "  runs")?;
            for (depth, id, run) in tree {
                let state_name = run.state_name().to_owned();
                let painted = match state_name.as_str() {
                    "completed" => style.ok(&state_name),
                    "failed" | "cancelled" => style.bad(&state_name),
                    "unknown" => style.warn(&state_name),
                    _ => state_name.clone(),
                };
                let name = run.name().map_or(String::new(), |n| format!("  {n:?}"));
                let incomplete = if run.output_incomplete {
                    style.dim(" (incomplete)")
                } else {
                    String::new()
                };
                let last = run.last_line().map_or(String::new(), |l| {
                    format!("  {}", style.dim(&shorten(l, 60)))
                });
                let extra = run.standard.as_ref().map_or(String::new(), |std| {
                    let mut e = String::new();
                    if std.generations > 1 {
                        e.push_str(&format!(" ×{}", std.generations));
                    }
                    if let Some(r) = &std.stop_reason {
                        e.push_str(&format!(" ({r})"));
                    }
                    e
                });
                writeln!(
                    out,
                    "    {}{}  {painted}{extra}{name}{incomplete}{last}",
                    "  ".repeat(depth),
                    short_id(id)
                )?;
            }
        }
        if !s.tasks.is_empty() {
            writeln!(out, "  tasks")?;
            for (id, task) in &s.tasks {
                let desc = task
                    .task
                    .description
                    .as_deref()
                    .or(task.title.as_deref())
                    .map_or(String::new(), |d| format!("  {}", shorten(d, 50)));
                writeln!(
                    out,
                    "    {id}  {} {}{desc}",
                    serde_name(&task.task.kind),
                    serde_name(&task.task.status)
                )?;
            }
        }
        for (id, a) in &s.activities {
            let summary = a.summary.as_deref().map_or(String::new(), |t| {
                format!("  {}", style.dim(&shorten(t, 60)))
            });
            writeln!(
                out,
                "  {}  {id}  {}{summary}",
                serde_name(&a.kind),
                a.status.as_deref().unwrap_or("?")
            )?;
        }
        if let Some(plan) = &s.plan {
            let what = match plan.get("entries").and_then(Value::as_array) {
                Some(e) => format!("{} entries", e.len()),
                None => plan
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("plan")
                    .to_owned(),
            };
            writeln!(out, "  plan     {what}")?;
        }
        print_usage(out, s, style)?;
        for (id, steer) in &s.steers {
            writeln!(
                out,
                "  steer    {id}  {} ({})",
                serde_name(&steer.outcome),
                steer.transport
            )?;
        }
        for (id, p) in &s.pending_requests {
            let run = p
                .subagent_run_id
                .as_deref()
                .map_or(String::new(), |r| format!(", run {r}"));
            let tool = p
                .tool_call_id
                .as_deref()
                .map_or(String::new(), |t| format!(", tool call {t}"));
            writeln!(
                out,
                "  {}  {} {id}{tool}{run}",
                style.warn("pending"),
                p.method
            )?;
        }
        for n in &s.notices {
            writeln!(
                out,
                "  notice   {}: {}",
                serde_name(&n.level),
                shorten(&n.message, 70)
            )?;
        }
    }
    if !state.rate_limits().is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", style.bold("rate limits"))?;
        for (id, entry) in state.rate_limits() {
            let windows: Vec<String> = entry
                .rate_limit
                .windows
                .iter()
                .map(|w| {
                    let span = w
                        .window_duration_seconds
                        .map_or("?".to_owned(), |d| duration(d.get()));
                    let reset = w.resets_at_epoch_seconds.map_or(String::new(), |t| {
                        format!(" resets {}", crate::time::utc_minutes(t.get() as u64))
                    });
                    format!("{span} {}%{reset}", w.used_percent.get())
                })
                .collect();
            let stale = if entry.stale { "  (stale)" } else { "" };
            writeln!(out, "  {id}  {}{stale}", windows.join("  "))?;
        }
    }
    let invalid: Vec<_> = state.invalid().collect();
    if !invalid.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", style.warn(&records_summary(state)))?;
        for i in invalid {
            let method = i.method.as_deref().unwrap_or("-");
            writeln!(
                out,
                "  {:<7}  {method}  {}  {}  {}",
                severity_of(&i.rule).name(),
                if i.pointer.is_empty() {
                    "(root)"
                } else {
                    &i.pointer
                },
                i.rule,
                i.message
            )?;
        }
    }
    Ok(())
}

/// How bad a record is: its rule's severity in `check`'s table (a rule of
/// the state's own, or a contract rule `check` reports as `shape`, is an
/// error).
fn severity_of(rule: &str) -> Severity {
    crate::check::rules::RuleInfo::by_id(rule).map_or(Severity::Error, |r| r.severity)
}

/// `no records`, or how many, by severity: what `check` would call them
/// (`2 records: 1 error, 1 warning`), not all "invalid".
fn records_summary(state: &ConnectionState) -> String {
    let total = state.invalid_count();
    if total == 0 {
        return "no records".to_owned();
    }
    let (mut errors, mut warnings, mut infos) = (0u64, 0u64, 0u64);
    for i in state.invalid() {
        match severity_of(&i.rule) {
            Severity::Error => errors += 1,
            Severity::Warning => warnings += 1,
            Severity::Info => infos += 1,
        }
    }
    let kept = errors + warnings + infos;
    let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut parts: Vec<String> = Vec::new();
    if errors > 0 {
        parts.push(plural(errors, "error"));
    }
    if warnings > 0 {
        parts.push(plural(warnings, "warning"));
    }
    if infos > 0 {
        parts.push(format!("{infos} info"));
    }
    if total > kept {
        parts.push(format!("{} not kept", total - kept));
    }
    format!(
        "{total} record{}: {}",
        if total == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// v2 background work by type, in words: `2 terminal, 1 subagent`, or
/// `none`.
pub(crate) fn background_words(by_type: &indexmap::IndexMap<String, u64>) -> String {
    if by_type.is_empty() {
        return "none".to_owned();
    }
    by_type
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}
