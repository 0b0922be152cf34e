//! `acp-ext probe` and `acp-ext demo` against real child processes: the
//! embedded reference agent (with `--only` subsets) and, when installed, a
//! real ACP agent binary from the npm registry.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use acp_ext::check::Severity;
use acp_ext::probe::{self, ProbeOptions};

const EXE: &str = env!("CARGO_BIN_EXE_acp-ext");

fn serve(args: &[&str]) -> Vec<String> {
    let mut v = vec![EXE.to_string(), "serve".to_string()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

fn features(report: &probe::ProbeReport) -> Vec<&str> {
    report
        .extensions
        .iter()
        .map(|r| r.feature.as_str())
        .collect()
}

#[tokio::test]
async fn probe_reads_every_extension_of_the_reference_agent() {
    let report = probe::run(serve(&[]), ProbeOptions::default().quiet(true))
        .await
        .unwrap();
    let info = report.agent_info.as_ref().unwrap();
    assert_eq!(info["name"], "acp-ext-serve");
    assert_eq!(report.protocol_version, Some(serde_json::json!(1)));
    for f in [
        "subagentEvents",
        "usage",
        "rateLimits",
        "steering",
        "goal",
        "sessionActivity",
        "worktreeProject",
    ] {
        assert!(
            features(&report).contains(&f),
            "{f} missing from {:?}",
            features(&report)
        );
    }
    assert!(
        report.extensions.iter().all(|r| r.valid && r.version == 1),
        "{:#?}",
        report.extensions
    );
    assert!(!report.has_errors(), "{:#?}", report.findings);
}

#[tokio::test]
async fn a_standard_client_sees_the_reference_agents_runs_as_subagent_updates() {
    let options = ProbeOptions::default()
        .quiet(true)
        .client(probe::ClientDialect::Standard)
        .prompt("/subagents 2")
        .prompt("/slow 0.5");
    let report = probe::run(serve(&[]), options).await.unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let runs = &report.prompts[0];
    assert_eq!(runs.stop_reason.as_deref(), Some("end_turn"));
    // Announced and ended on the root; the output on the child sessions.
    assert_eq!(runs.updates.get("subagent_update"), Some(&4), "{runs:#?}");
    assert!(runs.other_session_updates >= 2, "{runs:#?}");
    assert!(runs.extension_notifications.is_empty(), "{runs:#?}");
    // The steer went by `_session/steering` into the slow turn.
    let steer = report
        .queries
        .iter()
        .find(|q| q.method == "_session/steering")
        .expect("a standard steer");
    assert_eq!(steer.outcome.as_deref(), Some("injected"));
    assert!(
        report.prompts[1]
            .answer
            .as_deref()
            .is_some_and(|a| a.contains("steered by")),
        "{:#?}",
        report.prompts[1]
    );
}

#[tokio::test]
async fn only_subsets_are_reported_and_queries_follow_the_advertisement() {
    let options = ProbeOptions::default().quiet(true).prompt("hello");
    let report = probe::run(
        serve(&["--only", "usage,rateLimits", "--namespace", "lody"]),
        options,
    )
    .await
    .unwrap();
    assert_eq!(features(&report), vec!["usage", "rateLimits"]);
    assert!(report.extensions.iter().all(|r| r.namespace == "lody"));
    assert_eq!(report.prompts.len(), 1);
    assert_eq!(report.prompts[0].stop_reason.as_deref(), Some("end_turn"));
    // rateLimits has `query`, so probe calls rate_limits/get; subagents/list is not advertised.
    let methods: Vec<&str> = report.queries.iter().map(|q| q.method.as_str()).collect();
    assert_eq!(methods, vec!["_lody/rate_limits/get"]);
    assert!(report.queries.iter().all(|q| q.ok));
    assert!(!report.has_errors(), "{:#?}", report.findings);
}

/// A plain client sends nothing of the extensions, although the agent
/// advertises every query: each is reported as skipped, and why, and the
/// wire (recorded by a tap between them) holds no extension method and no
/// extension `_meta` from the client.
#[tokio::test]
async fn a_plain_client_sends_no_extension_method_and_names_what_it_skipped() {
    let record =
        std::env::temp_dir().join(format!("acp-ext-probe-plain-{}.jsonl", std::process::id()));
    let agent = vec![
        EXE.to_string(),
        "tap".into(),
        "--record".into(),
        record.display().to_string(),
        "--".into(),
        EXE.to_string(),
        "serve".into(),
    ];
    let options = ProbeOptions::default()
        .quiet(true)
        .client(probe::ClientDialect::Plain)
        .prompt("hello")
        .prompt("/subagents 1");
    let report = probe::run(agent, options).await.unwrap();
    assert!(!report.has_errors(), "{:#?}", report.findings);
    let skipped: Vec<(&str, Option<&str>)> = report
        .queries
        .iter()
        .map(|q| (q.method.as_str(), q.skipped.as_deref()))
        .collect();
    let why = Some("a plain client sends no extension method");
    // Named as a client without an advertisement would write them.
    for method in [
        "_lody/rate_limits/get",
        "_lody/subagents/list",
        "_lody/session/history/read",
        "session/fork (_meta.forkAtTurn)",
    ] {
        assert!(skipped.contains(&(method, why)), "{method}: {skipped:?}");
    }
    assert!(
        human(&report).contains("skipped: a plain client sends no extension method"),
        "{}",
        human(&report)
    );
    let text = std::fs::read_to_string(&record).unwrap();
    let _ = std::fs::remove_file(&record);
    let mut sent = 0;
    for line in text.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        if entry["dir"] != "c2a" {
            continue;
        }
        sent += 1;
        let msg = &entry["msg"];
        let method = msg["method"].as_str().unwrap_or("");
        assert!(
            !method.starts_with("_ua/") && !method.starts_with("_lody/"),
            "the plain client sent {msg}"
        );
        for ns in ["ua", "lody"] {
            assert!(msg["params"]["_meta"].get(ns).is_none(), "{msg}");
            assert!(
                msg["params"]["clientCapabilities"]["_meta"]
                    .get(ns)
                    .is_none(),
                "{msg}"
            );
        }
    }
    assert!(sent >= 4, "{text}");
}

#[tokio::test]
async fn a_failing_turn_and_a_timeout_are_findings_not_crashes() {
    let options = ProbeOptions::default().quiet(true).prompt("/fail");
    let report = probe::run(serve(&[]), options).await.unwrap();
    assert!(report.has_errors());

    let options = ProbeOptions::default()
        .quiet(true)
        .timeout(Duration::from_millis(300))
        .prompt("/slow 5");
    let report = probe::run(serve(&[]), options).await.unwrap();
    assert_eq!(
        report.prompts[0].error.as_deref(),
        Some(
            "timed out: no answer to session/prompt within 0.3 s (--timeout SECONDS raises the limit)"
        )
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Error && f.rule == "probe-prompt")
    );
}

