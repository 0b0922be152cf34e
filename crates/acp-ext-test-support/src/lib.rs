//! Test support for the workspace, never published: the properties the
//! fuzz targets in `fuzz/` check, one function per target, each taking the
//! raw fuzzer input and panicking when a property fails. Its tests replay
//! `fuzz/regressions/<target>/` through the same functions, so CI checks
//! the properties without a fuzzer.
//!
//! Every property here tests public API only (the library's, and
//! `acp-ext`'s checker); the tap's framing property needs the tap's
//! internals and stays behind `acp-ext`'s `fuzzing` feature
//! ([`tap_framing`] re-exports it).

use std::collections::{HashMap, HashSet};

use acp_extension_core::Namespace;
use acp_extension_core::connection::{Line, ParsedLine, Reads};
use acp_extension_core::methods::{
    ALL_METHODS, AnyExtensionNotification, AnyExtensionRequest, ExtensionNotification,
    ExtensionRequest, ExtensionResponse, MethodKind, method_kind,
};
use acp_extension_core::namespace::split_method;
use acp_extension_core::usage::{
    ModelUsage, SessionUsageAccumulator, SessionUsageUpdate, fold_lines,
};
use acp_extension_core::validate::{
    Kind, Violation, is_valid_slice, validate_slice, validate_value,
};
use agent_client_protocol::JsonRpcMessage;
use indexmap::IndexMap;
use serde_json::Value;

use acp_ext::bridge::{BridgeTarget, Out, Translator};
use acp_ext::check::input::{self, Format, Item};
use acp_ext::check::{Checker, Finding, RuleInfo};
use acp_ext::watch;
use acp_extension_core::connection::sequence::SequenceLimits;
use acp_extension_core::connection::{Connection, Direction};
use acp_extension_core::state::{ConnectionState, StateLimits};
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

pub use acp_ext::fuzzing::tap_framing;

/// Asserts that `p` is an RFC 6901 pointer: empty, or `/`-separated tokens
/// in which `~` is always followed by `0` or `1`.
fn assert_pointer_syntax(p: &str) {
    assert!(
        p.is_empty() || p.starts_with('/'),
        "not a JSON pointer: {p:?}"
    );
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            assert!(
                matches!(chars.next(), Some('0' | '1')),
                "bad escape in JSON pointer {p:?}"
            );
        }
    }
}

/// Asserts that a violation points into `v`: at a value there, or at a
/// missing key (a required field, a union's tag) of an object there.
fn assert_points_into(v: &Value, violation: &Violation) {
    let p = violation.pointer.as_str();
    assert_pointer_syntax(p);
    if v.pointer(p).is_some() {
        return;
    }
    let parent = p.rsplit_once('/').map_or("", |(parent, _)| parent);
    assert!(
        v.pointer(parent).is_some_and(Value::is_object),
        "violation {violation} points outside the value {v}"
    );
}

/// `validate`: the first byte picks a [`Kind`], the rest is the input.
///
/// `validate_slice` never panics; the verdict of `is_valid_slice` is the
/// full report's; when the input is JSON, the report is `validate_value`'s
/// (a key given twice counts with its last value), never a syntax error,
/// never the fallback that means the collector and serde disagree, and
/// every pointer points into the value. Read as a line of traffic, the
/// input takes the follower's typed lane whether its event is built or
/// sifted, or neither way, and a sifted event builds the same event.
pub fn validate(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    lanes_agree(input);
    let kind = Kind::ALL[usize::from(selector) % Kind::ALL.len()];
    let report = validate_slice(kind, input);
    assert_eq!(
        is_valid_slice(kind, input),
        report.is_valid(),
        "is_valid_slice disagrees with validate_slice for {kind}: {report}"
    );
    let Ok(value) = serde_json::from_slice::<Value>(input) else {
        assert!(
            !report.is_valid(),
            "{kind}: input that is not JSON was valid"
        );
        return;
    };
    assert_eq!(
        validate_value(kind, &value),
        report,
        "{kind}: validate_value and validate_slice differ"
    );
    for violation in &report.violations {
        assert_ne!(violation.rule.id(), "syntax", "{kind}: {violation}");
        assert_ne!(
            violation.rule.id(),
            "parse",
            "{kind}: the collector found nothing serde rejects: {violation}"
        );
        assert_points_into(&value, violation);
    }
}

