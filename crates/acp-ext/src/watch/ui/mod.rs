//! Drawing the [`App`] into a ratatui frame: header, sessions, the
//! selected session (summary, run tree, usage, rate limits), findings,
//! timeline, keys. Narrow terminals stack the panes and drop the session
//! list (the header names the selected session).

use std::time::{SystemTime, UNIX_EPOCH};

use acp_extension_core::state::{ConnectionState, RunState, SessionState};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, List, ListItem, ListState, Paragraph, Row, Table};

use super::{App, Pane};
use crate::check::Severity;
use crate::present::{serde_name, short_id, shorten};

mod usage;
use usage::*;

fn state_style(state: &str) -> Style {
    match state {
        "completed" => Style::new().fg(Color::Green),
        "failed" | "cancelled" => Style::new().fg(Color::Red),
        "unknown" => Style::new().fg(Color::Yellow),
        "running" => Style::new().fg(Color::Cyan),
        _ => Style::new(),
    }
}

fn severity_style(s: Severity) -> Style {
    match s {
        Severity::Error => Style::new().fg(Color::Red),
        Severity::Warning => Style::new().fg(Color::Yellow),
        _ => Style::new().fg(Color::Blue),
    }
}

fn pane_block(app: &App, pane: Pane, title: String) -> Block<'static> {
    let block = Block::bordered().title(title);
    if app.focus == pane {
        block.border_style(Style::new().fg(Color::Cyan))
    } else {
        block
    }
}

