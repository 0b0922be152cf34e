//! The probe's report: for people (tables) and machines (`--json`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use acp_extension_core::capabilities::Feature;
use acp_extension_core::negotiation::{Advertisement, Side, initialize_capabilities};
use serde::Serialize;
use serde_json::Value;

use acp_extension_core::namespace::Namespace;

use super::ProbeOptions;
use crate::check::{Finding, Severity};
use crate::output::Style;

/// What the driver collected, turned into a [`ProbeReport`] at the end.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub initialize: Option<Value>,
    pub advertisement: Option<Advertisement>,
    pub session_id: Option<String>,
    pub prompts: Vec<PromptResult>,
    pub queries: Vec<QueryResult>,
    pub errors: Vec<String>,
    pub auth_required: Option<String>,
    /// Why the probe stopped before sending every requested prompt.
    pub stopped: Option<String>,
    /// The protocol version last asked for in `initialize`.
    pub protocol_asked: Option<u64>,
    /// What the probe found of the version negotiation: a refusal
    /// (`protocol-refused`) or another version than asked
    /// (`protocol-version`).
    pub protocol: Option<(Severity, &'static str, String)>,
}

/// One row of the extension table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExtensionRow {
    /// The feature key, such as `usage`.
    pub feature: String,
    /// Namespace it was read from (`ua` or `lody`; `ua` wins when both
    /// carry it).
    pub namespace: String,
    /// Every namespace that carries it (`["ua", "lody"]` when advertised
    /// under both).
    pub namespaces: Vec<String>,
    /// The advertised `version`, as sent.
    pub version: Value,
    /// The other keys of the advertisement (its options).
    pub options: Value,
    /// Whether it is a valid version-1 advertisement.
    pub valid: bool,
    /// What is wrong with it.
    pub problems: Vec<String>,
}

/// The outcome of one prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptResult {
    /// The prompt text.
    pub prompt: String,
    /// The turn's stop reason, when it ended normally.
    pub stop_reason: Option<String>,
    /// The error, when it did not.
    pub error: Option<String>,
    /// Why it was not sent at all (the probe stopped before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// How long the turn took.
    pub millis: u64,
    /// The agent's answer: the text of its `agent_message_chunk`s during
    /// the turn (only the `final_answer` phase when the agent tags phases),
    /// cut to [`ANSWER_CHARS`] characters. `None` when it sent no text.
    pub answer: Option<String>,
    /// `session/update` notifications during the turn, by `sessionUpdate`
    /// kind (`agent_message_chunk`, `tool_call`, …).
    pub updates: BTreeMap<String, u64>,
    /// Extension notifications (`_…` methods) during the turn, by method.
    pub extension_notifications: BTreeMap<String, u64>,
    /// `session/update`s of other sessions during the turn (a subagent's
    /// child session): not part of the answer or of `updates`.
    pub other_session_updates: u64,
}

/// How many characters of a prompt's answer the report keeps.
pub const ANSWER_CHARS: usize = 200;

/// What the agent sent during one turn: from its `session/prompt` request
/// to the response.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnTraffic {
    pub text: String,
    pub final_text: String,
    pub updates: BTreeMap<String, u64>,
    pub extension_notifications: BTreeMap<String, u64>,
    pub child_updates: u64,
}

/// The outcome of one query method the agent advertised.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct QueryResult {
    /// The method called.
    pub method: String,
    /// Whether it answered successfully.
    pub ok: bool,
    /// The error, if any.
    pub error: Option<String>,
    /// A steer's answered `outcome` (`injected`, `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Why it was not sent although the agent advertised it (a plain
    /// client sends no extension method).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// A finding with its severity, as reported.
pub type ReportFinding = Finding;

/// Everything the probe learned.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProbeReport {
    /// The agent command.
    pub command: Vec<String>,
    /// `agentInfo` from the initialize response.
    pub agent_info: Option<Value>,
    /// The negotiated protocol version (the agent's answer).
    pub protocol_version: Option<Value>,
    /// The version the probe asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_asked: Option<u64>,
    /// The standard capabilities (without `_meta`).
    pub standard_capabilities: Option<Value>,
    /// Auth methods the agent offers.
    pub auth_methods: Option<Value>,
    /// Other vendors' keys under `agentCapabilities._meta` (everything but
    /// `ua` and `lody`), such as `claudeCode`; `None` when there are none.
    pub vendor_meta: Option<Value>,
    /// The extension table.
    pub extensions: Vec<ExtensionRow>,
    /// The session opened, if any.
    pub session_id: Option<String>,
    /// Per-prompt results.
    pub prompts: Vec<PromptResult>,
    /// Query methods exercised.
    pub queries: Vec<QueryResult>,
    /// Every finding, from the advertisement and from the wire.
    pub findings: Vec<Finding>,
    /// The last lines of the agent's stderr (with `--quiet`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
}