#[tokio::test]
async fn an_agent_that_never_answers_times_out_and_is_reaped() {
    let options = ProbeOptions::default()
        .quiet(true)
        .timeout(Duration::from_millis(300));
    let report = probe::run(["sleep", "30"], options).await.unwrap();
    assert!(report.agent_info.is_none());
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.message.contains("initialize failed: timed out")),
        "{:#?}",
        report.findings
    );
}

#[test]
fn probe_json_report_and_exit_code() {
    let out = Command::new(EXE)
        .args([
            "probe", "--json", "--quiet", "--prompt", "hi", "--", EXE, "serve",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["agentInfo"]["name"], "acp-ext-serve");
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn");
    assert!(report["extensions"].as_array().unwrap().len() >= 10);
}

#[test]
fn demo_is_the_default_command_and_exercises_every_advertised_feature() {
    let out = Command::new(EXE).env("NO_COLOR", "1").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Features exercised"));
    // First contact fits a screenful or two: the first turn's traffic, a
    // count of the rest, the report, the folded state as a still frame
    // (no key legend that does nothing), and what to run next.
    assert!(text.lines().count() < 200, "{text}");
    assert!(text.contains("more messages, none with a finding (`acp-ext demo --traffic`"));
    assert!(!text.contains("q quit"), "{text}");
    assert!(text.contains("still frame"), "{text}");
    let next = text.split("\nNext\n").nth(1).expect("a Next section");
    assert!(
        next.contains("acp-ext probe --session --prompt hi -- YOUR_AGENT"),
        "{next}"
    );
    // `--traffic` lists every message: each subagent event among them.
    let all = Command::new(EXE)
        .args(["demo", "--traffic"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(!all.contains("more messages, none with a finding"));
    assert!(
        all.lines()
            .filter(|l| l.contains("_lody/subagents/event"))
            .count()
            >= 10,
        "{all}"
    );
    assert!(!text.contains("advertised, not exercised"), "{text}");
    assert!(
        !text.contains(" ✗ "),
        "a message was marked invalid:\n{text}"
    );
    for f in [
        "subagentEvents",
        "steering",
        "goal",
        "elicitation",
        "forkAtTurn",
    ] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(f) && l.contains("exercised"))
            .unwrap_or("");
        assert!(line.contains("✓"), "{f}: {line:?}");
    }
}

/// `demo --protocol 2`: the same script over ACP v2, every feature
/// exercised, nothing invalid, and the first turn ends at its idle.
#[test]
fn the_demo_over_v2_exercises_every_feature() {
    let out = Command::new(EXE)
        .args(["demo", "--protocol", "2"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Protocol version: 2\n"), "{text}");
    assert!(text.contains("session/update state_update"), "{text}");
    assert!(
        text.contains("more messages, none with a finding"),
        "{text}"
    );
    assert!(
        !text.contains(" ✗ "),
        "a message was marked invalid:\n{text}"
    );
    let features = text.split("Features exercised\n").nth(1).unwrap();
    let rows: Vec<&str> = features.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 16, "{features}");
    assert!(rows.iter().all(|l| l.contains("✓ exercised")), "{features}");
}

/// A real ACP agent from the npm registry (`.ci/run` installs it, sets
/// `ACP_EXT_REAL_AGENT` and runs this with `--ignored`). Without
/// credentials it still answers `initialize`; `session/new` must come back
/// as a clear auth finding.
#[tokio::test]
#[ignore = "needs a real ACP agent from npm (ACP_EXT_REAL_AGENT; .ci/run runs it with --ignored)"]
async fn probe_a_real_agent_from_npm() {
    let agent = std::env::var_os("ACP_EXT_REAL_AGENT").unwrap_or_else(|| {
        panic!("cannot run: ACP_EXT_REAL_AGENT is not set: it names the agent's executable (.ci/run installs one from npm)")
    });
    let agent = agent.to_string_lossy().into_owned();
    let options = ProbeOptions::default()
        .quiet(true)
        .timeout(Duration::from_secs(20))
        .prompt("hello");
    let report = probe::run([agent.clone()], options).await.unwrap();
    let info = report
        .agent_info
        .as_ref()
        .unwrap_or_else(|| panic!("{agent} did not answer initialize: {:#?}", report.findings));
    assert!(info["name"].is_string());
    if report.session_id.is_none() {
        let auth = report.findings.iter().find(|f| f.rule == "auth-required");
        assert!(
            auth.is_some_and(|f| f.message.contains("authentication")),
            "{:#?}",
            report.findings
        );
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.rule == "prompt-skipped" && f.severity == Severity::Error),
            "{:#?}",
            report.findings
        );
    }
}

