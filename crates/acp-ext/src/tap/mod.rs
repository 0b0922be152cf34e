//! `acp-ext tap`: a transparent live proxy between an ACP client and its
//! agent that records and validates the traffic without touching it.
//!
//! [`run`] spawns the agent with piped stdin and stdout (stderr inherited),
//! then forwards the client's stdin to the agent and the agent's stdout to
//! the client, byte for byte, each direction on its own thread, as data
//! arrives (no line buffering, no parsing on the way). On Linux, when the
//! input is a pipe, the bytes do not even pass through user space (`splice`;
//! `tee` for the copy the monitor gets); elsewhere it is read → write. A
//! client configured to run `acp-ext tap -- real-agent` instead of
//! `real-agent` sees the same bytes, the same exit code and the same
//! signals.
//!
//! Off the forwarding path, a monitor thread frames lines, writes the record
//! (see [`RecordWriter`]; secrets redacted by [`Redactor`]) and hands whole
//! lines to a validator thread through a bounded queue. Nothing there ever
//! makes the forwarding wait: when the validator is behind, lines are
//! skipped for validation and counted; when the monitor is behind (its
//! byte budget or its pipe is full), or while only validating with a busy
//! validator, chunks are forwarded unseen and their bytes counted
//! ([`TapStats`]). The validator runs at idle priority, the monitor at a
//! low one unless it records (Linux). Chunks keep their order across both
//! directions (a request is always seen before the answer it caused).
//!
//! Process handling (Unix): the agent runs in its own process group, so a
//! terminal's Ctrl-C reaches it once, through the tap, which forwards
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT to that whole group (a wrapper such
//! as `npx …` or `sh -c …` and the program it started get them, as they
//! would from the terminal). With [`TapOptions::agent_guard`] (what
//! `acp-ext tap` uses) a guard process leads the group and kills all of it
//! when the tap dies, even by SIGKILL, and ends what the agent left in it
//! when the agent exits (Linux). The client's end of input closes the
//! agent's stdin; the agent's exit ends the tap with the agent's exit code
//! (128 + signal number for a signal death). The agent is always reaped.
//!
//! ```no_run
//! use acp_ext::tap::{self, RecordFormat, TapOptions};
//!
//! let options = TapOptions::new()
//!     .record("session.jsonl", RecordFormat::Jsonl)
//!     .findings("findings.jsonl");
//! let outcome = tap::run("my-agent", ["--acp"], options)?;
//! eprintln!("{} messages validated", outcome.stats.validated);
//! std::process::exit(outcome.exit_code);
//! # Ok::<(), std::io::Error>(())
//! ```

mod forward;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(unix)]
pub(crate) mod guard;
mod monitor;
pub(crate) mod process;
#[cfg(test)]
mod tests;

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

pub use crate::transcript::record::{RAW_LIMIT, RecordFormat, RecordWriter};
pub use crate::transcript::redact::{REDACTED, Redactor};
#[cfg(unix)]
pub use guard::{GUARD_ARG, guard_main};
pub use monitor::NOT_JSON;

use crate::check::{Checker, Direction, Finding};
use crate::output::Style;
use forward::{PumpEnd, forward};
use monitor::{ChunkSender, Monitor, QueueLimits, Shared, ToMonitor};

/// Checks one message; the default is [`Checker::message`] of a fresh
/// [`Checker`] for the connection.
pub type Validator = Box<dyn FnMut(Direction, &Value) -> Vec<Finding> + Send>;

/// How long the agent's remaining output is awaited after it exited (a
/// grandchild may hold its stdout open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// The validator's default share of one core ([`TapOptions::validator_cpu`]):
/// no cap.
pub const DEFAULT_VALIDATOR_CPU: f64 = 1.0;

/// How long queued messages are still validated after the connection ended.
const VALIDATE_AFTER_EXIT: Duration = Duration::from_secs(2);

