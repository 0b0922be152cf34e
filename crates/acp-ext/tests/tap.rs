//! `acp-ext tap` end to end: the real binary between a test "client" (this
//! process, through pipes) and small agents (`cat`, `sh -c …`).
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

use common::{read_jsonl, scratch, send_signal, spawn_tap, xorshift};
use serde_json::{Value, json};

/// Runs the tap with `input` as the client's whole output; returns what the
/// client received, stderr and the exit status.
fn run_tap(tap_args: &[&str], agent: &[&str], input: &[u8]) -> Output {
    let mut child = spawn_tap(tap_args, agent);
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stats(stderr: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("acp-ext tap: stats "))
        .unwrap_or_else(|| panic!("no stats line in {text}"));
    serde_json::from_str(line).unwrap()
}

/// A mix of everything a stdio stream may carry.
fn mixed_input() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n");
    v.extend_from_slice(b"not json at all\n");
    v.extend_from_slice(b"\n");
    v.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}\r\n",
    );
    v.extend_from_slice(b"invalid utf-8: \xff\xfe\xc3\x28 end\n");
    v.extend_from_slice(b"   \t  \n");
    v.extend_from_slice("unicode \u{1F600} \u{00e9}\n".as_bytes());
    v.extend_from_slice(b"\x00\x01 binary \x7f\n");
    v.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");
    // No final line feed.
    v
}

#[test]
fn forwards_bytes_unchanged_both_ways() {
    let input = mixed_input();
    let dir = scratch("identity");
    let record = dir.join("r.jsonl");
    let record = record.to_str().unwrap();
    for args in [
        &[][..],
        &["--no-validate"][..],
        &["--record", record][..],
        &["--record", record, "--format", "conductor"][..],
    ] {
        let out = run_tap(args, &["cat"], &input);
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
        assert_eq!(out.stdout, input, "{args:?}");
    }
}

#[test]
fn forwards_writes_split_at_random_points() {
    // Deterministic pseudo-random pieces, flushed one by one with pauses, so
    // lines arrive split across reads.
    let mut input = Vec::new();
    for i in 0..400 {
        input.extend_from_slice(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"s\",\"n\":{i},\"pad\":\"{}\"}}}}\n",
                "x".repeat(i % 97)
            )
            .as_bytes(),
        );
        if i.is_multiple_of(50) {
            input.extend_from_slice(b"noise \xff\n");
        }
    }
    let dir = scratch("split");
    let record = dir.join("r.jsonl");
    let mut child = spawn_tap(&["--record", record.to_str().unwrap(), "--stats"], &["cat"]);
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        stdout.read_to_end(&mut got).unwrap();
        got
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut at = 0;
    while at < input.len() {
        let n = (1 + (xorshift(&mut seed) % 300) as usize).min(input.len() - at);
        stdin.write_all(&input[at..at + n]).unwrap();
        stdin.flush().unwrap();
        at += n;
        if seed.is_multiple_of(7) {
            thread::sleep(Duration::from_micros(300));
        }
    }
    drop(stdin);
    let got = reader.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(got, input);
    // Every line was framed whole: each direction recorded 400 messages and
    // 8 raw lines, none of them a fragment.
    let entries = read_jsonl(&record);
    for dir in ["c2a", "a2c"] {
        let msgs: Vec<_> = entries
            .iter()
            .filter(|e| e["dir"] == dir && e.get("msg").is_some())
            .collect();
        assert_eq!(msgs.len(), 400, "{dir}");
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(m["msg"]["params"]["n"], i as u64);
        }
        let raws: Vec<_> = entries
            .iter()
            .filter(|e| e["dir"] == dir && e.get("raw").is_some())
            .collect();
        assert_eq!(raws.len(), 8, "{dir}");
        assert!(raws.iter().all(|r| r["raw"] == "noise \u{FFFD}"));
    }
    let s = stats(&out.stderr);
    assert_eq!(s["client_to_agent"]["messages"], 408);
    assert_eq!(s["agent_to_client"]["messages"], 408);
    assert_eq!(s["client_to_agent"]["bytes"], input.len() as u64);
}

