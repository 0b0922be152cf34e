//! The forwarding loop of one direction.
//!
//! Portable version: read → offer a copy to the monitor → write, as data
//! arrives. On Linux, when the input is a pipe, bytes move without passing
//! through user space: `splice` from input to output, and, when the monitor
//! wants a copy, `tee` into a private pipe first and read the copy from
//! there. Either way the chunk is offered to the monitor before it is
//! written, so a request is queued for the monitor before its answer can be.

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

/// Copies `from` to `to` until the input ends or the output closes.
pub(crate) fn forward<R, W>(from: R, to: W, tap: Option<ChunkSender>, bytes: &AtomicU64) -> PumpEnd
where
    R: Read + Endpoint,
    W: Write + Endpoint,
{
    #[cfg(target_os = "linux")]
    {
        if std::env::var_os("TAPX_NOSPLICE").is_none() {
            return linux::forward(from, to, tap, bytes);
        }
    }
    copy(from, to, tap, bytes)
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
    use std::io::{Read, Write};
    use std::os::fd::{AsFd, OwnedFd};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use rustix::io::Errno;
    use rustix::pipe::{SpliceFlags, fcntl_setpipe_size, pipe, splice, tee};

    use super::{CHUNK, PumpEnd, copy};
    use crate::tap::monitor::ChunkSender;

    /// Moves exactly `n` bytes from `from` to `to` (they are known to be in
    /// `from`). `Err(true)` if `to` cannot take spliced data (nothing was
    /// moved), `Err(false)` if the output is closed.
    fn splice_exact(from: impl AsFd, to: impl AsFd, mut n: usize) -> Result<(), bool> {
        let mut first = true;
        while n > 0 {
            match splice(&from, None, &to, None, n, SpliceFlags::MOVE) {
                Ok(0) => return Err(false),
                Ok(m) => n -= m,
                Err(Errno::INTR | Errno::AGAIN) => {}
                Err(Errno::INVAL) if first => return Err(true),
                Err(_) => return Err(false),
            }
            first = false;
        }
        Ok(())
    }

    pub(super) fn forward<R, W>(
        mut from: R,
        mut to: W,
        mut tap: Option<ChunkSender>,
        bytes: &AtomicU64,
    ) -> PumpEnd
    where
        R: Read + AsFd,
        W: Write + AsFd,
    {
        let Some(sender) = tap.as_mut() else {
            // Nothing watches: move pages from pipe to pipe.
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
        };
        // The monitor wants a copy: duplicate the input into a private pipe
        // (`tee`, no copy), read the copy from there, offer it, then move the
        // same bytes from input to output.
        let Ok((copy_r, copy_w)) = pipe() else {
            return copy(from, to, tap, bytes);
        };
        let _ = fcntl_setpipe_size(&copy_w, CHUNK);
        let mut copy_r = std::fs::File::from(OwnedFd::from(copy_r));
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match tee(&from, &copy_w, CHUNK, SpliceFlags::empty()) {
                Ok(0) => return PumpEnd::Eof,
                Ok(n) => n,
                Err(Errno::INTR | Errno::AGAIN) => continue,
                // The input is not a pipe: nothing was consumed.
                Err(Errno::INVAL) => return copy(from, to, tap, bytes),
                Err(_) => return PumpEnd::Eof,
            };
            // The copy: read straight into the buffer the monitor gets, or
            // into a scratch buffer just to count what is skipped.
            match sender.reserve(n) {
                Ok(()) => {
                    let mut data = sender.buffer(n);
                    match (&mut copy_r).take(n as u64).read_to_end(&mut data) {
                        Ok(m) if m == n => sender.send(data),
                        _ => return PumpEnd::Eof,
                    }
                }
                Err(why) => {
                    if copy_r.read_exact(&mut buf[..n]).is_err() {
                        return PumpEnd::Eof;
                    }
                    sender.skip(&buf[..n], why);
                }
            }
            match splice_exact(&from, &to, n) {
                Ok(()) => {}
                Err(true) => {
                    // The output cannot splice: consume the same bytes from
                    // the input and write them, and copy from now on.
                    if from.read_exact(&mut buf[..n]).is_err() {
                        return PumpEnd::Eof;
                    }
                    if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                        return PumpEnd::WriteFailed;
                    }
                    bytes.fetch_add(n as u64, Relaxed);
                    return copy(from, to, tap, bytes);
                }
                Err(false) => return PumpEnd::WriteFailed,
            }
            bytes.fetch_add(n as u64, Relaxed);
        }
    }
}