/// [`Line::read`] both ways: the same lines take the typed lane, and a
/// sifted line's event (built on demand) and facts are the built one's.
fn lanes_agree(line: &[u8]) {
    let built = Line::read(line, Reads::Event);
    let sifted = Line::read(line, Reads::RunFacts);
    match (built.parsed(), sifted.parsed()) {
        (ParsedLine::Event(b), ParsedLine::Event(s)) => {
            assert_eq!(s.facts(), b.facts(), "facts");
            assert_eq!(s.event(), b.event(), "the sifted line built another event");
        }
        (ParsedLine::Event(_), _) | (_, ParsedLine::Event(_)) => {
            panic!("the lanes took different lines")
        }
        _ => assert_eq!(built, sifted),
    }
}

/// The methods `dispatch` picks from: every extension method in all four
/// spellings, plus a few that are not extension methods.
fn dispatch_methods() -> Vec<String> {
    let mut out = Vec::new();
    for m in ALL_METHODS {
        let path = m.path;
        for prefix in ["_ua/", "_lody/", "ua/", "lody/"] {
            out.push(format!("{prefix}{path}"));
        }
    }
    out.extend(
        [
            "session/prompt",
            "_ua/unknown",
            "_vendor/session/steer",
            "_ua/",
            "",
        ]
        .map(str::to_owned),
    );
    out
}

/// `dispatch`: the first byte picks a method (or, past the list, the
/// method is the rest's first line); the rest is the params as JSON.
///
/// Parsing never panics; a method is a request, a notification or
/// neither, as [`method_kind`] says; typed params serialized back and
/// parsed again in both namespaces give the same value; the SDK message
/// types agree with the enums; errors point into the params.
pub fn dispatch(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let methods = dispatch_methods();
    let (method, params) = match methods.get(usize::from(selector) % (methods.len() + 1)) {
        Some(m) => (m.clone(), rest),
        None => {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let method = String::from_utf8_lossy(&rest[..end]).into_owned();
            (method, rest.get(end + 1..).unwrap_or_default())
        }
    };
    let Ok(params) = serde_json::from_slice::<Value>(params) else {
        return;
    };
    let kind = method_kind(&method);
    let request = ExtensionRequest::parse(&method, &params);
    let notification = ExtensionNotification::parse(&method, &params);
    match kind {
        None => {
            assert_eq!(request, Ok(None), "{method}");
            assert_eq!(notification, Ok(None), "{method}");
        }
        Some(MethodKind::Request) => assert_eq!(notification, Ok(None), "{method}"),
        Some(MethodKind::Notification) => assert_eq!(request, Ok(None), "{method}"),
        Some(_) => {}
    }
    for errors in [request.as_ref().err(), notification.as_ref().err()]
        .into_iter()
        .flatten()
    {
        assert_eq!(errors.method, method);
        assert!(
            !errors.violations.is_empty(),
            "{method}: an error without violations"
        );
        for violation in &errors.violations {
            assert_points_into(&params, violation);
        }
    }

    let sdk_request = <AnyExtensionRequest as JsonRpcMessage>::parse_message(&method, &params);
    assert_eq!(
        <AnyExtensionRequest as JsonRpcMessage>::matches_method(&method),
        kind == Some(MethodKind::Request),
        "{method}"
    );
    let sdk_notification =
        <AnyExtensionNotification as JsonRpcMessage>::parse_message(&method, &params);

    if let Ok(Some((ns, typed))) = &request {
        assert_eq!(split_method(&method), Some((*ns, typed.path())));
        let sdk = sdk_request.as_ref().expect("the SDK message parses too");
        assert_eq!((&sdk.namespace, &sdk.request), (ns, typed));
        let json = typed.params();
        for other in Namespace::ALL {
            let again = ExtensionRequest::parse(&other.method(typed.path()), &json);
            assert_eq!(
                again,
                Ok(Some((other, typed.clone()))),
                "{method} in {other}"
            );
        }
        let untyped = sdk.to_untyped_message().expect("serializable");
        assert_eq!(
            (untyped.method.as_str(), &untyped.params),
            (method.as_str(), &json)
        );
    } else {
        assert!(
            sdk_request.is_err(),
            "{method}: only the SDK message parsed"
        );
    }
    if let Ok(Some((ns, typed))) = &notification {
        assert_eq!(split_method(&method), Some((*ns, typed.path())));
        let sdk = sdk_notification
            .as_ref()
            .expect("the SDK message parses too");
        assert_eq!((&sdk.namespace, &sdk.notification), (ns, typed));
        let json = typed.params();
        for other in Namespace::ALL {
            let again = ExtensionNotification::parse(&other.method(typed.path()), &json);
            assert_eq!(
                again,
                Ok(Some((other, typed.clone()))),
                "{method} in {other}"
            );
        }
    } else {
        assert!(
            sdk_notification.is_err(),
            "{method}: only the SDK message parsed"
        );
    }

    // The same JSON as the result of the request.
    if kind == Some(MethodKind::Request) {
        match ExtensionResponse::parse(&method, &params) {
            Ok(response) => {
                let json = response.to_json();
                let (_, path) = split_method(&method).expect("an extension method");
                assert_eq!(
                    ExtensionResponse::parse(path, &json),
                    Ok(response),
                    "{method}"
                );
            }
            Err(e) => {
                assert!(!e.violations.is_empty());
                for violation in &e.violations {
                    assert_points_into(&params, violation);
                }
            }
        }
    }
}