/// The run tree of the selected session.
fn tree(app: &App) -> Vec<(usize, String, RunState)> {
    session(app)
        .map(|s| {
            s.run_tree()
                .into_iter()
                .map(|(d, id, r)| (d, id.to_owned(), r.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn session(app: &App) -> Option<&SessionState> {
    app.session_id().and_then(|id| app.state.session(id))
}

/// The id of the run selected in the run pane.
pub fn selected_run(app: &App) -> Option<String> {
    tree(app).get(app.run).map(|(_, id, _)| id.clone())
}

/// Draws the whole view.
/// Draws the whole view. `live`: on a terminal that takes keys (the
/// footer lists them); a still frame (`watch --once`, the demo) says how
/// to browse it instead.
pub fn render(frame: &mut Frame, app: &App, live: bool) {
    let area = frame.area();
    let wide = area.width >= 100;
    let bottom_height = if area.height >= 30 { 10 } else { 6 };
    let [header, body, bottom, footer] = Layout::vertical([
        Constraint::Length(if wide { 1 } else { 2 }),
        Constraint::Min(8),
        Constraint::Length(bottom_height),
        Constraint::Length(1),
    ])
    .areas(area);
    render_header(frame, app, header);
    if wide {
        let [left, right] =
            Layout::horizontal([Constraint::Length(30), Constraint::Min(40)]).areas(body);
        render_sessions(frame, app, left);
        render_session(frame, app, right);
    } else {
        render_session(frame, app, body);
    }
    if area.width >= 80 {
        let [f, t] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
            .areas(bottom);
        render_findings(frame, app, f);
        render_timeline(frame, app, t);
    } else {
        render_findings(frame, app, bottom);
    }
    render_footer(frame, app, footer, live);
}

fn render_header(frame: &mut Frame, app: &App, area: Rect) {
    let mode = match (app.cursor, app.paused) {
        (Some(i), _) => Span::styled(
            format!(" REPLAY {}/{} ", i + 1, app.entries.len()),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ),
        (None, true) => Span::styled(" PAUSED ", Style::new().fg(Color::Black).bg(Color::Yellow)),
        (None, false) if app.following => {
            Span::styled(" LIVE ", Style::new().fg(Color::Black).bg(Color::Green))
        }
        (None, false) => Span::styled(" END ", Style::new().fg(Color::Black).bg(Color::Gray)),
    };
    let errors = app
        .findings
        .iter()
        .filter(|f| f.finding.severity == Severity::Error)
        .count();
    let file = std::path::Path::new(&app.file)
        .file_name()
        .map_or(app.file.clone(), |n| n.to_string_lossy().into_owned());
    let spans = vec![
        Span::styled(" acp-ext watch ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!("{file}  ")),
        mode,
        Span::raw(format!(
            "  {} messages · {} findings ({errors} errors)",
            app.entries.len(),
            app.findings.len(),
        )),
    ];
    let mut lines = vec![Line::from(spans)];
    // Narrow: no session list, so the header names the selected session.
    if area.height > 1
        && let Some(id) = app.session_id()
    {
        lines.push(Line::from(format!(
            " session {}/{} {id}  (tab, ↑↓ on Sessions to switch)",
            app.session + 1,
            app.state.sessions().len()
        )));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn render_sessions(frame: &mut Frame, app: &App, area: Rect) {
    let items: Vec<ListItem> = app
        .state
        .sessions()
        .iter()
        .map(|(id, s)| {
            let mut spans = vec![Span::raw(shorten(id, 26))];
            if s.turns.running {
                spans.push(Span::styled(" ●", Style::new().fg(Color::Cyan)));
            }
            let mut lines = vec![Line::from(spans)];
            if let Some(t) = &s.title {
                lines.push(Line::styled(
                    format!("  {}", shorten(t, 25)),
                    Style::new().fg(Color::Gray),
                ));
            }
            ListItem::new(lines)
        })
        .collect();
    let title = format!("Sessions ({})", app.state.sessions().len());
    let list = List::new(items)
        .block(pane_block(app, Pane::Sessions, title))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶ ");
    let mut state = ListState::default().with_selected(Some(app.session));
    frame.render_stateful_widget(list, area, &mut state);
}

fn render_session(frame: &mut Frame, app: &App, area: Rect) {
    let Some(s) = session(app) else {
        let text = if app.entries.is_empty() {
            "Waiting for messages…"
        } else {
            "No session yet."
        };
        frame.render_widget(
            Paragraph::new(text).block(Block::bordered().title("Session")),
            area,
        );
        return;
    };
    let models = s.usage.totals.len();
    let windows: usize = app
        .state
        .rate_limits()
        .values()
        .map(|r| r.rate_limit.windows.len())
        .sum();
    let turns = u16::from(s.usage.turn_totals.turns > 0 || s.usage.turn_totals.quota_turns > 0);
    let context = u16::from(s.usage.context.is_some());
    let usage_height = if models == 0 && context == 0 && turns == 0 {
        0
    } else {
        let table = if models == 0 {
            0
        } else {
            models as u16 + u16::from(models > 1) + 1
        };
        (table + turns + context + 2).min(10)
    };
    let limits_height = if windows == 0 {
        0
    } else {
        (windows as u16 + 2).min(8)
    };
    let [summary, runs, usage, limits] = Layout::vertical([
        Constraint::Length(5),
        Constraint::Min(3),
        Constraint::Length(usage_height),
        Constraint::Length(limits_height),
    ])
    .areas(area);
    render_summary(frame, app, s, summary);
    render_runs(frame, app, runs);
    if usage_height > 0 {
        render_usage(frame, s, usage);
    }
    if limits_height > 0 {
        render_limits(frame, &app.state, limits);
    }
}

fn render_summary(frame: &mut Frame, app: &App, s: &SessionState, area: Rect) {
    let dim = Style::new().fg(Color::Gray);
    let title = match (&s.title, s.title_source) {
        (Some(t), Some(src)) => Line::from(vec![
            Span::styled("title     ", dim),
            Span::styled(t.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!("  ({})", serde_name(&src)), dim),
        ]),
        _ => Line::from(vec![
            Span::styled("title     ", dim),
            Span::styled("(untitled)", dim),
        ]),
    };
    let goal = match s.current_goal() {
        Some(g) => Line::from(vec![
            Span::styled("goal      ", dim),
            Span::styled(serde_name(&g.status), state_style("running")),
            Span::raw(format!("  {}", shorten(&g.objective, 60))),
        ]),
        None => Line::from(vec![
            Span::styled("goal      ", dim),
            Span::styled("none", dim),
        ]),
    };
    let activity = match (s.activity.shown(), &s.activity.unconfirmed) {
        (Some(level), Some(name)) => format!("{level} ({name})"),
        (Some(level), None) => level.to_owned(),
        (None, _) => "not reported".to_owned(),
    };
    let mut background = s
        .activity
        .background_task_count
        .map_or(String::new(), |n| format!(" · {n} background"));
    if let Some(by_type) = &s.activity.background {
        background.push_str(&format!(
            " · background: {}",
            crate::state::background_words(by_type)
        ));
    }
    let mut turns = format!(
        "{} prompt{}",
        s.turns.prompts,
        if s.turns.prompts == 1 { "" } else { "s" }
    );
    if s.turns.accepted > 0 {
        turns.push_str(&format!(" · {} accepted", s.turns.accepted));
    }
    if s.turns.running {
        turns.push_str(" · running");
    }
    if let Some(r) = &s.turns.last_stop_reason {
        turns.push_str(&format!(" · last stop {r}"));
    }
    let lines = vec![
        title,
        goal,
        Line::from(vec![
            Span::styled("activity  ", dim),
            Span::raw(format!("{activity}{background} · {turns}")),
        ]),
    ];
    let name = app.session_id().unwrap_or("");
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!("Session {name}"))),
        area,
    );
}

fn run_lines(
    depth: usize,
    id: &str,
    run: &RunState,
    expanded: bool,
    width: usize,
) -> Vec<Line<'static>> {
    let state = run.state_name().to_owned();
    let indent = "  ".repeat(depth);
    let marker = if expanded { "▾" } else { "▸" };
    let id = short_id(id);
    let id = id.as_str();
    let mut spans = vec![
        Span::raw(format!("{indent}{marker} {id} ")),
        Span::styled(state.clone(), state_style(&state)),
    ];
    if let Some(std) = &run.standard {
        if std.generations > 1 {
            spans.push(Span::raw(format!(" ×{}", std.generations)));
        }
        if let Some(r) = &std.stop_reason {
            spans.push(Span::styled(
                format!(" ({r})"),
                Style::new().fg(Color::Gray),
            ));
        }
    }
    if let Some(n) = run.name() {
        spans.push(Span::raw(format!("  {n}")));
    }
    if run.output_incomplete {
        spans.push(Span::styled(
            " (incomplete)",
            Style::new().fg(Color::Yellow),
        ));
    }
    let summary = run.progress.get("summary").and_then(|v| v.as_str());
    let last = match (summary, run.last_line()) {
        (Some(p), Some(l)) => Some(format!("{p} · {l}")),
        (Some(p), None) => Some(p.to_owned()),
        (None, l) => l.map(str::to_owned),
    };
    if let Some(l) = last {
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        let room = width.saturating_sub(used + 2).max(10);
        spans.push(Span::styled(
            format!("  {}", shorten(&l, room)),
            Style::new().fg(Color::Gray),
        ));
    }
    let mut lines = vec![Line::from(spans)];
    if expanded {
        let text_lines: Vec<&str> = run.text.lines().collect();
        let from = text_lines.len().saturating_sub(6);
        for l in &text_lines[from..] {
            lines.push(Line::styled(
                format!(
                    "{indent}    │ {}",
                    shorten(l, width.saturating_sub(indent.len() + 8))
                ),
                Style::new().fg(Color::Gray),
            ));
        }
        for (tool, call) in run.tool_calls().rev().take(4) {
            let status = call.get("status").and_then(|s| s.as_str()).unwrap_or("?");
            let title = call.get("title").and_then(|s| s.as_str()).unwrap_or("");
            lines.push(Line::styled(
                format!("{indent}    ⚙ {tool} {status} {}", shorten(title, 40)),
                Style::new().fg(Color::Gray),
            ));
        }
        if text_lines.is_empty() && run.tool_calls().len() == 0 {
            lines.push(Line::styled(
                format!("{indent}    (no output)"),
                Style::new().fg(Color::Gray),
            ));
        }
    }
    lines
}

/// The session's other work, one row each: tasks, compaction and retry,
/// the plan, the latest notices.
fn work_lines(s: &SessionState, width: usize) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::Gray);
    let mut lines = Vec::new();
    for (id, t) in &s.tasks {
        let what = t
            .task
            .description
            .as_deref()
            .or(t.title.as_deref())
            .unwrap_or("");
        let status = serde_name(&t.task.status);
        lines.push(Line::from(vec![
            Span::raw(format!("⧗ task {} ", shorten(id, 24))),
            Span::styled(status.clone(), state_style(&status)),
            Span::styled(
                format!(
                    " {}  {}",
                    serde_name(&t.task.kind),
                    shorten(what, width.saturating_sub(40).max(10))
                ),
                dim,
            ),
        ]));
    }
    for (id, a) in &s.activities {
        let status = a.status.clone().unwrap_or_else(|| "?".to_owned());
        let summary = a.summary.as_deref().map_or(String::new(), |t| {
            format!("  {}", shorten(t, width.saturating_sub(50).max(10)))
        });
        lines.push(Line::from(vec![
            Span::raw(format!("↻ {} {} ", serde_name(&a.kind), shorten(id, 16))),
            Span::styled(status.clone(), state_style(&status)),
            Span::styled(summary, dim),
        ]));
    }
    if let Some(plan) = &s.plan {
        let what = match plan.get("entries").and_then(|e| e.as_array()) {
            Some(e) => {
                let done = e
                    .iter()
                    .filter(|x| x.get("status").and_then(|s| s.as_str()) == Some("completed"))
                    .count();
                format!("{done}/{} entries done", e.len())
            }
            None => plan
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("plan")
                .to_owned(),
        };
        lines.push(Line::styled(format!("☰ plan  {what}"), dim));
    }
    for n in s.notices.iter().rev().take(3).rev() {
        let level = serde_name(&n.level);
        let style = match level.as_str() {
            "error" => Style::new().fg(Color::Red),
            "warning" => Style::new().fg(Color::Yellow),
            _ => dim,
        };
        lines.push(Line::styled(
            format!(
                "! {level}: {}",
                shorten(&n.message, width.saturating_sub(14).max(10))
            ),
            style,
        ));
    }
    lines
}

fn render_runs(frame: &mut Frame, app: &App, area: Rect) {
    let runs = tree(app);
    let width = area.width.saturating_sub(4) as usize;
    let mut items: Vec<ListItem> = runs
        .iter()
        .map(|(depth, id, run)| {
            ListItem::new(run_lines(*depth, id, run, app.expanded.contains(id), width))
        })
        .collect();
    let tasks = session(app).map_or(0, |s| s.tasks.len());
    if let Some(s) = session(app) {
        items.extend(work_lines(s, width).into_iter().map(ListItem::new));
    }
    let title = format!("Runs ({}) · tasks {tasks}", runs.len());
    if items.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "no subagent runs, tasks or activity",
                Style::new().fg(Color::Gray),
            ))
            .block(pane_block(app, Pane::Runs, title)),
            area,
        );
        return;
    }
    let list = List::new(items)
        .block(pane_block(app, Pane::Runs, title))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let selected = (app.focus == Pane::Runs).then_some(app.run);
    let mut state = ListState::default().with_selected(selected);
    frame.render_stateful_widget(list, area, &mut state);
}

