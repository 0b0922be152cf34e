//! The agent process: spawning, signal forwarding, reaping, exit codes, and
//! this process's own stdin and stdout as unbuffered files.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};

/// Spawns the agent with piped stdin and stdout and inherited stderr, in a
/// process group of its own; under `guard` (a binary that runs
/// [`super::guard_main`]) when given, which then leads the group.
pub(crate) fn spawn<I, S>(program: &OsStr, args: I, guard: Option<&Path>) -> io::Result<Child>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = match guard {
        #[cfg(unix)]
        Some(guard) => {
            // The guard reports a program it cannot start only by its exit
            // code; a missing one is an error here, as without the guard.
            resolve(program)?;
            let mut command = Command::new(guard);
            command
                .arg(super::GUARD_ARG)
                .arg(std::process::id().to_string())
                .arg("--")
                .arg(program);
            command
        }
        _ => Command::new(program),
    };
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Own process group: a terminal's Ctrl-C reaches the agent's group
        // once, forwarded by the tap, not twice.
        command.process_group(0);
    }
    let child = command.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run {}: {e}", program.to_string_lossy()),
        )
    })?;
    #[cfg(target_os = "linux")]
    {
        // Larger pipes to the agent: fewer wake-ups per megabyte. Best effort.
        for fd in [
            child.stdin.as_ref().map(|s| rustix::fd::AsFd::as_fd(s)),
            child.stdout.as_ref().map(|s| rustix::fd::AsFd::as_fd(s)),
        ]
        .into_iter()
        .flatten()
        {
            let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
        }
    }
    Ok(child)
}

/// Finds `program` as `Command` would (a path, or a name on `PATH`), or
/// fails with `NotFound` naming it.
#[cfg(unix)]
fn resolve(program: &OsStr) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path = Path::new(program);
    let found = if program.as_encoded_bytes().contains(&b'/') {
        path.exists()
    } else {
        std::env::var_os("PATH").is_some_and(|dirs| {
            std::env::split_paths(&dirs).any(|dir| runnable(&dir.join(program)))
        })
    };
    if found {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "cannot run {}: No such file or directory",
                program.to_string_lossy()
            ),
        ))
    }
}

#[cfg(target_os = "linux")]
const PIPE_SIZE: usize = 1 << 20;

/// The exit code a shell would report: the code, or 128 + signal number.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    1
}

/// This process's stdin and stdout, unbuffered (duplicated descriptors).
#[cfg(unix)]
pub(crate) fn client_stdio() -> io::Result<(std::fs::File, std::fs::File)> {
    use std::fs::File;
    use std::os::fd::AsFd;
    let stdin = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    Ok((stdin, stdout))
}

/// This process's stdin and stdout.
#[cfg(not(unix))]
pub(crate) fn client_stdio() -> io::Result<(io::Stdin, io::Stdout)> {
    Ok((io::stdin(), io::stdout()))
}

/// Closes this process's stdin (by putting `/dev/null` in its place), so the
/// client writing to it sees a closed pipe, as it would if the agent it
/// talked to had closed its stdin.
pub(crate) fn close_stdin() {
    #[cfg(unix)]
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
}

/// Closes this process's stdout (by putting `/dev/null` in its place), so
/// the client sees the end of the agent's output as soon as it is
/// forwarded, even while the tap still finishes its record.
pub(crate) fn close_stdout() {
    #[cfg(unix)]
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
}

/// How much CPU a thread off the forwarding path may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priority {
    /// The usual share.
    Normal,
    /// Less than the forwarding threads (nice 10).
    Low,
    /// Only CPU nobody else wants (Linux `SCHED_IDLE`; elsewhere nice 19).
    Idle,
}