#[test]
fn forwards_a_64_mb_line() {
    let mut input = Vec::with_capacity(64 << 20);
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"big\",\"params\":{\"blob\":\"");
    input.resize((64 << 20) - 4, b'a');
    input.extend_from_slice(b"\"}}\n");
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
    let started = Instant::now();
    let out = run_tap(&["--stats"], &["cat"], &input);
    assert!(out.status.success());
    assert!(out.stdout == input, "the 64 MB line came out changed");
    let s = stats(&out.stderr);
    assert_eq!(s["agent_to_client"]["bytes"], input.len() as u64);
    eprintln!("64 MB line through tap: {:?}", started.elapsed());
}

#[test]
fn exit_code_of_the_agent_is_the_taps() {
    let out = run_tap(&[], &["sh", "-c", "exit 7"], b"");
    assert_eq!(out.status.code(), Some(7));
    let out = run_tap(&["--no-validate"], &["sh", "-c", "exit 0"], b"");
    assert_eq!(out.status.code(), Some(0));
    // A signal death is reported the shell's way: 128 + signal number.
    let out = run_tap(&[], &["sh", "-c", "kill -KILL $$"], b"");
    assert_eq!(out.status.code(), Some(128 + 9));
}

#[test]
fn unknown_agent_is_exit_127() {
    let out = run_tap(&[], &["/nonexistent/agent-for-tap-test"], b"");
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run"));
}

#[test]
fn agent_stderr_passes_through() {
    let out = run_tap(
        &[],
        &["sh", "-c", "echo to-stderr >&2; echo to-stdout"],
        b"",
    );
    assert_eq!(out.stdout, b"to-stdout\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("to-stderr\n"));
}

#[test]
fn client_eof_closes_the_agents_stdin() {
    // `cat` ends at EOF, then the agent says so and exits 5.
    let out = run_tap(
        &[],
        &["sh", "-c", "cat; echo after-eof; exit 5"],
        b"one\ntwo\n",
    );
    assert_eq!(out.stdout, b"one\ntwo\nafter-eof\n");
    assert_eq!(out.status.code(), Some(5));
}

#[test]
fn agent_exit_ends_the_tap_even_if_a_grandchild_holds_stdout() {
    let started = Instant::now();
    let mut child = spawn_tap(&[], &["sh", "-c", "sleep 30 & echo $!; exit 3"]);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let status = child.wait().unwrap();
    let _ = Command::new("kill").arg(line.trim()).status();
    assert_eq!(status.code(), Some(3));
    assert!(started.elapsed() < Duration::from_secs(10));
}

fn signal_is_forwarded(signal: &str, trap: &str) {
    let script = format!(
        "trap 'echo got-{signal}; exit 42' {trap}; echo ready; while :; do sleep 0.02; done"
    );
    let mut child = spawn_tap(&[], &["sh", "-c", &script]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    send_signal(signal, child.id());
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, format!("got-{signal}\n"));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(42), "{signal}");
}

#[test]
fn sigterm_is_forwarded() {
    signal_is_forwarded("TERM", "TERM");
}

#[test]
fn sigint_is_forwarded() {
    signal_is_forwarded("INT", "INT");
}

