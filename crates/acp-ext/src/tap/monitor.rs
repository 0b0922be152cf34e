//! Everything off the forwarding path: the bounded hand-off of forwarded
//! chunks, framing into lines, the recorder and the validator.
//!
//! ```text
//! c2a pump ─┐ chunks (byte budget,     ┌─ record file (every line, redacted)
//!           ├─ try, drop + count) ─ monitor
//! a2c pump ─┘                          └─ validator queue (bounded, try, drop + count) ─ validator ─ findings
//! ```
//!
//! The pumps never wait for anything here: a chunk that does not fit in the
//! budget is dropped and counted, and the monitor later discards the lines
//! it cut through.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::record::{RecordWriter, dir_name};
use super::{Counters, FindingSink, Validator};
use crate::check::{Direction, Finding, Severity};

/// Index of a direction in per-direction arrays.
pub(crate) fn slot(direction: Direction) -> usize {
    match direction {
        Direction::AgentToClient => 1,
        _ => 0,
    }
}

fn direction_of(slot: usize) -> Direction {
    if slot == 1 {
        Direction::AgentToClient
    } else {
        Direction::ClientToAgent
    }
}

/// Lines longer than this are not monitored (they are still forwarded).
pub(crate) const MAX_LINE: usize = 256 << 20;

/// What the pumps send to the monitor.
pub(crate) enum ToMonitor {
    Chunk {
        slot: usize,
        t: f64,
        data: Vec<u8>,
        /// Chunks were dropped just before this one; if the last dropped byte
        /// was not a line feed, this chunk starts inside a broken line.
        gap: Option<Gap>,
    },
    /// The connection is over: frame what is left and stop.
    Finish,
}

/// Where a run of dropped chunks ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    /// The last dropped byte was a line feed: the next chunk starts a line.
    AtLineStart,
    /// The next chunk starts in the middle of a line.
    MidLine,
}

/// Limits of the queues off the forwarding path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Bytes of forwarded chunks waiting for the monitor.
    pub monitor_bytes: usize,
    /// Messages waiting for the validator.
    pub validator_messages: usize,
    /// Bytes of messages waiting for the validator.
    pub validator_bytes: usize,
}

/// Shared state of the hand-off.
pub(crate) struct Shared {
    pub counters: Arc<Counters>,
    pub limits: Limits,
    pub start: Instant,
    /// Bytes queued for the monitor.
    pub monitor_queued: AtomicUsize,
    /// Chunk buffers the monitor is done with, for the pumps to reuse (fewer
    /// page faults than fresh allocations freed on another thread).
    pub pool: Mutex<Vec<Vec<u8>>>,
    /// Messages and bytes queued for the validator.
    pub validator_queued: AtomicUsize,
    pub validator_queued_bytes: AtomicUsize,
    /// Whether there is a recorder (every line matters) or only a validator
    /// (lines may be skipped as soon as the validator is busy).
    pub recording: bool,
}

impl Shared {
    /// An empty buffer with room for at least `n` bytes.
    pub fn buffer(&self, n: usize) -> Vec<u8> {
        let reused = self.pool.lock().ok().and_then(|mut p| p.pop());
        match reused {
            Some(mut b) => {
                b.reserve(n);
                b
            }
            None => Vec::with_capacity(n.max(64 * 1024)),
        }
    }

    fn recycle(&self, mut b: Vec<u8>) {
        if b.capacity() > (1 << 20) {
            return;
        }
        b.clear();
        if let Ok(mut p) = self.pool.lock()
            && p.len() < 64
        {
            p.push(b);
        }
    }

    fn validator_busy(&self) -> bool {
        self.validator_queued.load(Relaxed) >= self.limits.validator_messages
            || self.validator_queued_bytes.load(Relaxed) >= self.limits.validator_bytes
    }
}

/// A pump's handle on the monitor.
pub(crate) struct ChunkSender {
    slot: usize,
    tx: Sender<ToMonitor>,
    shared: Arc<Shared>,
    gap: Option<Gap>,
}

impl ChunkSender {
    pub fn new(direction: Direction, tx: Sender<ToMonitor>, shared: Arc<Shared>) -> Self {
        Self {
            slot: slot(direction),
            tx,
            shared,
            gap: None,
        }
    }

    /// Hands a copy of forwarded bytes to the monitor, or drops it (and
    /// counts it) when the monitor is behind. Never blocks.
    pub fn offer(&mut self, bytes: &[u8]) {
        match self.reserve(bytes.len()) {
            Ok(()) => {
                let mut data = self.shared.buffer(bytes.len());
                data.extend_from_slice(bytes);
                self.send(data)
            }
            Err(why) => self.skip(bytes, why),
        }
    }

