//! `acp-ext watch`: a live terminal picture of a transcript's folded state
//! ([`acp_extension_core::state`]) and of the checker's findings.
//!
//! The [`App`] is the model: every message read (with its findings), the
//! state folded up to the cursor, and what the person selected. It knows
//! nothing of terminals; [`ui::render`] draws it into any ratatui buffer,
//! so the live view, `--once` and the tests draw the same frames.
//!
//! Live, a reader thread follows the file as it grows ([`follow`]) and
//! hands messages over a channel; the main loop folds what arrived, reacts
//! to keys, and redraws at most [`MAX_FPS`] times a second, only when
//! something changed (and once a second while a reset countdown shows).

// No line a peer sends may panic what reads it: denied here.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod follow;
pub mod ui;

use std::collections::HashSet;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use acp_extension_core::connection::{Connection, Message, Observer};
use acp_extension_core::state::{ConnectionState, Direction};
use acp_extension_core::subagent_events::SubagentEventPayload;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use serde_json::Value;

use crate::check::input::{self, Format, Item};
use crate::check::{Checker, Finding, Severity};

/// Redraws per second, at most.
pub const MAX_FPS: u32 = 30;

/// One message of the timeline.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based line of the input where it starts.
    pub line: u64,
    /// Which way it travelled.
    pub direction: Direction,
    /// The message, as compact JSON (re-folded when stepping back).
    pub json: String,
    /// `method`, or `→ <method>` for a response to a known request, or
    /// `response`.
    pub label: String,
    /// Its session, when it names one.
    pub session: Option<String>,
    /// How many findings it has.
    pub findings: usize,
}

/// One finding, with the message it belongs to.
#[derive(Debug, Clone)]
pub struct FindingAt {
    /// Index into [`App::entries`].
    pub message: usize,
    /// The finding.
    pub finding: Finding,
}

/// The panes that take the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The session list.
    Sessions,
    /// The selected session's run tree.
    Runs,
    /// The findings stream.
    Findings,
    /// The message timeline.
    Timeline,
}

impl Pane {
    fn next(self) -> Self {
        match self {
            Pane::Sessions => Pane::Runs,
            Pane::Runs => Pane::Findings,
            Pane::Findings => Pane::Timeline,
            Pane::Timeline => Pane::Sessions,
        }
    }
}

/// The model of the view.
pub struct App {
    /// The file shown.
    pub file: String,
    /// Every message read, in order.
    pub entries: Vec<Entry>,
    /// Every finding, in order.
    pub findings: Vec<FindingAt>,
    /// The state as of the cursor (or of every message, live).
    pub state: ConnectionState,
    /// Messages folded into [`App::state`].
    pub folded: usize,
    /// `None`: live (the state follows the end); `Some(i)`: replaying, the
    /// state as of message `i` (inclusive).
    pub cursor: Option<usize>,
    /// Following paused: new messages are read but not folded.
    pub paused: bool,
    /// Whether the input is still being followed.
    pub following: bool,
    /// The pane with the keys.
    pub focus: Pane,
    /// Selected session (index into the state's sessions).
    pub session: usize,
    /// Selected run (index into the selected session's run tree).
    pub run: usize,
    /// Runs shown with their output.
    pub expanded: HashSet<String>,
    /// Selected finding (index into the filtered findings).
    pub finding: usize,
    /// Findings shown: at least this severe.
    pub min_severity: Severity,
    /// Selected timeline entry, when the timeline pane moved it.
    pub timeline: Option<usize>,
    /// The one connection every read message goes through once: the
    /// checker and the live state observe it together.
    connection: Connection,
    checker: Checker,
    /// The live state while [`App::state`] shows another moment (paused
    /// or replaying); `None` when [`App::state`] is the live one.
    live_state: Option<ConnectionState>,
    /// The connection [`App::state`] follows while it is not the live one.
    shown_connection: Connection,
    /// Something to draw.
    pub dirty: bool,
    /// Set by `q`.
    pub quit: bool,
}

