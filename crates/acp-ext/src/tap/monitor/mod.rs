//! Everything off the forwarding path: the bounded hand-off of forwarded
//! chunks, framing into lines, the recorder and the validator.
//!
//! ```text
//! c2a pump ─┐ chunks: copies, or bytes      ┌─ record file (every line, redacted)
//!           ├─ left in a private pipe ─ monitor
//! a2c pump ─┘ (Linux `tee`)                 └─ validator queue (bounded, try) ─ validator ─ findings
//! ```
//!
//! The pumps never wait for anything here. On Linux they `tee` each chunk
//! into a private pipe without blocking (if the pipe is full the monitor is
//! behind: the chunk is forwarded by copy and counted as missed) and send
//! the monitor a small note; the monitor reads the bytes from the pipe
//! itself, so copying, counting and framing all happen on its thread. The
//! monitor keeps up to a byte budget of chunks in memory; beyond it, and
//! while only validating with a busy validator, it reads chunks just to
//! count their lines, and discards the lines it cut through.
//!
//! Order: a pump takes a ticket (a sequence number shared by both
//! directions) before it writes a chunk, and sends its note right after the
//! write, or before it if the write would block. The monitor handles chunks
//! in ticket order, so a request is always seen before the answer it caused.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

mod framer;
use framer::{Framer, is_blank, lines_in, lines_of};

use super::{Counters, FindingSink, Validator};
use crate::check::{Direction, Finding, Severity};
#[cfg(any(test, feature = "fuzzing"))]
use crate::transcript::record::RecordFormat;
use crate::transcript::record::RecordWriter;

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
        /// The ticket, taken before the chunk was written.
        seq: u64,
        slot: usize,
        t: f64,
        body: Body,
    },
    /// The connection is over: frame what is left and stop.
    Finish,
}

/// The bytes of a chunk.
pub(crate) enum Body {
    /// A copy (budget already reserved by the pump).
    Bytes(Vec<u8>),
    /// This many bytes wait in the direction's private pipe.
    InPipe(usize),
    /// Bytes the monitor will never see.
    Missed(Missed),
    /// Bytes forwarded unseen (the monitor was behind, or only validating
    /// with a busy validator): not even counted in lines, as looking at them
    /// would cost as much as forwarding them.
    Unseen(u64),
}

/// What is known of bytes the monitor did not see.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Missed {
    pub bytes: u64,
    pub lines: u64,
    pub ends_line: bool,
    pub why: Skip,
}

impl Missed {
    pub fn of(bytes: &[u8], why: Skip) -> Self {
        Self {
            bytes: bytes.len() as u64,
            lines: count_lines(bytes),
            ends_line: bytes.last() == Some(&b'\n'),
            why,
        }
    }
}

/// Where a run of dropped chunks ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    /// The last dropped byte was a line feed: the next chunk starts a line.
    AtLineStart,
    /// The next chunk starts in the middle of a line.
    MidLine,
}

/// QueueLimits of the queues off the forwarding path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueLimits {
    /// Bytes of forwarded chunks waiting for the monitor.
    pub monitor_bytes: usize,
    /// Messages waiting for the validator.
    pub validator_messages: usize,
    /// Bytes of messages waiting for the validator.
    pub validator_bytes: usize,
}

/// Chunks smaller than this get a fresh buffer of their size; larger ones
/// reuse pooled buffers.
const POOLED_MIN: usize = 16 << 10;
/// Buffers larger than this are freed, not pooled.
const POOLED_MAX: usize = 1 << 20;