    /// Whether the monitor will take `n` more bytes; if so they are counted
    /// in its budget and [`send`](Self::send) must follow, else
    /// [`skip`](Self::skip).
    pub fn reserve(&mut self, n: usize) -> Result<(), Skip> {
        let shared = &*self.shared;
        // Without a recorder, lines only matter to the validator: when it is
        // busy, skip the copy altogether.
        if !shared.recording && shared.validator_busy() {
            return Err(Skip::ValidatorBusy);
        }
        if shared.monitor_queued.fetch_add(n, Relaxed) + n > shared.limits.monitor_bytes {
            shared.monitor_queued.fetch_sub(n, Relaxed);
            return Err(Skip::OverBudget);
        }
        Ok(())
    }

    /// A buffer to read `n` reserved bytes into before sending them.
    pub fn buffer(&self, n: usize) -> Vec<u8> {
        self.shared.buffer(n)
    }

    /// Sends reserved bytes.
    pub fn send(&mut self, data: Vec<u8>) {
        let n = data.len();
        let chunk = ToMonitor::Chunk {
            slot: self.slot,
            t: self.shared.start.elapsed().as_secs_f64(),
            data,
            gap: self.gap.take(),
        };
        if self.tx.send(chunk).is_err() {
            // The monitor is gone (its output failed): nothing to do.
            self.shared.monitor_queued.fetch_sub(n, Relaxed);
        }
    }

    /// Counts bytes the monitor did not take.
    pub fn skip(&mut self, bytes: &[u8], why: Skip) {
        let lines = memchr::memchr_iter(b'\n', bytes).count() as u64;
        let c = &self.shared.counters;
        match why {
            Skip::OverBudget => {
                c.unmonitored_bytes[self.slot].fetch_add(bytes.len() as u64, Relaxed);
                c.unmonitored_lines[self.slot].fetch_add(lines, Relaxed);
            }
            Skip::ValidatorBusy => {
                c.validation_skipped.fetch_add(lines, Relaxed);
            }
        }
        self.gap = Some(if bytes.last() == Some(&b'\n') {
            Gap::AtLineStart
        } else {
            Gap::MidLine
        });
    }
}

/// Why the monitor did not take a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Its queue is full: the bytes are neither recorded nor validated.
    OverBudget,
    /// Only validating, and the validator's queue is full.
    ValidatorBusy,
}

impl Drop for ChunkSender {
    /// Tells the monitor about chunks dropped at the very end of the stream,
    /// so it does not take the broken line before them for a whole one.
    fn drop(&mut self) {
        if let Some(gap) = self.gap.take() {
            let _ = self.tx.send(ToMonitor::Chunk {
                slot: self.slot,
                t: self.shared.start.elapsed().as_secs_f64(),
                data: Vec::new(),
                gap: Some(gap),
            });
        }
    }
}

/// Splits one direction's byte stream into lines.
#[derive(Default)]
struct Framer {
    partial: Vec<u8>,
    /// Skipping to the next line feed (a broken or oversized line).
    discard: bool,
}