impl ProbeReport {
    pub(crate) fn build(
        outcome: Outcome,
        wire_findings: Vec<Finding>,
        turns: Vec<TurnTraffic>,
        options: &ProbeOptions,
    ) -> Self {
        let init = outcome.initialize.as_ref();
        let mut standard = init
            .and_then(|i| initialize_capabilities(i, Side::Agent))
            .cloned();
        let mut vendor_meta = None;
        if let Some(Value::Object(m)) = standard.as_mut()
            && let Some(Value::Object(mut meta)) = m.shift_remove("_meta")
        {
            for ns in Namespace::ALL {
                meta.shift_remove(ns.key());
            }
            if !meta.is_empty() {
                vendor_meta = Some(Value::Object(meta));
            }
        }
        let mut prompts = outcome.prompts;
        // The probe sends its prompts one after another: the n-th turn on
        // the wire is the n-th prompt.
        for (p, t) in prompts.iter_mut().zip(turns) {
            let text = if t.final_text.is_empty() {
                t.text
            } else {
                t.final_text
            };
            p.answer = (!text.is_empty()).then(|| super::shorten(&text, ANSWER_CHARS));
            p.updates = t.updates;
            p.other_session_updates = t.child_updates;
            p.extension_notifications = t.extension_notifications;
        }
        let mut report = ProbeReport {
            command: Vec::new(),
            agent_info: init
                .and_then(|i| i.get("agentInfo").or_else(|| i.get("info")))
                .cloned(),
            protocol_version: init.and_then(|i| i.get("protocolVersion")).cloned(),
            protocol_asked: outcome.protocol_asked,
            standard_capabilities: standard,
            auth_methods: init.and_then(|i| i.get("authMethods")).cloned(),
            vendor_meta,
            extensions: Vec::new(),
            session_id: outcome.session_id,
            prompts,
            queries: outcome.queries,
            findings: Vec::new(),
            stderr_tail: Vec::new(),
        };
        if let Some(ad) = &outcome.advertisement {
            for f in &ad.features {
                let mut options = f.raw.clone();
                let version = options
                    .as_object_mut()
                    .and_then(|m| m.shift_remove("version"))
                    .unwrap_or(Value::Null);
                let meta = init
                    .and_then(|i| initialize_capabilities(i, Side::Agent))
                    .and_then(|c| c.get("_meta"))
                    .and_then(Value::as_object);
                let namespaces = Namespace::ALL
                    .iter()
                    .filter(|ns| {
                        meta.and_then(|m| m.get(ns.key()))
                            .and_then(|s| s.get(f.feature.key()))
                            .is_some_and(|v| !v.is_null())
                    })
                    .map(|ns| ns.key().to_owned())
                    .collect();
                report.extensions.push(ExtensionRow {
                    feature: f.feature.key().to_owned(),
                    namespace: f.namespace.key().to_owned(),
                    namespaces,
                    version,
                    options,
                    valid: f.parsed.is_ok(),
                    problems: f.violations().iter().map(ToString::to_string).collect(),
                });
            }
            for p in &ad.problems {
                report.push_finding(
                    Severity::Warning,
                    "advertisement",
                    &p.pointer,
                    p.message.clone(),
                );
            }
            for f in &ad.features {
                for v in f.violations() {
                    report.push_finding(
                        Severity::Error,
                        "advertisement-shape",
                        &v.pointer,
                        format!(
                            "{} is advertised but not supported: {}",
                            f.feature.key(),
                            v.message()
                        ),
                    );
                }
            }
        }
        if let Some((severity, rule, msg)) = outcome.protocol {
            report.push_finding(severity, rule, "", msg);
        }
        if let Some(msg) = outcome.auth_required {
            report.push_finding(Severity::Warning, "auth-required", "", msg);
        }
        for e in outcome.errors {
            report.push_finding(Severity::Error, "probe", "", e);
        }
        // Every requested prompt that was not sent, and why.
        let why = outcome
            .stopped
            .unwrap_or_else(|| "the connection ended first".to_owned());
        let sent = report.prompts.len();
        for p in options.prompts.iter().skip(sent) {
            report.push_finding(
                Severity::Error,
                "prompt-skipped",
                "",
                format!("prompt {p:?} was not sent: {why}"),
            );
            // Listed among the prompts too, as not sent.
            report.prompts.push(PromptResult {
                prompt: p.clone(),
                skipped: Some(why.clone()),
                ..PromptResult::default()
            });
        }
        for p in &report.prompts.clone() {
            if let Some(e) = &p.error {
                report.push_finding(
                    Severity::Error,
                    "probe-prompt",
                    "",
                    format!("prompt {:?} failed: {e}", p.prompt),
                );
            }
        }
        for q in &report.queries.clone() {
            if let Some(e) = &q.error {
                report.push_finding(
                    Severity::Error,
                    "probe-query",
                    "",
                    format!("{} failed: {e}", q.method),
                );
            }
        }
        report.findings.extend(wire_findings);
        report
    }