/// Shared state of the hand-off.
pub(crate) struct Shared {
    pub counters: Arc<Counters>,
    pub limits: QueueLimits,
    pub start: Instant,
    /// Bytes queued for the monitor.
    pub monitor_queued: AtomicUsize,
    /// The next ticket.
    pub next_seq: AtomicU64,
    /// Chunk buffers the monitor is done with, for the pumps to reuse (fewer
    /// page faults than fresh allocations freed on another thread).
    pub pool: Mutex<Vec<Vec<u8>>>,
    /// Messages and bytes queued for the validator.
    pub validator_queued: AtomicUsize,
    pub validator_queued_bytes: AtomicUsize,
    /// Whether there is a recorder (every line matters) or only a validator
    /// (lines may be skipped as soon as the validator is busy).
    pub recording: bool,
    /// Set once the agent exited: the validator's CPU budget no longer
    /// applies (nothing to compete with; the tap waits for it).
    pub forwarding_done: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub fn new(
        counters: Arc<Counters>,
        limits: QueueLimits,
        start: Instant,
        recording: bool,
    ) -> Self {
        Self {
            counters,
            limits,
            start,
            monitor_queued: AtomicUsize::new(0),
            next_seq: AtomicU64::new(0),
            pool: Mutex::new(Vec::new()),
            validator_queued: AtomicUsize::new(0),
            validator_queued_bytes: AtomicUsize::new(0),
            recording,
            forwarding_done: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// An empty buffer with room for at least `n` bytes and at most about
    /// four times that: the budget counts bytes, so a small chunk must not
    /// hold a large buffer. Large chunks reuse a pooled buffer of a fitting
    /// size; small ones get one of their exact size.
    pub fn buffer(&self, n: usize) -> Vec<u8> {
        if n >= POOLED_MIN {
            let reused = self.pool.lock().ok().and_then(|mut pool| {
                // Big enough already (growing it would fault in fresh
                // pages), and not much bigger.
                let fits = pool
                    .iter()
                    .rposition(|b| (n..=n.saturating_mul(4)).contains(&b.capacity()))?;
                Some(pool.swap_remove(fits))
            });
            if let Some(mut b) = reused {
                b.reserve(n);
                return b;
            }
        }
        Vec::with_capacity(n)
    }

    /// Takes back a buffer the monitor is done with, to reuse if its size is
    /// worth pooling.
    pub fn recycle(&self, mut b: Vec<u8>) {
        if !(POOLED_MIN..=POOLED_MAX).contains(&b.capacity()) {
            return;
        }
        b.clear();
        if let Ok(mut p) = self.pool.lock()
            && p.len() < 32
        {
            p.push(b);
        }
    }

    /// Whether the monitor keeps `n` more bytes in memory; if so they are
    /// counted in its budget.
    pub fn admit(&self, n: usize) -> Result<(), Skip> {
        // Without a recorder, lines only matter to the validator: when it is
        // busy, do not even keep them.
        if !self.recording && self.validator_busy() {
            return Err(Skip::ValidatorBusy);
        }
        if self.monitor_queued.fetch_add(n, Relaxed) + n > self.limits.monitor_bytes {
            self.monitor_queued.fetch_sub(n, Relaxed);
            return Err(Skip::OverBudget);
        }
        Ok(())
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
}

impl ChunkSender {
    pub fn new(direction: Direction, tx: Sender<ToMonitor>, shared: Arc<Shared>) -> Self {
        Self {
            slot: slot(direction),
            tx,
            shared,
        }
    }

    /// Takes a ticket: a place in the monitor's order and the time.
    pub fn ticket(&self) -> (u64, f64) {
        (
            self.shared.next_seq.fetch_add(1, Relaxed),
            self.shared.start.elapsed().as_secs_f64(),
        )
    }

    /// Sends a chunk under a ticket.
    pub fn send(&self, (seq, t): (u64, f64), body: Body) {
        let chunk = ToMonitor::Chunk {
            seq,
            slot: self.slot,
            t,
            body,
        };
        if let Err(mpsc::SendError(ToMonitor::Chunk {
            body: Body::Bytes(data),
            ..
        })) = self.tx.send(chunk)
        {
            // The monitor is gone: give its budget back.
            self.shared.monitor_queued.fetch_sub(data.len(), Relaxed);
        }
    }

    /// Whether the monitor has no use for bytes now: nothing is recorded
    /// and the validator is busy.
    pub fn idle(&self) -> bool {
        !self.shared.recording && self.shared.validator_busy()
    }

    /// Whether the monitor keeps `n` more bytes in memory (counted in its
    /// budget from now on).
    pub fn admit(&self, n: usize) -> Result<(), Skip> {
        self.shared.admit(n)
    }

    /// A buffer to copy `n` admitted bytes into.
    pub fn buffer(&self, n: usize) -> Vec<u8> {
        self.shared.buffer(n)
    }

    /// Hands a copy of forwarded bytes to the monitor, or tells it what it
    /// missed when it is behind. Never blocks.
    pub fn offer(&mut self, bytes: &[u8]) {
        let ticket = self.ticket();
        let body = match self.shared.admit(bytes.len()) {
            Ok(()) => {
                let mut data = self.shared.buffer(bytes.len());
                data.extend_from_slice(bytes);
                Body::Bytes(data)
            }
            Err(why) => Body::Missed(Missed::of(bytes, why)),
        };
        self.send(ticket, body);
    }
}

/// Line feeds in `bytes`: byte-wide counters over blocks of 255 bytes, a
/// loop the compiler turns into wide vector code (faster than a search when
/// lines are short).
fn count_lines(bytes: &[u8]) -> u64 {
    bytes
        .chunks(255)
        .map(|block| {
            u64::from(
                block
                    .iter()
                    .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n'))),
            )
        })
        .sum()
}

/// Why the monitor did not take a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// It is behind (its budget, or its pipe, is full): the bytes are
    /// neither recorded nor validated.
    OverBudget,
    /// Only validating, and the validator's queue is full.
    ValidatorBusy,
}

/// What the monitor hands the validator: the whole lines of one chunk, as
/// buffers and the ranges of whole lines in them (the chunk's own buffer is
/// passed on, not copied).
pub(crate) struct ToValidate {
    slot: usize,
    t: f64,
    /// Number of the first line (1-based, per direction).
    first: u64,
    lines: u64,
    bytes: usize,
    runs: Vec<(Vec<u8>, Range<usize>)>,
}

/// The monitor thread: frames lines, records them, queues them for the
/// validator.
pub(crate) struct Monitor {
    pub shared: Arc<Shared>,
    pub rx: Receiver<ToMonitor>,
    pub record: Option<RecordWriter<Box<dyn Write + Send>>>,
    pub validator_tx: Option<Sender<ToValidate>>,
    /// Read ends of the private pipes the pumps `tee` into, by slot.
    pub pipes: [Option<std::fs::File>; 2],
    /// First record write error (recording then stops).
    pub record_error: Option<io::Error>,
}

/// A chunk taken in, waiting for its turn.
enum Item {
    /// Bytes to frame.
    Keep(usize, f64, Vec<u8>),
    /// Bytes that were not kept: where the gap ended.
    Gap(usize, Gap),
}

impl Monitor {
    /// A monitor without private pipes that records JSONL to `record` and
    /// hands lines to the validator queue: the tap's machinery in process,
    /// for its tests and the `tap_framing` fuzz target.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn in_process(
        shared: Arc<Shared>,
        rx: Receiver<ToMonitor>,
        record: impl Write + Send + 'static,
        validator_tx: Sender<ToValidate>,
    ) -> Self {
        Self {
            shared,
            rx,
            record: Some(RecordWriter::new(
                Box::new(record) as Box<dyn Write + Send>,
                RecordFormat::Jsonl,
            )),
            validator_tx: Some(validator_tx),
            pipes: [None, None],
            record_error: None,
        }
    }

    pub fn run(mut self) -> Option<io::Error> {
        let mut framers: [Framer; 2] = Default::default();
        let mut gaps: [Option<Gap>; 2] = [None, None];
        let mut last_t = [0.0f64; 2];
        // Chunks taken in (their pipes read) but not handled yet, by ticket.
        let mut waiting: BTreeMap<u64, Item> = BTreeMap::new();
        let mut next = 0u64;
        let mut scratch = Vec::new();
        loop {
            // Take in whatever has arrived first (pipes drained promptly),
            // then handle one chunk, then look again.
            let msg = match self.rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Empty) => {
                    if let Some(item) = waiting.remove(&next) {
                        next += 1;
                        self.handle(item, &mut framers, &mut gaps, &mut last_t);
                        continue;
                    }
                    self.flush();
                    match self.rx.recv() {
                        Ok(m) => m,
                        Err(_) => break,
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match msg {
                ToMonitor::Chunk { seq, slot, t, body } => {
                    let item = self.take_in(slot, t, body, &mut scratch);
                    waiting.insert(seq, item);
                }
                ToMonitor::Finish => break,
            }
        }
        // In ticket order; a ticket that never came (its pump is stuck or
        // gone) is passed over.
        for (_, item) in std::mem::take(&mut waiting) {
            self.handle(item, &mut framers, &mut gaps, &mut last_t);
        }
        for (slot, framer) in framers.iter_mut().enumerate() {
            let t = last_t[slot];
            if let Some(gap) = gaps[slot].take() {
                framer.push(&[], Some(gap), &self.shared.counters.oversize);
            }
            if let Some(last) = framer.finish() {
                let len = last.len();
                self.runs(slot, t, vec![(last, 0..len)]);
            }
        }
        self.flush();
        self.record_error
    }

    /// Reads a chunk's bytes (from its pipe if need be), keeping them if the
    /// budget allows, else counting what is lost.
    fn take_in(&mut self, slot: usize, t: f64, body: Body, scratch: &mut Vec<u8>) -> Item {
        let missed = match body {
            Body::Bytes(data) => return Item::Keep(slot, t, data),
            Body::Unseen(bytes) => {
                self.shared.counters.unmonitored_bytes[slot].fetch_add(bytes, Relaxed);
                return Item::Gap(slot, Gap::MidLine);
            }
            Body::Missed(missed) => missed,
            Body::InPipe(n) => {
                let Some(pipe) = self.pipes[slot].as_mut() else {
                    return Item::Gap(slot, Gap::MidLine);
                };
                match self.shared.admit(n) {
                    Ok(()) => {
                        let mut data = self.shared.buffer(n);
                        let got = pipe.take(n as u64).read_to_end(&mut data).unwrap_or(0);
                        self.shared
                            .monitor_queued
                            .fetch_sub(n - got.min(n), Relaxed);
                        if got == n {
                            return Item::Keep(slot, t, data);
                        }
                        // The pipe failed: nothing more can be read from it.
                        self.pipes[slot] = None;
                        self.shared.monitor_queued.fetch_sub(got, Relaxed);
                        Missed::of(&data, Skip::OverBudget)
                    }
                    Err(why) => {
                        scratch.clear();
                        let _ = pipe.take(n as u64).read_to_end(scratch);
                        Missed::of(scratch, why)
                    }
                }
            }
        };
        let c = &self.shared.counters;
        match missed.why {
            Skip::OverBudget => {
                c.unmonitored_bytes[slot].fetch_add(missed.bytes, Relaxed);
            }
            Skip::ValidatorBusy => {
                c.validation_skipped.fetch_add(missed.lines, Relaxed);
            }
        }
        Item::Gap(
            slot,
            if missed.ends_line {
                Gap::AtLineStart
            } else {
                Gap::MidLine
            },
        )
    }

    fn handle(
        &mut self,
        item: Item,
        framers: &mut [Framer; 2],
        gaps: &mut [Option<Gap>; 2],
        last_t: &mut [f64; 2],
    ) {
        match item {
            Item::Gap(slot, gap) => gaps[slot] = Some(gap),
            Item::Keep(slot, t, data) => {
                self.shared.monitor_queued.fetch_sub(data.len(), Relaxed);
                last_t[slot] = t;
                let gap = gaps[slot].take();
                let (head, body) = framers[slot].push(&data, gap, &self.shared.counters.oversize);
                let mut runs = Vec::with_capacity(2);
                if let Some(head) = head {
                    let len = head.len();
                    runs.push((head, 0..len));
                }
                if let Some(body) = body {
                    runs.push((data, body));
                } else {
                    self.shared.recycle(data);
                }
                self.runs(slot, t, runs);
            }
        }
    }

    /// Handles the whole lines of a chunk: records each line, and hands them
    /// to the validator (or counts them as skipped when it is busy).
    fn runs(&mut self, slot: usize, t: f64, runs: Vec<(Vec<u8>, Range<usize>)>) {
        if runs.is_empty() {
            return;
        }
        let counters = Arc::clone(&self.shared.counters);
        let lines: u64 = runs.iter().map(|(b, r)| lines_in(&b[r.clone()])).sum();
        let first = counters.lines[slot].fetch_add(lines, Relaxed) + 1;
        if let Some(record) = &mut self.record {
            let mut result = Ok(());
            'runs: for (buf, range) in &runs {
                for line in lines_of(&buf[range.clone()]) {
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if !is_blank(line) {
                        result = record.line(direction_of(slot), t, line);
                        if result.is_err() {
                            break 'runs;
                        }
                    }
                }
            }
            match result {
                Ok(()) => {
                    counters.recorded.store(record.written(), Relaxed);
                    counters.record_left_out.store(record.left_out(), Relaxed);
                }
                Err(e) => self.record_failed(e),
            }
        }
        let Some(tx) = &self.validator_tx else {
            runs.into_iter().for_each(|(b, _)| self.shared.recycle(b));
            return;
        };
        if self.shared.validator_busy() {
            counters.validation_skipped.fetch_add(lines, Relaxed);
            runs.into_iter().for_each(|(b, _)| self.shared.recycle(b));
            return;
        }
        let bytes = runs.iter().map(|(_, r)| r.len()).sum();
        self.shared
            .validator_queued
            .fetch_add(lines as usize, Relaxed);
        self.shared.validator_queued_bytes.fetch_add(bytes, Relaxed);
        let item = ToValidate {
            slot,
            t,
            first,
            lines,
            bytes,
            runs,
        };
        if tx.send(item).is_err() {
            self.validator_tx = None;
        }
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
}

/// How much of one core the validator may take, as a token bucket of CPU
/// time (the thread's own on Unix, else wall time): credit accrues at
/// `share` of wall time, up to `burst`; a batch spends what it took; in
/// debt, the validator waits until the credit is back. Its queue then fills
/// and the pumps stop offering it lines (they are counted as skipped), so
/// in a flood the forwarding keeps the cores. Below the budget nothing
/// waits.
#[derive(Debug)]
pub(crate) struct CpuBudget {
    share: f64,
    burst: Duration,
    credit: f64,
    last: Instant,
}

impl CpuBudget {
    pub(crate) fn new(share: f64) -> Self {
        let burst = Duration::from_millis(20);
        Self {
            share,
            burst,
            credit: burst.as_secs_f64(),
            last: Instant::now(),
        }
    }

    /// Whether there is a cap at all (a share below one core).
    pub(crate) fn capped(&self) -> bool {
        self.share < 1.0
    }

    /// Spends `busy`; returns how long to sleep before the next batch.
    pub(crate) fn spend(&mut self, busy: Duration) -> Option<Duration> {
        if self.share >= 1.0 {
            return None;
        }
        let now = Instant::now();
        let earned = now.duration_since(self.last).as_secs_f64() * self.share;
        self.last = now;
        self.credit = (self.credit + earned).min(self.burst.as_secs_f64()) - busy.as_secs_f64();
        (self.credit < 0.0).then(|| Duration::from_secs_f64(-self.credit / self.share))
    }
}

/// CPU time this thread has used (Unix), else wall time.
fn busy_clock() -> Duration {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(
            t.tv_sec.max(0) as u64,
            t.tv_nsec.clamp(0, 999_999_999) as u32,
        )
    }
    #[cfg(not(unix))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    }
}

/// The validator thread: checks each message and writes findings, within
/// its CPU `budget`.
pub(crate) fn validate_loop(
    shared: Arc<Shared>,
    rx: Receiver<ToValidate>,
    mut validator: Validator,
    sink: Arc<Mutex<FindingSink>>,
    mut budget: CpuBudget,
) {
    let counters = &shared.counters;
    for batch in rx {
        // The clock is a system call: read it only when there is a cap.
        let started = budget.capped().then(busy_clock);
        shared
            .validator_queued
            .fetch_sub(batch.lines as usize, Relaxed);
        shared
            .validator_queued_bytes
            .fetch_sub(batch.bytes, Relaxed);
        let direction = direction_of(batch.slot);
        let lines = batch
            .runs
            .iter()
            .flat_map(|(buf, range)| lines_of(&buf[range.clone()]));
        for (index, line) in (batch.first..).zip(lines) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if is_blank(line) {
                continue;
            }
            let message = serde_json::from_slice::<Value>(line).ok();
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
                sink.write(direction, batch.t, index, method, f);
            }
            sink.flush();
        }
        for (buf, _) in batch.runs {
            shared.recycle(buf);
        }
        if let Some(started) = started
            && let Some(pause) = budget.spend(busy_clock().saturating_sub(started))
            && !shared.forwarding_done.load(Relaxed)
        {
            // Unparked when the agent exits: the rest is validated at once.
            std::thread::park_timeout(pause);
        }
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
    obj.insert("dir".into(), direction.as_str().into());
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