#[test]
fn jsonl_record_format() {
    let dir = scratch("jsonl");
    let record = dir.join("r.jsonl");
    let out = run_tap(
        &["--record", record.to_str().unwrap(), "--no-validate"],
        &["cat"],
        &mixed_input(),
    );
    assert!(out.status.success());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "a record is private to its owner");
    }
    let entries = read_jsonl(&record);
    // Blank lines are not recorded; everything else is, both ways.
    assert_eq!(entries.len(), 2 * 7);
    let mut last_t = [0.0f64; 2];
    for e in &entries {
        let obj = e.as_object().unwrap();
        let dir = obj["dir"].as_str().unwrap();
        assert!(dir == "c2a" || dir == "a2c");
        let t = obj["t"].as_f64().unwrap();
        let slot = usize::from(dir == "a2c");
        assert!(t >= last_t[slot] && t < 60.0);
        last_t[slot] = t;
        assert_eq!(obj.len(), 3, "{e}");
        assert!(obj.contains_key("msg") ^ obj.contains_key("raw"), "{e}");
    }
    let c2a: Vec<_> = entries.iter().filter(|e| e["dir"] == "c2a").collect();
    assert_eq!(
        c2a[0]["msg"],
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}})
    );
    assert_eq!(c2a[1]["raw"], "not json at all");
    // CRLF: the carriage return is not part of the message.
    assert_eq!(
        c2a[2]["msg"],
        json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}})
    );
    assert_eq!(
        c2a[3]["raw"],
        "invalid utf-8: \u{FFFD}\u{FFFD}\u{FFFD}( end"
    );
    assert_eq!(c2a[4]["raw"], "unicode \u{1F600} \u{00e9}");
    assert_eq!(c2a[5]["raw"], "\u{0}\u{1} binary \u{7f}");
    // The last line has no line feed and is still recorded.
    assert_eq!(c2a[6]["msg"], json!({"jsonrpc":"2.0","id":"x","result":{}}));
    // The agent echoes: the same messages come back.
    let a2c: Vec<_> = entries.iter().filter(|e| e["dir"] == "a2c").collect();
    for (c, a) in c2a.iter().zip(&a2c) {
        assert_eq!(c.get("msg"), a.get("msg"));
        assert_eq!(c.get("raw"), a.get("raw"));
    }
}

#[test]
fn raw_lines_are_cut_at_64_kib_with_a_note() {
    let dir = scratch("rawcut");
    let record = dir.join("r.jsonl");
    let mut input = vec![b'z'; 100_000];
    input.push(b'\n');
    let out = run_tap(
        &["--record", record.to_str().unwrap(), "--no-validate"],
        &["cat"],
        &input,
    );
    assert_eq!(out.stdout, input);
    let entries = read_jsonl(&record);
    let raw = entries[0]["raw"].as_str().unwrap();
    assert!(raw.starts_with(&"z".repeat(64 * 1024)));
    assert!(!raw.starts_with(&"z".repeat(64 * 1024 + 1)));
    assert!(raw.contains("truncated") && raw.contains("100000"), "{raw}");
}

#[test]
fn conductor_record_format() {
    let dir = scratch("conductor");
    let record = dir.join("trace.jsons");
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[]}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}"#,
        "\n",
        "not json\n",
    );
    let out = run_tap(
        &[
            "--record",
            record.to_str().unwrap(),
            "--format",
            "conductor",
            "--stats",
        ],
        &["cat"],
        input.as_bytes(),
    );
    assert!(out.status.success());
    let events = read_jsonl(&record);
    assert_eq!(
        events.len(),
        10,
        "5 messages each way, the raw line left out"
    );
    let c2a: Vec<_> = events.iter().filter(|e| e["from"] == "Client").collect();
    assert!(c2a.iter().all(|e| e["to"] == "Agent"));
    let a2c: Vec<_> = events.iter().filter(|e| e["from"] == "Agent").collect();
    assert!(a2c.iter().all(|e| e["to"] == "Client"));
    assert_eq!(c2a.len(), 5);
    let strip_ts = |e: &Value| {
        let mut e = e.clone();
        assert!(e["ts"].as_f64().unwrap() >= 0.0);
        e.as_object_mut().unwrap().remove("ts");
        e
    };
    assert_eq!(
        strip_ts(c2a[0]),
        json!({"type":"request","protocol":"acp","from":"Client","to":"Agent","id":1,
               "method":"session/prompt","session":"sess-1",
               "params":{"sessionId":"sess-1","prompt":[]}})
    );
    assert_eq!(
        strip_ts(c2a[1]),
        json!({"type":"notification","protocol":"acp","from":"Client","to":"Agent",
               "method":"session/update","session":"sess-1",
               "params":{"sessionId":"sess-1","update":{}}})
    );
    // No session id in the params: `session` is omitted, not null.
    assert_eq!(
        strip_ts(c2a[2]),
        json!({"type":"request","protocol":"acp","from":"Client","to":"Agent","id":"init",
               "method":"initialize","params":{"protocolVersion":1}})
    );
    assert_eq!(
        strip_ts(c2a[3]),
        json!({"type":"response","from":"Client","to":"Agent","id":1,"is_error":false,
               "payload":{"stopReason":"end_turn"}})
    );
    assert_eq!(
        strip_ts(c2a[4]),
        json!({"type":"response","from":"Client","to":"Agent","id":2,"is_error":true,
               "payload":{"code":-32601,"message":"nope"}})
    );
    let s = stats(&out.stderr);
    assert_eq!(s["recorded"], 10);
    assert_eq!(s["record_left_out"], 2);
}

