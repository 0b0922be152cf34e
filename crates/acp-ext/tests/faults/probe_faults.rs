//! probe: random split points, floods, a 64 MB line

use super::*;

/// The part of a probe report that does not depend on timing or on the
/// agent's command line: everything but `command`, `sessionId` and each
/// prompt's `millis` and traffic counts.
fn comparable(report: &Value) -> Value {
    let mut r = report.clone();
    let m = r.as_object_mut().unwrap();
    m.shift_remove("command");
    m.shift_remove("sessionId");
    for p in m["prompts"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.shift_remove("millis");
        // Background work finishes between prompts, so which turn's
        // traffic counts its updates depends on timing.
        p.shift_remove("updates");
        p.shift_remove("extensionNotifications");
    }
    // On a link that delivers the prompt's response late, a steer sent
    // after the turn ended at the agent looks sent mid-turn and answered
    // after it: the warning depends on timing, not on the bytes.
    if let Some(findings) = m.get_mut("findings").and_then(Value::as_array_mut) {
        findings.retain(|f| f["rule"] != "steer-answered-after-turn");
    }
    // The probe steers a turn still running 100 ms in: on a slower link
    // more turns are, so which turns it steered depends on timing too.
    if let Some(queries) = m.get_mut("queries").and_then(Value::as_array_mut) {
        queries.retain(|q| {
            !q["method"]
                .as_str()
                .unwrap_or("")
                .ends_with("session/steer")
        });
    }
    r
}

/// The demo's script (every scripted behaviour of `serve`), its plain
/// prompt replaced by multi-byte text that `serve` echoes.
fn probe_script() -> Vec<String> {
    let mut args = Vec::new();
    let text = format!("Summarize {}", "é€😀".repeat(60));
    for p in acp_ext::demo::SCRIPT {
        let p = if p.starts_with('/') { p } else { text.as_str() };
        args.push("--prompt".to_string());
        args.push(p.to_string());
    }
    args
}

/// A `sh` fragment that copies its input to its output in pieces of at
/// most the given sizes (each `dd` is one read and one write, so every
/// piece is a separate write on the pipe, and a piece never waits for
/// bytes that are not there yet), pausing now and then, then copies the
/// rest as it comes.
fn splitter(sizes: &[usize]) -> String {
    let mut s = String::from("{ for n in");
    for n in sizes {
        s.push_str(&format!(" {n}"));
    }
    s.push_str("; do dd bs=$n count=1 2>/dev/null; i=$((i+1)); [ $((i%8)) = 0 ] && sleep 0.001; done; exec cat; }");
    s
}

/// Pseudo-random piece sizes, 1 to `max` bytes, adding up to `total`.
fn sizes(total: usize, max: u64, mut seed: u64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut sum = 0;
    while sum < total {
        let n = 1 + (xorshift(&mut seed) % max) as usize;
        out.push(n);
        sum += n;
    }
    out
}

#[test]
fn probe_sees_the_same_agent_through_random_split_points() {
    let dir = scratch("probe-splits");
    let script = probe_script();
    let args = strs(&script);
    // Plain session ids: both runs must give the same report.
    let serve = [
        EXE.to_string(),
        "serve".into(),
        "--session-ids".into(),
        "counter".into(),
    ];
    let (plain_status, plain, _) = probe_measured(&args, &serve);
    assert!(plain_status.success(), "{plain_status:?}: {plain:#}");
    // The agent: `serve` between two splitters, so that every write in
    // both directions arrives in pieces of 1 to 24 (in) or 64 (out) bytes,
    // cut at random points: inside the multi-byte characters `serve`
    // echoes, inside JSON tokens, between a line and its `\n`. The
    // splitters cover about what a plain run sends (4 kB in, 48 kB out);
    // anything beyond goes through whole.
    let agent_sh = format!(
        "i=0; {} | {} serve --session-ids counter | {{ i=0; {}; }}",
        splitter(&sizes(4_000, 24, 0x2545_F491_4F6C_DD1D)),
        quote(EXE),
        splitter(&sizes(50_000, 64, 0x9E37_79B9_7F4A_7C15)),
    );
    let script_file = dir.join("agent.sh");
    std::fs::write(&script_file, agent_sh).unwrap();
    let pidfile = dir.join("pid");
    let (status, split, _) = probe_measured(
        &args,
        &agent(&pidfile, &format!(". '{}'", script_file.display())),
    );
    assert!(status.success(), "{status:?}: {split:#}");
    assert_eq!(comparable(&split), comparable(&plain));
    assert_eq!(comparable(&split)["findings"], Value::Array(vec![]));
    assert_eq!(
        split["prompts"].as_array().unwrap().len(),
        acp_ext::demo::SCRIPT.len()
    );
    assert_group_gone(read_pid(&pidfile), "split serve behind probe");
}