/// What `tap` does besides forwarding.
///
/// ```
/// use acp_ext::tap::{RecordFormat, TapOptions};
///
/// let options = TapOptions::new()
///     .record("trace.jsons", RecordFormat::Conductor)
///     .validate(false);
/// assert!(!options.is_validating());
/// ```
#[non_exhaustive]
pub struct TapOptions {
    record: Option<(PathBuf, RecordFormat)>,
    findings: Option<PathBuf>,
    validate: bool,
    validator: Option<Validator>,
    limits: QueueLimits,
    guard: Option<PathBuf>,
    validator_cpu: f64,
}

impl Default for TapOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TapOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapOptions")
            .field("record", &self.record)
            .field("findings", &self.findings)
            .field("validate", &self.validate)
            .field("custom_validator", &self.validator.is_some())
            .field("agent_guard", &self.guard)
            .field("validator_cpu", &self.validator_cpu)
            .finish()
    }
}

impl TapOptions {
    /// Validation on (findings to stderr), no record.
    pub fn new() -> Self {
        Self {
            record: None,
            findings: None,
            validate: true,
            validator: None,
            limits: QueueLimits {
                monitor_bytes: 0,
                validator_messages: 1024,
                validator_bytes: 32 << 20,
            },
            guard: None,
            validator_cpu: DEFAULT_VALIDATOR_CPU,
        }
    }

    /// Writes the transcript to `path` (created or truncated) in `format`.
    pub fn record(mut self, path: impl Into<PathBuf>, format: RecordFormat) -> Self {
        self.record = Some((path.into(), format));
        self
    }

    /// Writes findings to `path` as JSON lines instead of stderr.
    pub fn findings(mut self, path: impl Into<PathBuf>) -> Self {
        self.findings = Some(path.into());
        self
    }

    /// Turns validation on or off.
    pub fn validate(mut self, on: bool) -> Self {
        self.validate = on;
        self
    }

    /// Replaces the contract checker with `validator` (and turns validation
    /// on): for embedding, and for testing the findings path.
    pub fn validator(
        mut self,
        validator: impl FnMut(Direction, &Value) -> Vec<Finding> + Send + 'static,
    ) -> Self {
        self.validator = Some(Box::new(validator));
        self.validate = true;
        self
    }

    /// Sets the queue limits off the forwarding path: bytes of forwarded data
    /// waiting for the monitor (default 256 MiB when recording, as every
    /// line matters, else 64 MiB), lines waiting for the validator (default
    /// 1024).
    pub fn queue_limits(mut self, monitor_bytes: usize, validator_messages: usize) -> Self {
        self.limits.monitor_bytes = monitor_bytes.max(1);
        self.limits.validator_messages = validator_messages.max(1);
        self
    }

    /// Runs the agent under the guard of `exe` (Unix): a small process that
    /// ends the agent's whole process group when the tap dies, even when it
    /// is killed with SIGKILL (Linux: the kernel's parent-death signal), and
    /// the agent's children that outlive it when it exits (Linux).
    /// `exe` must run [`guard_main`] when its first argument is
    /// [`GUARD_ARG`]; the `acp-ext` binary does, and `acp-ext tap` passes
    /// itself. Without a guard (the default for embedders) a SIGKILLed tap
    /// leaves the agent to notice the end of its input.
    pub fn agent_guard(mut self, exe: impl Into<PathBuf>) -> Self {
        self.guard = Some(exe.into());
        self
    }

    /// Caps the validator at `share` of one core's CPU time (0 < share ≤ 1;
    /// the default, 1, is no cap: the validator runs at idle priority and
    /// takes what the forwarding leaves). Past the cap the validator waits,
    /// its queue fills and lines are skipped for validation (and counted)
    /// rather than competing with the client, the agent and the pumps. A
    /// message costs the validator a few microseconds, so validating every
    /// message of 50,000 a second each way takes more than half a core:
    /// cap it only where a flood's forwarding matters more than its
    /// findings.
    pub fn validator_cpu(mut self, share: f64) -> Self {
        self.validator_cpu = if share.is_finite() && share > 0.0 {
            share.min(1.0)
        } else {
            DEFAULT_VALIDATOR_CPU
        };
        self
    }