/// Every kind of secret the record must never show, sent by a client to an
/// agent that first asks an elicitation question and then echoes.
#[test]
fn secrets_never_reach_the_record() {
    let secrets = [
        "SECRET-AUTH-1",
        "SECRET-ENV-2",
        "SECRET-HEADER-3",
        "SECRET-ANSWER-4",
        "SECRET-QUESTION-5",
        "SECRET-NOTE-6",
        "SECRET-DEFAULT-7",
        "SECRET-ORPHAN-8",
        "SECRET-PREFILL-9",
        "SECRET-LOGIN-10",
        "SECRET-PROVIDER-11",
        "SECRET-TERMINAL-12",
    ];
    let elicitation = json!({
        "jsonrpc": "2.0", "id": 77, "method": "elicitation/create",
        "params": {
            "sessionId": "s", "mode": "form", "message": "Questions",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "token": {"type": "string", "default": "SECRET-DEFAULT-7",
                              "_meta": {"lody": {"elicitation": {"version": 1, "secret": true}}}},
                    "approach": {"type": "string"},
                    "pin": {"type": "string"},
                    "approach_note": {"type": "string",
                              "_meta": {"ua": {"elicitation": {"version": 1, "noteFor": "approach"}}}}
                },
                "required": ["token", "approach", "pin"]
            },
            "_meta": {"lody": {"elicitation": {
                "version": 1,
                "questions": [
                    {"id": "approach", "question": "Which?", "header": "Approach",
                     "options": [{"label": "Small"}], "multiSelect": false,
                     "note": {"fieldId": "approach_note", "isSecret": true}},
                    {"id": "pin", "question": "PIN?", "header": "PIN",
                     "options": [], "multiSelect": false, "isSecret": true}
                ],
                "answers": {"pin": "SECRET-PREFILL-9", "approach": "Small"}
            }}}
        }
    });
    let agent_script = format!("printf '%s\\n' '{elicitation}'; exec cat");
    let client_lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"authenticate",
               "params":{"methodId":"api-key","_meta":{"key":"SECRET-AUTH-1"}}}),
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[
            {"name":"fs","command":"/bin/mcp","args":["--visible-arg"],
             "env":[{"name":"TOKEN","value":"SECRET-ENV-2"}]},
            {"type":"http","name":"web","url":"https://mcp.example",
             "headers":[{"name":"Authorization","value":"Bearer SECRET-HEADER-3"}]}]}}),
        json!({"jsonrpc":"2.0","id":77,"result":{"action":"accept","content":{
            "token":"SECRET-ANSWER-4","approach":"visible-answer",
            "approach_note":"SECRET-NOTE-6","pin":"SECRET-QUESTION-5"}}}),
        json!({"jsonrpc":"2.0","id":99,"result":{"action":"accept","content":{"x":"SECRET-ORPHAN-8"}}}),
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt",
               "params":{"sessionId":"s","prompt":[{"type":"text","text":"visible-prompt"}]}}),
        // ACP v2's login, and the other requests that carry a credential.
        json!({"jsonrpc":"2.0","id":4,"method":"auth/login",
               "params":{"methodId":"oauth-device","_meta":{"token":"SECRET-LOGIN-10"}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"providers/set",
               "params":{"providerId":"main","apiType":"anthropic","baseUrl":"https://llm.example",
                         "headers":{"x-provider-key":"SECRET-PROVIDER-11"}}}),
        json!({"jsonrpc":"2.0","id":6,"method":"terminal/create",
               "params":{"sessionId":"s","command":"make",
                         "env":[{"name":"NPM_TOKEN","value":"SECRET-TERMINAL-12"}]}}),
    ];
    for format in ["jsonl", "conductor"] {
        let dir = scratch(&format!("secrets-{format}"));
        let record = dir.join("r.jsonl");
        let mut child = spawn_tap(
            &["--record", record.to_str().unwrap(), "--format", format],
            &["sh", "-c", &agent_script],
        );
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // Answer only once the question has been seen, like a real client.
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&first).unwrap(), elicitation);
        let mut stdin = child.stdin.take().unwrap();
        let mut sent = Vec::new();
        for line in &client_lines {
            sent.extend_from_slice(line.to_string().as_bytes());
            sent.push(b'\n');
        }
        stdin.write_all(&sent).unwrap();
        drop(stdin);
        let mut echoed = Vec::new();
        out.read_to_end(&mut echoed).unwrap();
        assert!(child.wait().unwrap().success());
        // Forwarding is untouched: the secrets did reach the agent.
        assert_eq!(echoed, sent);

        let text = std::fs::read_to_string(&record).unwrap();
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "{format}: {secret} in the record:\n{text}"
            );
        }
        assert!(text.contains("[REDACTED]"));
        // What is not secret stays readable.
        for visible in [
            "visible-answer",
            "visible-prompt",
            "--visible-arg",
            "TOKEN",
            "Authorization",
            "x-provider-key",
            "NPM_TOKEN",
            "https://llm.example",
            "api-key",
            "oauth-device",
        ] {
            if visible == "api-key" || visible == "oauth-device" {
                // `authenticate` parameters are hidden wholesale.
                assert!(!text.contains(visible), "{format}");
            } else {
                assert!(text.contains(visible), "{format}: {visible} missing");
            }
        }
        // Each message recorded in both directions (the agent echoes).
        assert_eq!(text.lines().count(), 1 + 2 * client_lines.len(), "{format}");
    }
}