// ---- a scripted agent that answers like real ones (tests/agents/scripted.py)

fn scripted(mode: &str) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/scripted.py");
    vec!["python3".into(), script.into(), mode.into()]
}

/// The report as people read it (no colour).
fn human(report: &probe::ProbeReport) -> String {
    let mut out = Vec::new();
    report
        .print_human(&mut out, acp_ext::output::Style::plain())
        .unwrap();
    String::from_utf8(out).unwrap()
}

fn finding<'a>(report: &'a probe::ProbeReport, rule: &str) -> Vec<&'a acp_ext::check::Finding> {
    report.findings.iter().filter(|f| f.rule == rule).collect()
}

#[tokio::test]
async fn an_agent_writing_a_namespace_the_client_does_not_read_is_flagged() {
    // The probe advertises `lody` only; this serve writes `ua` whatever the client reads.
    let options = ProbeOptions::default()
        .quiet(true)
        .namespace(acp_extension_core::namespace::NamespaceSet::Lody)
        .prompt("/limits");
    let report = probe::run(serve(&["--namespace", "ua"]), options)
        .await
        .unwrap();
    let hits = finding(&report, "namespace-mismatch");
    assert!(!hits.is_empty(), "{:#?}", report.findings);
    assert!(
        hits.iter().all(|f| f.message.contains("only `_meta.lody`")),
        "{hits:#?}"
    );
    assert!(report.has_errors());
}