    /// Whether messages will be validated.
    pub fn is_validating(&self) -> bool {
        self.validate
    }
}

/// Counters of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StreamStats {
    /// Bytes forwarded.
    pub bytes: u64,
    /// Lines the monitor framed (recorded and/or offered for validation;
    /// blank lines included, though neither recorded nor validated).
    pub messages: u64,
    /// Bytes the monitor never looked at: neither recorded nor validated.
    /// When the monitor falls behind, or when only validating while the
    /// validator is busy (a flood), chunks are moved from input to output
    /// unseen: looking at them would cost as much as forwarding them.
    pub unmonitored_bytes: u64,
}

/// What happened off the forwarding path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TapStats {
    /// Client to agent.
    pub client_to_agent: StreamStats,
    /// Agent to client.
    pub agent_to_client: StreamStats,
    /// Messages checked by the validator.
    pub validated: u64,
    /// Lines the monitor saw but the validator did not check because it was
    /// behind (including ones still queued when the connection ended and
    /// the validator's grace time ran out). Lines in
    /// [`StreamStats::unmonitored_bytes`] come on top.
    pub validation_skipped: u64,
    /// Findings reported.
    pub findings: u64,
    /// Entries written to the record.
    pub recorded: u64,
    /// Lines the record format could not show (conductor format: lines that
    /// are not JSON-RPC messages).
    pub record_left_out: u64,
    /// Lines longer than the monitor's limit (256 MiB), forwarded but neither
    /// recorded nor validated.
    pub oversize_lines: u64,
}

impl TapStats {
    /// Whether anything was dropped from the record or from validation.
    pub fn dropped_anything(&self) -> bool {
        self.validation_skipped > 0 || self.unmonitored_bytes() > 0 || self.oversize_lines > 0
    }

    /// Bytes the monitor never looked at, both ways.
    pub fn unmonitored_bytes(&self) -> u64 {
        self.client_to_agent.unmonitored_bytes + self.agent_to_client.unmonitored_bytes
    }

    /// About how many lines [`unmonitored_bytes`](Self::unmonitored_bytes)
    /// held, at the mean length of the lines the monitor did see.
    pub fn unmonitored_lines_estimate(&self) -> u64 {
        let seen = |s: &StreamStats| s.bytes.saturating_sub(s.unmonitored_bytes);
        let bytes = seen(&self.client_to_agent) + seen(&self.agent_to_client);
        let lines = self.client_to_agent.messages + self.agent_to_client.messages;
        if bytes == 0 || lines == 0 {
            return 0;
        }
        (self.unmonitored_bytes() as f64 * lines as f64 / bytes as f64).round() as u64
    }
}

/// Live counters shared by the threads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub bytes: [AtomicU64; 2],
    pub lines: [AtomicU64; 2],
    pub unmonitored_bytes: [AtomicU64; 2],
    pub oversize: AtomicU64,
    pub validated: AtomicU64,
    pub validation_skipped: AtomicU64,
    pub findings: AtomicU64,
    pub recorded: AtomicU64,
    pub record_left_out: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> TapStats {
        let stream = |i: usize| StreamStats {
            bytes: self.bytes[i].load(Relaxed),
            messages: self.lines[i].load(Relaxed),
            unmonitored_bytes: self.unmonitored_bytes[i].load(Relaxed),
        };
        TapStats {
            client_to_agent: stream(0),
            agent_to_client: stream(1),
            validated: self.validated.load(Relaxed),
            validation_skipped: self.validation_skipped.load(Relaxed),
            findings: self.findings.load(Relaxed),
            recorded: self.recorded.load(Relaxed),
            record_left_out: self.record_left_out.load(Relaxed),
            oversize_lines: self.oversize.load(Relaxed),
        }
    }
}

/// Where findings go.
pub(crate) enum FindingSink {
    /// One line per finding for people.
    Stderr(Style),
    /// One JSON object per line.
    Writer(Box<dyn Write + Send>),
}

