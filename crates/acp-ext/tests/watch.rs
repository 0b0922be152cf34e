//! `acp-ext watch`: frames of `serve` transcripts on ratatui's test
//! backend (every pane, wide and narrow), the keys, `--once`, and the real
//! binary in a pseudo-terminal as a person uses it: start, move, expand,
//! follow a growing file, quit.

mod common;

use std::io::{BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use acp_ext::check::input::Format;
use acp_ext::watch::{App, frame_text};
use common::pty::Pty;
use common::{EXE, record, scratch};
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

const PROMPTS: &[&str] = &[
    "/subagents 2",
    "/title Release notes",
    "/goal set ship it",
    "/limits",
    "/compact",
    "hello",
];

fn app(path: &Path) -> App {
    let f = std::fs::File::open(path).unwrap();
    App::from_reader(&path.display().to_string(), BufReader::new(f), Format::Auto).unwrap()
}

fn key(app: &mut App, code: KeyCode) {
    app.key(code, KeyModifiers::NONE);
}

#[test]
fn wide_and_narrow_frames_show_every_pane() {
    let dir = scratch("frames");
    let path = record(&dir, "jsonl", PROMPTS);
    // A line that is not JSON: a finding in the stream.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("not json\n");
    std::fs::write(&path, text).unwrap();
    let app = app(&path);
    let wide = frame_text(&app, 120, 44);
    for want in [
        "acp-ext watch",
        "END",
        "Sessions (2)",
        "Release notes",
        "(generated)",
        "goal      active  ship it",
        "Runs (2)",
        "run-1 completed  worker-1",
        "run-2 completed  worker-2",
        "Usage",
        "serve-model-1",
        "context ",
        "Rate limits",
        "serve-default 5h",
        "serve-default 7d",
        "resets in",
        "Findings (1, all)",
        "not-json",
        "Timeline",
        "(not-json)",
        // A still frame takes no keys: it says how to browse instead.
        "still frame",
        // Tasks are listed, not only counted.
        "⧗ task",
        // Timeline entries name the update kind.
        "session/update ",
    ] {
        assert!(wide.contains(want), "wide frame lacks {want:?}:\n{wide}");
    }
    assert!(!wide.contains("q quit"), "{wide}");
    assert_eq!(wide.lines().count(), 44);
    assert!(wide.lines().all(|l| l.chars().count() <= 120));
    // Gauges show how full they are in plain text too.
    assert!(wide.contains('█') && wide.contains('░'), "{wide}");
    // Header and footer fit at width 100.
    let hundred = frame_text(&app, 100, 40);
    let first = hundred.lines().next().unwrap();
    let last = hundred.lines().last().unwrap();
    assert!(first.contains("findings"), "{first}");
    assert!(last.contains("browses a transcript"), "{last}");
    assert!(hundred.lines().all(|l| l.chars().count() <= 100));
    // On a terminal the footer lists the keys, and fits at width 100 too.
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 40)).unwrap();
    terminal
        .draw(|f| acp_ext::watch::ui::render(f, &app, true))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let footer: String = (0..100)
        .map(|x| buffer[(x, 39)].symbol().to_owned())
        .collect();
    assert!(
        footer.contains("q quit") && footer.contains("end live"),
        "{footer}"
    );
    let narrow = frame_text(&app, 60, 30);
    for want in [
        "session 1/2",
        "Release notes",
        "run-1 completed",
        "Findings (1, all)",
    ] {
        assert!(
            narrow.contains(want),
            "narrow frame lacks {want:?}:\n{narrow}"
        );
    }
    // No session list and no timeline when narrow.
    assert!(!narrow.contains("Sessions ("), "{narrow}");
    assert!(!narrow.contains("Timeline"), "{narrow}");
    assert!(narrow.lines().all(|l| l.chars().count() <= 60));
}

