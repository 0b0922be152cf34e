//! The forwarding loop of one direction.
//!
//! Portable version: read → offer a copy to the monitor → write, as data
//! arrives. On Linux, when the input is a pipe, bytes move without passing
//! through user space: `splice` from input to output, after a `tee` into a
//! private pipe for the monitor's copy when it wants one (see the
//! `monitor` module for who reads that copy). Either way a chunk takes its
//! place in the monitor's order (a ticket) before it is written, so a
//! request is always seen before the answer it caused.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::monitor::ChunkSender;

/// Read buffer of the portable loop, and the most one `splice` moves.
const CHUNK: usize = 64 * 1024;

/// How a forwarding loop stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PumpEnd {
    /// End of input (or a read error, treated the same).
    Eof,
    /// The output is closed.
    WriteFailed,
}

/// Something `forward` can read from or write to: on Linux, anything with a
/// file descriptor (for `splice`).
#[cfg(target_os = "linux")]
pub(crate) trait Endpoint: std::os::fd::AsFd {}
#[cfg(target_os = "linux")]
impl<T: std::os::fd::AsFd> Endpoint for T {}
/// Something `forward` can read from or write to.
#[cfg(not(target_os = "linux"))]
pub(crate) trait Endpoint {}
#[cfg(not(target_os = "linux"))]
impl<T> Endpoint for T {}

