//! `acp-ext probe` and `acp-ext demo` against real child processes: the
//! embedded reference agent (with `--only` subsets) and, when installed, a
//! real ACP agent binary from the npm registry.

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

fn features(report: &probe::Report) -> Vec<&str> {
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
    assert_eq!(report.prompts[0].error.as_deref(), Some("timed out"));
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

/// A real ACP agent from the npm registry (`.ci/run` installs it and sets
/// `ACP_EXT_REAL_AGENT`). Without credentials it still answers
/// `initialize`; `session/new` must come back as a clear auth finding.
#[tokio::test]
async fn probe_a_real_agent_from_npm() {
    let Some(agent) = std::env::var_os("ACP_EXT_REAL_AGENT") else {
        println!(
            "skipped: ACP_EXT_REAL_AGENT is not set (the npm registry was unreachable when .ci/run ran)"
        );
        return;
    };
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
    }
}
