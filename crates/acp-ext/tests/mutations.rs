//! Every single-field type change of every message of the real-world
//! corpus and of `serve`'s traffic, through the state, the checker and the
//! bridge (`acp_ext::fuzzing::mutations`): nothing panics, and the state
//! records each change at its field or folds it by its documented rule.
//! The official adapters' offline records go through the same pass in
//! `tests/official.rs`.

mod common;

use std::path::Path;

use acp_ext::check::input::{self, Format, Item, Record};
use acp_ext::fuzzing::{MutationReport, mutations};
use common::*;

fn records_of(file: &Path) -> Vec<Record> {
    let text = std::fs::read(file).unwrap();
    let mut records = Vec::new();
    input::read(&text[..], Format::Auto, |item| {
        if let Item::Record(r) = item {
            records.push(r);
        }
    })
    .unwrap();
    records
}

fn assert_kept(name: &str, records: &[Record], report: &MutationReport) {
    assert!(report.tried > 0, "{name}: nothing mutated");
    assert_eq!(
        report.tried,
        report.recorded + report.as_absent + report.unread + report.kept + report.silent.len()
    );
    let silent: Vec<String> = report
        .silent
        .iter()
        .map(|m| {
            format!(
                "message {} {} → {}: {}",
                m.message, m.pointer, m.into, records[m.message].message
            )
        })
        .collect();
    assert!(
        silent.is_empty(),
        "{name}: {} of {} changes folded silently otherwise:\n{}",
        silent.len(),
        report.tried,
        silent.join("\n")
    );
}

#[test]
fn every_type_change_of_the_corpus_is_recorded_or_folded_by_rule() {
    let mut total = MutationReport::default();
    let mut failures = Vec::new();
    for file in corpus_files() {
        let records = records_of(&file);
        let report = mutations(&records);
        total.tried += report.tried;
        total.recorded += report.recorded;
        total.as_absent += report.as_absent;
        total.unread += report.unread;
        total.kept += report.kept;
        if let Err(e) =
            std::panic::catch_unwind(|| assert_kept(&file.display().to_string(), &records, &report))
        {
            failures.push(e);
            total.silent.extend(report.silent);
        }
    }
    eprintln!(
        "{} changes: {} recorded, {} read as absent, {} unread, {} kept as sent, {} silent",
        total.tried,
        total.recorded,
        total.as_absent,
        total.unread,
        total.kept,
        total.silent.len()
    );
    assert!(failures.is_empty(), "{} files", failures.len());
}

/// `serve`'s traffic, as `probe` drives it through a recording tap: the
/// extensions, subagents, usage, a goal and a steer, each message changed
/// field by field.
#[test]
fn every_type_change_of_serves_traffic_is_recorded_or_folded_by_rule() {
    let dir = scratch("serve");
    let path = dir.join("serve.jsonl");
    let out = std::process::Command::new(EXE)
        .args(["probe", "--quiet", "--session", "--prompt", "hi"])
        .args([
            "--prompt",
            "/subagents 2",
            "--prompt",
            "/tool",
            "--prompt",
            "/goal set ship",
        ])
        .args(["--", EXE, "tap", "--record"])
        .arg(&path)
        .args(["--", EXE, "serve"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let records = records_of(&path);
    assert!(records.len() > 20, "{} messages", records.len());
    let report = mutations(&records);
    eprintln!(
        "{} changes: {} recorded, {} read as absent, {} unread, {} kept as sent",
        report.tried, report.recorded, report.as_absent, report.unread, report.kept
    );
    assert_kept("serve", &records, &report);
}