/// The state's records on messages the checker found nothing in (the two
/// agree on what is wrong; these are the state's words for the rest), as
/// `(entry index, rule, message)`.
fn state_records(app: &App) -> Vec<(usize, String, String)> {
    let flagged: std::collections::HashSet<usize> =
        app.findings.iter().map(|f| f.message).collect();
    app.state
        .invalid()
        .filter_map(|r| {
            let i = app.entries.iter().position(|e| Some(e.line) == r.line)?;
            (!flagged.contains(&i)).then(|| (i, r.rule.clone(), r.message.clone()))
        })
        .collect()
}

fn render_findings(frame: &mut Frame, app: &App, area: Rect) {
    let visible = app.visible_findings();
    let width = area.width.saturating_sub(4) as usize;
    let records = if app.min_severity <= Severity::Warning {
        state_records(app)
    } else {
        Vec::new()
    };
    let record_items = records.iter().map(|(i, rule, message)| {
        ListItem::new(Line::from(vec![
            Span::styled("S ", Style::new().fg(Color::Yellow)),
            Span::raw(shorten(
                &format!("#{} {rule}  {message}", i + 1),
                width.saturating_sub(2),
            )),
        ]))
    });
    let items: Vec<ListItem> = visible
        .iter()
        .map(|f| {
            let sev = match f.finding.severity {
                Severity::Error => "E",
                Severity::Warning => "W",
                _ => "I",
            };
            let text = format!(
                "#{} {}  {}",
                f.message + 1,
                f.finding.rule,
                f.finding.message
            );
            ListItem::new(Line::from(vec![
                Span::styled(format!("{sev} "), severity_style(f.finding.severity)),
                Span::raw(shorten(&text, width.saturating_sub(2))),
            ]))
        })
        .chain(record_items)
        .collect();
    let filter = match app.min_severity {
        Severity::Info => "all",
        Severity::Warning => "warnings+",
        _ => "errors",
    };
    let title = format!("Findings ({}, {filter})", items.len());
    if items.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled("no findings", Style::new().fg(Color::Gray)))
                .block(pane_block(app, Pane::Findings, title)),
            area,
        );
        return;
    }
    let list = List::new(items)
        .block(pane_block(app, Pane::Findings, title))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    // Live and unfocused, the stream shows its newest findings.
    let selected = if app.focus == Pane::Findings {
        Some(app.finding)
    } else {
        visible.len().checked_sub(1)
    };
    let mut state = ListState::default().with_selected(selected);
    frame.render_stateful_widget(list, area, &mut state);
}

