//! Memory figures of a process from `/proc/<pid>/status` (Linux; `None`
//! elsewhere). The `serve_load` example includes this file by path.

use std::fmt::Display;

/// Resident memory of `pid` (or `"self"`) in bytes.
pub fn rss(pid: impl Display) -> Option<u64> {
    status_bytes(pid, "VmRSS")
}

/// The peak resident memory of `pid` (or `"self"`) so far, in bytes.
pub fn peak_rss(pid: impl Display) -> Option<u64> {
    status_bytes(pid, "VmHWM")
}

/// The figure `key` of `/proc/<pid>/status` (given in kB), in bytes.
fn status_bytes(pid: impl Display, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