#[tokio::test]
async fn a_steer_answered_after_its_turn_is_flagged() {
    let options = ProbeOptions::default().quiet(true).prompt("hi");
    let report = probe::run(scripted("steer-inline"), options).await.unwrap();
    let late = finding(&report, "steer-answered-after-turn");
    assert_eq!(late.len(), 1, "{:#?}", report.findings);
    assert_eq!(late[0].severity, acp_ext::check::Severity::Warning);
    assert!(finding(&report, "steer-not-applied").is_empty());
    assert!(human(&report).contains("steer-answered-after-turn"));
}

#[tokio::test]
async fn a_steer_injected_without_steer_applied_is_flagged() {
    let options = ProbeOptions::default().quiet(true).prompt("hi");
    let report = probe::run(scripted("steer-unconfirmed"), options)
        .await
        .unwrap();
    assert_eq!(
        finding(&report, "steer-not-applied").len(),
        1,
        "{:#?}",
        report.findings
    );
    assert!(finding(&report, "steer-answered-after-turn").is_empty());
}

#[tokio::test]
async fn an_error_text_answer_is_shown_with_the_turns_traffic() {
    let options = ProbeOptions::default().quiet(true).prompt("hi");
    let report = probe::run(scripted("text"), options).await.unwrap();
    let p = &report.prompts[0];
    assert_eq!(p.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        p.answer.as_deref(),
        Some("Unable to process your request because cursor-agent CLI is not authenticated")
    );
    assert_eq!(p.updates.get("agent_message_chunk"), Some(&1));
    assert_eq!(p.updates.len(), 1);
    let text = human(&report);
    assert!(
        text.contains("answer: \"Unable to process your request"),
        "{text}"
    );
    assert!(text.contains("updates: agent_message_chunk ×1"), "{text}");
}

#[tokio::test]
async fn answers_are_cut_and_extension_notifications_counted() {
    let long = "x".repeat(300);
    let options = ProbeOptions::default()
        .quiet(true)
        .prompt(long.clone())
        .prompt("/subagents 1");
    let report = probe::run(serve(&["--namespace", "lody"]), options)
        .await
        .unwrap();
    // "You said: " and 300 x's, cut to 200 characters and an ellipsis.
    let answer = report.prompts[0].answer.as_deref().unwrap();
    assert_eq!(answer.chars().count(), probe::ANSWER_CHARS + 1);
    assert!(answer.starts_with("You said: xxx") && answer.ends_with("x…"));
    let subagents = &report.prompts[1];
    // One run: a running snapshot, progress, three outputs (a text chunk,
    // a tool call, its update), progress, a final text chunk, a completed
    // snapshot (the serve script's `/subagents`).
    assert_eq!(
        subagents.extension_notifications["_lody/subagents/event"], 8,
        "{:?}",
        subagents.extension_notifications
    );
    assert_eq!(
        subagents.extension_notifications["_lody/session/activity_update"],
        2
    );
    assert_eq!(subagents.updates["tool_call"], 1);
    // Only the final answer's phase, not the commentary.
    assert_eq!(
        subagents.answer.as_deref(),
        Some("Ran 1 subagents: 1 completed, 0 cancelled.")
    );
}

