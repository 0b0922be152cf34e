//! The three stages of [`read_parallel`](super::read_parallel) for
//! JSON-RPC lines: a reader thread cuts the input into blocks of whole
//! lines, a parser thread parses them, and the calling thread takes their
//! items in input order. When the calling thread's next block is not parsed
//! yet, it parses the oldest block no one has taken instead of waiting: on
//! two cores the parse is the slower stage, and the helping keeps both
//! cores busy where a second parser thread would compete for them
//! (measured in BENCHMARKS.md: `check` and `state` are both faster with one
//! parser thread and the helping than with two parser threads).
//!
//! Blocks return to the reader for reuse, and items to the thread that
//! parsed them, to be dropped where their memory was allocated.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Condvar, Mutex, MutexGuard};

use acp_extension_core::connection::EventParse;

use super::{Block, Blocks, Item, parse_jsonrpc_line, too_large};

/// Blocks read ahead of the parsers, and blocks read or parsed but not
/// yet taken by the calling thread: few, so that a bounded fold's memory
/// stays bounded.
const READ_AHEAD: usize = 2;
const IN_FLIGHT: usize = 4;

/// Parses every line of `block`.
fn parse_block(block: &Block, events: EventParse) -> Vec<Item> {
    let mut items = Vec::with_capacity(block.lines.len());
    for (line, range) in &block.lines {
        match range {
            Some(r) => parse_jsonrpc_line(&block.text[r.clone()], *line, events, &mut |i| {
                items.push(i)
            }),
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
    events: EventParse,
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
        std::thread::Builder::new()
            .name("acp-ext-parse".into())
            .spawn_scoped(scope, move || parser(shared, events, &used_rx))?;
        let reading = std::thread::Builder::new()
            .name("acp-ext-read".into())
            .spawn_scoped(scope, move || -> io::Result<()> {
                let stop = StopOnPanic(shared);
                let mut blocks =
                    Blocks::new(io::Cursor::new(first).chain(&mut reader), lines_before);
                let mut number = 0;
                let result = loop {
                    let mut block = {
                        let mut q = shared.lock();
                        while (q.read.len() >= READ_AHEAD
                            || q.read.len() + q.parsed.len() >= IN_FLIGHT)
                            && !q.stopped
                        {
                            q = shared.wait(q);
                        }
                        if q.stopped {
                            break Ok(());
                        }
                        q.free.pop().unwrap_or_default()
                    };
                    match blocks.fill(&mut block) {
                        Ok(true) => {
                            shared.change(|q| q.read.push_back((number, block)));
                            number += 1;
                        }
                        Ok(false) => break Ok(()),
                        Err(e) => break Err(e),
                    }
                };
                // Whatever was read is still parsed and taken; a failed
                // read ends the input there.
                shared.change(|q| q.end = Some(number));
                drop(stop);
                result
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
                    shared.changed.notify_all();
                    let items = parse_block(&block, events);
                    q = shared.lock();
                    q.put_parsed(number, block, items, false);
                    shared.changed.notify_all();
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
        reading
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the input reader panicked")))
    })
}

/// The parser thread: takes the oldest block waiting, parses it, and drops
/// the items the calling thread is done with.
fn parser(shared: &Shared, events: EventParse, used: &Receiver<Vec<Item>>) {
    let _stop = StopOnPanic(shared);
    loop {
        let (number, block) = {
            let mut q = shared.lock();
            loop {
                if q.stopped {
                    return;
                }
                if let Some(taken) = q.read.pop_front() {
                    break taken;
                }
                if q.end.is_some() {
                    return;
                }
                q = shared.wait(q);
            }
        };
        // Space to read ahead again.
        shared.changed.notify_all();
        while used.try_recv().is_ok() {}
        let items = parse_block(&block, events);
        shared.change(|q| q.put_parsed(number, block, items, true));
    }
}