impl Framer {
    fn push(
        &mut self,
        data: &[u8],
        gap: Option<Gap>,
        oversize: &AtomicU64,
        mut f: impl FnMut(&[u8]),
    ) {
        match gap {
            None => {}
            Some(Gap::AtLineStart) => {
                self.partial.clear();
                self.discard = false;
            }
            Some(Gap::MidLine) => {
                self.partial.clear();
                self.discard = true;
            }
        }
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', data) {
            let seg = &data[start..nl];
            start = nl + 1;
            if self.discard {
                self.discard = false;
            } else if self.partial.is_empty() {
                f(seg);
            } else {
                self.partial.extend_from_slice(seg);
                f(&self.partial);
                self.partial.clear();
                if self.partial.capacity() > 1 << 20 {
                    self.partial = Vec::new();
                }
            }
        }
        let rest = &data[start..];
        if !self.discard && !rest.is_empty() {
            if self.partial.len() + rest.len() > MAX_LINE {
                self.partial = Vec::new();
                self.discard = true;
                oversize.fetch_add(1, Relaxed);
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
    }

    /// The last line, if the stream did not end with a line feed.
    fn finish(&mut self, mut f: impl FnMut(&[u8])) {
        if !self.discard && !self.partial.is_empty() {
            f(&self.partial);
        }
        self.partial = Vec::new();
    }
}

/// What the monitor hands the validator.
pub(crate) struct ToValidate {
    slot: usize,
    t: f64,
    index: u64,
    line: Vec<u8>,
}

/// The monitor thread: frames lines, records them, queues them for the
/// validator.
pub(crate) struct Monitor {
    pub shared: Arc<Shared>,
    pub rx: Receiver<ToMonitor>,
    pub record: Option<RecordWriter<Box<dyn Write + Send>>>,
    pub validator_tx: Option<Sender<ToValidate>>,
    /// First record write error (recording then stops).
    pub record_error: Option<io::Error>,
}

impl Monitor {
    pub fn run(mut self) -> Option<io::Error> {
        let mut framers: [Framer; 2] = Default::default();
        let counters = Arc::clone(&self.shared.counters);
        let mut last_t = [0.0f64; 2];
        loop {
            let msg = match self.rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Empty) => {
                    self.flush();
                    match self.rx.recv() {
                        Ok(m) => m,
                        Err(_) => break,
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match msg {
                ToMonitor::Chunk { slot, t, data, gap } => {
                    self.shared.monitor_queued.fetch_sub(data.len(), Relaxed);
                    last_t[slot] = t;
                    framers[slot].push(&data, gap, &counters.oversize, |line| {
                        self.line(slot, t, line)
                    });
                    self.shared.recycle(data);
                }
                ToMonitor::Finish => break,
            }
        }
        for (slot, framer) in framers.iter_mut().enumerate() {
            let t = last_t[slot];
            framer.finish(|line| self.line(slot, t, line));
        }
        self.flush();
        self.record_error
    }

    fn flush(&mut self) {
        if let Some(record) = &mut self.record
            && let Err(e) = record.flush()
        {
            self.record_failed(e);
        }
    }

    fn record_failed(&mut self, e: io::Error) {
        self.record = None;
        self.record_error.get_or_insert(e);
    }

    fn line(&mut self, slot: usize, t: f64, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let counters = Arc::clone(&self.shared.counters);
        let index = counters.lines[slot].fetch_add(1, Relaxed) + 1;
        let direction = direction_of(slot);
        if let Some(record) = &mut self.record {
            match record.line(direction, t, line) {
                Ok(()) => {
                    counters.recorded.store(record.written(), Relaxed);
                    counters.record_left_out.store(record.left_out(), Relaxed);
                }
                Err(e) => self.record_failed(e),
            }
        }
        let Some(tx) = &self.validator_tx else {
            return;
        };
        if self.shared.validator_busy() {
            counters.validation_skipped.fetch_add(1, Relaxed);
            return;
        }
        let bytes = line.len();
        self.shared.validator_queued.fetch_add(1, Relaxed);
        self.shared.validator_queued_bytes.fetch_add(bytes, Relaxed);
        let item = ToValidate {
            slot,
            t,
            index,
            line: line.to_vec(),
        };
        if tx.send(item).is_err() {
            self.validator_tx = None;
        }
    }
}

/// The validator thread: checks each message and writes findings.
pub(crate) fn validate_loop(
    shared: Arc<Shared>,
    rx: Receiver<ToValidate>,
    mut validator: Validator,
    sink: Arc<Mutex<FindingSink>>,
) {
    let counters = &shared.counters;
    for item in rx {
        shared.validator_queued.fetch_sub(1, Relaxed);
        shared
            .validator_queued_bytes
            .fetch_sub(item.line.len(), Relaxed);
        let direction = direction_of(item.slot);
        let message = serde_json::from_slice::<Value>(&item.line).ok();
        let findings = match &message {
            Some(m) => validator(direction, m),
            None => vec![not_json()],
        };
        counters.validated.fetch_add(1, Relaxed);
        if findings.is_empty() {
            continue;
        }
        counters.findings.fetch_add(findings.len() as u64, Relaxed);
        let method = message
            .as_ref()
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str);
        let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
        for f in &findings {
            sink.write(direction, item.t, item.index, method, f);
        }
        sink.flush();
    }
}

/// Rule id of the tap's own finding for a line that is not JSON.
pub const NOT_JSON: &str = "not-json";

fn not_json() -> Finding {
    Finding {
        rule: NOT_JSON,
        severity: Severity::Error,
        path: String::new(),
        message: "line is not a JSON value (ACP stdio carries one JSON-RPC message per line)"
            .to_owned(),
    }
}

/// A finding as one JSON line of `--findings FILE`.
pub(crate) fn finding_json(
    direction: Direction,
    t: f64,
    index: u64,
    method: Option<&str>,
    f: &Finding,
) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("dir".into(), dir_name(direction).into());
    obj.insert("t".into(), ((t * 1e6).round() / 1e6).into());
    obj.insert("index".into(), index.into());
    if let Some(m) = method {
        obj.insert("method".into(), m.into());
    }
    obj.insert("rule".into(), f.rule.into());
    obj.insert(
        "severity".into(),
        serde_json::to_value(f.severity).unwrap_or(Value::Null),
    );
    obj.insert("path".into(), f.path.clone().into());
    obj.insert("message".into(), f.message.clone().into());
    Value::Object(obj)
}

/// Creates the channel between the pumps and the monitor.
pub(crate) fn channel() -> (Sender<ToMonitor>, Receiver<ToMonitor>) {
    mpsc::channel()
}
