//! `acp-ext state`: `serve`'s traffic for every script command folds into
//! the documented state, in both record formats; every corpus file folds;
//! the command line's output, exit codes and schema.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{EXE, LARGE_CHUNK_TEXT, corpus_files, large_transcript, record, scratch};
use serde_json::{Value, json};

/// `acp-ext state --json ARGS FILES`, as it ended.
fn state_output(args: &[&str], files: &[&Path]) -> std::process::Output {
    Command::new(EXE)
        .arg("state")
        .arg("--json")
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

fn state_json(args: &[&str], files: &[&Path]) -> (i32, Vec<Value>, String) {
    let out = state_output(args, files);
    let docs = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        out.status.code().unwrap_or(-1),
        docs,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last `modelUsage` the agent reported on `_lody/session/usage_update`
/// in a jsonl record, read straight from the file.
fn last_reported_model_usage(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let mut last = Value::Null;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let msg = &v["msg"];
        if msg["method"] == "_lody/session/usage_update" {
            last = msg["params"]["modelUsage"].clone();
        }
    }
    last
}

const PROMPTS: &[&str] = &[
    "hello",
    "/tool",
    "/subagents 2",
    "/background 0.1",
    "/schedule 0.1",
    "/compact",
    "/goal set ship it",
    "/ask",
    "/title Release notes",
    "/limits",
    "/app",
    "/slow 0.3",
    "/fail",
];

#[test]
fn serve_traffic_for_every_script_command_folds_into_the_documented_state() {
    let dir = scratch("serve");
    for format in ["jsonl", "conductor"] {
        let path = record(&dir, format, PROMPTS);
        let (code, docs, err) = state_json(&[], &[&path]);
        assert_eq!(code, 0, "{err}");
        let doc = &docs[0];
        assert_eq!(doc["file"], path.display().to_string());
        assert_eq!(doc["invalid"], Value::Array(vec![]), "{format}: {doc:#}");
        assert!(doc["negotiation"]["agent"]["features"]["subagentEvents"].is_object());
        assert!(doc["negotiation"]["client"]["seen"].as_bool().unwrap());
        let sessions = doc["sessions"].as_object().unwrap();
        let (_, s) = sessions
            .iter()
            .find(|(_, s)| s["turns"]["prompts"] == PROMPTS.len())
            .unwrap_or_else(|| panic!("{format}: no session with every prompt: {doc:#}"));
        // /title: a generated title with its source.
        assert_eq!(s["title"], "Release notes", "{format}");
        assert_eq!(s["titleSource"], "generated");
        // /goal set: the snapshot (no clear followed).
        assert_eq!(s["goal"]["objective"], "ship it");
        assert_eq!(s["goal"]["status"], "active");
        // /subagents 2: two completed runs bound to their tool calls, each
        // with output; their task rows too.
        let runs = s["subagentRuns"].as_object().unwrap();
        assert_eq!(runs.len(), 2, "{format}: {runs:#?}");
        for run in runs.values() {
            assert_eq!(run["snapshot"]["state"], "completed");
            assert!(run["parentToolCallId"].is_string());
            assert_eq!(run["parentRunId"], Value::Null);
            assert!(!run["text"].as_str().unwrap().is_empty());
        }
        let tasks = s["tasks"].as_object().unwrap();
        let kinds: Vec<(&str, &str)> = tasks
            .values()
            .map(|t| {
                (
                    t["task"]["kind"].as_str().unwrap(),
                    t["task"]["status"].as_str().unwrap(),
                )
            })
            .collect();
        for kind in ["subagent", "background", "scheduled"] {
            assert!(
                kinds.contains(&(kind, "completed")),
                "{format}: no completed {kind} task in {kinds:?}"
            );
        }
        // /compact: a completed compaction.
        let compactions: Vec<&Value> = s["activities"]
            .as_object()
            .unwrap()
            .values()
            .filter(|a| a["kind"] == "context_compaction")
            .collect();
        assert_eq!(compactions.len(), 1);
        assert_eq!(compactions[0]["status"], "completed");
        // /fail: the error notice.
        assert!(
            s["notices"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["level"] == "error"),
            "{format}"
        );
        // /tool and /ask were answered: nothing pending.
        assert_eq!(s["pendingRequests"], serde_json::json!({}));
        // The probe steered every turn: none of them is left unanswered,
        // and the slow turn took its steer.
        let steers = s["steers"].as_object().unwrap();
        assert!(!steers.is_empty());
        assert!(steers.values().all(|x| x["outcome"] != "pending"));
        assert!(
            steers.values().any(|x| x["outcome"] == "applied"),
            "{format}: {steers:#?}"
        );
        // Activity and the prompt ended.
        assert_eq!(s["activity"]["state"], "idle");
        assert_eq!(s["turns"]["running"], false);
        // /limits: the rate limit with its two windows.
        let limits = doc["rateLimits"].as_object().unwrap();
        assert!(limits.values().any(|l| {
            l["rateLimit"]["windows"]
                .as_array()
                .is_some_and(|w| w.len() == 2)
        }));
        // Usage: one scope whose per-model totals are what the agent last
        // reported (read from the record itself).
        if format == "jsonl" {
            let reported = last_reported_model_usage(&path);
            assert!(reported.is_object());
            assert_eq!(s["usage"]["totals"], reported);
        }
        assert!(s["usage"]["context"]["used"].as_u64().unwrap() > 0);
    }
}

#[test]
fn people_output_shows_each_part() {
    let dir = scratch("people");
    let path = record(
        &dir,
        "jsonl",
        &["/subagents 1", "/title Shipping", "/limits", "/goal set go"],
    );
    let out = Command::new(EXE)
        .arg("state")
        .arg(&path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "\"Shipping\" (generated)",
        "goal     active  \"go\"",
        "runs",
        "completed  \"worker-1\"",
        "usage  model",
        "serve-model-1",
        "rate limits",
        "5h ",
        "7d ",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

/// A writer that keeps what it is given and counts the calls.
#[derive(Default)]
struct CountedWrites {
    bytes: Vec<u8>,
    calls: usize,
}

impl std::io::Write for CountedWrites {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.calls += 1;
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn people_output_goes_out_in_large_pieces_not_a_write_per_line() {
    // 2,000 subagent events without a field: a view of thousands of
    // records, a line each, handed to a writer that, like standard output,
    // writes whatever it is given (a line-buffered handle wrote each line
    // on its own).
    let dir = scratch("pieces");
    let path = dir.join("records.jsonl");
    let line = r#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{}}"#;
    std::fs::write(&path, format!("{line}\n").repeat(2_000)).unwrap();
    let mut out = CountedWrites::default();
    let options = acp_ext::state::Options::new(acp_ext::output::Style::plain());
    let code = acp_ext::state::run(&[path], options, &mut out, &mut std::io::sink()).unwrap();
    assert_eq!(code, 0);
    let text = String::from_utf8(out.bytes).unwrap();
    let lines = text.lines().count();
    assert!(lines >= 2_000, "{lines} lines:\n{text}");
    // Before: a write per line at least (8,004 here); now one per 8 KiB.
    assert!(
        out.calls * 20 <= lines,
        "{} writes for {} bytes in {lines} lines",
        out.calls,
        text.len()
    );
}

#[test]
fn a_large_file_shows_a_progress_bar_on_the_error_output_and_clears_it() {
    let dir = scratch("progress");
    let (big, chunks) = large_transcript(&dir);
    let small = dir.join("small.jsonl");
    let head: String = std::fs::read_to_string(&big)
        .unwrap()
        .lines()
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&small, head).unwrap();

    let run = |file: &Path, progress: bool| {
        let options = acp_ext::state::Options::new(acp_ext::output::Style::plain())
            .json(true)
            .progress(progress);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = acp_ext::state::run(&[file.to_owned()], options, &mut out, &mut err).unwrap();
        assert_eq!(code, 0);
        (out, String::from_utf8(err).unwrap())
    };
    let (with_bar, drawn) = run(&big, true);
    assert!(drawn.contains(&format!("{} [", big.display())), "{drawn:?}");
    assert!(drawn.contains("/9.0 MiB"), "{drawn:?}");
    // Cleared before the document goes out, which it leaves unchanged.
    assert!(drawn.ends_with("\r\x1b[2K"), "{drawn:?}");
    let (without, none) = run(&big, false);
    assert_eq!(none, "");
    assert_eq!(with_bar, without);
    let doc: Value = serde_json::from_slice(&with_bar).unwrap();
    let text = doc["sessions"]["s"]["subagentRuns"]["r"]["text"]
        .as_str()
        .unwrap();
    assert_eq!(text.len(), chunks * LARGE_CHUNK_TEXT.len());
    // A small file gets no bar.
    assert_eq!(run(&small, true).1, "");
}

#[test]
fn every_corpus_file_folds() {
    let files = corpus_files();
    assert!(files.len() > 30);
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    for mode in [&[][..], &["--bounded"][..]] {
        let (code, docs, err) = state_json(mode, &refs);
        assert_eq!(code, 0, "{err}");
        assert_eq!(docs.len(), files.len());
        // Every fixture was read, and what was not folded says why.
        for doc in &docs {
            assert!(doc["messages"].as_u64().unwrap() > 0, "{doc:#}");
            for i in doc["invalid"].as_array().unwrap() {
                assert!(i["rule"].is_string() && i["message"].is_string(), "{i}");
            }
        }
    }
    // AIR's subagent draft is folded into a run.
    let native = files
        .iter()
        .find(|f| f.to_string_lossy().contains("subagent-native-sessions"))
        .unwrap();
    let (_, docs, _) = state_json(&[], &[native]);
    let run = &docs[0]["sessions"]["<session>"]["subagentRuns"]["agent_n"];
    assert_eq!(run["dialect"], "air", "{:#}", docs[0]);
    assert_eq!(run["standard"]["title"], "Fix the build");
    assert_eq!(run["standard"]["state"], "failed");
}

#[test]
fn every_corpus_value_is_folded_or_recorded() {
    let files = corpus_files();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (_, docs, _) = state_json(&[], &refs);
    for doc in &docs {
        let a = &doc["accounting"];
        let n = |k: &str| a[k].as_u64().unwrap();
        let values = n("values");
        assert!(values > 0, "{}", doc["file"]);
        assert_eq!(
            values,
            n("folded") + n("ignored") + n("recorded"),
            "{}: {a}",
            doc["file"]
        );
        let kinds = a["ignoredKinds"].as_object().unwrap();
        let by_kind: u64 = kinds.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(by_kind, n("ignored"), "{}: {a}", doc["file"]);
        // Every record names its value and line.
        for i in doc["invalid"].as_array().unwrap() {
            assert!(
                i["index"].as_u64().is_some_and(|n| n >= 1 && n <= values),
                "{i}"
            );
            assert!(i["line"].as_u64().is_some(), "{i}");
        }
    }
}

#[test]
fn values_that_are_no_message_are_recorded_with_their_shape() {
    let dir = scratch("shapes");
    let file = dir.join("shapes.jsonl");
    std::fs::write(
        &file,
        concat!(
            "[1]\n",
            "{\"inputTokens\": 1, \"outputTokens\": 2, \"cacheReadInputTokens\": 0}\n",
            "{\"version\": 1, \"sessionId\": \"s\", \"runId\": \"r\", \"type\": \"output\", \"update\": {\"sessionUpdate\": \"agent_message_chunk\", \"content\": {\"type\": \"text\", \"text\": \"hi\"}}}\n",
        ),
    )
    .unwrap();
    let (code, docs, err) = state_json(&[], &[file.as_path()]);
    assert_eq!(code, 0, "{err}");
    let doc = &docs[0];
    let invalid = doc["invalid"].as_array().unwrap();
    // `[1]` is JSON, just not a message.
    assert!(
        invalid
            .iter()
            .any(|i| i["rule"] == "not-a-message" && i["line"] == 1),
        "{doc:#}"
    );
    assert!(!invalid.iter().any(|i| i["rule"] == "not-json"), "{doc:#}");
    assert!(
        invalid
            .iter()
            .any(|i| i["line"] == 2 && i["message"].as_str().unwrap().contains("ModelUsage")),
        "{doc:#}"
    );
    // The bare output event is a subagent event (of a run never started:
    // recorded), never the root session's transcript.
    assert!(
        invalid
            .iter()
            .any(|i| i["line"] == 3 && i["method"] == "_lody/subagents/event"),
        "{doc:#}"
    );
    assert_eq!(
        doc["accounting"]["values"].as_u64().unwrap(),
        doc["accounting"]["recorded"].as_u64().unwrap()
            + doc["accounting"]["folded"].as_u64().unwrap()
    );
}

/// Several files in one run: each document on its own line, in the order
/// given, byte for byte what the file writes alone (the document goes
/// out through a handle of its own; every state but the last is freed);
/// a file that cannot be read in between writes nothing to standard
/// output.
#[test]
fn documents_of_several_files_come_whole_and_in_order() {
    let files = corpus_files();
    let picked: Vec<&Path> = files.iter().take(3).map(PathBuf::as_path).collect();
    let alone = |file: &Path| {
        let out = state_output(&[], &[file]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let missing = Path::new("/nonexistent/acp-ext.jsonl");
    let out = state_output(&[], &[picked[0], missing, picked[1], picked[2]]);
    assert_eq!(out.status.code(), Some(2));
    let expected: Vec<u8> = picked.iter().flat_map(|f| alone(f)).collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 3);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/acp-ext.jsonl")
    );
}

#[test]
fn exit_codes_and_schema() {
    let (code, _, err) = state_json(&[], &[Path::new("/nonexistent/acp-ext.jsonl")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("acp-ext state: cannot read /nonexistent/acp-ext.jsonl"),
        "{err}"
    );
    let out = Command::new(EXE)
        .args(["schema", "state"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    for key in ["file", "sessions", "rateLimits", "invalid", "negotiation"] {
        assert!(schema["properties"].get(key).is_some(), "{key}: {schema:#}");
    }
    let out = Command::new(EXE).arg("schema").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("  state"));
}

/// A small deterministic generator (xorshift), so the runs are long and
/// varied yet the test is reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn the_states_totals_equal_what_usage_fold_emits() {
    let dir = scratch("usage-fold");
    for seed in 1..=4u64 {
        // Several operations and models; each operation's snapshot grows
        // (sometimes repeats, sometimes loses its cost).
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut grown = std::collections::HashMap::new();
        let mut steps = String::new();
        for _ in 0..400 {
            let op = rng.below(30);
            let model = ["gpt-5", "mini", "claude"][rng.below(3) as usize];
            let e = grown.entry((op, model)).or_insert(0u64);
            *e += rng.below(5000);
            let mut row = serde_json::json!({"inputTokens": *e, "outputTokens": *e / 10,
                "cacheReadInputTokens": *e / 3, "reasoningOutputTokens": *e / 7});
            if rng.below(4) != 0 {
                row["costUSD"] = serde_json::json!(*e as f64 * 1e-6);
            }
            let step = serde_json::json!({"sessionId": "s", "operationId": format!("op{op}"),
                "rows": {model: row}});
            steps.push_str(&format!("{step}\n"));
        }
        let input = dir.join(format!("steps-{seed}.jsonl"));
        std::fs::write(&input, steps).unwrap();
        let fold = Command::new(EXE)
            .args(["usage", "fold", "--scope-id", "scope-1"])
            .arg(&input)
            .output()
            .unwrap();
        assert!(fold.status.success());
        let emitted = String::from_utf8(fold.stdout).unwrap();
        let last: Value = emitted
            .lines()
            .rfind(|l| *l != "null")
            .map(|l| serde_json::from_str(l).unwrap())
            .unwrap();
        let updates = dir.join(format!("updates-{seed}.jsonl"));
        std::fs::write(&updates, &emitted).unwrap();
        let (code, docs, err) = state_json(&[], &[updates.as_path()]);
        assert_eq!(code, 0, "{err}");
        let usage = &docs[0]["sessions"]["s"]["usage"];
        assert_eq!(docs[0]["invalid"], serde_json::json!([]), "{:#}", docs[0]);
        // Per model: exactly the last cumulative `modelUsage`.
        assert_eq!(usage["totals"], last["modelUsage"], "seed {seed}");
        // The total: the sum over models, never a sum of operations.
        for counter in [
            "inputTokens",
            "outputTokens",
            "cacheReadInputTokens",
            "reasoningOutputTokens",
        ] {
            let want: u64 = last["modelUsage"]
                .as_object()
                .unwrap()
                .values()
                .map(|r| r[counter].as_u64().unwrap())
                .sum();
            assert_eq!(
                usage["total"][counter].as_u64(),
                Some(want),
                "seed {seed} {counter}"
            );
        }
        let cost_known = last["modelUsage"]
            .as_object()
            .unwrap()
            .values()
            .all(|r| r.get("costUSD").is_some());
        assert_eq!(
            usage["total"].get("costUSD").is_some(),
            cost_known,
            "seed {seed}"
        );
    }
}

/// What `acp-ext check --json` found at error or warning level in `file`.
fn check_errors(file: &Path) -> Vec<Value> {
    let out = Command::new(EXE)
        .args(["check", "--json"])
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|f| matches!(f["severity"].as_str(), Some("error" | "warning")))
        .collect()
}

#[test]
fn check_and_the_state_agree_on_every_corpus_file() {
    for file in corpus_files() {
        let findings = check_errors(&file);
        let (_, docs, _) = state_json(&[], &[file.as_path()]);
        let invalid = docs[0]["invalid"].as_array().unwrap();
        assert_eq!(
            findings.is_empty(),
            invalid.is_empty(),
            "{}: check found {findings:#?}, the state recorded {invalid:#?}",
            file.display()
        );
    }
}

/// Malformed standard shapes, each written by hand: `check` reports an
/// error or warning at exactly the lines the state records, at the same
/// pointers, and every value is accounted for.
#[test]
fn check_and_the_state_agree_on_malformed_standard_shapes() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
        // An update that names no session, or an empty one.
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"","update":{"sessionUpdate":"plan","entries":[]}}}"#,
        // Standard updates missing what the state reads.
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","title":"x"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"notice","title":"x"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"usage_update","used":-1,"size":10}}}"#,
        // Calls and a result the state cannot fold.
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/load","params":"s1"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"result":{"sessionId":7}}"#,
        // A chunk-only session is a session.
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
    ];
    let dir = scratch("shapes");
    let path = dir.join("shapes.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut found: Vec<(u64, String)> = check_errors(&path)
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    let (_, docs, _) = state_json(&[], &[path.as_path()]);
    let mut recorded: Vec<(u64, String)> = docs[0]["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["line"].as_u64().unwrap(),
                i["pointer"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    recorded.sort();
    let expected: Vec<(u64, String)> = [
        (3, "/params/sessionId"),
        (4, "/params/sessionId"),
        (5, "/params/update/toolCallId"),
        (6, "/params/update/severity"),
        (7, "/params/update/used"),
        (8, "/params/sessionId"),
        (9, "/params"),
        (11, "/result/sessionId"),
    ]
    .iter()
    .map(|(l, p)| (*l, (*p).to_owned()))
    .collect();
    assert_eq!(found, expected);
    assert_eq!(recorded, expected);
    let a = &docs[0]["accounting"];
    assert_eq!(a["values"], lines.len(), "{a}");
    assert_eq!(a["recorded"], 8, "{a}");
    let sessions: Vec<&String> = docs[0]["sessions"].as_object().unwrap().keys().collect();
    assert_eq!(sessions, ["s1", "s2"]);
}

#[test]
fn namespace_misuse_is_recorded_where_check_reports_it() {
    // A lody-only client; an agent that advertises usage and activity in
    // both namespaces but not `rateLimits`. The agent writes one update in
    // `ua` (which the client does not read) and rate limits it never
    // advertised.
    let lines = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"lody":{}}}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"_meta":{"lody":{"sessionActivity":{"version":1}},"ua":{"sessionActivity":{"version":1}}}}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
        r#"{"jsonrpc":"2.0","method":"_ua/session/activity_update","params":{"version":1,"sessionId":"s1","state":"running","backgroundTaskCount":0}}"#,
        r#"{"jsonrpc":"2.0","method":"_lody/rate_limits/update","params":{"rateLimits":[{"limitId":"l","scope":{"providerId":"p"},"windows":[]}]}}"#,
        r#"{"jsonrpc":"2.0","method":"_lody/session/activity_update","params":{"version":1,"sessionId":"s1","state":"idle","backgroundTaskCount":0}}"#,
    ];
    let dir = scratch("misuse");
    let path = dir.join("misuse.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let findings: Vec<(u64, String)> = check_errors(&path)
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        findings,
        [
            (5, "namespace-mismatch".to_owned()),
            (6, "not-advertised".to_owned())
        ]
    );
    // People's output names the records by the severity `check` gives.
    let people = Command::new(EXE)
        .args(["state"])
        .arg(&path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let people = String::from_utf8(people.stdout).unwrap();
    assert!(people.contains("2 records: 2 errors"), "{people}");
    assert!(
        people.contains("error    _ua/session/activity_update  /method  namespace-mismatch"),
        "{people}"
    );
    let (code, docs, _) = state_json(&[], &[path.as_path()]);
    assert_eq!(code, 0);
    let records: Vec<(u64, &str, &str)> = docs[0]["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["pointer"].as_str().unwrap(),
                r["rule"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        records,
        [
            (5, "/method", "namespace-mismatch"),
            (6, "/method", "not-advertised")
        ]
    );
    // Neither is folded: the session's activity is the `lody` update's, and
    // no rate-limit row exists.
    let state = &docs[0];
    assert_eq!(
        state["sessions"]["s1"]["activity"]["state"], "idle",
        "{state:#}"
    );
    assert_eq!(state["rateLimits"], serde_json::json!({}), "{state:#}");
    assert_eq!(state["accounting"]["recorded"], 2);
}

#[test]
fn malformed_standard_updates_are_recorded_where_check_reports_them() {
    // (update, the pointer and rule both name, what the state then holds)
    let cases = [
        (
            json!({"sessionUpdate": "compaction_update", "status": "completed"}),
            "/params/update/compactionId",
            "required",
        ),
        (
            json!({"sessionUpdate": "usage_update", "used": -5, "size": 100}),
            "/params/update/used",
            "non-negative-integer",
        ),
        (
            json!({"sessionUpdate": "usage_update", "used": 5, "size": 100,
                "cost": {"amount": -1, "currency": "USD"}}),
            "/params/update/cost/amount",
            "finite-non-negative",
        ),
        (
            json!({"sessionUpdate": "subagent_update", "state": {"state": "running"}}),
            "/params/update/sessionId",
            "required",
        ),
        (
            json!({"sessionUpdate": "notice", "title": "Disk almost full"}),
            "/params/update/severity",
            "required",
        ),
        (
            json!({"sessionUpdate": "tool_call", "title": "Read", "status": "pending"}),
            "/params/update/toolCallId",
            "required",
        ),
        (
            json!({"sessionUpdate": "state_update", "background": []}),
            "/params/update/state",
            "required",
        ),
        (
            json!({"sessionUpdate": "state_update", "state": "running",
                "background": [{"type": "terminal", "terminalId": "t"}, "t2"]}),
            "/params/update/background/1",
            "type",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("acp-ext-standard-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (update, pointer, rule)) in cases.iter().enumerate() {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}}),
        ];
        let path = dir.join(format!("{i}.jsonl"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let findings: Vec<(String, String)> = check_errors(&path)
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_owned(),
                    f["rule"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            findings,
            [(pointer.to_string(), "shape".to_owned())],
            "{update}"
        );
        let (_, docs, _) = state_json(&[], &[path.as_path()]);
        let records: Vec<(&str, &str)> = docs[0]["invalid"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["pointer"].as_str().unwrap(), r["rule"].as_str().unwrap()))
            .collect();
        assert_eq!(records, [(*pointer, *rule)], "{update}");
        let s1 = &docs[0]["sessions"]["s1"];
        match update["sessionUpdate"].as_str().unwrap() {
            // Shown with its defaults: an info notice.
            "notice" => {
                assert_eq!(s1["notices"][0]["level"], "info", "{s1:#}");
                assert_eq!(docs[0]["invalid"][0]["folded"], true);
            }
            // The level is folded; a malformed background list is read
            // as not reported.
            "state_update" if pointer.contains("background") => {
                assert_eq!(s1["activity"]["state"], "running", "{s1:#}");
                assert!(s1["activity"].get("background").is_none(), "{s1:#}");
                assert_eq!(docs[0]["invalid"][0]["folded"], true);
            }
            // The occupancy is folded, a bad cost is not.
            "usage_update" if *pointer == "/params/update/cost/amount" => {
                assert_eq!(s1["usage"]["context"]["used"], 5, "{s1:#}");
                assert!(s1["usage"]["context"].get("cost").is_none(), "{s1:#}");
            }
            // Nothing else of it is placed.
            _ => {
                assert!(s1["usage"].get("context").is_none(), "{s1:#}");
                assert_eq!(s1["activities"], json!({}), "{s1:#}");
                assert_eq!(s1["subagentRuns"], json!({}), "{s1:#}");
                assert_eq!(docs[0]["invalid"][0]["folded"], false);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_corpus_file_folds_the_same_when_no_change_is_listed() {
    use acp_ext::check::input::{Format, Item, read_parallel};
    use acp_ext::state::fold_reader;
    use acp_extension_core::connection::Reads;
    use acp_extension_core::state::{ConnectionState, Direction, StateLimits};
    use std::fs::File;
    use std::io::BufReader;

    let open = |file: &Path| BufReader::new(File::open(file).unwrap());
    let mut changes = 0;
    for file in corpus_files() {
        // `state` folds without listing changes; fold again listing them.
        let unlisted = fold_reader(open(&file), Format::Auto, StateLimits::unbounded()).unwrap();
        let mut listed = ConnectionState::new();
        read_parallel(open(&file), Format::Auto, Reads::Fold, |item| {
            let made = match item {
                Item::Record(r) => {
                    listed.set_line(Some(r.line));
                    listed.message_with_method(r.direction, &r.message, r.request_method.as_deref())
                }
                Item::Event { line, read } => {
                    listed.set_line(Some(*line));
                    listed.follow_read(Direction::Unknown, read)
                }
                Item::Problem { line, finding } => {
                    listed.set_line(Some(*line));
                    listed.unreadable(finding.rule, &finding.message)
                }
                other => panic!("an item fold_reader does not fold: {other:?}"),
            };
            changes += made.len();
        })
        .unwrap();
        let name = file.display();
        assert_eq!(listed.accounting(), unlisted.accounting(), "{name}");
        assert_eq!(listed.invalid_count(), unlisted.invalid_count(), "{name}");
        assert_eq!(
            serde_json::to_value(&listed).unwrap(),
            serde_json::to_value(&unlisted).unwrap(),
            "{name}"
        );
    }
    assert!(changes > 100, "{changes}");
}
