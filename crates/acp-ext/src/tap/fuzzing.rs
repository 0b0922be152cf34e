//! The tap's forwarding and framing in process, for the fuzz target
//! `tap_framing` and its regression replay: the portable forwarding loop
//! feeds a real [`Monitor`] (recording JSONL) and the validator loop, all on
//! the calling thread, and everything they produce is handed back to be
//! compared with the input.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::forward::copy;
use super::monitor::{
    ChunkSender, CpuBudget, Monitor, QueueLimits, Shared, ToMonitor, channel, validate_loop,
};
use super::{Counters, FindingSink};
use crate::check::{Direction, Finding, Severity};

/// Rule id of the finding the test validator returns for every message it
/// is given (its message is the message as JSON text).
const ECHO: &str = "fuzz-echo";

/// What the tap did with two byte streams.
#[derive(Debug, Default)]
pub struct Observed {
    /// Bytes written to each output, `[client→agent, agent→client]`.
    pub forwarded: [Vec<u8>; 2],
    /// The tap's own count of forwarded bytes, per direction.
    pub forwarded_count: [u64; 2],
    /// Lines the monitor framed, per direction (blank ones included).
    pub lines: [u64; 2],
    /// Per direction, each non-blank line handed to the validator: its
    /// 1-based line number and the message, or `None` when it was not JSON.
    pub validated: [Vec<(u64, Option<Value>)>; 2],
    /// The `--record` output (JSONL).
    pub record: Vec<u8>,
    /// Bytes not monitored, lines skipped for validation, oversize lines.
    pub lost: u64,
}

/// A writer whose bytes stay readable after it is moved away.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The bytes written so far, leaving it empty.
    pub(crate) fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A reader that returns at most the next chunk size per call and, when
/// asked, an `Interrupted` error before every chunk.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: &'a [usize],
    next: usize,
    interrupt: bool,
    interrupted: bool,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.interrupt && !self.interrupted && !self.data.is_empty() {
            self.interrupted = true;
            return Err(io::ErrorKind::Interrupted.into());
        }
        self.interrupted = false;
        let size = match self.sizes {
            [] => usize::MAX,
            sizes => sizes[self.next % sizes.len()].max(1),
        };
        self.next += 1;
        let n = size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// A writer that takes at most `max` bytes per call.
struct Trickle {
    out: Vec<u8>,
    max: usize,
}

impl Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.max.max(1));
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Forwards `inputs` (client→agent first, then agent→client) through the
/// tap's portable loop, read in chunks of `sizes` (cycled) and written at
/// most `write_max` bytes per call, with a recording, validating monitor
/// whose budgets never overflow.
pub fn run(inputs: [&[u8]; 2], sizes: &[usize], write_max: usize, interrupt: bool) -> Observed {
    let counters = Arc::new(Counters::default());
    let limits = QueueLimits {
        monitor_bytes: usize::MAX / 2,
        validator_messages: usize::MAX / 2,
        validator_bytes: usize::MAX / 2,
    };
    let shared = Arc::new(Shared::new(
        Arc::clone(&counters),
        limits,
        Instant::now(),
        true,
    ));
    let (tx, rx) = channel();
    let mut observed = Observed::default();
    for (slot, direction) in [Direction::ClientToAgent, Direction::AgentToClient]
        .into_iter()
        .enumerate()
    {
        let from = Chunked {
            data: inputs[slot],
            sizes,
            next: slot,
            interrupt,
            interrupted: false,
        };
        let mut to = Trickle {
            out: Vec::new(),
            max: write_max,
        };
        let bytes = AtomicU64::new(0);
        let sender = ChunkSender::new(direction, tx.clone(), Arc::clone(&shared));
        copy(from, &mut to, Some(sender), &bytes);
        observed.forwarded[slot] = to.out;
        observed.forwarded_count[slot] = bytes.load(Relaxed);
    }
    let _ = tx.send(ToMonitor::Finish);
    drop(tx);

    let record = Captured::default();
    let (vtx, vrx) = std::sync::mpsc::channel();
    let monitor = Monitor::in_process(Arc::clone(&shared), rx, record.clone(), vtx);
    // Dropping the monitor closes the validator's queue.
    let _ = monitor.run();

    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let echo = {
        let seen = Arc::clone(&seen);
        move |_: Direction, m: &Value| {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(m.clone());
            vec![Finding {
                rule: ECHO,
                severity: Severity::Info,
                path: String::new(),
                message: String::new(),
            }]
        }
    };
    let findings = Captured::default();
    let sink = Arc::new(Mutex::new(FindingSink::Writer(Box::new(findings.clone()))));
    validate_loop(
        Arc::clone(&shared),
        vrx,
        Box::new(echo),
        sink,
        CpuBudget::new(1.0),
    );

    let mut values =
        std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner())).into_iter();
    let findings = findings.take();
    for line in findings.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let f: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
        let slot = usize::from(f["dir"] != "c2a");
        let index = f["index"].as_u64().unwrap_or(0);
        let message = (f["rule"] == ECHO).then(|| values.next().unwrap_or(Value::Null));
        observed.validated[slot].push((index, message));
    }
    observed.lines = [0, 1].map(|i| counters.lines[i].load(Relaxed));
    observed.record = record.take();
    observed.lost = counters.unmonitored_bytes[0].load(Relaxed)
        + counters.unmonitored_bytes[1].load(Relaxed)
        + counters.validation_skipped.load(Relaxed)
        + counters.oversize.load(Relaxed);
    observed
}