#[test]
fn findings_go_to_the_findings_file() {
    let dir = scratch("findings");
    let findings = dir.join("f.jsonl");
    let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\nthis is not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n";
    let out = run_tap(
        &["--findings", findings.to_str().unwrap(), "--stats"],
        &["cat"],
        input,
    );
    assert_eq!(out.stdout, input);
    let s = stats(&out.stderr);
    // Nothing was skipped at this rate: every message was validated.
    assert_eq!(s["validation_skipped"], 0);
    assert_eq!(s["validated"], 6);
    let found = read_jsonl(&findings);
    let not_json: Vec<_> = found.iter().filter(|f| f["rule"] == "not-json").collect();
    assert_eq!(not_json.len(), 2, "{found:?}");
    for f in &not_json {
        assert_eq!(f["index"], 2);
        assert_eq!(f["severity"], "error");
        assert!(f["t"].as_f64().is_some());
    }
    assert_eq!(
        not_json
            .iter()
            .map(|f| f["dir"].as_str().unwrap())
            .collect::<std::collections::BTreeSet<_>>(),
        ["a2c", "c2a"].into_iter().collect()
    );
    assert_eq!(s["findings"], found.len() as u64);
}

#[test]
fn traffic_in_a_namespace_the_client_does_not_read_is_a_finding() {
    let dir = scratch("namespace-mismatch");
    let findings = dir.join("f.jsonl");
    // The client reads only `lody`; the agent answers and then writes `_ua/…`.
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"lody":{}}}}}"#;
    let agent = concat!(
        "read line; ",
        r#"echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"_meta":{"ua":{"usage":{"version":1}},"lody":{"usage":{"version":1}}}}}}'; "#,
        r#"echo '{"jsonrpc":"2.0","method":"_ua/session/usage_update","params":{"sessionId":"s","usage":{"inputTokens":1,"outputTokens":0,"cacheReadInputTokens":0}}}'; "#,
        "cat > /dev/null"
    );
    let input = format!("{init}\n");
    let out = run_tap(
        &["--findings", findings.to_str().unwrap()],
        &["sh", "-c", agent],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    let found = read_jsonl(&findings);
    let hits: Vec<_> = found
        .iter()
        .filter(|f| f["rule"] == "namespace-mismatch")
        .collect();
    assert_eq!(hits.len(), 1, "{found:?}");
    assert_eq!(hits[0]["dir"], "a2c");
    assert_eq!(hits[0]["severity"], "error");
}