fn render_timeline(frame: &mut Frame, app: &App, area: Rect) {
    let rows = area.height.saturating_sub(2) as usize;
    let at = app
        .timeline
        .or(app.cursor)
        .unwrap_or(app.entries.len().saturating_sub(1));
    let start = (at + 1).saturating_sub(rows.max(1));
    let width = area.width.saturating_sub(4) as usize;
    let items: Vec<ListItem> = app
        .entries
        .iter()
        .enumerate()
        .skip(start)
        .take(rows)
        .map(|(i, e)| {
            let mark = if Some(i) == app.cursor { "▶" } else { " " };
            let dir = e.direction.as_str();
            let sid = e
                .session
                .as_deref()
                .map_or(String::new(), |s| format!(" {s}"));
            let text = shorten(&format!("{mark}#{} {dir} {}{sid}", i + 1, e.label), width);
            let style = if e.findings > 0 {
                Style::new().fg(Color::Yellow)
            } else {
                Style::new()
            };
            ListItem::new(Line::styled(text, style))
        })
        .collect();
    let list = List::new(items)
        .block(pane_block(app, Pane::Timeline, "Timeline".to_owned()))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let selected = app
        .timeline
        .filter(|_| app.focus == Pane::Timeline)
        .map(|i| i - start);
    let mut state = ListState::default().with_selected(selected);
    frame.render_stateful_widget(list, area, &mut state);
}

fn render_footer(frame: &mut Frame, app: &App, area: Rect, live: bool) {
    if !live {
        let line = Line::from(vec![
            Span::styled(
                "still frame".to_owned(),
                Style::new().fg(Color::Black).bg(Color::Gray),
            ),
            Span::raw(" `acp-ext watch FILE` on a terminal browses a transcript, live or recorded"),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let keys = [
        ("q", "quit"),
        ("tab", "pane"),
        ("↑↓", "move"),
        ("⏎", "open"),
        ("←→", "step"),
        ("n", "next finding"),
        ("f", "filter"),
        ("space", if app.paused { "resume" } else { "pause" }),
        ("end", "live"),
    ];
    let mut spans = Vec::new();
    for (k, what) in keys {
        spans.push(Span::styled(
            k.to_owned(),
            Style::new().fg(Color::Black).bg(Color::Gray),
        ));
        spans.push(Span::raw(format!(" {what}  ")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
