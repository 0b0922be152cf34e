//! The agent guard: a small process between the tap and the agent that ends
//! the agent's whole process group when the tap dies, even by SIGKILL.
//!
//! A signal handler cannot run in a process killed with SIGKILL, so the tap
//! cannot clean up after itself. Instead it starts `EXE __tap-guard PID --
//! AGENT…` (`EXE` is the `acp-ext` binary, or any binary whose `main` calls
//! [`main`] for that first argument). The guard leads a process group of
//! its own, asks the kernel for a signal when its parent dies
//! (`PR_SET_PDEATHSIG`, Linux), starts the agent in the same group with
//! the same stdin, stdout and stderr, lets go of its own copies of the
//! pipes (so the end of the agent's output is seen when the agent closes
//! it), and waits. Then:
//!
//! - the agent exits: the guard ends what the agent left in the group
//!   (children that outlived it: SIGTERM, then SIGKILL after two seconds;
//!   Linux), then exits with the agent's code, or ends by the signal that
//!   ended the agent (a shell reports 128 + its number either way), which
//!   the tap (or the probe) reports;
//! - the tap dies: the kernel signals the guard, which sends SIGKILL to
//!   the whole group, the agent and every child it left in the group
//!   (`npx` and `sh -c` wrappers, an npm script's native binary) with it;
//! - a signal the tap forwards to the group (SIGINT, SIGTERM, SIGHUP,
//!   SIGQUIT) reaches the agent and its children; the guard itself ignores
//!   it and goes on waiting for the agent.
//!
//! The group's id is the guard's pid, which cannot be reused while the
//! guard lives, so nothing is ever sent to an unrelated process.

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::{Pid, Signal, getpgrp, getppid, kill_process_group};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;

/// The first argument that makes a binary run the guard.
pub const GUARD_ARG: &str = "__tap-guard";

/// Set in the guard's environment to a file's path: the guard writes its
/// own process id there when the agent has started (`pid N`), and when the
/// agent has ended, how (`ended by signal 9 (SIGKILL)`, or `exited`: also
/// when a signal came to the whole group, such as the probe's own ending
/// of the agent after its connection failed). The
/// probe reads it ([`read_report`]): a write to the dead agent can fail
/// before the probe learns how the guard ended, and the agent's stderr is
/// no longer read once the connection has failed.
pub(crate) const REPORT_ENV: &str = "ACP_EXT_GUARD_REPORT";

/// What a guard's report file tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuardReport {
    /// The agent was ended by this signal.
    Signal(String),
    /// The agent exited, or the guard is gone without a word.
    Over,
    /// The guard still runs: the agent has not ended yet.
    Running,
}

/// Reads the guard's report at `path` as it stands.
pub(crate) fn read_report(path: &std::path::Path) -> GuardReport {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if let Some(how) = text.lines().find_map(|l| l.strip_prefix("ended by ")) {
        return GuardReport::Signal(how.to_owned());
    }
    let running = !text.lines().any(|l| l == "exited")
        && text
            .lines()
            .find_map(|l| l.strip_prefix("pid "))
            .and_then(|p| p.parse::<i32>().ok())
            .and_then(Pid::from_raw)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
    if running {
        GuardReport::Running
    } else {
        GuardReport::Over
    }
}

/// `signal 9 (SIGKILL)`.
fn signal_text(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    format!("signal {sig} ({name})")
}

/// The signal the kernel sends the guard when the tap dies.
const PARENT_DIED: i32 = SIGUSR1;

/// Runs the guard with the arguments after [`GUARD_ARG`]: `PARENT_PID --
/// PROGRAM [ARGS…]`, and returns the exit code to end the process with.
/// Never returns while the agent runs.
///
/// A binary that passes its own path to
/// [`TapOptions::agent_guard`](super::TapOptions::agent_guard) calls this
/// first thing in `main` when its first argument is [`GUARD_ARG`]:
///
/// ```no_run
/// let mut args = std::env::args_os().skip(1);
/// if args.next().is_some_and(|a| a == acp_ext::tap::GUARD_ARG) {
///     std::process::exit(acp_ext::tap::guard_main(args));
/// }
/// ```
pub fn guard_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let mut args = args.into_iter();
    let parent: Option<i32> = args.next().and_then(|p| p.to_str()?.parse().ok());
    let separator = args.next();
    let program = args.next();
    let (Some(parent), Some(_), Some(program)) = (parent, separator, program) else {
        eprintln!("acp-ext: usage: acp-ext {GUARD_ARG} PARENT_PID -- PROGRAM [ARGS…]");
        return 2;
    };
    match guard(parent, program, args.collect()) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(io::stderr(), "acp-ext tap: {e}");
            // What a shell answers for a command it cannot find or run.
            if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    }
}