impl App {
    /// An empty model for `file`.
    pub fn new(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            entries: Vec::new(),
            findings: Vec::new(),
            state: ConnectionState::new(),
            folded: 0,
            cursor: None,
            paused: false,
            following: false,
            focus: Pane::Sessions,
            session: 0,
            run: 0,
            expanded: HashSet::new(),
            finding: 0,
            min_severity: Severity::Info,
            timeline: None,
            connection: Connection::new(),
            checker: Checker::new(),
            live_state: None,
            shown_connection: Connection::new(),
            dirty: true,
            quit: false,
        }
    }

    /// Reads all of `reader` (a finished transcript) into a new model.
    pub fn from_reader(file: &str, reader: impl io::BufRead, format: Format) -> io::Result<Self> {
        let mut app = App::new(file);
        input::read(reader, format, |item| app.push(item))?;
        app.catch_up();
        Ok(app)
    }

    /// Takes one item of the input: records it, checks it, and folds it
    /// when live and not paused.
    pub fn push(&mut self, item: Item) {
        let (line, direction, message) = match item {
            Item::Record(r) => (r.line, r.direction, r.message),
            // Watch keeps each message's JSON for its detail view.
            Item::Event { line, read } => (line, Direction::Unknown, read.to_value()),
            Item::Problem { line, finding } => {
                let index = self.entries.len();
                self.entries.push(Entry {
                    line,
                    direction: Direction::Unknown,
                    json: String::new(),
                    label: format!("({})", finding.rule),
                    session: None,
                    findings: 1,
                });
                self.findings.push(FindingAt {
                    message: index,
                    finding,
                });
                if self.live() {
                    self.folded = self.entries.len();
                }
                self.dirty = true;
                return;
            }
        };
        let mut label = Label::default();
        let live = match self.live_state.as_mut() {
            Some(state) => state,
            None => &mut self.state,
        };
        live.set_line(Some(line));
        self.connection.follow(
            direction,
            &message,
            &mut [&mut label, &mut self.checker, &mut *live],
        );
        live.take_changes();
        let findings = self.checker.take_findings();
        let index = self.entries.len();
        self.entries.push(Entry {
            line,
            direction,
            json: message.to_string(),
            label: label.text,
            session: label.session,
            findings: findings.len(),
        });
        for finding in findings {
            self.findings.push(FindingAt {
                message: index,
                finding,
            });
        }
        if self.live() {
            self.folded = self.entries.len();
        }
        self.dirty = true;
    }

    /// Whether the state follows the end of the input.
    pub fn live(&self) -> bool {
        self.cursor.is_none() && !self.paused
    }

    /// Shows the live state again (when live again after a pause or a
    /// replay).
    pub fn catch_up(&mut self) {
        if !self.live() {
            return;
        }
        if let Some(live) = self.live_state.take() {
            self.state = live;
        }
        self.folded = self.entries.len();
    }

    /// Stops showing the live state (kept folding apart), showing `shown`,
    /// which follows `connection` from then on.
    fn detach(&mut self, shown: ConnectionState, connection: Connection) {
        self.shown_connection = connection;
        if self.live_state.is_none() {
            self.live_state = Some(std::mem::replace(&mut self.state, shown));
        } else {
            self.state = shown;
        }
    }

    fn fold_entry(&mut self, i: usize) {
        let Some(e) = self.entries.get(i) else {
            return;
        };
        if e.json.is_empty() {
            return;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&e.json) {
            self.state.set_line(Some(e.line));
            self.shown_connection
                .follow(e.direction, &v, &mut [&mut self.state]);
            self.state.take_changes();
        }
    }

    /// Shows the state as of message `i` (clamped), or live with `None`
    /// (also when there is no message to show the state as of).
    pub fn seek(&mut self, target: Option<usize>) {
        let last = self.entries.len().checked_sub(1);
        let target = target.and_then(|i| Some(i.min(last?)));
        self.cursor = target;
        match target {
            None => {
                self.paused = false;
                self.catch_up();
            }
            Some(i) => {
                // Replaying: a state of its own, folded from the timeline.
                if self.live_state.is_none() || i + 1 < self.folded {
                    self.detach(ConnectionState::new(), Connection::new());
                    self.folded = 0;
                }
                while self.folded <= i {
                    self.fold_entry(self.folded);
                    self.folded += 1;
                }
            }
        }
        self.clamp();
        self.dirty = true;
    }

    /// The findings shown (at least [`App::min_severity`]).
    pub fn visible_findings(&self) -> Vec<&FindingAt> {
        self.findings
            .iter()
            .filter(|f| f.finding.severity >= self.min_severity)
            .collect()
    }

    /// The selected session's id.
    pub fn session_id(&self) -> Option<&str> {
        self.state
            .sessions()
            .get_index(self.session)
            .map(|(k, _)| k.as_str())
    }

    fn clamp(&mut self) {
        let sessions = self.state.sessions().len();
        self.session = self.session.min(sessions.saturating_sub(1));
        let runs = self
            .session_id()
            .and_then(|s| self.state.session(s))
            .map_or(0, |s| s.subagent_runs.len());
        self.run = self.run.min(runs.saturating_sub(1));
        let findings = self.visible_findings().len();
        self.finding = self.finding.min(findings.saturating_sub(1));
    }

    /// Reacts to one key.
    pub fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.dirty = true;
        let up = |n: &mut usize| *n = n.saturating_sub(1);
        match code {
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::Char(' ') | KeyCode::Char('p') => {
                self.paused = !self.paused;
                if self.paused && self.live_state.is_none() {
                    // The picture stays; the live state folds on apart.
                    let (shown, connection) = (self.state.clone(), self.connection.clone());
                    self.detach(shown, connection);
                }
                self.catch_up();
            }
            KeyCode::Char('f') => {
                self.min_severity = match self.min_severity {
                    Severity::Info => Severity::Warning,
                    Severity::Warning => Severity::Error,
                    _ => Severity::Info,
                };
                self.finding = 0;
            }
            KeyCode::Left | KeyCode::Char('[') => {
                let at = self.cursor.unwrap_or(self.entries.len());
                self.seek(Some(at.saturating_sub(1)));
            }
            KeyCode::Right | KeyCode::Char(']') => match self.cursor {
                Some(i) if i + 1 < self.entries.len() => self.seek(Some(i + 1)),
                Some(_) => self.seek(None),
                None => {}
            },
            KeyCode::Char('n') => {
                let from = self.cursor.map_or(0, |i| i + 1);
                let next = self
                    .visible_findings()
                    .iter()
                    .map(|f| f.message)
                    .find(|&m| m >= from);
                if let Some(m) = next {
                    self.seek(Some(m));
                }
            }
            KeyCode::End | KeyCode::Char('G') => self.seek(None),
            KeyCode::Home | KeyCode::Char('g') => self.seek(Some(0)),
            KeyCode::Up | KeyCode::Char('k') => match self.focus {
                Pane::Sessions => {
                    up(&mut self.session);
                    self.run = 0;
                }
                Pane::Runs => up(&mut self.run),
                Pane::Findings => up(&mut self.finding),
                Pane::Timeline => {
                    let at = self.timeline.unwrap_or(self.entries.len());
                    self.timeline = Some(at.saturating_sub(1));
                }
            },
            KeyCode::Down | KeyCode::Char('j') => match self.focus {
                Pane::Sessions => {
                    self.session += 1;
                    self.run = 0;
                }
                Pane::Runs => self.run += 1,
                Pane::Findings => self.finding += 1,
                Pane::Timeline => {
                    self.timeline = match self.timeline {
                        Some(i) if i + 1 < self.entries.len() => Some(i + 1),
                        _ => None,
                    }
                }
            },
            KeyCode::Enter => match self.focus {
                Pane::Runs => {
                    if let Some(id) = ui::selected_run(self)
                        && !self.expanded.remove(&id)
                    {
                        self.expanded.insert(id);
                    }
                }
                Pane::Findings => {
                    if let Some(m) = self.visible_findings().get(self.finding).map(|f| f.message) {
                        self.seek(Some(m));
                    }
                }
                Pane::Timeline => {
                    if let Some(i) = self.timeline {
                        self.seek(Some(i));
                    }
                }
                Pane::Sessions => self.focus = Pane::Runs,
            },
            _ => self.dirty = false,
        }
        self.clamp();
    }
}

