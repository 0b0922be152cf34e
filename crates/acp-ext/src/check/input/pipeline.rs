//! The two threads of [`read_parallel`](super::read_parallel) for
//! JSON-RPC lines: a parser thread reads the input in blocks of whole lines
//! and parses them, and the calling thread takes their items in input
//! order. When the calling thread's next block is not parsed yet, it parses
//! the oldest block read and not yet taken instead of waiting: on two cores
//! the parse is the slower stage, and the helping keeps both cores busy
//! where a second parser thread would compete for them (measured on
//! 2026-12-02: `check` and `state` are both faster with one parser thread
//! and the helping than with two parser threads). The reading has no
//! thread of its own: a third thread on two cores was woken thousands of
//! times a run, for the same wall time and more CPU (the measurement
//! journal, BENCHMARKS.md as of commit 5a0accc).
//!
//! Blocks return to the parser thread for reuse, and items to the thread
//! that parsed them, to be dropped where their memory was allocated.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Condvar, Mutex, MutexGuard};

use acp_extension_core::connection::Reads;

use super::{Block, Blocks, Item, parse_jsonrpc_line, too_large};

/// Blocks read and waiting for a parser, and blocks read or parsed but
/// not yet taken by the calling thread: few, so that a bounded fold's
/// memory stays bounded.
const READ_AHEAD: usize = 2;
const IN_FLIGHT: usize = 4;

/// Parses every line of `block`.
fn parse_block(block: &Block, reads: Reads) -> Vec<Item> {
    let mut items = Vec::with_capacity(block.lines.len());
    for (line, range) in &block.lines {
        match range {
            Some(r) => {
                parse_jsonrpc_line(&block.text[r.clone()], *line, reads, &mut |i| items.push(i))
            }
            None => items.push(too_large(*line)),
        }
    }
    items
}

/// A parsed block, waiting for the calling thread.
struct Parsed {
    number: u64,
    items: Vec<Item>,
    /// The parser thread parsed it (its items go back there to be
    /// dropped), not the calling thread.
    by_parser: bool,
}

/// What the stages share, under one lock.
#[derive(Default)]
struct Queue {
    /// Blocks read and not yet taken by a parser, with their numbers.
    read: VecDeque<(u64, Block)>,
    /// Blocks parsed, in any order.
    parsed: Vec<Parsed>,
    /// Blocks parsed and taken back for reuse.
    free: Vec<Block>,
    /// The number of blocks read, once the input has ended.
    end: Option<u64>,
    /// A thread panicked: the others stop.
    stopped: bool,
}

impl Queue {
    /// Takes back a parsed block for reuse, and keeps its items for the
    /// calling thread.
    fn put_parsed(&mut self, number: u64, block: Block, items: Vec<Item>, by_parser: bool) {
        self.free.push(block);
        self.parsed.push(Parsed {
            number,
            items,
            by_parser,
        });
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled whenever the queue changes.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A thread that panicked holding the lock left the queue whole:
        // every change is one push or pop.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    fn change(&self, f: impl FnOnce(&mut Queue)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }
}

/// Stops every stage when its thread panics, so that none waits for it.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.change(|q| q.stopped = true);
        }
    }
}

/// Runs the stages on `reader` (after the bytes `first`, which begin line
/// `lines_before + 1`).
pub(super) fn parallel_lines<R: BufRead + Send>(
    mut reader: R,
    first: Vec<u8>,
    lines_before: u64,
    reads: Reads,
    sink: &mut dyn FnMut(&Item),
    settled: &mut dyn FnMut(),
) -> io::Result<()> {
    let shared = Shared {
        queue: Mutex::new(Queue::default()),
        changed: Condvar::new(),
    };
    let shared = &shared;
    std::thread::scope(|scope| {
        let (used, used_rx) = channel::<Vec<Item>>();
        let parsing = std::thread::Builder::new()
            .name("acp-ext-parse".into())
            .spawn_scoped(scope, move || {
                let blocks = Blocks::new(io::Cursor::new(first).chain(&mut reader), lines_before);
                parser(shared, blocks, reads, &used_rx)
            })?;
        let stop = StopOnPanic(shared);
        let mut next = 0;
        loop {
            let mut q = shared.lock();
            let parsed = loop {
                if let Some(i) = q.parsed.iter().position(|p| p.number == next) {
                    break Some(q.parsed.swap_remove(i));
                }
                if q.end == Some(next) || q.stopped {
                    break None;
                }
                if let Some((number, block)) = q.read.pop_front() {
                    // Not parsed yet: parse the oldest block waiting,
                    // rather than wait.
                    drop(q);
                    let items = parse_block(&block, reads);
                    q = shared.lock();
                    q.put_parsed(number, block, items, false);
                    continue;
                }
                q = shared.wait(q);
            };
            drop(q);
            // Room to read ahead again.
            shared.changed.notify_all();
            let Some(parsed) = parsed else { break };
            for item in &parsed.items {
                sink(item);
            }
            settled();
            next += 1;
            if parsed.by_parser {
                // A parser that has ended drops nothing more: dropped here.
                let _ = used.send(parsed.items);
            }
        }
        drop(stop);
        parsing
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the input parser panicked")))
    })
}

/// The parser thread, which reads too: it keeps up to [`READ_AHEAD`]
/// blocks read and waiting, for the calling thread to take when it has
/// nothing else to do, and parses the oldest of them. A live stream's
/// lines are never held back by a read of the next ones: while this
/// thread waits in a read, the calling thread parses what was read before.
/// It drops the items the calling thread is done with.
fn parser<R: io::Read>(
    shared: &Shared,
    mut blocks: Blocks<R>,
    reads: Reads,
    used: &Receiver<Vec<Item>>,
) -> io::Result<()> {
    let _stop = StopOnPanic(shared);
    let mut number = 0;
    let mut result = Ok(());
    let mut reading = true;
    loop {
        let mut q = shared.lock();
        let mut block = loop {
            if q.stopped {
                return result;
            }
            if reading && q.read.len() < READ_AHEAD && q.read.len() + q.parsed.len() < IN_FLIGHT {
                break q.free.pop().unwrap_or_default();
            }
            if let Some((n, block)) = q.read.pop_front() {
                drop(q);
                while used.try_recv().is_ok() {}
                let items = parse_block(&block, reads);
                q = shared.lock();
                q.put_parsed(n, block, items, true);
                shared.changed.notify_all();
                continue;
            }
            if !reading {
                return result;
            }
            q = shared.wait(q);
        };
        drop(q);
        match blocks.fill(&mut block) {
            Ok(true) => {
                shared.change(|q| q.read.push_back((number, block)));
                number += 1;
                continue;
            }
            Ok(false) => {}
            // Whatever was read is still parsed and taken; a failed read
            // ends the input there.
            Err(e) => result = Err(e),
        }
        reading = false;
        shared.change(|q| q.end = Some(number));
    }
}