fn guard(parent: i32, program: OsString, args: Vec<OsString>) -> io::Result<i32> {
    // Handlers first: from here on, the forwarded signals and the parent's
    // death are caught rather than fatal.
    let mut signals = Signals::new([PARENT_DIED, SIGINT, SIGTERM, SIGHUP, SIGQUIT])?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    rustix::process::set_parent_process_death_signal(Signal::from_named_raw(PARENT_DIED))?;
    // The tap may have died before the request took effect.
    if Pid::as_raw(getppid()) != parent {
        return Ok(128 + 9);
    }
    // Whether a signal came to the agent's group (the guard's too): the
    // agent's end is then not its own, and the report does not tell it.
    let group_signalled = Arc::new(AtomicBool::new(false));
    let signalled = Arc::clone(&group_signalled);
    std::thread::Builder::new()
        .name("tap-guard-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                signalled.store(true, Ordering::Relaxed);
                if sig == PARENT_DIED {
                    // The tap is gone: end the agent's whole group, this
                    // process included.
                    let _ = kill_process_group(getpgrp(), Signal::KILL);
                }
                // A forwarded signal went to the agent's group too; the
                // guard waits for the agent to act on it.
            }
        })?;
    let mut child = Command::new(&program)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot run {}: {e}", program.to_string_lossy()),
            )
        })?;
    let report = std::env::var_os(REPORT_ENV).map(std::path::PathBuf::from);
    if let Some(path) = &report {
        let _ = std::fs::write(path, format!("pid {}\n", std::process::id()));
    }
    // Only the agent holds its output now: its end of output is the end.
    // The guard keeps the read end of the agent's input until the agent is
    // reaped, so that a write after the agent died waits for the guard's
    // exit (which tells how the agent ended) rather than failing first
    // with a broken pipe.
    super::process::close_stdout();
    let status = loop {
        match child.wait() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    // Read before the stragglers' SIGTERM, which reaches the guard too.
    let group_signalled = group_signalled.load(Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    end_stragglers();
    // An agent a signal ended: the guard ends by the same signal, so that
    // whoever waits for it sees how the agent died (`signal: 9 (SIGKILL)`,
    // not `exit status: 137`); a shell's code for both is the same.
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            if let Some(path) = &report {
                let how = if group_signalled {
                    "exited".to_owned()
                } else {
                    format!("ended by {}", signal_text(sig))
                };
                let _ = std::fs::write(path, format!("pid {}\n{how}\n", std::process::id()));
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
        } else if let Some(path) = &report {
            let _ = std::fs::write(path, format!("pid {}\nexited\n", std::process::id()));
        }
    }
    Ok(super::process::exit_code(status))
}

/// How long the agent's children that outlived it have to end after
/// SIGTERM, before SIGKILL.
#[cfg(target_os = "linux")]
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Ends what the agent left in its group when it exited (children that
/// outlived it, such as a helper still writing its settings): SIGTERM to
/// the group, then SIGKILL to each one still there after [`GRACE`]. The
/// guard ignores the SIGTERM, and is not among those killed.
#[cfg(target_os = "linux")]
fn end_stragglers() {
    use std::time::{Duration, Instant};
    let group = getpgrp();
    if group_members(group).is_empty() {
        return;
    }
    let _ = kill_process_group(group, Signal::TERM);
    let mut deadline = Instant::now() + GRACE;
    let mut killed = false;
    loop {
        let left = group_members(group);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            if killed {
                return;
            }
            // SIGKILL takes effect soon, not at once: the guard waits a
            // little longer, so that none is left when it exits.
            for pid in left {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
            killed = true;
            deadline = Instant::now() + Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The live processes of process group `group` other than this one, read
/// from `/proc` (a zombie has ended already).
#[cfg(target_os = "linux")]
fn group_members(group: Pid) -> Vec<Pid> {
    let me = rustix::process::getpid();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = Pid::from_raw(e.file_name().to_str()?.parse().ok()?)?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (name) state ppid pgrp …`: the name may hold spaces and
            // parentheses, the fields after its last `)` do not.
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?;
            let pgrp: i32 = fields.nth(1)?.parse().ok()?;
            (pid != me && pgrp == group.as_raw_nonzero().get() && state != "Z" && state != "X")
                .then_some(pid)
        })
        .collect()
}