/// Asserts that every count of the checker's state is within `limits`.
fn assert_bounded(checker: &Checker, limits: &SequenceLimits) {
    let t = checker.tracked_state();
    let sessions = limits.sessions.max(1);
    assert!(t.sessions <= sessions, "{t:?}");
    assert!(t.runs <= sessions * limits.runs_per_session, "{t:?}");
    assert!(
        t.native_ids <= sessions * limits.native_ids_per_session,
        "{t:?}"
    );
    assert!(
        t.steer_ids <= sessions * limits.steer_ids_per_session,
        "{t:?}"
    );
    assert!(
        t.ended_scopes <= sessions * limits.scopes_per_session,
        "{t:?}"
    );
    assert!(t.usage_scopes <= limits.usage_scopes, "{t:?}");
    assert!(
        t.usage_models <= limits.usage_scopes * limits.models_per_scope,
        "{t:?}"
    );
    assert!(t.pending_requests <= limits.pending_requests, "{t:?}");
}

/// Asserts that a finding is of a rule of the table, with its severity.
fn assert_known(f: &Finding) {
    let rule = RuleInfo::by_id(f.rule).unwrap_or_else(|| panic!("unknown rule {}", f.rule));
    assert_eq!(rule.severity, f.severity, "{}", f.rule);
}

