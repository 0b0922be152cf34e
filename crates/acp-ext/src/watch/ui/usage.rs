//! The usage and rate-limit panes: gauges, costs and reset countdowns.

use super::*;

/// A gauge as text, so that 91 % and 39 % differ on any terminal (and in a
/// plain-text frame): `█` for the used part, `░` for the rest.
pub(super) fn bar(ratio: f64, width: usize) -> String {
    let filled = ((ratio.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

pub(super) fn render_usage(frame: &mut Frame, s: &SessionState, area: Rect) {
    let turns = u16::from(s.usage.turn_totals.turns > 0 || s.usage.turn_totals.quota_turns > 0);
    let [table_area, turns_area, gauge_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(turns),
        Constraint::Length(u16::from(s.usage.context.is_some())),
    ])
    .areas(area.inner(ratatui::layout::Margin::new(1, 1)));
    frame.render_widget(Block::bordered().title("Usage"), area);
    if turns > 0 {
        let t = &s.usage.turn_totals;
        let total = t
            .usage
            .get("totalTokens")
            .or_else(|| t.quota.get("totalTokens"))
            .map_or(String::new(), |n| format!(" · {n} tokens"));
        let quota = if t.quota.is_empty() {
            String::new()
        } else {
            let n = t.quota_models.len().max(1);
            format!(" · quota {n} model{}", if n == 1 { "" } else { "s" })
        };
        frame.render_widget(
            Paragraph::new(Line::styled(
                {
                    // Turns that reported usage, or else a quota.
                    let n = t.turns.max(t.quota_turns);
                    format!(
                        "turn usage {n} turn{}{total}{quota}",
                        if n == 1 { "" } else { "s" }
                    )
                },
                Style::new().fg(Color::Gray),
            )),
            turns_area,
        );
    }
    let header = Row::new([
        "model",
        "input",
        "output",
        "cache read",
        "reasoning",
        "cost",
    ])
    .style(Style::new().fg(Color::Gray));
    let mut models: Vec<(String, &acp_extension_core::usage::ModelUsage, Style)> = s
        .usage
        .totals
        .iter()
        .map(|(m, u)| (m.clone(), u, Style::new()))
        .collect();
    // The session's total over every model and scope.
    if models.len() > 1
        && let Some(total) = &s.usage.total
    {
        models.push((
            "total".to_owned(),
            total,
            Style::new().add_modifier(Modifier::BOLD),
        ));
    }
    let rows: Vec<Row> = models
        .into_iter()
        .map(|(model, u, style)| {
            Row::new(vec![
                Cell::from(model),
                Cell::from(u.input_tokens.get().to_string()),
                Cell::from(u.output_tokens.get().to_string()),
                Cell::from(u.cache_read_input_tokens.get().to_string()),
                Cell::from(u.reasoning_output_tokens.map_or(0, |c| c.get()).to_string()),
                Cell::from(
                    u.cost_usd
                        .map_or("unknown".to_owned(), |c| format!("${:.4}", c.get())),
                ),
            ])
            .style(style)
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Min(14),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(11),
            Constraint::Length(10),
            Constraint::Length(10),
        ],
    )
    .header(header);
    frame.render_widget(table, table_area);
    if let Some(c) = &s.usage.context {
        let ratio = if c.size == 0 {
            0.0
        } else {
            (c.used as f64 / c.size as f64).clamp(0.0, 1.0)
        };
        let cost = c.cost.as_ref().map_or(String::new(), |c| {
            let amount = c.get("amount").and_then(|a| a.as_f64()).unwrap_or(0.0);
            format!(" · cost ${amount:.4}")
        });
        let label = format!(
            "context {} / {} {:.0}%{cost} ",
            c.used,
            c.size,
            ratio * 100.0
        );
        let room = (gauge_area.width as usize)
            .saturating_sub(label.chars().count())
            .min(30);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::raw(label),
                Span::styled(bar(ratio, room), Style::new().fg(Color::Cyan)),
            ])),
            gauge_area,
        );
    }
}

pub(super) fn countdown(reset: f64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let left = (reset - now).max(0.0) as u64;
    match left {
        0 => "reset due".to_owned(),
        s if s >= 86_400 => format!("resets in {}d {}h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("resets in {}h {:02}m", s / 3600, s % 3600 / 60),
        s => format!("resets in {}m {:02}s", s / 60, s % 60),
    }
}

pub(super) fn window_name(seconds: Option<f64>) -> String {
    let Some(s) = seconds.map(|s| s as u64) else {
        return "?".to_owned();
    };
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

pub(super) fn render_limits(frame: &mut Frame, state: &ConnectionState, area: Rect) {
    frame.render_widget(Block::bordered().title("Rate limits"), area);
    let inner = area.inner(ratatui::layout::Margin::new(1, 1));
    let mut y = inner.y;
    for (id, entry) in state.rate_limits() {
        for w in &entry.rate_limit.windows {
            if y >= inner.y + inner.height {
                return;
            }
            let used = w.used_percent.get();
            let colour = if used >= 90.0 {
                Color::Red
            } else if used >= 70.0 {
                Color::Yellow
            } else {
                Color::Green
            };
            let reset = w
                .resets_at_epoch_seconds
                .map_or(String::new(), |t| format!(" · {}", countdown(t.get())));
            let stale = if entry.stale { " (stale)" } else { "" };
            let label = format!(
                "{id} {} {used:.0}%{reset}{stale} ",
                window_name(w.window_duration_seconds.map(|d| d.get()))
            );
            let room = (inner.width as usize)
                .saturating_sub(label.chars().count())
                .min(30);
            frame.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::raw(label),
                    Span::styled(bar(used / 100.0, room), Style::new().fg(colour)),
                ])),
                Rect::new(inner.x, y, inner.width, 1),
            );
            y += 1;
        }
    }
}