/// How `acp-ext watch` runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WatchOptions {
    /// Input format.
    pub format: Format,
    /// Print the final frame as text and exit (also when stdout is not a
    /// terminal).
    pub once: bool,
    /// Width of that frame.
    pub width: u16,
    /// Height of that frame.
    pub height: u16,
    /// Print `messages=… redraws=… seconds=…` to stderr on exit.
    pub stats: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            format: Format::Auto,
            once: false,
            width: 100,
            height: 48,
            stats: false,
        }
    }
}

impl WatchOptions {
    /// Sets the input format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Sets whether to print the final frame as text and exit.
    pub fn once(mut self, once: bool) -> Self {
        self.once = once;
        self
    }

    /// Sets the size of that frame.
    pub fn size(mut self, width: u16, height: u16) -> Self {
        self.width = width;
        self.height = height;
        self
    }

    /// Sets whether to print the counters on exit.
    pub fn stats(mut self, stats: bool) -> Self {
        self.stats = stats;
        self
    }
}

/// Draws the model into a `width`×`height` frame and returns it as plain
/// text, one line per row, trailing spaces trimmed.
pub fn frame_text(app: &App, width: u16, height: u16) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(_) => return String::new(),
    };
    if terminal.draw(|f| ui::render(f, app, false)).is_err() {
        return String::new();
    }
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        for x in 0..buffer.area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Runs `acp-ext watch` on `path`: the live view on a terminal, else (or
/// with `--once`) the final frame as text.
pub fn run(path: &Path, options: &WatchOptions, out: &mut impl Write) -> anyhow::Result<()> {
    let name = path.display().to_string();
    if options.once || !io::stdout().is_terminal() {
        let file =
            std::fs::File::open(path).map_err(|e| anyhow::anyhow!("cannot read {name}: {e}"))?;
        let app = App::from_reader(&name, BufReader::new(file), options.format)?;
        out.write_all(frame_text(&app, options.width, options.height).as_bytes())?;
        return Ok(());
    }
    live(path, &name, options)
}

fn live(path: &Path, name: &str, options: &WatchOptions) -> anyhow::Result<()> {
    // A record the tap has not created yet is waited for; any other error
    // is one.
    let file = match std::fs::File::open(path) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => anyhow::bail!("cannot read {name}: {e}"),
    };
    let path = path.to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    // SIGTERM, SIGHUP (and SIGINT outside raw mode) end the view cleanly.
    let signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])?;
    let signal_handle = signals.handle();
    {
        let stop = stop.clone();
        let mut signals = signals;
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                stop.store(true, Ordering::SeqCst);
            }
        });
    }
    let (tx, rx) = mpsc::sync_channel::<Item>(65_536);
    let format = options.format;
    let reader_stop = stop.clone();
    let reader = std::thread::spawn(move || {
        let file = match file {
            Some(f) => f,
            None => loop {
                if reader_stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(f) = std::fs::File::open(&path) {
                    break f;
                }
                std::thread::sleep(follow::POLL * 5);
            },
        };
        let tail = follow::Follow::new(file, reader_stop);
        let _ = input::read(BufReader::with_capacity(1 << 16, tail), format, |item| {
            let _ = tx.send(item);
        });
    });

    let mut app = App::new(name);
    app.following = true;
    let started = Instant::now();
    let mut redraws = 0u64;
    let mut terminal = ratatui::init();
    let frame_gap = Duration::from_secs(1) / MAX_FPS;
    let mut last_draw = Instant::now() - frame_gap;
    let mut last_tick = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        loop {
            // Take what arrived, a bounded amount per turn so keys stay quick.
            let deadline = Instant::now() + Duration::from_millis(20);
            while let Ok(item) = rx.try_recv() {
                app.push(item);
                if Instant::now() >= deadline {
                    break;
                }
            }
            // A countdown on screen ticks once a second.
            if !app.state.rate_limits().is_empty() && last_tick.elapsed() >= Duration::from_secs(1)
            {
                app.dirty = true;
                last_tick = Instant::now();
            }
            if app.dirty && last_draw.elapsed() >= frame_gap {
                terminal.draw(|f| ui::render(f, &app, true))?;
                redraws += 1;
                app.dirty = false;
                last_draw = Instant::now();
            }
            if app.quit || stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let wait = if app.dirty {
                frame_gap.saturating_sub(last_draw.elapsed())
            } else {
                Duration::from_millis(50)
            };
            if event::poll(wait)? {
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        app.key(k.code, k.modifiers)
                    }
                    Event::Resize(..) => app.dirty = true,
                    _ => {}
                }
            }
        }
    })();
    ratatui::restore();
    stop.store(true, Ordering::SeqCst);
    signal_handle.close();
    // The reader may wait on a full channel: let it go before joining.
    drop(rx);
    let _ = reader.join();
    if options.stats {
        eprintln!(
            "messages={} redraws={} seconds={:.2}",
            app.entries.len(),
            redraws,
            started.elapsed().as_secs_f64()
        );
    }
    result
}