/// `check`: the first byte picks the input format (low bits) and tiny
/// state limits (high bit); the rest is a transcript.
///
/// The detector always decides; reading and checking never panic nor
/// fail on in-memory input; every item's line is a line of the input;
/// every finding is of a known rule, at a JSON pointer; the checker's
/// state stays within its limits after every message.
pub fn check(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let format = Format::ALL[usize::from(selector & 0x7f) % Format::ALL.len()];
    let limits = if selector & 0x80 != 0 {
        tiny_limits()
    } else {
        SequenceLimits::default()
    };
    let first_line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    assert_ne!(input::detect(first_line), Format::Auto);

    let lines = text.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut checker = Checker::with_limits(limits);
    input::read(text, format, |item| match item {
        Item::Record(r) => {
            assert!((1..=lines).contains(&r.line), "line {} of {lines}", r.line);
            let findings =
                checker.message_with_method(r.direction, &r.message, r.request_method.as_deref());
            for f in &findings {
                assert_known(f);
                assert_pointer_syntax(&f.path);
                assert_pointer_syntax(&r.source_path(&f.path));
            }
            assert_bounded(&checker, &limits);
        }
        Item::Problem { line, finding } => {
            assert!((1..=lines).contains(&line), "line {line} of {lines}");
            assert_known(&finding);
        }
        _ => unreachable!("the input reader yields records and problems"),
    })
    .expect("reading from memory cannot fail");
}

/// A usage row as the ledger merges it: six counters and a cost.
type Row = ([u64; 6], Option<f64>);

fn row_of(u: &ModelUsage) -> Row {
    let opt = |c: Option<acp_extension_core::usage::UsageCount>| c.map_or(0, |c| c.get());
    (
        [
            u.input_tokens.get(),
            u.output_tokens.get(),
            u.cache_read_input_tokens.get(),
            opt(u.cache_creation_input_tokens),
            opt(u.reasoning_output_tokens),
            opt(u.web_search_requests),
        ],
        u.cost_usd.map(|c| c.get()),
    )
}

fn counters_of(u: &ModelUsage) -> [u64; 6] {
    row_of(u).0
}

fn saturating_sum<'a>(rows: impl IntoIterator<Item = &'a [u64; 6]>) -> [u64; 6] {
    let mut sum = [0u128; 6];
    for row in rows {
        for (s, v) in sum.iter_mut().zip(row) {
            *s += u128::from(*v);
        }
    }
    sum.map(|s| u64::try_from(s).unwrap_or(u64::MAX))
}

/// One input step of `usage fold`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    session_id: String,
    operation_id: String,
    rows: IndexMap<String, ModelUsage>,
}