#[test]
fn keys_move_expand_replay_and_filter() {
    let dir = scratch("keys");
    let path = record(&dir, "jsonl", PROMPTS);
    let mut app = app(&path);
    // Tab to the runs, select the second, expand it: its output shows.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    let frame = frame_text(&app, 120, 44);
    assert!(frame.contains("▾ run-2"), "{frame}");
    assert!(frame.contains("│ worker-2"), "{frame}");
    assert!(frame.contains("▸ run-1"), "{frame}");
    // Step back to the very first message: replay shows the state then.
    key(&mut app, KeyCode::Home);
    let frame = frame_text(&app, 120, 44);
    assert!(
        frame.contains(&format!("REPLAY 1/{}", app.entries.len())),
        "{frame}"
    );
    assert!(
        frame.contains("Waiting for messages") || frame.contains("No session yet"),
        "{frame}"
    );
    // Step forward until the first run exists.
    let first_run = app
        .entries
        .iter()
        .position(|e| e.label.ends_with("subagents/event"))
        .unwrap();
    while app.cursor.unwrap() < first_run {
        key(&mut app, KeyCode::Right);
    }
    let frame = frame_text(&app, 120, 44);
    assert!(frame.contains("run-1 running"), "{frame}");
    assert!(frame.contains(&format!("▶#{}", first_run + 1)), "{frame}");
    // Replies are labelled with the request they answer.
    assert!(frame.contains("↳ result of session/new"), "{frame}");
    // End: the end of the transcript again.
    key(&mut app, KeyCode::End);
    assert!(frame_text(&app, 120, 44).contains("run-1 completed"));
    // Pause: new messages are read, not folded, until resumed.
    key(&mut app, KeyCode::Char(' '));
    assert!(frame_text(&app, 120, 44).contains("PAUSED"));
    key(&mut app, KeyCode::Char(' '));
    assert!(frame_text(&app, 120, 44).contains("END"));
    // The filter cycles info → warnings → errors → info.
    key(&mut app, KeyCode::Char('f'));
    assert!(frame_text(&app, 120, 44).contains("warnings+"));
    key(&mut app, KeyCode::Char('f'));
    key(&mut app, KeyCode::Char('f'));
    assert!(frame_text(&app, 120, 44).contains(", all)"));
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

/// An empty transcript has no message to replay to: every key that moves
/// through the timeline keeps the view live (seeking into it panicked).
#[test]
fn keys_on_an_empty_transcript_keep_the_view_live() {
    let mut app = App::from_reader("empty", &b""[..], Format::JsonRpc).unwrap();
    for code in [
        KeyCode::Char(' '),
        KeyCode::Left,
        KeyCode::Home,
        KeyCode::Right,
        KeyCode::Char('n'),
        KeyCode::Char(' '),
        KeyCode::Tab,
        KeyCode::Tab,
        KeyCode::Tab,
        KeyCode::Up,
        KeyCode::Enter,
        KeyCode::End,
    ] {
        key(&mut app, code);
        assert_eq!(app.cursor, None, "{code:?}");
    }
    assert!(app.live());
    assert!(app.state.sessions().is_empty());
    let frame = frame_text(&app, 60, 12);
    assert_eq!(frame.lines().count(), 12);
}

#[test]
fn next_finding_jumps_to_its_message() {
    let dir = scratch("findings");
    let path = record(&dir, "jsonl", &["hello"]);
    let mut text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A bad line in the middle.
    let mid = lines.len() / 2;
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out.insert(mid, "{broken".into());
    text = out.join("\n") + "\n";
    std::fs::write(&path, text).unwrap();
    let mut app = app(&path);
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.cursor, Some(mid));
    let frame = frame_text(&app, 120, 44);
    assert!(frame.contains(&format!("▶#{}", mid + 1)), "{frame}");
    // From the findings pane, Enter jumps to the selected finding too.
    key(&mut app, KeyCode::End);
    for _ in 0..2 {
        key(&mut app, KeyCode::Tab);
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.cursor, Some(mid));
}

