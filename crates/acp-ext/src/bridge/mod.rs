//! `acp-ext bridge`: a proxy between a client and an agent that speak
//! different dialects of the same facts, ACP Extension Core and standard
//! ACP (the official adapters' `subagent_update`s, `_session/steering`,
//! `_session/goal`).
//!
//! It runs the agent as the tap does (its own process group, signals
//! forwarded, its exit status returned, no process left behind), reads
//! every line both ways, and rewrites only what it translates; every other
//! line passes byte for byte. What the client reads is `--to core`,
//! `--to standard`, or (`auto`, the default) what its `initialize`
//! advertised: Core for `subagentEvents`, standard for `subagents: {}`.
//! What the agent writes is read from its `initialize` result: Core when
//! it advertised `subagentEvents`, standard otherwise.
//!
//! # A Core agent for a standard client ([`Mode::ToStandard`])
//!
//! - `initialize`: the client's capabilities gain
//!   `_meta.<ns>.subagentEvents`, so the agent writes its runs; the
//!   agent's result gains `_meta.steering: {supported: true}` when it
//!   steers by request.
//! - `_<ns>/subagents/event` becomes `subagent_update`s on the parent and
//!   the child's own `session/update`s
//!   ([`acp_extension_core::standard::StandardSubagents`], whose docs list
//!   what is lost: progress, `modelId`, `summary`, times,
//!   `parentToolCallId`, output ids).
//! - `_session/steering` becomes `_<ns>/session/steer` (steer id
//!   `bridge:<request id>`, or the request's own `steerId`); `injected` stays
//!   `injected`, `failed` becomes `promptRequired` (`noRunningTurn`) when the
//!   client asked for it, else `failed`. `_session/goal` becomes
//!   `_<ns>/session/goal`, answered `{}` (the snapshot is dropped).
//! - To a client that advertised no extension at all, the agent's other
//!   extension notifications (`steer_applied`, usage, activity, rate
//!   limits) are dropped, as an agent would not send them to it. A prompt
//!   result without `usage` gains the turn's usage, the last
//!   `_<ns>/session/usage_update`'s `usage` during the prompt
//!   ([`acp_extension_core::standard::standard_prompt_usage`]); a standard
//!   `usage_update` cannot be made (Core has no context occupancy).
//! - Lost: `session/cancel` of a child session (Core cancels by native
//!   task id, which the bridge does not know).
//!
//! # A standard agent for a Core client ([`Mode::ToCore`])
//!
//! - `initialize`: the client's capabilities gain `subagents: {}`, so the
//!   agent announces its children; its result gains `subagentEvents`, and
//!   `steering` (request transport, `upstreamTurn: same`, `configPolicy:
//!   active`, which the adapters do not state) when it advertised
//!   `_meta.steering`.
//! - `subagent_update`s and the children's own updates become
//!   `_<ns>/subagents/event` snapshots and output
//!   ([`acp_extension_core::standard::CoreSubagents`]: a new run each time
//!   a child runs again; the blocked flag of `requires_action`, `cwd`, and a
//!   child's updates other than messages, thoughts, tool calls and plans
//!   are lost).
//! - `_<ns>/session/steer` becomes `_session/steering` with `idleBehavior:
//!   promptRequired` and the steer id passed along; `injected` is answered
//!   `injected` after a synthesized `_<ns>/session/steer_applied` ("applied"
//!   then means "accepted": the adapters confirm nothing more),
//!   `promptRequired` is a `-32600` error, anything else `failed`.
//! - claude's `_claude/rateLimit` (on a `usage_update`, which passes as it
//!   is) is followed by `_<ns>/rate_limits/update`
//!   ([`acp_extension_core::standard::claude_rate_limits`]: a row
//!   `claude:<type>` per type of the event and of its `unifiedWindows`;
//!   `status` and the `overage*` fields are lost); a prompt result's `_meta.quota` rows
//!   (else its `usage`) are accounted in the session's Core ledger (one
//!   scope per connection, the prompt's request id as the operation) and
//!   sent as `_<ns>/session/usage_update` before the answer
//!   ([`acp_extension_core::standard::prompt_model_usage`]: cost stays
//!   unknown). The result advertises `usage` and `rateLimits`.
//! - Lost: `session_message`s (Core has no inter-session messages; they
//!   pass as they are), child permission requests are not re-routed to the
//!   root.
//!
//! Each line is read once and followed by the library's
//! [`Connection`](acp_extension_core::connection::Connection), as the
//! peers wrote it: the connection tells calls from answers, pairs each
//! answer with its request, and reads both advertisements with the
//! negotiation's reader.
//!
//! Batches, lines that are not JSON, and every message not named above
//! pass unchanged. Requests are never invented: a translated request keeps
//! its id, so responses pair as they would without the bridge.