/// `usage_fold`: the input is `usage fold`'s JSON Lines.
///
/// Folding never panics nor fails; one output line answers each input
/// line (an update, `null` or an error naming that line) and the summary
/// counts them; `null` comes exactly when the step changes nothing; each
/// update is a valid contract payload whose counters are the sums of the
/// merged (per operation and model, maximum) rows that went in: `usage`
/// over the operation's models, `modelUsage` over every operation, the
/// deltas of all updates so far adding up to `modelUsage`, and
/// `delta.usage` summing `delta.modelUsage`; costs are present only when
/// every one summed is known.
pub fn usage_fold(data: &[u8]) {
    const SCOPE: &str = "fuzz-scope";
    let mut acc = SessionUsageAccumulator::with_scope_id(SCOPE).expect("short id");
    let mut out = Vec::new();
    let summary = fold_lines(data, &mut out, &mut acc).expect("in-memory I/O cannot fail");

    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let inputs: Vec<&[u8]> = if data.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    let outputs: Vec<&[u8]> = out
        .strip_suffix(b"\n")
        .map_or(Vec::new(), |o| o.split(|&b| b == b'\n').collect());
    assert_eq!(summary.lines, inputs.len() as u64);
    assert_eq!(
        outputs.len(),
        inputs.len(),
        "one output line per input line"
    );

    // operation → model → merged row; model → sum of emitted deltas.
    let mut ops: HashMap<String, IndexMap<String, Row>> = HashMap::new();
    let mut models: HashSet<String> = HashSet::new();
    let mut delta_sums: HashMap<String, [u128; 6]> = HashMap::new();
    let (mut emitted, mut errors) = (0, 0);
    for (n, (line, answer)) in inputs.iter().zip(&outputs).enumerate() {
        let answer: Value = serde_json::from_slice(answer).expect("output lines are JSON");
        if let Some(error) = answer.get("error") {
            errors += 1;
            assert_eq!(error["line"], n as u64 + 1);
            assert!(error["message"].is_string());
            continue;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let step: Step = serde_json::from_slice(line).expect("a step the fold accepted");
        let stored = ops.get(&step.operation_id);
        let mut merged_rows = Vec::new();
        for (name, usage) in &step.rows {
            let old = stored.and_then(|rows| rows.get(name)).copied();
            let (counters, cost) = old.unwrap_or(([0; 6], None));
            let (incoming, incoming_cost) = row_of(usage);
            let mut merged = (counters, cost);
            for (m, i) in merged.0.iter_mut().zip(incoming) {
                *m = (*m).max(i);
            }
            if let Some(c) = incoming_cost {
                let base = cost.unwrap_or(0.0);
                merged.1 = Some(if c > base { c } else { base });
            }
            if old != Some(merged) {
                merged_rows.push((name.clone(), merged));
            }
        }
        if answer.is_null() {
            assert!(
                merged_rows.is_empty(),
                "line {}: a change was not emitted",
                n + 1
            );
            continue;
        }
        assert!(
            !merged_rows.is_empty(),
            "line {}: emitted without a change",
            n + 1
        );
        emitted += 1;
        let rows = ops.entry(step.operation_id.clone()).or_default();
        for (name, row) in merged_rows {
            models.insert(name.clone());
            rows.insert(name, row);
        }

        assert!(
            validate_value(Kind::of::<SessionUsageUpdate>(), &answer).is_valid(),
            "line {}: {answer}",
            n + 1
        );
        let update: SessionUsageUpdate = serde_json::from_value(answer).expect("valid update");
        assert_eq!(update.session_id, step.session_id);
        assert_eq!(update.usage_scope_id(), Some(SCOPE));
        let op_rows = &ops[&step.operation_id];
        assert_eq!(
            counters_of(&update.usage),
            saturating_sum(op_rows.values().map(|r| &r.0)),
            "line {}: usage is the operation's sum",
            n + 1
        );
        assert_cost(&update.usage, op_rows.values());
        let totals = update.model_usage.as_ref().expect("modelUsage");
        let delta = update.delta.as_ref().expect("delta");
        assert_eq!(totals.len(), models.len());
        assert_eq!(delta.model_usage.len(), models.len());
        for model in &models {
            let total = &totals[model.as_str()];
            let contributions: Vec<&Row> = ops.values().filter_map(|r| r.get(model)).collect();
            assert_eq!(
                counters_of(total),
                saturating_sum(contributions.iter().map(|r| &r.0)),
                "line {}: modelUsage[{model}] is the sum over operations",
                n + 1
            );
            assert_cost(total, contributions.iter().copied());
            let sums = delta_sums.entry(model.clone()).or_default();
            for (s, d) in sums
                .iter_mut()
                .zip(counters_of(&delta.model_usage[model.as_str()]))
            {
                *s += u128::from(d);
            }
            assert_eq!(
                sums.map(|s| u64::try_from(s).unwrap_or(u64::MAX)),
                counters_of(total),
                "line {}: the deltas of {model} add up to its total",
                n + 1
            );
        }
        assert_eq!(
            counters_of(&delta.usage),
            saturating_sum(
                delta
                    .model_usage
                    .values()
                    .map(counters_of)
                    .collect::<Vec<_>>()
                    .iter()
            ),
        );
        assert_cost(
            &delta.usage,
            delta
                .model_usage
                .values()
                .map(row_of)
                .collect::<Vec<_>>()
                .iter(),
        );
    }
    assert_eq!((summary.emitted, summary.errors), (emitted, errors));
}

/// A summed cost is present only when every cost summed is known, and is
/// present when they are all known and too small for the sum to overflow.
fn assert_cost<'a>(sum: &ModelUsage, rows: impl IntoIterator<Item = &'a Row>) {
    let costs: Vec<Option<f64>> = rows.into_iter().map(|r| r.1).collect();
    let known = !costs.is_empty() && costs.iter().all(Option::is_some);
    if sum.cost_usd.is_some() {
        assert!(known, "a cost summed over unknown costs");
    } else if known {
        assert!(
            costs.iter().flatten().any(|c| c.abs() > 1e300),
            "known costs but no sum"
        );
    }
}