#[test]
fn once_prints_the_final_frame_for_every_format() {
    let dir = scratch("once");
    for format in ["jsonl", "conductor"] {
        let path = record(&dir, format, &["/subagents 1", "/title T"]);
        let out = Command::new(EXE)
            .args(["watch", "--once", "--width", "90", "--height", "36"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), 36, "{text}");
        assert!(text.contains("run-1 completed"), "{format}:\n{text}");
        assert!(text.contains("T  (generated)"), "{format}:\n{text}");
        assert!(!text.contains('\u{1b}'), "escape codes in plain output");
    }
    // Not a terminal: the same, without --once.
    let path = dir.join("record-jsonl");
    let out = Command::new(EXE).arg("watch").arg(&path).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("run-1 completed"));
    // A missing file is an error, not a blank screen.
    let out = Command::new(EXE)
        .args(["watch", "--once", "/nonexistent/rec.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/rec.jsonl"));
}

#[test]
fn a_person_starts_moves_expands_follows_and_quits() {
    let dir = scratch("pty");
    let full = record(&dir, "jsonl", PROMPTS);
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The view starts on the first part and follows as the rest arrives.
    let cut = lines
        .iter()
        .position(|l| l.contains("/title Release notes"))
        .unwrap();
    let live = dir.join("live.jsonl");
    std::fs::write(&live, lines[..cut].join("\n") + "\n").unwrap();
    let live_arg = live.display().to_string();
    let mut pty = Pty::start(&["watch", &live_arg], 120, 40);
    let screen = pty.wait_for("LIVE");
    assert!(screen.contains("Sessions"), "{screen}");
    pty.wait_for("run-2 completed");
    assert!(!pty.contents().contains("Release notes"));
    // Move: tab to the runs, down to the second, expand it.
    pty.send(b"\t");
    pty.send(b"\x1b[B");
    pty.send(b"\r");
    pty.wait_for("▾ run-2");
    // Follow: the writer appends the rest while the view runs.
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&live)
            .unwrap();
        for chunk in lines[cut..].chunks(7) {
            f.write_all((chunk.join("\n") + "\n").as_bytes()).unwrap();
            f.flush().unwrap();
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    pty.wait_for("Release notes");
    pty.wait_for("serve-default 7d");
    pty.wait_for(&format!("{} messages", lines.len()));
    // Quit: exit status 0, the terminal restored (main screen, cursor shown).
    pty.send(b"q");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}");
    std::thread::sleep(Duration::from_millis(200));
    let parser = pty.screen.lock().unwrap();
    assert!(
        !parser.screen().alternate_screen(),
        "alternate screen left on"
    );
    assert!(!parser.screen().hide_cursor(), "cursor left hidden");
}

#[test]
fn sigterm_restores_the_terminal() {
    let dir = scratch("sigterm");
    let path = record(&dir, "jsonl", &["hello"]);
    let arg = path.display().to_string();
    let mut pty = Pty::start(&["watch", &arg], 100, 30);
    pty.wait_for("LIVE");
    let pid = pty.child.process_id().unwrap();
    common::send_signal("TERM", pid);
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!pty.screen.lock().unwrap().screen().alternate_screen());
}