mod translate;

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

pub use crate::dialect::ClientDialect;
pub use translate::{BridgeTarget, Mode, Out, Translator};

use crate::tap::process;

/// How long the bridge waits, after the agent exited, for the rest of its
/// output to reach the client.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// Options of [`run`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// What the client reads.
    pub to: BridgeTarget,
    /// A binary that runs the tap's guard between the bridge and the agent
    /// (`acp-ext bridge` passes itself), so the agent's process group ends
    /// even when the bridge is killed.
    pub guard: Option<PathBuf>,
}

impl BridgeOptions {
    /// Options writing `to` for the client.
    pub fn new(to: BridgeTarget) -> Self {
        Self { to, guard: None }
    }

    /// Runs the agent under the guard binary `exe`.
    #[must_use]
    pub fn agent_guard(mut self, exe: impl Into<PathBuf>) -> Self {
        self.guard = Some(exe.into());
        self
    }
}

/// What a bridge run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeOutcome {
    /// The agent's exit code (128 + the signal that killed it).
    pub exit_code: i32,
    /// Where it translated.
    pub mode: Mode,
    /// Lines rewritten: from the client, from the agent.
    pub translated: [u64; 2],
}

/// Runs `program` with `args` as the agent behind a bridge on this
/// process's stdin and stdout, until the agent exits.
///
/// # Errors
///
/// Spawning the agent (kind `NotFound` when the program does not exist).
pub fn run<I, S>(
    program: impl AsRef<OsStr>,
    args: I,
    options: BridgeOptions,
) -> io::Result<BridgeOutcome>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (signals, mut child) =
        process::spawn_forwarded(program.as_ref(), args, options.guard.as_deref())?;
    let agent_in = child.stdin.take().expect("stdin is piped");
    let agent_out = child.stdout.take().expect("stdout is piped");
    let (client_in, client_out) = process::client_stdio()?;

    let ends = Ends {
        translator: Arc::new(Mutex::new(Translator::new(options.to))),
        to_client: Arc::new(Mutex::new(Some(Box::new(client_out)))),
        to_agent: Arc::new(Mutex::new(Some(Box::new(agent_in)))),
    };
    // Client → agent; on the client's EOF, close the agent's stdin (and
    // the client sees a closed pipe if the agent stopped reading).
    ends.pump("bridge-c2a", client_in, Translator::from_client, |ends| {
        lock(&ends.to_agent).take();
        process::close_stdin();
    })?;
    // Agent → client; at the agent's EOF, close the client's side.
    let (drained_tx, drained_rx) = mpsc::channel::<()>();
    ends.pump(
        "bridge-a2c",
        agent_out,
        Translator::from_agent,
        move |ends| {
            lock(&ends.to_client).take();
            process::close_stdout();
            let _ = drained_tx.send(());
        },
    )?;

    let status = signals.wait(&mut child)?;
    let _ = drained_rx.recv_timeout(DRAIN_AFTER_EXIT);
    signals.close();
    let t = lock(&ends.translator);
    Ok(BridgeOutcome {
        exit_code: process::exit_code(status),
        mode: t.mode(),
        translated: t.translated,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Writer = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// What both directions share: the translation and both writers (a line
/// from one side may be answered to it, as a translated response is).
#[derive(Clone)]
struct Ends {
    translator: Arc<Mutex<Translator>>,
    to_client: Writer,
    to_agent: Writer,
}

impl Ends {
    /// Reads `input` line by line (each with its newline, the last one
    /// possibly without) on a thread named `name`, translating each with
    /// `translate` and writing what comes out, until EOF or until the side
    /// it writes to is gone; then runs `done`.
    fn pump(
        &self,
        name: &str,
        input: impl io::Read + Send + 'static,
        translate: fn(&mut Translator, &[u8]) -> Vec<Out>,
        done: impl FnOnce(&Ends) + Send + 'static,
    ) -> io::Result<()> {
        let ends = self.clone();
        thread::Builder::new().name(name.into()).spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 16, input);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let out = translate(&mut lock(&ends.translator), &line);
                        if !ends.deliver(out) {
                            break;
                        }
                    }
                }
            }
            done(&ends);
        })?;
        Ok(())
    }

    /// Writes each line where it goes; `false` once a side can no longer
    /// be written to.
    fn deliver(&self, out: Vec<Out>) -> bool {
        let mut ok = true;
        for o in out {
            let (target, bytes) = match o {
                Out::ToAgent(b) => (&self.to_agent, b),
                Out::ToClient(b) => (&self.to_client, b),
            };
            let mut w = lock(target);
            if let Some(writer) = w.as_mut()
                && (writer.write_all(&bytes).is_err() || writer.flush().is_err())
            {
                w.take();
                ok = false;
            }
        }
        ok
    }
}