/// Every capacity of the state (and of its sequence rules) at 1 or 2, a
/// run's text at 5 bytes: every cap is reached within a few lines.
fn tiny_state_limits() -> StateLimits {
    let mut limits = StateLimits::bounded();
    limits.sequence = tiny_limits();
    limits.sessions = 2;
    limits.runs_per_session = 2;
    limits.text_per_run = 5;
    limits.tool_calls_per_run = 1;
    limits.tasks_per_session = 1;
    limits.activities_per_session = 1;
    limits.notices_per_session = 1;
    limits.steers_per_session = 1;
    limits.scopes_per_session = 1;
    limits.turn_usage_per_session = 1;
    limits.rate_limits = 1;
    limits.invalid = 2;
    limits
}

/// The sequence rules' (the checker's) capacities at 1 or 2.
fn tiny_limits() -> SequenceLimits {
    let mut limits = SequenceLimits::default();
    limits.sessions = 1;
    limits.runs_per_session = 2;
    limits.native_ids_per_session = 2;
    limits.steer_ids_per_session = 1;
    limits.scopes_per_session = 1;
    limits.usage_scopes = 1;
    limits.models_per_scope = 2;
    limits.pending_requests = 2;
    limits
}

/// What holds of any folded state: its accounting adds up, its records
/// name a rule at an RFC 6901 pointer, it keeps no more than its limits
/// allow, its JSON document is what serde writes of it, and both of
/// `acp-ext state`'s outputs are written without a failure.
fn assert_state_sound(state: &ConnectionState, limits: &StateLimits) {
    let a = state.accounting();
    // Every value is folded, ignored or recorded: none lost.
    assert_eq!(
        a.folded + a.ignored + a.recorded,
        a.values,
        "accounting: {a:?}"
    );
    let k = a.ignored_kinds;
    assert_eq!(k.transcript + k.calls + k.unpaired_answers, a.ignored);
    assert!(state.invalid_count() >= a.recorded);
    assert!(state.invalid().len() <= limits.invalid);
    for record in state.invalid() {
        assert_pointer_syntax(&record.pointer);
        assert!(
            !record.rule.is_empty(),
            "a record without a rule: {record:?}"
        );
    }
    assert!(state.sessions().len() <= limits.sessions.max(1));
    assert!(state.rate_limits().len() <= limits.rate_limits.max(1));
    for session in state.sessions().values() {
        assert!(session.subagent_runs.len() <= limits.runs_per_session.max(1));
        assert!(session.notices.len() <= limits.notices_per_session.max(1));
        assert!(session.steers.len() <= limits.steers_per_session.max(1));
    }
    let document = acp_ext::state::Document::new("fuzz", state);
    serde_json::to_vec(&document).expect("a state serializes");
    let text = acp_ext::fuzzing::state_text(state);
    assert!(text.starts_with("fuzz  "), "{text}");
}

/// The state a document shows, without the records' wording: the
/// sessions, rate limits, negotiation and counts, and each record's line,
/// pointer and rule.
fn state_facts(state: &ConnectionState) -> Value {
    let mut v = serde_json::to_value(state).expect("a state serializes");
    if let Some(o) = v.as_object_mut() {
        o.remove("invalid");
    }
    let records: Vec<Value> = state
        .invalid()
        .map(|r| serde_json::json!([r.line, r.pointer, r.rule, r.method, r.session_id]))
        .collect();
    serde_json::json!({"state": v, "records": records})
}