#[test]
fn findings_go_to_stderr_by_default() {
    let out = run_tap(&[], &["cat"], b"garbage line\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("c2a #1") && err.contains("[not-json]"),
        "{err}"
    );
}

#[test]
fn no_validate_validates_nothing() {
    let out = run_tap(&["--no-validate", "--stats"], &["cat"], b"garbage\n{}\n");
    let s = stats(&out.stderr);
    assert_eq!(s["validated"], 0);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not-json"));
    assert_eq!(out.stdout, b"garbage\n{}\n");
}

#[test]
fn findings_file_and_no_validate_conflict() {
    let out = run_tap(&["--no-validate", "--findings", "/dev/null"], &["cat"], b"");
    assert_eq!(out.status.code(), Some(2));
}

mod redactor {
    use acp_ext::check::Direction;
    use acp_ext::tap::{REDACTED, Redactor};
    use serde_json::{Value, json};

    fn elicit(id: u64, meta: Value, props: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
            "sessionId":"s","mode":"form","message":"?",
            "requestedSchema":{"type":"object","properties":props},
            "_meta":meta}})
    }

    fn answer(id: u64, content: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":content}})
    }

    #[test]
    fn a_secret_question_without_id_hides_every_answer() {
        let mut r = Redactor::new();
        let q = elicit(
            1,
            json!({"lody":{"elicitation":{"version":1,"questions":[
                {"question":"?","header":"h","options":[],"multiSelect":false,"isSecret":true}]}}}),
            json!({"a":{"type":"string"},"b":{"type":"string"}}),
        );
        assert!(r.redact(Direction::AgentToClient, &q).is_none());
        let copy = r
            .redact(
                Direction::ClientToAgent,
                &answer(1, json!({"a":"x","b":"y"})),
            )
            .unwrap();
        assert_eq!(
            copy["result"]["content"],
            json!({"a":REDACTED,"b":REDACTED})
        );
    }

    #[test]
    fn only_secret_keys_are_hidden_and_only_in_the_matching_answer() {
        let mut r = Redactor::new();
        let q = elicit(
            7,
            json!({}),
            json!({"pin":{"type":"string","_meta":{"ua":{"elicitation":{"version":1,"secret":true}}}},
                   "name":{"type":"string"}}),
        );
        r.redact(Direction::AgentToClient, &q);
        // An answer to another request, not shaped like an elicitation
        // answer, is left alone.
        let other = json!({"jsonrpc":"2.0","id":8,"result":{"content":{"pin":"1"}}});
        assert!(r.redact(Direction::ClientToAgent, &other).is_none());
        let copy = r
            .redact(
                Direction::ClientToAgent,
                &answer(7, json!({"pin":"1234","name":"Ann"})),
            )
            .unwrap();
        assert_eq!(
            copy["result"]["content"],
            json!({"pin":REDACTED,"name":"Ann"})
        );
        // Declined: nothing to hide.
        r.redact(Direction::AgentToClient, &q);
        let declined = json!({"jsonrpc":"2.0","id":7,"result":{"action":"decline"}});
        assert!(r.redact(Direction::ClientToAgent, &declined).is_none());
    }

    #[test]
    fn batches_are_redacted_member_by_member() {
        let mut r = Redactor::new();
        let batch = json!([
            {"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"m","token":"t0p"}},
            {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}
        ]);
        let copy = r.redact(Direction::ClientToAgent, &batch).unwrap();
        assert!(!copy.to_string().contains("t0p"));
        assert_eq!(copy[1], batch[1]);
    }

    /// Each request of ACP v1 and v2 that carries a credential: the
    /// secret is hidden in the record's copy (whichever way it travels),
    /// what names it stays, and `may_redact` says so from the method.
    #[test]
    fn every_credential_bearing_request_is_redacted() {
        let cases = [
            (
                "authenticate",
                json!({"methodId":"api-key","_meta":{"key":"S1"}}),
                json!({"methodId":REDACTED,"_meta":REDACTED}),
            ),
            (
                "auth/login",
                json!({"methodId":"oauth","_meta":{"token":"S2"}}),
                json!({"methodId":REDACTED,"_meta":REDACTED}),
            ),
            (
                "session/new",
                json!({"cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":"S3"}]}]}),
                json!({"cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":REDACTED}]}]}),
            ),
            (
                "session/load",
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"type":"http","name":"w","url":"u",
                    "headers":[{"name":"Authorization","value":"S4"}]}]}),
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"type":"http","name":"w","url":"u",
                    "headers":[{"name":"Authorization","value":REDACTED}]}]}),
            ),
            (
                "session/resume",
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":"S5"}]}]}),
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":REDACTED}]}]}),
            ),
            (
                "session/fork",
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":"S6"}]}]}),
                json!({"sessionId":"s","cwd":"/","mcpServers":[{"name":"n","command":"c","args":[],
                    "env":[{"name":"K","value":REDACTED}]}]}),
            ),
            (
                "providers/set",
                json!({"providerId":"main","apiType":"openai","baseUrl":"https://x",
                    "headers":{"Authorization":"Bearer S7","x-route":"S8"}}),
                json!({"providerId":"main","apiType":"openai","baseUrl":"https://x",
                    "headers":{"Authorization":REDACTED,"x-route":REDACTED}}),
            ),
            (
                "terminal/create",
                json!({"sessionId":"s","command":"make","env":[{"name":"TOKEN","value":"S9"}]}),
                json!({"sessionId":"s","command":"make","env":[{"name":"TOKEN","value":REDACTED}]}),
            ),
        ];
        for (method, params, hidden) in cases {
            let message = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
            for d in [Direction::ClientToAgent, Direction::AgentToClient] {
                let mut r = Redactor::new();
                assert!(r.may_redact(Some(method), None), "{method}");
                let copy = r.redact(d, &message).unwrap_or_else(|| panic!("{method}"));
                assert_eq!(copy["params"], hidden, "{method}");
                assert_eq!(copy["method"], method);
            }
        }
    }

    /// The recorder copies messages for which `may_redact` is false without
    /// parsing them: `redact` must then have nothing to hide.
    #[test]
    fn may_redact_false_means_nothing_to_hide() {
        let samples = [
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}),
            json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}),
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}),
            json!({"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}),
            json!({"jsonrpc":"2.0","id":4,"result":{"content":"file text"}}),
            json!({"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"no"}}),
            json!({"jsonrpc":"2.0","id":6,"result":{"action":"accept","content":{"k":"v"}}}),
            json!({"jsonrpc":"2.0","id":6,"result":{"\u{61}ction":"accept","content":{"k":"v"}}}),
            json!({"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"x"}}),
            json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[
                {"name":"n","command":"c","args":[],"env":[{"name":"K","value":"V"}]}]}}),
        ];
        for pending in [false, true] {
            for m in &samples {
                let mut r = Redactor::new();
                if pending {
                    r.redact(Direction::AgentToClient, &elicit(99, json!({}), json!({})));
                }
                let method = m.get("method").and_then(Value::as_str);
                let result = m.get("result").map(|r| r.to_string());
                if !r.may_redact(method, result.as_deref()) {
                    for d in [Direction::ClientToAgent, Direction::AgentToClient] {
                        assert!(r.redact(d, m).is_none(), "{m}");
                    }
                }
            }
        }
    }
}

#[test]
fn records_a_long_line_whole() {
    let dir = scratch("longline");
    let record = dir.join("r.jsonl");
    let blob = "b".repeat(8 << 20);
    let line = json!({"jsonrpc":"2.0","method":"long","params":{"blob":blob}}).to_string() + "\n";
    let out = run_tap(
        &["--record", record.to_str().unwrap(), "--no-validate"],
        &["cat"],
        line.as_bytes(),
    );
    assert!(out.stdout == line.as_bytes());
    let entries = read_jsonl(&record);
    assert_eq!(entries.len(), 2);
    for e in &entries {
        assert_eq!(e["msg"]["params"]["blob"].as_str().unwrap().len(), 8 << 20);
    }
}