#[test]
fn usage_with_several_models_shows_their_total() {
    let dir = scratch("models");
    let path = dir.join("two-models.jsonl");
    let row = |input: u64, cost: f64| serde_json::json!({"inputTokens": input, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": cost});
    let update = serde_json::json!({"jsonrpc": "2.0", "method": "_lody/session/usage_update",
        "params": {"sessionId": "s", "usage": row(300, 0.3),
            "modelUsage": {"model-a": row(100, 0.1), "model-b": row(200, 0.2)}}});
    std::fs::write(&path, format!("{update}\n")).unwrap();
    let frame = frame_text(&app(&path), 120, 40);
    let line = |name: &str| {
        frame
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{frame}"))
            .to_owned()
    };
    assert!(line("model-a").contains("100"), "{frame}");
    assert!(line("model-b").contains("200"), "{frame}");
    let total = line("total");
    assert!(
        total.contains("300") && total.contains("$0.3000"),
        "{total}"
    );
}

/// `--stats` prints the counters once the live view ends, and only with it.
#[test]
fn stats_are_printed_on_exit_only_when_asked() {
    let dir = scratch("stats");
    let path = record(&dir, "jsonl", &["/title Counted"]);
    let arg = path.display().to_string();
    let run = |args: &[&str]| {
        let mut pty = Pty::start(args, 100, 30);
        pty.wait_for("Counted");
        pty.send(b"q");
        assert!(pty.wait_exit().success());
        std::thread::sleep(Duration::from_millis(200));
        pty.raw()
    };
    let with = run(&["watch", "--stats", &arg]);
    let line = with
        .lines()
        .find_map(|l| l.split("messages=").nth(1))
        .unwrap_or_else(|| panic!("no stats line:\n{with}"));
    let messages: usize = line
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {line}"));
    assert!(messages > 0, "{line}");
    assert!(
        line.contains(" redraws=") && line.contains(" seconds="),
        "{line}"
    );
    let without = run(&["watch", &arg]);
    assert!(!without.contains("messages="), "{without}");
}

#[test]
fn a_record_that_does_not_exist_yet_is_waited_for() {
    let dir = scratch("later");
    let source = record(&dir, "jsonl", &["/title Later"]);
    let later = dir.join("later.jsonl");
    let arg = later.display().to_string();
    let mut pty = Pty::start(&["watch", &arg], 100, 30);
    pty.wait_for("Waiting for messages");
    std::fs::copy(&source, &later).unwrap();
    pty.wait_for("Later");
    pty.send(b"q");
    assert!(pty.wait_exit().success());
}

#[test]
fn a_plain_acp_session_shows_its_context_cost_and_turn_usage() {
    // No Core usage at all: the standard `usage_update` and the prompt
    // result's `usage`, as every plain ACP agent sends them.
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":182000,"size":200000,"cost":{"amount":0.5,"currency":"USD"}}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","usage":{"totalTokens":1300,"inputTokens":200,"outputTokens":100}}}"#,
    ];
    let text = lines.join("\n");
    let app = acp_ext::watch::App::from_reader("plain", text.as_bytes(), Format::Auto).unwrap();
    let frame = frame_text(&app, 100, 40);
    for want in [
        "1 prompt ·",
        "context 182000 / 200000 91%",
        "cost $0.5000",
        "turn usage 1 turn · 1300 tokens",
    ] {
        assert!(frame.contains(want), "frame lacks {want:?}:\n{frame}");
    }
    // 91 % fills most of its bar.
    let row = frame
        .lines()
        .find(|l| l.contains("context 182000"))
        .unwrap();
    let full = row.matches('█').count();
    let empty = row.matches('░').count();
    assert!(full > 4 * empty, "{row}");
}

#[test]
fn a_v2_session_shows_its_turn_running_past_the_receipt_and_ended_by_the_idle() {
    let head = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"_compiling","background":[]}}}"#,
    ];
    let app = App::from_reader("v2", head.join("\n").as_bytes(), Format::Auto).unwrap();
    let frame = frame_text(&app, 160, 40);
    for want in ["busy (_compiling)", "1 accepted · running"] {
        assert!(frame.contains(want), "frame lacks {want:?}:\n{frame}");
    }
    let idle = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled","background":[{"type":"terminal","terminalId":"t"}]}}}"#;
    let all = format!("{}\n{idle}", head.join("\n"));
    let app = App::from_reader("v2", all.as_bytes(), Format::Auto).unwrap();
    let frame = frame_text(&app, 160, 40);
    for want in ["background: 1 terminal", "last stop cancelled"] {
        assert!(frame.contains(want), "frame lacks {want:?}:\n{frame}");
    }
    assert!(!frame.contains("· running"), "{frame}");
}