/// `state`: byte 0 picks the input format (bits 0–5, as `check`'s
/// target), the state's limits (bit 7: tiny, else unbounded), and how the
/// input is read (bit 6); the rest is a transcript.
///
/// Read as `acp-ext state` reads a file (bit 6 clear): folding never
/// fails on in-memory input and the state is sound
/// (`assert_state_sound`). Read as lines in any order with their
/// direction (bit 6 set: a line led by `>` travelled from the client, `<`
/// from the agent, any other is the whole line with its direction
/// inferred): one connection followed by the checker and the state
/// together, and the same lines folded by a state of its own from their
/// text and from their JSON trees, give the same state.
pub fn state(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let limits = if selector & 0x80 != 0 {
        tiny_state_limits()
    } else {
        StateLimits::unbounded()
    };
    if selector & 0x40 == 0 {
        let format = Format::ALL[usize::from(selector & 0x3f) % Format::ALL.len()];
        let state = acp_ext::state::fold_reader(text, format, limits)
            .expect("reading from memory cannot fail");
        assert_state_sound(&state, &limits);
        return;
    }
    let mut connection = Connection::with_limits(limits.sequence);
    let mut checker = Checker::with_limits(limits.sequence);
    let mut shared = ConnectionState::with_limits(limits);
    let mut from_text = ConnectionState::with_limits(limits);
    let mut tree_connection = Connection::with_limits(limits.sequence);
    let mut from_tree = ConnectionState::with_limits(limits);
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let (direction, line) = match line.split_first() {
            Some((b'>', rest)) => (Direction::ClientToAgent, rest),
            Some((b'<', rest)) => (Direction::AgentToClient, rest),
            _ => (Direction::Unknown, line),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = Some(n as u64 + 1);
        shared.set_line(at);
        from_text.set_line(at);
        from_tree.set_line(at);
        let Ok(line) = std::str::from_utf8(line) else {
            connection.unreadable("not-utf8", "not UTF-8", &mut [&mut checker, &mut shared]);
            from_text.unreadable("not-utf8", "not UTF-8");
            from_tree.unreadable("not-utf8", "not UTF-8");
            continue;
        };
        connection.follow_line(direction, line, &mut [&mut checker, &mut shared]);
        for f in checker.take_findings() {
            assert_known(&f);
            assert_pointer_syntax(&f.path);
        }
        from_text.line(direction, line);
        match serde_json::from_str::<Value>(line) {
            Ok(v) => tree_connection.follow(direction, &v, &mut [&mut from_tree]),
            Err(_) => tree_connection.follow_line(direction, line, &mut [&mut from_tree]),
        }
        from_tree.take_changes();
        shared.take_changes();
    }
    assert_state_sound(&shared, &limits);
    let facts = state_facts(&from_text);
    assert_eq!(
        state_facts(&shared),
        facts,
        "the checker beside the state changed the state"
    );
    assert_eq!(
        state_facts(&from_tree),
        facts,
        "the lines' text and their JSON trees fold differently"
    );
}

/// The keys `watch` answers, by the byte that picks them.
const WATCH_KEYS: &[KeyCode] = &[
    KeyCode::Tab,
    KeyCode::Char(' '),
    KeyCode::Char('f'),
    KeyCode::Left,
    KeyCode::Right,
    KeyCode::Char('n'),
    KeyCode::End,
    KeyCode::Home,
    KeyCode::Up,
    KeyCode::Down,
    KeyCode::Enter,
    KeyCode::Char('x'),
];

/// The frame widths `watch` draws: the narrowest it lays out, two
/// common terminals and the widest it was fuzzed with. A few sizes let
/// the fuzz build keep ratatui's layout cache warm: under the fuzzer's
/// tracing, drawing a frame took most of each input's time, a third of
/// it in ratatui's layout solver, which is not our code.
const WATCH_WIDTHS: [u16; 4] = [10, 41, 80, 159];

