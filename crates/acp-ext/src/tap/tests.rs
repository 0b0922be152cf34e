//! The machinery off the forwarding path, in process: framing across chunk
//! boundaries and gaps, ticket order, the record and the findings path with
//! an injected validator.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fuzzing::Captured;
use super::monitor::{
    Body, ChunkSender, CpuBudget, Missed, Monitor, QueueLimits, Shared, Skip, ToMonitor,
    validate_loop,
};
use super::{Counters, FindingSink, RecordFormat, RecordWriter};
use crate::check::{Direction, Finding, Severity};

/// The JSON lines written to `c`.
fn lines(c: &Captured) -> Vec<Value> {
    String::from_utf8(c.take())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const LIMITS: QueueLimits = QueueLimits {
    monitor_bytes: 1 << 20,
    validator_messages: 1024,
    validator_bytes: 1 << 20,
};

struct Rig {
    shared: Arc<Shared>,
    tx: mpsc::Sender<ToMonitor>,
    record: Captured,
    validated: mpsc::Receiver<Vec<(Direction, Value)>>,
    monitor: std::thread::JoinHandle<Option<io::Error>>,
    validator: std::thread::JoinHandle<()>,
    findings: Captured,
}

/// A monitor recording JSONL, and a validator that reports a finding for
/// every message whose method is `bad`.
fn rig() -> Rig {
    let counters = Arc::new(Counters::default());
    let shared = Arc::new(Shared::new(counters, LIMITS, Instant::now(), true));
    let (tx, rx) = mpsc::channel();
    let record = Captured::default();
    let (vtx, vrx) = mpsc::channel();
    let monitor = Monitor::in_process(Arc::clone(&shared), rx, record.clone(), vtx);
    let monitor = std::thread::spawn(move || monitor.run());
    let findings = Captured::default();
    let sink = Arc::new(Mutex::new(FindingSink::Writer(Box::new(findings.clone()))));
    let (seen_tx, validated) = mpsc::channel();
    let s = Arc::clone(&shared);
    let validator = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let check = move |d: Direction, m: &Value| {
            seen.push((d, m.clone()));
            let _ = seen_tx.send(seen.clone());
            if m["method"] == "bad" {
                vec![Finding {
                    rule: "test-rule",
                    severity: Severity::Warning,
                    path: "/method".into(),
                    message: "bad method".into(),
                }]
            } else {
                Vec::new()
            }
        };
        validate_loop(s, vrx, Box::new(check), sink, CpuBudget::new(1.0));
    });
    Rig {
        shared,
        tx,
        record,
        validated,
        monitor,
        validator,
        findings,
    }
}

impl Rig {
    fn sender(&self, d: Direction) -> ChunkSender {
        ChunkSender::new(d, self.tx.clone(), Arc::clone(&self.shared))
    }

    /// Ends the connection; returns what the validator saw.
    fn finish(self) -> (Captured, Vec<(Direction, Value)>, Captured, Arc<Shared>) {
        self.tx.send(ToMonitor::Finish).unwrap();
        assert!(self.monitor.join().unwrap().is_none());
        self.validator.join().unwrap();
        let seen = self.validated.try_iter().last().unwrap_or_default();
        (self.record, seen, self.findings, self.shared)
    }
}

#[test]
fn lines_split_across_chunks_are_framed_whole() {
    let rig = rig();
    let mut c2a = rig.sender(Direction::ClientToAgent);
    let text = b"{\"method\":\"a\"}\n{\"method\":\"b\"}\r\n\n{\"meth";
    for piece in text.chunks(3) {
        c2a.offer(piece);
    }
    c2a.offer(b"od\":\"c\"}");
    let (record, seen, _, shared) = rig.finish();
    let msgs: Vec<_> = lines(&record)
        .into_iter()
        .map(|e| e["msg"].clone())
        .collect();
    assert_eq!(
        msgs,
        [
            json!({"method":"a"}),
            json!({"method":"b"}),
            json!({"method":"c"})
        ]
    );
    assert_eq!(seen.len(), 3);
    // Blank lines count as lines, are neither recorded nor validated.
    assert_eq!(shared.counters.lines[0].load(Relaxed), 4);
    assert_eq!(shared.counters.validated.load(Relaxed), 3);
}

