//! How findings and states read for people: the words every printer
//! shares (`check`'s report, `probe`'s, the tap's stderr, `state`'s text
//! and `watch`'s panes), so that a severity, a finding, a run id, a state
//! name or a duration reads the same everywhere.

use serde_json::Value;

use crate::finding::{Finding, Severity};
use crate::output::Style;

/// A severity as a word, coloured (`error`, `warning`, `info`).
pub fn severity(severity: Severity, style: Style) -> String {
    match severity {
        Severity::Error => style.bad("error"),
        Severity::Warning => style.warn("warning"),
        _ => style.accent("info"),
    }
}

/// A JSON pointer for people: `(root)` for the whole message.
pub fn pointer(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

/// One finding on one line: `error [rule] at /pointer: message` (no
/// pointer for the whole message).
pub fn finding(f: &Finding, style: Style) -> String {
    let at = if f.path.is_empty() {
        String::new()
    } else {
        format!(" at {}", f.path)
    };
    format!(
        "{} [{}]{at}: {}",
        severity(f.severity, style),
        f.rule,
        f.message
    )
}

/// A value's serde name (`in_progress`, `completed`, …).
pub fn serde_name(v: &impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// A run id short enough to leave its state and name on the row: codex's
/// child session ids run to about 85 characters; the start and the end
/// are what tell two apart.
pub fn short_id(id: &str) -> String {
    let n = id.chars().count();
    if n <= 32 {
        return id.to_owned();
    }
    let head: String = id.chars().take(10).collect();
    let tail: String = id.chars().skip(n - 20).collect();
    format!("{head}…{tail}")
}

/// `s` on one line, cut to `max` characters with `…`.
pub fn shorten(s: &str, max: usize) -> String {
    let one_line = s.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// A window length: `5h`, `7d`, `90s`.
pub fn duration(secs: f64) -> String {
    let s = secs as u64;
    match s {
        s if s >= 86400 && s % 86400 == 0 => format!("{}d", s / 86400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(18000.0), "5h");
        assert_eq!(duration(604800.0), "7d");
        assert_eq!(duration(90.0), "90s");
    }

    #[test]
    fn findings_read_the_same_everywhere() {
        let f = Finding::new("shape", Severity::Error, "/params/x", "must be a string");
        assert_eq!(
            finding(&f, Style::plain()),
            "error [shape] at /params/x: must be a string"
        );
        let whole = Finding::new("not-json", Severity::Warning, "", "not JSON");
        assert_eq!(
            finding(&whole, Style::plain()),
            "warning [not-json]: not JSON"
        );
        assert_eq!(pointer(""), "(root)");
    }

    #[test]
    fn long_ids_keep_their_ends() {
        let id = "019a0000-0000-7000-8000-000000000000-child-session-of-a-long-codex-thread";
        let short = short_id(id);
        assert!(short.starts_with("019a0000-0") && short.ends_with("a-long-codex-thread"));
        assert_eq!(short.chars().count(), 31);
        assert_eq!(shorten("a\nb", 10), "a b");
        assert_eq!(shorten("abcdef", 4), "abc…");
    }
}