impl FindingSink {
    fn write(
        &mut self,
        direction: Direction,
        t: f64,
        index: u64,
        method: Option<&str>,
        f: &Finding,
    ) {
        // Findings are best effort: a failing sink must not stop the tap.
        let _ = match self {
            Self::Stderr(style) => {
                let method = method.map(|m| format!(" {m}")).unwrap_or_default();
                writeln!(
                    io::stderr().lock(),
                    "acp-ext tap: {} #{index}{method}: {}",
                    direction.as_str(),
                    crate::present::finding(f, *style)
                )
            }
            Self::Writer(out) => {
                let line = monitor::finding_json(direction, t, index, method, f);
                serde_json::to_writer(&mut *out, &line)
                    .map_err(io::Error::from)
                    .and_then(|()| out.write_all(b"\n"))
            }
        };
    }

    fn flush(&mut self) {
        if let Self::Writer(out) = self {
            let _ = out.flush();
        }
    }
}

/// How a tap ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct TapOutcome {
    /// The agent's exit code; 128 + the signal number if a signal ended it.
    pub exit_code: i32,
    /// Counters.
    pub stats: TapStats,
    /// The first error writing the record, if any (recording stopped there;
    /// forwarding went on).
    pub record_error: Option<io::Error>,
}

/// Runs `program args…` as the agent behind this process's stdin and stdout
/// until it exits. See the module documentation.
///
/// Returns once the agent has exited and been reaped, its remaining output
/// forwarded, the record complete and the validator done (or its grace time
/// over). This process's stdout is closed (`/dev/null` takes its place) as
/// soon as the agent's output ends, so the client sees the end at once even
/// while the record is finished; the thread reading this process's stdin may
/// still be blocked in a read (and stdin is closed the same way if the agent
/// stops reading): exit the process soon after.
///
/// # Errors
///
/// Opening the record or findings file, or spawning the agent (kind
/// `NotFound` when the program does not exist).
pub fn run<I, S>(
    program: impl AsRef<OsStr>,
    args: I,
    mut options: TapOptions,
) -> io::Result<TapOutcome>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let start = Instant::now();
    let counters = Arc::new(Counters::default());

    let record = match &options.record {
        Some((path, format)) => Some(RecordWriter::new(
            Box::new(BufWriter::with_capacity(1 << 16, create(path)?)) as Box<dyn Write + Send>,
            *format,
        )),
        None => None,
    };
    let sink = match (&options.findings, options.validate) {
        (Some(path), true) => Some(FindingSink::Writer(Box::new(BufWriter::new(create(path)?)))),
        (None, true) => Some(FindingSink::Stderr(Style::stderr())),
        (_, false) => None,
    };

    let (signals, mut child) =
        process::spawn_forwarded(program.as_ref(), args, options.guard.as_deref())?;
    let agent_in = child.stdin.take().expect("stdin is piped");
    let agent_out = child.stdout.take().expect("stdout is piped");
    let (client_in, client_out) = process::client_stdio()?;

    // Off the forwarding path: monitor (and recorder), validator.
    let monitoring = record.is_some() || sink.is_some();
    let mut limits = options.limits;
    if limits.monitor_bytes == 0 {
        limits.monitor_bytes = if record.is_some() {
            256 << 20
        } else {
            64 << 20
        };
    }
    let shared = Arc::new(Shared::new(
        Arc::clone(&counters),
        limits,
        start,
        record.is_some(),
    ));
    let (monitor_tx, monitor_rx) = monitor::channel();
    let mut validator_done = None;
    let mut validator_tx = None;
    let mut validator_thread: Option<thread::Thread> = None;
    if let Some(sink) = sink {
        let (tx, rx) = mpsc::channel();
        validator_tx = Some(tx);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        validator_done = Some(done_rx);
        let shared = Arc::clone(&shared);
        let custom = options.validator.take();
        let sink = Arc::new(Mutex::new(sink));
        let budget = monitor::CpuBudget::new(options.validator_cpu);
        validator_thread = Some(
            thread::Builder::new()
                .name("tap-validator".into())
                .spawn(move || {
                    process::set_priority(process::Priority::Idle);
                    let validator = custom.unwrap_or_else(|| {
                        let mut checker = Checker::new();
                        Box::new(move |d, m: &Value| checker.message(d, m))
                    });
                    monitor::validate_loop(shared, rx, validator, sink, budget);
                    let _ = done_tx.send(());
                })?
                .thread()
                .clone(),
        );
    }
    let recording = record.is_some();
    let mut pipe_r = [None, None];
    let mut pipe_w = [None, None];
    // Validating only: the monitor reads what the pumps `tee` into its
    // pipes. Recording: the pumps copy into the monitor's queue themselves.
    if monitoring && !recording {
        for slot in 0..2 {
            if let Some((r, w)) = forward::private_pipe() {
                pipe_r[slot] = Some(r);
                pipe_w[slot] = Some(w);
            }
        }
    }
    let monitor_thread = if monitoring {
        let monitor = Monitor {
            pipes: pipe_r,
            shared: Arc::clone(&shared),
            rx: monitor_rx,
            record,
            validator_tx,
            record_error: None,
        };
        Some(
            thread::Builder::new()
                .name("tap-monitor".into())
                .spawn(move || {
                    // The recorder wants every line: a fair share of the CPU.
                    // Framing for the validator alone can wait.
                    process::set_priority(if recording {
                        process::Priority::Normal
                    } else {
                        process::Priority::Low
                    });
                    monitor.run()
                })?,
        )
    } else {
        drop(monitor_rx);
        None
    };
    let sender = |direction| {
        monitoring.then(|| ChunkSender::new(direction, monitor_tx.clone(), Arc::clone(&shared)))
    };
    let [c2a_pipe, a2c_pipe] = pipe_w;

    // Client → agent. On the client's EOF, close the agent's stdin. If the
    // agent stops reading, stop reading too, so the client sees a closed
    // pipe as it would without the tap.
    {
        let tap = sender(Direction::ClientToAgent);
        let counters = Arc::clone(&counters);
        thread::Builder::new()
            .name("tap-c2a".into())
            .spawn(move || {
                let end = forward(client_in, agent_in, tap, c2a_pipe, &counters.bytes[0]);
                if matches!(end, PumpEnd::WriteFailed) {
                    process::close_stdin();
                }
            })?;
    }
    // Agent → client. If the client stops reading, close the agent's stdout
    // so the agent sees a closed pipe.
    let (drained_tx, drained_rx) = mpsc::channel::<()>();
    {
        let tap = sender(Direction::AgentToClient);
        let counters = Arc::clone(&counters);
        thread::Builder::new()
            .name("tap-a2c".into())
            .spawn(move || {
                forward(agent_out, client_out, tap, a2c_pipe, &counters.bytes[1]);
                process::close_stdout();
                let _ = drained_tx.send(());
            })?;
    }

    let status = signals.wait(&mut child)?;
    shared.forwarding_done.store(true, Relaxed);
    if let Some(t) = &validator_thread {
        t.unpark();
    }
    let exit_code = process::exit_code(status);
    let _ = drained_rx.recv_timeout(DRAIN_AFTER_EXIT);

    let mut record_error = None;
    if let Some(handle) = monitor_thread {
        let _ = monitor_tx.send(ToMonitor::Finish);
        record_error = handle.join().unwrap_or(None);
    }
    drop(monitor_tx);
    if let Some(done) = validator_done
        && done.recv_timeout(VALIDATE_AFTER_EXIT).is_err()
    {
        let left = shared.validator_queued.load(Relaxed) as u64;
        counters.validation_skipped.fetch_add(left, Relaxed);
    }
    signals.close();
    Ok(TapOutcome {
        exit_code,
        stats: counters.snapshot(),
        record_error,
    })
}

/// Creates (or truncates) a record or findings file. On Unix a new file is
/// readable by its owner only: transcripts carry prompts, code and tool output.
fn create(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}