#[test]
fn a_gap_drops_only_the_broken_line() {
    let rig = rig();
    let c2a = rig.sender(Direction::ClientToAgent);
    let send = |body| c2a.send(c2a.ticket(), body);
    send(Body::Bytes(b"{\"n\":1}\n{\"n\":".to_vec()));
    // Bytes the monitor never saw, ending inside a line.
    send(Body::Unseen(100));
    send(Body::Bytes(b"5}\n{\"n\":3}\n{\"n\":".to_vec()));
    // Missed bytes ending with a line feed: the next chunk starts a line.
    send(Body::Missed(Missed::of(b"9}\n", Skip::OverBudget)));
    send(Body::Bytes(b"{\"n\":4}\n".to_vec()));
    let (record, _, _, shared) = rig.finish();
    let ns: Vec<_> = lines(&record)
        .iter()
        .map(|e| e["msg"]["n"].clone())
        .collect();
    assert_eq!(ns, [json!(1), json!(3), json!(4)]);
    assert_eq!(shared.counters.unmonitored_bytes[0].load(Relaxed), 103);
}

#[test]
fn chunks_are_handled_in_ticket_order() {
    let rig = rig();
    let c2a = rig.sender(Direction::ClientToAgent);
    let a2c = rig.sender(Direction::AgentToClient);
    let request = c2a.ticket();
    let answer = a2c.ticket();
    // The answer's note arrives first (its pump was quicker to send it).
    a2c.send(answer, Body::Bytes(b"{\"id\":1,\"result\":{}}\n".to_vec()));
    c2a.send(
        request,
        Body::Bytes(b"{\"id\":1,\"method\":\"x\"}\n".to_vec()),
    );
    let (record, seen, _, _) = rig.finish();
    let dirs: Vec<_> = lines(&record).iter().map(|e| e["dir"].clone()).collect();
    assert_eq!(dirs, [json!("c2a"), json!("a2c")]);
    assert_eq!(seen[0].0, Direction::ClientToAgent);
    assert_eq!(seen[1].0, Direction::AgentToClient);
}

#[test]
fn findings_of_an_injected_validator_reach_the_sink() {
    let rig = rig();
    let mut a2c = rig.sender(Direction::AgentToClient);
    a2c.offer(b"{\"method\":\"ok\"}\n{\"method\":\"bad\"}\nnot json\n");
    let (_, _, findings, shared) = rig.finish();
    let found = lines(&findings);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["rule"], "test-rule");
    assert_eq!(found[0]["severity"], "warning");
    assert_eq!(found[0]["index"], 2);
    assert_eq!(found[0]["method"], "bad");
    assert_eq!(found[0]["dir"], "a2c");
    assert_eq!(found[0]["path"], "/method");
    assert_eq!(found[1]["rule"], "not-json");
    assert_eq!(found[1]["index"], 3);
    assert_eq!(shared.counters.findings.load(Relaxed), 2);
    assert_eq!(shared.counters.validated.load(Relaxed), 3);
}

#[test]
fn a_busy_validator_skips_and_counts() {
    let counters = Arc::new(Counters::default());
    let limits = QueueLimits {
        validator_messages: 2,
        ..LIMITS
    };
    let shared = Arc::new(Shared::new(counters, limits, Instant::now(), false));
    let (tx, rx) = mpsc::channel();
    // A validator that is never run: its queue fills after one chunk.
    let (vtx, _vrx) = mpsc::channel();
    let monitor = Monitor {
        shared: Arc::clone(&shared),
        rx,
        record: None,
        validator_tx: Some(vtx),
        pipes: [None, None],
        record_error: None,
    };
    let mut c2a = ChunkSender::new(Direction::ClientToAgent, tx.clone(), Arc::clone(&shared));
    c2a.offer(b"{}\n{}\n{}\n");
    // Now busy: the pump learns it, and the monitor counts what it skips.
    c2a.offer(b"{}\n{}\n");
    tx.send(ToMonitor::Finish).unwrap();
    assert!(monitor.run().is_none());
    assert_eq!(shared.validator_queued.load(Relaxed), 3);
    assert_eq!(shared.counters.validation_skipped.load(Relaxed), 2);
}

