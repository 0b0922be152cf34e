//! Reading a file that another process is still writing (`tap --record`):
//! at the end of the file, wait for more instead of ending.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long to wait at the end of the file before looking again.
pub const POLL: Duration = Duration::from_millis(20);

/// A reader that, at the end of the file, waits for the writer to append
/// until `stop` is set; then it ends like a finished file.
#[derive(Debug)]
pub struct Follow<R> {
    inner: R,
    stop: Arc<AtomicBool>,
}

impl<R: Read> Follow<R> {
    /// Follows `inner` until `stop` is set.
    pub fn new(inner: R, stop: Arc<AtomicBool>) -> Self {
        Self { inner, stop }
    }
}

impl<R: Read> Read for Follow<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n > 0 || buf.is_empty() || self.stop.load(Ordering::SeqCst) {
                return Ok(n);
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn waits_for_appended_bytes_and_ends_when_stopped() {
        let path = std::env::temp_dir().join(format!("acp-ext-follow-{}", std::process::id()));
        std::fs::write(&path, b"one\n").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut r = Follow::new(std::fs::File::open(&path).unwrap(), stop.clone());
        let writer = {
            let path = path.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                f.write_all(b"two\n").unwrap();
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Ordering::SeqCst);
            })
        };
        let mut all = String::new();
        r.read_to_string(&mut all).unwrap();
        writer.join().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(all, "one\ntwo\n");
    }
}
