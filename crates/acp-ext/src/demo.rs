//! `acp-ext demo`: the reference agent (`acp-ext serve`, started from the
//! current executable over real pipes) probed with every scripted command,
//! shown as a readable transcript with each message marked valid or not,
//! and a final table of the features exercised. Needs no network and no
//! configuration.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::time::Duration;

use acp_extension_core::capabilities::Feature;
use acp_extension_core::methods::{ContractMethod, contract_method, method_info};
use acp_extension_core::namespace::{self, split_method};
use serde_json::Value;

use crate::check::{Direction, Severity};
use crate::output::Style;
use crate::probe::{self, ProbeOptions, ProbeReport, ProtocolChoice, WireEvent};

/// The prompts the demo runs, one per scripted behaviour of `serve`.
pub const SCRIPT: &[&str] = &[
    "Summarize the repository layout",
    "/tool",
    "/subagents 2",
    "/background 0.1",
    "/schedule 0.1",
    "/compact",
    "/goal set Ship the parser rewrite",
    "/ask",
    "/title",
    "/limits",
    "/app",
    "/slow 0.4",
];

/// Which features the traffic exercised.
#[derive(Debug, Default, Clone)]
pub struct Exercised {
    seen: BTreeSet<&'static str>,
}

impl Exercised {
    /// Records the features one message exercises.
    pub fn observe(&mut self, message: &Value) {
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            if let Some(info) = split_method(method).and_then(|(_, path)| method_info(path)) {
                self.seen.insert(info.feature.key());
            }
            if method == "elicitation/create" {
                self.seen.insert(Feature::Elicitation.key());
            }
        }
        self.walk(message);
    }

    fn walk(&mut self, v: &Value) {
        match v {
            Value::Object(obj) => {
                if let Some(Value::Object(meta)) = obj.get("_meta") {
                    for ns in namespace::Namespace::ALL {
                        if let Some(section) = namespace::section(meta, ns) {
                            for key in section.keys() {
                                let f = match key.as_str() {
                                    "task" => Some(Feature::Tasks),
                                    "activity" => Some(Feature::Compaction),
                                    "goal" | "goalControl" => Some(Feature::Goal),
                                    "titleSource" => Some(Feature::SessionTitle),
                                    "usageScopeId" => Some(Feature::Usage),
                                    "forkAtTurn" => Some(Feature::ForkAtTurn),
                                    "worktreeProject" => Some(Feature::WorktreeProject),
                                    "sessionConfig" => Some(Feature::SessionConfig),
                                    "steer" => Some(Feature::Steering),
                                    "mcpApp" => Some(Feature::McpApps),
                                    "elicitation" => Some(Feature::Elicitation),
                                    _ => None,
                                };
                                if let Some(f) = f {
                                    self.seen.insert(f.key());
                                }
                            }
                        }
                    }
                }
                // Capabilities advertise features; only traffic exercises them.
                for (k, child) in obj {
                    if k != "_meta" && k != "agentCapabilities" && k != "clientCapabilities" {
                        self.walk(child);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.walk(i)),
            _ => {}
        }
    }

    /// Whether traffic for `feature` was seen.
    pub fn contains(&self, feature: Feature) -> bool {
        self.seen.contains(feature.key())
    }
}

/// One line of the transcript for people.
pub fn describe(event: &WireEvent) -> String {
    let Some(m) = &event.message else {
        return format!("(not JSON) {}", truncate(&event.raw, 60));
    };
    let mut s = if let Some(method) = m.get("method").and_then(Value::as_str) {
        let mut s = method.to_owned();
        if let Some(update) = m
            .pointer("/params/update/sessionUpdate")
            .and_then(Value::as_str)
        {
            s.push(' ');
            s.push_str(update);
        }
        if let Some(t) = m.pointer("/params/type").and_then(Value::as_str)
            && contract_method(method) == Some(ContractMethod::SubagentEvent)
        {
            let run = m
                .pointer("/params/runId")
                .and_then(Value::as_str)
                .unwrap_or("?");
            s.push_str(&format!(" {run} {t}"));
            if let Some(state) = m.pointer("/params/snapshot/state").and_then(Value::as_str) {
                s.push_str(&format!(" ({state})"));
            }
        }
        if let Some(state) = m.pointer("/params/state").and_then(Value::as_str)
            && method.ends_with("activity_update")
        {
            let n = m
                .pointer("/params/backgroundTaskCount")
                .map_or(String::new(), Value::to_string);
            s.push_str(&format!(" {state}/{n}"));
        }
        if let Some(id) = m.get("id") {
            s = format!("{s} #{}", short_id(id));
        }
        s
    } else if let Some(err) = m.get("error") {
        let id = m.get("id").map_or("?".into(), short_id);
        let msg = err.get("message").and_then(Value::as_str).unwrap_or("");
        format!("error #{id}: {}", truncate(msg, 60))
    } else {
        let id = m.get("id").map_or("?".into(), short_id);
        let mut s = format!("result #{id}");
        if let Some(r) = m.pointer("/result/stopReason").and_then(Value::as_str) {
            s.push_str(&format!(" stopReason={r}"));
        }
        s
    };
    let keys = meta_keys(m);
    if !keys.is_empty() {
        s.push_str(&format!("  [{}]", keys.join(", ")));
    }
    s
}

fn meta_keys(m: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(obj) => {
                if let Some(Value::Object(meta)) = obj.get("_meta") {
                    for ns in namespace::Namespace::ALL {
                        if let Some(section) = namespace::section(meta, ns) {
                            for k in section.keys() {
                                let k = format!("{}.{k}", ns.key());
                                if !out.contains(&k) {
                                    out.push(k);
                                }
                            }
                        }
                    }
                }
                for (k, c) in obj {
                    if k != "_meta" && k != "agentCapabilities" && k != "clientCapabilities" {
                        walk(c, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(m, &mut out);
    out
}

/// A request id for people: numbers as they are, long strings (the SDK
/// uses UUIDs) cut to eight characters.
fn short_id(id: &Value) -> String {
    match id {
        Value::String(s) => s.chars().take(8).collect(),
        other => other.to_string(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// `program` relative to the current directory when it lies below it (the
/// demo's transcript shows no checkout's absolute path).
fn relative_to_here(program: &str) -> String {
    let path = std::path::Path::new(program);
    std::env::current_dir()
        .ok()
        .and_then(|here| {
            path.strip_prefix(here)
                .ok()
                .map(|p| p.display().to_string())
        })
        .unwrap_or_else(|| program.to_owned())
}

/// Runs the demo against `agent` (program and arguments; normally the
/// current executable with `serve`), asking for ACP `protocol`, printing to
/// `out`.
pub async fn run(
    agent: Vec<String>,
    protocol: ProtocolChoice,
    out: &mut (impl Write + Send),
    style: Style,
    all_traffic: bool,
) -> anyhow::Result<ProbeReport> {
    let (tx, rx) = std::sync::mpsc::channel::<WireEvent>();
    let options = SCRIPT.iter().fold(
        ProbeOptions::default()
            .quiet(true)
            .protocol(protocol)
            .timeout(Duration::from_secs(10)),
        |o, p| o.prompt(*p),
    );
    writeln!(
        out,
        "{}",
        style.bold("ACP Extension Core demo: acp-ext probe ⇄ acp-ext serve")
    )?;
    let shown: Vec<String> = agent
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                relative_to_here(a)
            } else {
                a.clone()
            }
        })
        .collect();
    writeln!(out, "{}", style.dim(&format!("agent: {}", shown.join(" "))))?;
    writeln!(out)?;
    let printer = {
        std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut exercised = Exercised::default();
            // The traffic as `tap --record` writes it, for the closing
            // frame of what a client folds from it.
            let mut record = String::new();
            // Listed: every message with `--traffic`; else the first
            // turn's (up to its prompt's answer) and any with a finding.
            let mut first_turn = true;
            let mut left_out = 0usize;
            for e in rx {
                let shown = all_traffic || first_turn || !e.findings.is_empty();
                // The first turn ends at its answer's stop reason (v1) or
                // at its idle `state_update`'s (v2).
                if e.message.as_ref().is_some_and(|m| {
                    m.get("result").and_then(|r| r.get("stopReason")).is_some()
                        || m.pointer("/params/update/state") == Some(&Value::from("idle"))
                            && m.pointer("/params/update/stopReason").is_some()
                }) {
                    first_turn = false;
                }
                if let Some(m) = &e.message {
                    exercised.observe(m);
                    let dir = match e.direction {
                        Direction::ClientToAgent => "c2a",
                        _ => "a2c",
                    };
                    record.push_str(
                        &serde_json::json!({"dir": dir, "t": e.elapsed.as_secs_f64(), "msg": m})
                            .to_string(),
                    );
                    record.push('\n');
                }
                if shown {
                    lines.push(render(&e, style));
                } else {
                    left_out += 1;
                }
            }
            if left_out > 0 {
                lines.push(style.dim(&format!(
                    "  … {left_out} more messages, none with a finding (`acp-ext demo --traffic` lists every one)"
                )));
            }
            (lines, exercised, record)
        })
    };
    let observer: probe::OnWire = Box::new(move |e: &WireEvent| {
        let _ = tx.send(e.clone());
    });
    let report = probe::run_observed(agent, options, Some(observer)).await?;
    let (lines, exercised, record) = printer
        .join()
        .map_err(|_| anyhow::anyhow!("printer thread panicked"))?;
    for l in lines {
        writeln!(out, "{l}")?;
    }
    writeln!(out)?;
    report.print_human(out, style)?;
    writeln!(out)?;
    writeln!(out, "{}", style.bold("Features exercised"))?;
    for f in Feature::ALL {
        let advertised = report
            .extensions
            .iter()
            .any(|r| r.feature == f.key() && r.valid);
        let seen = exercised.contains(f);
        let mark = match (advertised || f == Feature::Elicitation, seen) {
            (_, true) => style.ok("✓ exercised"),
            (true, false) => style.warn("· advertised, not exercised"),
            (false, false) => style.dim("– not advertised"),
        };
        writeln!(out, "  {:<16} {mark}", f.key())?;
    }
    // What the library is for: the state a client folds from this run,
    // as `acp-ext watch --once` draws it.
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("What a client folds from it (acp-ext watch --once)")
    )?;
    let app = crate::watch::App::from_reader(
        "demo",
        record.as_bytes(),
        crate::check::input::Format::Tap,
    )?;
    write!(out, "{}", crate::watch::frame_text(&app, 100, 40))?;
    writeln!(out)?;
    writeln!(out, "{}", style.bold("Next"))?;
    for (command, what) in [
        (
            "acp-ext probe --session --prompt hi -- YOUR_AGENT",
            "the same run against your agent",
        ),
        (
            "acp-ext tap --record run.jsonl -- YOUR_AGENT",
            "record a client's session with it",
        ),
        (
            "acp-ext check run.jsonl",
            "lint a recording (`acp-ext state`, `watch` fold it)",
        ),
        (
            "crates/acp-extension-core/examples/agent.rs",
            "an adapter on the library, for Core, standard and plain clients",
        ),
    ] {
        writeln!(
            out,
            "  {}  {}",
            style.accent(&format!("{command:<49}")),
            style.dim(what)
        )?;
    }
    Ok(report)
}

fn render(e: &WireEvent, style: Style) -> String {
    let (arrow, who) = match e.direction {
        Direction::ClientToAgent => (style.accent("→"), "client"),
        Direction::AgentToClient => (style.accent("←"), "agent "),
        _ => ("·".into(), "?     "),
    };
    let worst = e.findings.iter().map(|f| f.severity).max();
    let mark = match worst {
        Some(Severity::Error) => style.bad("✗"),
        Some(Severity::Warning) => style.warn("!"),
        _ => style.ok("✓"),
    };
    let mut line = format!(
        "{} {arrow} {who} {mark} {}",
        style.dim(&format!("{:>7.3}s", e.elapsed.as_secs_f64())),
        describe(e)
    );
    for f in &e.findings {
        line.push_str(&format!(
            "\n             {} [{}] {} {}",
            style.dim("↳"),
            f.rule,
            f.path,
            f.message
        ));
    }
    line
}

/// The command that starts the embedded reference agent.
pub fn serve_command() -> io::Result<Vec<String>> {
    let exe = std::env::current_exe()?;
    // Plain `sess-N` ids: the demo's transcript reads the same every run.
    Ok(vec![
        exe.to_string_lossy().into_owned(),
        "serve".into(),
        "--session-ids".into(),
        "counter".into(),
    ])
}