#[test]
fn chunk_buffers_stay_close_to_the_bytes_they_hold() {
    let shared = Shared::new(Arc::new(Counters::default()), LIMITS, Instant::now(), true);
    // A one-byte chunk must not hold a large buffer: the budget counts bytes.
    assert!(shared.buffer(1).capacity() < 64);
    // A large buffer the monitor is done with is reused for a large chunk...
    let mut big = shared.buffer(256 << 10);
    big.extend_from_slice(&[7; 256 << 10]);
    let cap = big.capacity();
    shared.recycle(big);
    let again = shared.buffer(200 << 10);
    assert!(again.is_empty());
    assert_eq!(again.capacity(), cap);
    shared.recycle(again);
    // ...but never for a chunk it would dwarf, nor for a small one.
    assert!(shared.buffer(32 << 10).capacity() <= 4 * (32 << 10));
    assert!(shared.buffer(100).capacity() < 4 * 100);
    assert_eq!(shared.pool.lock().unwrap().len(), 1);
}

#[test]
fn a_pooled_buffer_is_never_grown_for_a_larger_chunk() {
    // Growing a reused buffer moves it to fresh pages, which the kernel
    // zeroes on first touch: the monitor once spent a third of its time so.
    let shared = Shared::new(Arc::new(Counters::default()), LIMITS, Instant::now(), true);
    let small = shared.buffer(20 << 10);
    let small_cap = small.capacity();
    shared.recycle(small);
    let big = shared.buffer(64 << 10);
    assert!(big.capacity() >= 64 << 10);
    // The 20 KiB buffer stays in the pool for a chunk it fits.
    assert_eq!(shared.pool.lock().unwrap().len(), 1);
    assert_eq!(shared.buffer(20 << 10).capacity(), small_cap);
}

#[test]
fn the_validator_budget_pauses_only_past_its_share() {
    assert!(!CpuBudget::new(1.0).capped());
    assert_eq!(CpuBudget::new(1.0).spend(Duration::from_secs(5)), None);
    assert!(CpuBudget::new(0.5).capped());
    let mut budget = CpuBudget::new(0.5);
    // Within the burst allowance: no pause.
    assert_eq!(budget.spend(Duration::from_millis(5)), None);
    // 100 ms of work at half a core is paid back by about 170 ms of rest
    // (the 15 ms of burst left pays for part of it).
    let pause = budget.spend(Duration::from_millis(100)).unwrap();
    assert!(
        pause > Duration::from_millis(150) && pause <= Duration::from_millis(170),
        "{pause:?}"
    );
}

#[test]
fn the_record_calls_json_what_the_validator_calls_json() {
    let big = format!("1{}", "0".repeat(400));
    let lines = [
        // The grammar allows these, but no JSON tree holds them: the
        // validator reports them as not JSON, so the record keeps them raw.
        r#"{"jsonrpc":"2.0","method":"m","params":{"n":1e400}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","method":"m","params":{{"n":{big}}}}}"#),
        r#"{"jsonrpc":"2.0","method":"m","params":{"n":-1E+999}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"m","params":{"s":"\ud800"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"s":"\uDC00x"}}"#.to_owned(),
        // And these are JSON.
        r#"{"jsonrpc":"2.0","method":"m","params":{"n":1e300,"m":-2.5E-400}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"m","params":{"s":"\u00e9 \ud83d\ude00","e":"1e999"}}"#
            .to_owned(),
    ];
    for format in [RecordFormat::Jsonl, RecordFormat::Conductor] {
        for line in &lines {
            let mut w = RecordWriter::new(Vec::new(), format);
            w.line(Direction::ClientToAgent, 0.0, line.as_bytes())
                .unwrap();
            let out = String::from_utf8(w.into_inner()).unwrap();
            let is_json = serde_json::from_str::<Value>(line).is_ok();
            match format {
                RecordFormat::Jsonl => {
                    let entry: Value = serde_json::from_str(&out).unwrap();
                    assert_eq!(entry.get("msg").is_some(), is_json, "{line} -> {out}");
                    assert_eq!(entry.get("raw").is_some(), !is_json, "{line} -> {out}");
                }
                _ => {
                    // Not-JSON lines are left out of a conductor trace.
                    assert_eq!(!out.is_empty(), is_json, "{line} -> {out}");
                    if is_json {
                        serde_json::from_str::<Value>(&out).unwrap();
                    }
                }
            }
        }
    }
}