/// The timeline's words for one message, from the connection's reading of
/// it (a response names the request it answers).
#[derive(Default)]
struct Label {
    text: String,
    session: Option<String>,
}

impl Observer for Label {
    fn message(&mut self, _: &Connection, m: &Message<'_>) {
        if m.batch_index().is_some_and(|i| i > 0) {
            return;
        }
        self.session = m.session_id().map(str::to_owned);
        self.text = match m {
            Message::Call(c) => {
                let method = c.method;
                // A verified event's tag comes from its type (no tree built).
                let tag = match c.params.event().map(|e| &e.payload) {
                    Some(SubagentEventPayload::Output(o)) => Some(o.update.tag()),
                    Some(_) => None,
                    None => c
                        .params
                        .tree()
                        .pointer("/update/sessionUpdate")
                        .and_then(Value::as_str),
                };
                match tag {
                    Some(k) => format!("{method} {k}"),
                    None => method.to_owned(),
                }
            }
            Message::Answer(a) => {
                let what = if a.outcome.is_err() {
                    "error"
                } else {
                    "result"
                };
                match a
                    .request
                    .as_ref()
                    .filter(|r| r.pairing == acp_extension_core::connection::Pairing::Paired)
                {
                    Some(r) => format!("↳ {what} of {}", r.method),
                    None => format!("↳ {what}"),
                }
            }
            Message::Invalid(_) => "(not a message)".to_owned(),
        };
    }

    fn unreadable(&mut self, _: &Connection, rule: &str, _: &str) {
        self.text = format!("({rule})");
    }
}