/// Sets the calling thread's scheduling priority (best effort; Linux only),
/// so threads off the forwarding path yield to the forwarding ones.
pub(crate) fn set_priority(priority: Priority) {
    #[cfg(target_os = "linux")]
    {
        let nice = match priority {
            Priority::Normal => return,
            Priority::Low => 10,
            Priority::Idle => 19,
        };
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice);
        if priority == Priority::Idle {
            use thread_priority::{
                NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
                set_thread_priority_and_policy, thread_native_id,
            };
            let _ = set_thread_priority_and_policy(
                thread_native_id(),
                ThreadPriority::Min,
                ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = priority;
}

#[cfg(unix)]
pub(crate) use unix::SignalForwarder;

/// Installs the signal forwarder, then spawns the agent (under the guard
/// when given) and points the forwarder at it; on failure the forwarder is
/// closed again.
pub(crate) fn spawn_forwarded<I, S>(
    program: &OsStr,
    args: I,
    guard: Option<&Path>,
) -> io::Result<(SignalForwarder, Child)>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let signals = SignalForwarder::install()?;
    match spawn(program, args, guard) {
        Ok(child) => {
            signals.set_child(&child);
            Ok((signals, child))
        }
        Err(e) => {
            signals.close();
            Err(e)
        }
    }
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::process::{Child, ExitStatus};
    use std::sync::{Arc, Mutex};
    use std::thread::{self, JoinHandle};

    use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    use signal_hook::iterator::{Handle, Signals};

    /// Signals forwarded to the agent's process group.
    const FORWARDED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

    #[derive(Default)]
    struct State {
        pid: Option<Pid>,
        /// Set under the lock when the agent is reaped: its pid may be
        /// reused from then on, so nothing is sent to it any more.
        reaped: bool,
        /// Signals that arrived before the agent existed.
        pending: Vec<i32>,
    }

    /// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT (installed before the
    /// agent is spawned, so none is lost) and sends them to the agent's
    /// process group.
    pub(crate) struct SignalForwarder {
        state: Arc<Mutex<State>>,
        handle: Handle,
        thread: Option<JoinHandle<()>>,
    }

    /// Sends `sig` to the group led by `pid`: the agent and every child
    /// it left in its group, as a terminal's Ctrl-C would reach them all.
    fn send(pid: Pid, sig: i32) {
        if let Some(sig) = Signal::from_named_raw(sig) {
            let _ = kill_process_group(pid, sig);
        }
    }

    impl SignalForwarder {
        pub(crate) fn install() -> io::Result<Self> {
            let mut signals = Signals::new(FORWARDED)?;
            let handle = signals.handle();
            let state = Arc::new(Mutex::new(State::default()));
            let shared = Arc::clone(&state);
            let thread = thread::Builder::new()
                .name("tap-signals".into())
                .spawn(move || {
                    for sig in signals.forever() {
                        let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                        match (s.pid, s.reaped) {
                            (Some(pid), false) => send(pid, sig),
                            (None, _) => s.pending.push(sig),
                            (Some(_), true) => {}
                        }
                    }
                })?;
            Ok(Self {
                state,
                handle,
                thread: Some(thread),
            })
        }

        pub(crate) fn set_child(&self, child: &Child) {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let pid = Pid::from_child(child);
            s.pid = Some(pid);
            for sig in std::mem::take(&mut s.pending) {
                send(pid, sig);
            }
        }

        /// Waits for the agent to exit, then reaps it without a window in
        /// which a forwarded signal could reach a recycled pid.
        pub(crate) fn wait(&self, child: &mut Child) -> io::Result<ExitStatus> {
            let pid = Pid::from_child(child);
            // Wait for the exit but leave the child reapable.
            while let Err(rustix::io::Errno::INTR) = waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {}
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let status = child.wait();
            s.reaped = true;
            status
        }

        /// Stops forwarding and ends the forwarding thread.
        pub(crate) fn close(mut self) {
            self.handle.close();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(not(unix))]
pub(crate) use other::SignalForwarder;

#[cfg(not(unix))]
mod other {
    use std::io;
    use std::process::{Child, ExitStatus};

    /// No signal forwarding outside Unix.
    pub(crate) struct SignalForwarder;

    impl SignalForwarder {
        pub(crate) fn install() -> io::Result<Self> {
            Ok(Self)
        }
        pub(crate) fn set_child(&self, _child: &Child) {}
        pub(crate) fn wait(&self, child: &mut Child) -> io::Result<ExitStatus> {
            child.wait()
        }
        pub(crate) fn close(self) {}
    }
}