/// A private pipe for `tee` (Linux): the read end for the monitor, the write
/// end for the pump. `None` elsewhere or if it cannot be made.
pub(crate) fn private_pipe() -> Option<(std::fs::File, std::fs::File)> {
    #[cfg(target_os = "linux")]
    {
        let (r, w) = rustix::pipe::pipe().ok()?;
        // Room for the monitor to fall a little behind without loss.
        let _ = rustix::pipe::fcntl_setpipe_size(&w, PRIVATE_PIPE);
        Some((r.into(), w.into()))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Capacity asked for the private pipes.
#[cfg(target_os = "linux")]
const PRIVATE_PIPE: usize = 1 << 20;

/// Copies `from` to `to` until the input ends or the output closes, handing
/// the monitor what passes (through `pipe` when there is one).
pub(crate) fn forward<R, W>(
    from: R,
    to: W,
    tap: Option<ChunkSender>,
    pipe: Option<std::fs::File>,
    bytes: &AtomicU64,
) -> PumpEnd
where
    R: Read + Endpoint,
    W: Write + Endpoint,
{
    #[cfg(target_os = "linux")]
    {
        linux::forward(from, to, tap, pipe, bytes)
    }
    #[cfg(not(target_os = "linux"))]
    {
        drop(pipe);
        copy(from, to, tap, bytes)
    }
}

/// The portable loop.
pub(crate) fn copy(
    mut from: impl Read,
    mut to: impl Write,
    mut tap: Option<ChunkSender>,
    bytes: &AtomicU64,
) -> PumpEnd {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return PumpEnd::Eof,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return PumpEnd::Eof,
        };
        // The copy goes to the monitor before the write: a write may block
        // for long, and the ticket order must not keep the monitor waiting.
        if let Some(tap) = &mut tap {
            tap.offer(&buf[..n]);
        }
        if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
            return PumpEnd::WriteFailed;
        }
        bytes.fetch_add(n as u64, Relaxed);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use rustix::event::{PollFd, PollFlags, poll};
    use rustix::io::Errno;
    use rustix::pipe::{SpliceFlags, splice, tee};

    use super::{CHUNK, PumpEnd, copy};
    use crate::tap::monitor::{Body, ChunkSender, Missed};

    /// Moves exactly `n` bytes from `from` to `to` (they are known to be in
    /// `from`), waiting for room; `Err` if the output is closed.
    fn splice_exact(from: impl AsFd, to: impl AsFd, mut n: usize) -> Result<(), ()> {
        while n > 0 {
            match splice(&from, None, &to, None, n, SpliceFlags::MOVE) {
                Ok(0) => return Err(()),
                Ok(m) => n -= m,
                Err(Errno::INTR | Errno::AGAIN) => {}
                Err(_) => return Err(()),
            }
        }
        Ok(())
    }

    /// Waits until `fd` is readable (or closed).
    fn wait_readable(fd: impl AsFd) {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        while let Err(Errno::INTR) = poll(&mut fds, None) {}
    }

    pub(super) fn forward<R, W>(
        mut from: R,
        mut to: W,
        tap: Option<ChunkSender>,
        pipe: Option<File>,
        bytes: &AtomicU64,
    ) -> PumpEnd
    where
        R: Read + AsFd,
        W: Write + AsFd,
    {
        let Some(sender) = tap else {
            return move_all(from, to, bytes);
        };
        // Each chunk is `tee`d (no copy, no waiting) into the monitor's
        // private pipe, where the monitor reads it itself; or, when
        // recording (every line matters, so the copy goes into the monitor's
        // larger in-memory queue at once), into a pipe of our own that we
        // read the copy from. Then a ticket, then the move from input to
        // output, then the note to the monitor; if the output is full, the
        // note goes before the rest of the move, so the monitor never waits
        // on a stuck write.
        let (pipe, mut own) = match pipe {
            Some(pipe) => (pipe, None),
            None => match super::private_pipe() {
                Some((r, w)) => (w, Some(r)),
                None => return copy(from, to, Some(sender), bytes),
            },
        };
        let mut buf = vec![0u8; CHUNK];
        let mut waited = false;
        // Bytes moved unseen since the monitor last got a chunk.
        let mut unseen = 0u64;
        loop {
            if own.is_none() && sender.idle() {
                // Only validating, and the validator is busy: move without
                // looking; the monitor learns how much it did not see.
                match splice(&from, None, &to, None, CHUNK, SpliceFlags::MOVE) {
                    Ok(0) => {
                        sender.send(sender.ticket(), Body::Unseen(unseen));
                        return PumpEnd::Eof;
                    }
                    Ok(n) => {
                        unseen += n as u64;
                        bytes.fetch_add(n as u64, Relaxed);
                        continue;
                    }
                    Err(Errno::INTR | Errno::AGAIN) => continue,
                    Err(Errno::INVAL) if unseen == 0 => {
                        return copy(from, to, Some(sender), bytes);
                    }
                    Err(_) => {
                        sender.send(sender.ticket(), Body::Unseen(unseen));
                        return PumpEnd::WriteFailed;
                    }
                }
            }
            if unseen > 0 {
                sender.send(sender.ticket(), Body::Unseen(std::mem::take(&mut unseen)));
            }
            let n = match tee(&from, &pipe, CHUNK, SpliceFlags::NONBLOCK) {
                Ok(0) => return PumpEnd::Eof,
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) if !waited => {
                    // Most likely no input yet.
                    wait_readable(&from);
                    waited = true;
                    continue;
                }
                Err(Errno::AGAIN) => {
                    // Input is there but the private pipe is full: the
                    // monitor is behind. Move this chunk unseen.
                    waited = false;
                    match splice(&from, None, &to, None, CHUNK, SpliceFlags::MOVE) {
                        Ok(0) => {
                            sender.send(sender.ticket(), Body::Unseen(unseen));
                            return PumpEnd::Eof;
                        }
                        Ok(m) => {
                            unseen += m as u64;
                            bytes.fetch_add(m as u64, Relaxed);
                            continue;
                        }
                        Err(Errno::INTR | Errno::AGAIN) => continue,
                        Err(_) => {
                            sender.send(sender.ticket(), Body::Unseen(unseen));
                            return PumpEnd::WriteFailed;
                        }
                    }
                }
                // The input is not a pipe: nothing was consumed.
                Err(Errno::INVAL) => return copy(from, to, Some(sender), bytes),
                // The private pipe is gone (the monitor stopped): forward
                // unwatched.
                Err(_) => return move_all(from, to, bytes),
            };
            waited = false;
            let ticket = sender.ticket();
            let body = match own.as_mut() {
                None => Body::InPipe(n),
                Some(own) => match sender.admit(n) {
                    Ok(()) => {
                        let mut data = sender.buffer(n);
                        let _ = own.take(n as u64).read_to_end(&mut data);
                        if data.len() != n {
                            return PumpEnd::Eof;
                        }
                        Body::Bytes(data)
                    }
                    Err(why) => {
                        if own.read_exact(&mut buf[..n]).is_err() {
                            return PumpEnd::Eof;
                        }
                        Body::Missed(Missed::of(&buf[..n], why))
                    }
                },
            };
            // Move what the output takes without waiting.
            let mut moved = 0;
            let mut spliceable = true;
            let mut closed = false;
            while moved < n {
                match splice(
                    &from,
                    None,
                    &to,
                    None,
                    n - moved,
                    SpliceFlags::MOVE | SpliceFlags::NONBLOCK,
                ) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(m) => moved += m,
                    Err(Errno::INTR) => {}
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INVAL) if moved == 0 => {
                        spliceable = false;
                        break;
                    }
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
            sender.send(ticket, body);
            if closed {
                return PumpEnd::WriteFailed;
            }
            if !spliceable {
                // The output cannot take spliced data: consume the same bytes
                // from the input and write them, and copy from now on.
                if from.read_exact(&mut buf[..n]).is_err() {
                    return PumpEnd::Eof;
                }
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return PumpEnd::WriteFailed;
                }
                bytes.fetch_add(n as u64, Relaxed);
                return copy(from, to, Some(sender), bytes);
            }
            // The rest, waiting for room.
            if moved < n && splice_exact(&from, &to, n - moved).is_err() {
                return PumpEnd::WriteFailed;
            }
            bytes.fetch_add(n as u64, Relaxed);
        }
    }

    /// Nothing watches: move pages from pipe to pipe.
    fn move_all<R, W>(from: R, to: W, bytes: &AtomicU64) -> PumpEnd
    where
        R: Read + AsFd,
        W: Write + AsFd,
    {
        loop {
            match splice(&from, None, &to, None, CHUNK, SpliceFlags::MOVE) {
                Ok(0) => return PumpEnd::Eof,
                Ok(n) => {
                    bytes.fetch_add(n as u64, Relaxed);
                }
                Err(Errno::INTR | Errno::AGAIN) => {}
                // Neither end is a pipe, or the output cannot splice:
                // nothing was moved, copy instead.
                Err(Errno::INVAL) => return copy(from, to, None, bytes),
                Err(Errno::PIPE) => return PumpEnd::WriteFailed,
                Err(_) => return PumpEnd::Eof,
            }
        }
    }
}