/// The findings of a probe report that are the probe's own failures
/// (a timeout, a failed request, a broken connection).
fn probe_failures(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().is_some_and(|r| r.starts_with("probe")))
        .collect()
}

/// The exit code `acp-ext probe` documents: 1 when a finding is an error.
fn probe_exit_code(report: &Value) -> i32 {
    let errors = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["severity"] == "error");
    i32::from(errors)
}

/// Probes `serve` (one prompt) behind an agent that first writes the file
/// `before` (its pid file goes beside it), asserting that the probe got
/// through to `serve`. Returns the report, the probe's peak resident
/// memory and the agent's pid.
fn probe_serve_after(before: &Path) -> (Value, u64, i32) {
    let pidfile = before.with_file_name("pid");
    let script = format!("cat '{}'; exec {} serve", before.display(), quote(EXE));
    let (status, report, peak) = probe_measured(&["--prompt", "hello"], &agent(&pidfile, &script));
    assert_eq!(report["agentInfo"]["name"], "acp-ext-serve");
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn");
    assert_eq!(probe_failures(&report), Vec::<&Value>::new());
    assert_eq!(status.code(), Some(probe_exit_code(&report)), "{report:#}");
    (report, peak, read_pid(&pidfile))
}

#[test]
fn probe_gets_through_an_agent_flooding_notifications_before_it_answers() {
    // The agent writes 8 MiB of `session/update` chunks for a session
    // nobody opened (whole lines, far more than a pipe holds) before it
    // even reads `initialize`, then answers normally.
    const SIZE: usize = 8 << 20;
    let dir = scratch("probe-flood");
    let file = dir.join("flood.jsonl");
    let mut flood = flood_bytes(SIZE);
    let end = flood.iter().rposition(|&b| b == b'\n').unwrap();
    flood.truncate(end + 1);
    std::fs::write(&file, &flood).unwrap();
    drop(flood);
    let (_, peak, pid) = probe_serve_after(&file);
    eprintln!(
        "probe under a {} MiB flood: peak RSS {} MiB",
        SIZE >> 20,
        peak >> 20
    );
    assert_group_gone(pid, "flooding agent behind probe");
    // Generous: the SDK's transport parses lines ahead of its dispatcher
    // into an unbounded queue, so the peak grows with the flood (about
    // 8 bytes per byte of flood on top of 25 MiB, debug build).
    assert!(
        peak < 256 << 20,
        "peak RSS {} MiB for a {} MiB flood",
        peak >> 20,
        SIZE >> 20
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probe_reads_a_64_mb_line_and_reports_briefly() {
    // One `session/update` line of 64 MiB (multi-byte text), then a
    // normal agent.
    const SIZE: usize = 64 << 20;
    let dir = scratch("probe-long-line");
    let file = dir.join("line.json");
    let head = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#;
    let tail = "\"}}}}\n";
    let mut line = Vec::with_capacity(SIZE);
    line.extend_from_slice(head.as_bytes());
    while line.len() + 10 + tail.len() <= SIZE {
        line.extend_from_slice("añ€😀".as_bytes());
    }
    line.resize(SIZE - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    std::fs::write(&file, &line).unwrap();
    drop(line);
    let (report, peak, pid) = probe_serve_after(&file);
    eprintln!("probe reading a 64 MiB line: peak RSS {} MiB", peak >> 20);
    // Whatever it says about the line, it does not repeat it.
    assert!(
        report.to_string().len() < 64 << 10,
        "a report of {} bytes",
        report.to_string().len()
    );
    assert_group_gone(pid, "agent with a long line behind probe");
    let _ = std::fs::remove_dir_all(&dir);
}