    /// Adds a finding.
    pub fn push_finding(
        &mut self,
        severity: Severity,
        rule: &'static str,
        path: &str,
        message: String,
    ) {
        self.findings
            .push(Finding::new(rule, severity, path, message));
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.has_findings_at_least(Severity::Error)
    }

    /// Whether a finding is at least as severe as `severity`.
    pub fn has_findings_at_least(&self, severity: Severity) -> bool {
        self.findings.iter().any(|f| f.severity >= severity)
    }

    /// Prints the report for people.
    pub fn print_human(&self, out: &mut impl Write, style: Style) -> io::Result<()> {
        writeln!(out, "{}", style.bold(&agent_line(self.agent_info.as_ref())))?;
        let asked = match self.protocol_asked {
            Some(v) if Some(&Value::from(v)) != self.protocol_version.as_ref() => {
                format!(" (asked {v})")
            }
            _ => String::new(),
        };
        writeln!(
            out,
            "Protocol version: {}{asked}",
            self.protocol_version
                .as_ref()
                .map_or("?".into(), Value::to_string)
        )?;
        if let Some(std) = &self.standard_capabilities {
            writeln!(out, "Standard capabilities: {std}")?;
        }
        if let Some(auth) = &self.auth_methods
            && auth.as_array().is_some_and(|a| !a.is_empty())
        {
            writeln!(out, "Auth methods: {auth}")?;
        }
        if let Some(vendor) = &self.vendor_meta {
            writeln!(out, "Vendor metadata: {vendor}")?;
        }
        writeln!(out)?;
        writeln!(out, "{}", style.bold("Extensions"))?;
        if self.extensions.is_empty() {
            writeln!(out, "  (none advertised)")?;
        } else {
            let w = self
                .extensions
                .iter()
                .map(|r| r.feature.len())
                .max()
                .unwrap_or(7)
                .max(7);
            let nw = self
                .extensions
                .iter()
                .map(|r| namespaces(r).len())
                .max()
                .unwrap_or(4)
                .max(4);
            writeln!(
                out,
                "  {:<w$}  {:<nw$}  {:<7}  options",
                "feature", "ns", "version"
            )?;
            for r in &self.extensions {
                let opts = match &r.options {
                    Value::Object(m) if m.is_empty() => String::new(),
                    v => v.to_string(),
                };
                let line = format!(
                    "  {:<w$}  {:<nw$}  {:<7}  {}",
                    r.feature,
                    namespaces(r),
                    r.version.to_string(),
                    opts
                );
                writeln!(out, "{}", if r.valid { line } else { style.bad(&line) })?;
                for p in &r.problems {
                    writeln!(out, "      {}", style.bad(p))?;
                }
            }
            let missing: Vec<&str> = Feature::ALL
                .iter()
                .filter(|f| {
                    f.side()
                        .allows(acp_extension_core::negotiation::Side::Agent)
                })
                .map(|f| f.key())
                .filter(|k| !self.extensions.iter().any(|r| r.feature == *k))
                .collect();
            if !missing.is_empty() {
                writeln!(
                    out,
                    "  {}",
                    style.dim(&format!("not advertised: {}", missing.join(", ")))
                )?;
            }
        }
        if let Some(s) = &self.session_id {
            writeln!(out)?;
            writeln!(out, "{} {s}", style.bold("Session:"))?;
            for p in &self.prompts {
                let how = match (&p.stop_reason, &p.error) {
                    (Some(r), _) => style.ok(r),
                    (None, Some(e)) => style.bad(e),
                    _ => "?".into(),
                };
                writeln!(out, "  prompt {:?} → {how} ({} ms)", p.prompt, p.millis)?;
                match &p.answer {
                    Some(a) => writeln!(out, "    answer: {:?}", a)?,
                    None => writeln!(out, "    answer: {}", style.dim("(no text)"))?,
                }
                let counts = |m: &BTreeMap<String, u64>| {
                    m.iter()
                        .map(|(k, n)| format!("{k} ×{n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                if !p.updates.is_empty() {
                    writeln!(out, "    updates: {}", counts(&p.updates))?;
                }
                if p.other_session_updates > 0 {
                    writeln!(
                        out,
                        "    other sessions' updates: {}",
                        p.other_session_updates
                    )?;
                }
                if !p.extension_notifications.is_empty() {
                    writeln!(
                        out,
                        "    extension notifications: {}",
                        counts(&p.extension_notifications)
                    )?;
                }
            }
            // One line per method and outcome, with how many times.
            let mut lines: Vec<(String, String, usize)> = Vec::new();
            for q in &self.queries {
                let how = match (&q.outcome, q.ok) {
                    _ if q.skipped.is_some() => {
                        style.dim(&format!("skipped: {}", q.skipped.as_deref().unwrap_or("")))
                    }
                    (Some(o), true) if o == "failed" => {
                        style.warn("failed (answered after its turn ended, or refused)")
                    }
                    (Some(o), true) => style.ok(o),
                    (None, true) => style.ok("ok"),
                    (_, false) => style.bad(q.error.as_deref().unwrap_or("failed")),
                };
                match lines
                    .iter_mut()
                    .find(|(m, h, _)| *m == q.method && *h == how)
                {
                    Some(line) => line.2 += 1,
                    None => lines.push((q.method.clone(), how, 1)),
                }
            }
            for (method, how, n) in lines {
                let times = if n > 1 {
                    format!(" ×{n}")
                } else {
                    String::new()
                };
                writeln!(out, "  {method} → {how}{times}")?;
            }
        }
        writeln!(out)?;
        let count = |s: Severity| self.findings.iter().filter(|f| f.severity == s).count();
        writeln!(
            out,
            "{}: {} errors, {} warnings, {} info",
            style.bold("Findings"),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info)
        )?;
        for f in &self.findings {
            writeln!(out, "  {}", crate::present::finding(f, style))?;
        }
        for l in &self.stderr_tail {
            writeln!(out, "  {}", style.dim(&format!("stderr: {l}")))?;
        }
        Ok(())
    }
}

/// The namespaces of a row as the table shows them: `ua, lody`.
fn namespaces(r: &ExtensionRow) -> String {
    if r.namespaces.is_empty() {
        r.namespace.clone()
    } else {
        r.namespaces.join(", ")
    }
}

/// `Agent: name (title) version v`, each part only when the agent sent it.
fn agent_line(info: Option<&Value>) -> String {
    let field = |k: &str| info.and_then(|i| i.get(k)).and_then(Value::as_str);
    let Some(name) = field("name").or(field("title")) else {
        return "Agent: (it sent no agentInfo)".to_owned();
    };
    let mut line = format!("Agent: {name}");
    if let Some(title) = field("title").filter(|t| *t != name) {
        line.push_str(&format!(" ({title})"));
    }
    if let Some(version) = field("version") {
        line.push_str(&format!(" version {version}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::agent_line;

    #[test]
    fn the_agent_line_names_only_what_the_agent_sent() {
        assert_eq!(agent_line(None), "Agent: (it sent no agentInfo)");
        assert_eq!(
            agent_line(Some(&json!({}))),
            "Agent: (it sent no agentInfo)"
        );
        assert_eq!(
            agent_line(Some(
                &json!({"name": "codex-acp", "title": "Codex", "version": "2.6.0"})
            )),
            "Agent: codex-acp (Codex) version 2.6.0"
        );
        assert_eq!(agent_line(Some(&json!({"name": "a"}))), "Agent: a");
        assert_eq!(
            agent_line(Some(&json!({"title": "T", "version": "1"}))),
            "Agent: T version 1"
        );
    }
}