#[test]
fn prompts_that_were_never_sent_are_errors_and_the_exit_status_follows() {
    let out = Command::new(EXE)
        .args([
            "probe", "--json", "--quiet", "--prompt", "hi", "--prompt", "again", "--",
        ])
        .args(scripted("auth"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "prompt-skipped")
        .collect();
    assert_eq!(skipped.len(), 2, "{report:#}");
    assert_eq!(skipped[0]["severity"], "error");
    assert!(
        skipped[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("prompt \"again\" was not sent: session/new needs authentication"),
        "{report:#}"
    );
    // Listed among the prompts too, each saying why it was not sent.
    let prompts = report["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 2, "{report:#}");
    assert_eq!(prompts[1]["prompt"], "again");
    assert!(
        prompts[1]["skipped"]
            .as_str()
            .unwrap()
            .starts_with("session/new needs authentication"),
        "{report:#}"
    );
}

#[test]
fn a_missing_agent_program_is_named() {
    let out = Command::new(EXE)
        .args(["probe", "--quiet", "--", "/nonexistent/acp-agent-xyz"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/acp-agent-xyz does not exist"),
        "{err}"
    );
    let out = Command::new(EXE)
        .args(["probe", "--quiet", "--", "acp-agent-not-on-path-xyz"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"acp-agent-not-on-path-xyz\" is not found on PATH"),
        "{err}"
    );
}

#[test]
fn a_killed_probe_leaves_no_agent_behind() {
    let dir = std::env::temp_dir().join(format!("acp-ext-probe-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("agent.pid");
    // The agent writes its pid, then serves a turn that takes a while.
    let agent = format!("echo $$ > {}; exec {EXE} serve", pidfile.display());
    let mut probe = Command::new(EXE)
        .args([
            "probe", "--quiet", "--prompt", "/slow 30", "--", "sh", "-c", &agent,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pidfile)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    probe.kill().unwrap(); // SIGKILL: no handler of the probe runs.
    probe.wait().unwrap();
    // What the killed probe could not remove: its own folder, named by its
    // process id.
    for path in common::temp_entries_of(probe.id()) {
        let _ = std::fs::remove_dir_all(path);
    }
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        // Gone, or a zombie about to be reaped.
        std::fs::read_to_string(proc_dir.join("stat")).map_or(true, |stat| stat.contains(") Z "))
    });
    std::fs::remove_dir_all(&dir).ok();
    assert!(gone, "the agent {pid} outlived its SIGKILLed probe");
}

#[tokio::test]
async fn terminal_auth_is_advertised_and_error_data_kept() {
    let options = ProbeOptions::default().quiet(true).prompt("hi");
    let report = probe::run(scripted("error-data"), options).await.unwrap();
    // The agent lists its terminal method only to clients that can run it.
    let ids: Vec<&str> = report
        .auth_methods
        .as_ref()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["api-key", "vendor-login"]);
    let error = report.prompts[0].error.as_deref().unwrap();
    assert_eq!(
        error,
        r#"error -32603: Internal error (data: {"details":"Query closed before response received"})"#
    );
    assert_eq!(finding(&report, "probe-prompt").len(), 1);
}

#[tokio::test]
async fn vendor_metadata_and_both_namespaces_are_shown() {
    let report = probe::run(scripted("text"), ProbeOptions::default().quiet(true))
        .await
        .unwrap();
    assert_eq!(
        report.vendor_meta,
        Some(serde_json::json!({"claudeCode": {"promptQueueing": true}}))
    );
    assert_eq!(report.extensions.len(), 1);
    assert_eq!(report.extensions[0].namespaces, ["ua", "lody"]);
    let text = human(&report);
    assert!(
        text.contains(r#"Vendor metadata: {"claudeCode":{"promptQueueing":true}}"#),
        "{text}"
    );
    assert!(text.contains("usage    ua, lody  1"), "{text}");
}

#[tokio::test]
async fn a_timeout_names_the_request_the_limit_and_the_option() {
    let options = ProbeOptions::default()
        .quiet(true)
        .timeout(Duration::from_millis(500))
        .prompt("hi");
    let report = probe::run(scripted("slow-init"), options).await.unwrap();
    let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        messages.contains(
            &"initialize failed: timed out: no answer to initialize within 0.5 s (--timeout SECONDS raises the limit)"
        ),
        "{messages:#?}"
    );
    assert_eq!(finding(&report, "prompt-skipped").len(), 1, "{messages:#?}");
}

#[test]
fn the_demo_names_its_agent_relative_to_the_current_directory() {
    let exe = std::path::Path::new(EXE);
    // Run it from the directory above the executable's: the transcript
    // names the agent from there, not by an absolute path.
    let dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let out = Command::new(EXE)
        .arg("demo")
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let agent = text
        .lines()
        .find_map(|l| l.strip_prefix("agent: "))
        .unwrap_or_else(|| panic!("{text}"));
    let name = exe.file_name().unwrap().to_string_lossy();
    let parent = exe.parent().unwrap().file_name().unwrap().to_string_lossy();
    assert_eq!(
        agent,
        format!("{parent}/{name} serve --session-ids counter")
    );
}

#[tokio::test]
async fn protocol_2_speaks_v2_and_ends_each_turn_at_its_idle() {
    let options = ProbeOptions::default()
        .quiet(true)
        .protocol(probe::ProtocolChoice::V2)
        .prompt("one")
        .prompt("two");
    let report = probe::run(scripted("v2"), options).await.unwrap();
    assert_eq!(report.protocol_version, Some(serde_json::json!(2)));
    assert!(!report.has_errors(), "{:#?}", report.findings);
    // v2's `capabilities` and `info` are read as v1's were.
    assert_eq!(report.agent_info.as_ref().unwrap()["name"], "scripted");
    assert!(report.extensions.iter().any(|e| e.feature == "usage"));
    assert_eq!(report.prompts.len(), 2);
    for p in &report.prompts {
        // The stop reason is the idle's (the receipt has none), and the
        // turn's traffic runs to that idle.
        assert_eq!(p.stop_reason.as_deref(), Some("end_turn"), "{p:?}");
        assert_eq!(p.answer.as_deref(), Some("done in v2"), "{p:?}");
        assert_eq!(p.updates.get("state_update"), Some(&2), "{p:?}");
    }
    assert!(human(&report).contains("Protocol version: 2\n"));

    // Asked for 1, the same agent speaks v1.
    let v1 = probe::run(
        scripted("v2"),
        ProbeOptions::default().quiet(true).prompt("x"),
    )
    .await
    .unwrap();
    assert_eq!(v1.protocol_version, Some(serde_json::json!(1)));
    assert_eq!(v1.prompts[0].stop_reason.as_deref(), Some("end_turn"));
}

#[tokio::test]
async fn a_v2_only_agent_refusing_v1_is_named_and_auto_follows_it() {
    let report = probe::run(
        scripted("v2-only"),
        ProbeOptions::default().quiet(true).prompt("x"),
    )
    .await
    .unwrap();
    let refused = finding(&report, "protocol-refused");
    assert_eq!(refused.len(), 1, "{:#?}", report.findings);
    assert!(
        refused[0]
            .message
            .contains("refused ACP v1 (-32022); it supports v2"),
        "{}",
        refused[0].message
    );
    assert!(
        finding(&report, "probe").is_empty(),
        "{:#?}",
        report.findings
    );

    let auto = probe::run(
        scripted("v2-only"),
        ProbeOptions::default()
            .quiet(true)
            .protocol(probe::ProtocolChoice::Auto)
            .prompt("x"),
    )
    .await
    .unwrap();
    assert!(!auto.has_errors(), "{:#?}", auto.findings);
    assert_eq!(auto.protocol_version, Some(serde_json::json!(2)));
    assert_eq!(auto.prompts[0].stop_reason.as_deref(), Some("end_turn"));

    // `auto` asks once more, not forever.
    let refusing = probe::run(
        scripted("refuse-all"),
        ProbeOptions::default()
            .quiet(true)
            .protocol(probe::ProtocolChoice::Auto),
    )
    .await
    .unwrap();
    let refused = finding(&refusing, "protocol-refused");
    assert_eq!(refused.len(), 1, "{:#?}", refusing.findings);
    assert!(
        refused[0]
            .message
            .contains("refused ACP v1 (-32022); it supports v2")
    );
    assert_eq!(refusing.protocol_asked, Some(1));

    // `--protocol 2` against an agent that answers v1: reported.
    let text = probe::run(
        scripted("text"),
        ProbeOptions::default()
            .quiet(true)
            .protocol(probe::ProtocolChoice::V2),
    )
    .await
    .unwrap();
    assert_eq!(
        finding(&text, "protocol-version").len(),
        1,
        "{:#?}",
        text.findings
    );
    assert!(human(&text).contains("Protocol version: 1 (asked 2)"));
}

/// `probe --protocol 2 -- acp-ext serve`: serve answers in v2, every
/// extension the probe exercises rides on it, and the record folds to the
/// state a v2 client writes down from the schema's rules.
#[tokio::test]
async fn serve_answers_protocol_2_in_v2_and_its_record_folds_by_v2s_rules() {
    use acp_ext::check::input::Format;
    use acp_extension_core::state::StateLimits;

    let dir = common::scratch("probe-serve-v2");
    let record = dir.join("record.jsonl");
    let agent = vec![
        EXE.to_string(),
        "tap".into(),
        "--record".into(),
        record.display().to_string(),
        "--".into(),
        EXE.to_string(),
        "serve".into(),
        "--namespace".into(),
        "lody".into(),
    ];
    let options = ProbeOptions::default()
        .quiet(true)
        .protocol(probe::ProtocolChoice::V2)
        .prompt("/subagents 1")
        .prompt("/limits")
        .prompt("/slow 0.4");
    let report = probe::run(agent, options).await.unwrap();
    assert_eq!(report.protocol_version, Some(serde_json::json!(2)));
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    for p in &report.prompts {
        assert_eq!(p.stop_reason.as_deref(), Some("end_turn"), "{p:#?}");
        assert_eq!(p.updates.get("state_update"), Some(&2), "{p:#?}");
    }
    // Subagent events go only to a client that opted in (under v2's
    // `capabilities`), and steering by request works mid-turn.
    assert_eq!(
        report.prompts[0]
            .extension_notifications
            .get("_lody/subagents/event"),
        Some(&8),
        "{:#?}",
        report.prompts[0]
    );
    assert!(human(&report).contains("_lody/session/steer → injected"));

    let text = std::fs::read_to_string(&record).unwrap();
    let state =
        acp_ext::state::fold_reader(text.as_bytes(), Format::Auto, StateLimits::unbounded())
            .unwrap();
    assert!(state.negotiation().is_v2());
    let id = report.session_id.as_deref().unwrap();
    let s = state.session(id).unwrap();
    // Three prompts, each accepted by its receipt and ended by its idle:
    // the last stop reason is the idle's, and nothing runs.
    assert_eq!(s.turns.prompts, 3);
    assert_eq!(s.turns.accepted, 3);
    assert!(!s.turns.running);
    assert_eq!(s.turns.last_stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(s.activity.shown(), Some("idle"));
    // Usage counted once per idle.
    assert_eq!(s.usage.turn_totals.turns, 3);
    // The run: completed, with its output.
    assert_eq!(s.subagent_runs.len(), 1, "{:#?}", s.subagent_runs);
    let run = s.subagent_runs.values().next().unwrap();
    assert!(!run.text.is_empty(), "{run:#?}");
    // The steer, injected; the rate limits of `/limits`.
    assert_eq!(s.steers.len(), 1, "{:#?}", s.steers);
    assert_eq!(
        s.steers.values().next().unwrap().outcome,
        acp_extension_core::state::SteerStatus::Applied
    );
    assert!(!state.rate_limits().is_empty());
}