/// The frame heights `watch` draws (see [`WATCH_WIDTHS`]).
const WATCH_HEIGHTS: [u16; 4] = [3, 9, 24, 62];

/// `watch`: byte 0 picks the input format, byte 1 how many keys follow
/// (mod 16) and, in its high bit, whether a frame is drawn; each key is
/// one of [`WATCH_KEYS`]; then the frame's width and height (each one of
/// [`WATCH_WIDTHS`] and [`WATCH_HEIGHTS`]); the rest is a transcript.
///
/// `watch`'s model reads the transcript and takes each key without a
/// panic, its selection staying within what it shows; when a frame is
/// drawn (once, after the last key), it has exactly the rows asked for.
/// (Laying out a frame under the fuzzer's tracing costs some fifty times
/// what the model does: drawing after every key held the target near 40
/// inputs a second, and left the model's own paths mostly unexplored.)
pub fn watch(data: &[u8]) {
    let [format, count, rest @ ..] = data else {
        return;
    };
    let format = Format::ALL[usize::from(*format) % Format::ALL.len()];
    let draw = count & 0x80 != 0;
    let count = usize::from(*count % 16).min(rest.len());
    let (keys, rest) = rest.split_at(count);
    let [width, height, text @ ..] = rest else {
        return;
    };
    let width = WATCH_WIDTHS[usize::from(*width) % WATCH_WIDTHS.len()];
    let height = WATCH_HEIGHTS[usize::from(*height) % WATCH_HEIGHTS.len()];
    let mut app =
        watch::App::from_reader("fuzz", text, format).expect("reading from memory cannot fail");
    for &k in keys {
        app.key(
            WATCH_KEYS[usize::from(k) % WATCH_KEYS.len()],
            KeyModifiers::NONE,
        );
        assert!(app.session <= app.state.sessions().len());
        assert!(app.finding <= app.visible_findings().len());
    }
    if draw {
        let text = watch::frame_text(&app, width, height);
        assert_eq!(text.lines().count(), usize::from(height), "{text}");
    }
}

/// `bridge`: byte 0 picks the bridge's target (`core`, `standard`,
/// `auto`); the rest are lines, each from the agent when led by `<`,
/// else from the client (a leading `>` dropped).
///
/// The translation never panics; a line that is not JSON, or that is not
/// translated, passes unchanged and alone to the other side; every line
/// the bridge writes in its place is one JSON-RPC object ending in a line
/// feed; the counts of translated lines are the lines changed.
pub fn bridge(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let targets = [
        BridgeTarget::Core,
        BridgeTarget::Standard,
        BridgeTarget::Auto,
    ];
    let mut bridge = Translator::new(targets[usize::from(selector) % targets.len()]);
    let mut changed = [0u64; 2];
    for line in text.split_inclusive(|&b| b == b'\n') {
        let (from_agent, raw) = match line.split_first() {
            Some((b'<', rest)) => (true, rest),
            Some((b'>', rest)) => (false, rest),
            _ => (false, line),
        };
        let out = if from_agent {
            bridge.from_agent(raw)
        } else {
            bridge.from_client(raw)
        };
        let passed = match (from_agent, out.as_slice()) {
            (true, [Out::ToClient(b)]) | (false, [Out::ToAgent(b)]) => b == raw,
            _ => false,
        };
        if passed {
            continue;
        }
        changed[usize::from(from_agent)] += 1;
        assert!(
            serde_json::from_slice::<Value>(raw).is_ok_and(|v| v.is_object()),
            "a line that is no JSON object was changed: {}",
            String::from_utf8_lossy(raw)
        );
        for o in &out {
            let (Out::ToAgent(b) | Out::ToClient(b)) = o;
            let body = b
                .strip_suffix(b"\n")
                .expect("a written line ends in a line feed");
            let v: Value = serde_json::from_slice(body).expect("a written line is JSON");
            assert_eq!(v.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
        }
    }
    assert_eq!(bridge.translated, changed, "lines translated");
}
