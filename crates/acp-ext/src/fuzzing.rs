//! The tap's framing property for the fuzz target `tap_framing`: it drives
//! the tap's forwarder through its internal hook ([`crate::tap::fuzzing`]),
//! so it lives here, behind the non-default `fuzzing` feature. The other
//! properties test public API only and live in the workspace's unpublished
//! test-support crate (`crates/acp-ext-test-support`).
//!
//! Not a stable API: only the fuzz crate and the tests use it.

use serde_json::Value;

/// `tap_framing`: byte 0 (mod 16) is the number of chunk sizes that
/// follow (each byte + 1), byte 1 where the payload is cut into the two
/// directions (in 255ths), byte 2 the most bytes one write takes (0: no
/// limit) and, odd, whether reads are interrupted; the rest is the payload.
///
/// Each output holds exactly the bytes of its input; the lines framed
/// (numbered per direction, blank ones counted but not validated, a
/// trailing carriage return ignored) are exactly the input split on line
/// feeds; the record has one JSON entry per non-blank line, in order per
/// direction, holding the message (`msg`) exactly when the validator was
/// given one.
pub fn tap_framing(data: &[u8]) {
    let [count, cut, write, rest @ ..] = data else {
        return;
    };
    let count = usize::from(*count % 16).min(rest.len());
    let (sizes, payload) = rest.split_at(count);
    let sizes: Vec<usize> = sizes.iter().map(|&b| usize::from(b) + 1).collect();
    let cut = payload.len() * usize::from(*cut) / 255;
    let inputs = [&payload[..cut], &payload[cut..]];
    let write_max = match write >> 1 {
        0 => usize::MAX,
        n => usize::from(n),
    };
    let observed = crate::tap::fuzzing::run(inputs, &sizes, write_max, write & 1 == 1);

    let mut non_blank = Vec::new();
    for (slot, input) in inputs.into_iter().enumerate() {
        assert_eq!(observed.forwarded[slot], input, "the tap altered bytes");
        assert_eq!(observed.forwarded_count[slot], input.len() as u64);
        let body = input.strip_suffix(b"\n").unwrap_or(input);
        let mut expected = Vec::new();
        let mut lines = 0;
        if !input.is_empty() {
            for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                lines += 1;
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let message = serde_json::from_slice::<Value>(line).ok();
                expected.push((i as u64 + 1, message));
            }
        }
        assert_eq!(observed.lines[slot], lines, "lines framed");
        assert_eq!(observed.validated[slot], expected, "lines validated");
        non_blank.push(
            expected
                .iter()
                .map(|(_, m)| m.is_some())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(observed.lost, 0, "nothing is lost within the budgets");
    let record: Vec<&[u8]> = observed
        .record
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    // Per direction, in order (a direction's unterminated last line is
    // recorded when the connection ends, after the other's lines).
    let mut recorded = [Vec::new(), Vec::new()];
    for entry in record {
        let entry: Value = serde_json::from_slice(entry).expect("record entries are JSON");
        let slot = match entry["dir"].as_str() {
            Some("c2a") => 0,
            Some("a2c") => 1,
            _ => panic!("a record entry without a direction: {entry}"),
        };
        assert!(
            entry.get("msg").is_some() != entry.get("raw").is_some(),
            "{entry}"
        );
        recorded[slot].push(entry.get("msg").is_some());
    }
    assert_eq!(
        recorded.as_slice(),
        non_blank,
        "one record entry per line, `msg` exactly when the validator was given a message"
    );
}

/// `acp-ext state`'s people's output of `state` (no colour), for the
/// `state` property: the printer reads every part of the state.
pub fn state_text(state: &acp_extension_core::state::ConnectionState) -> String {
    let mut out = Vec::new();
    crate::state::print_state(&mut out, "fuzz", state, crate::output::Style::plain())
        .expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the printer writes UTF-8")
}

/// One single-field type change of one message of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    /// Which message (0-based, in reading order).
    pub message: usize,
    /// The field changed, as a JSON pointer into the message.
    pub pointer: String,
    /// What it became: `string`, `number`, `array`, `boolean` or `null`.
    pub into: &'static str,
}

/// What a mutation pass found: how many mutations took each way out, and
/// those that took none.
#[derive(Debug, Default)]
pub struct MutationReport {
    /// Mutations tried.
    pub tried: usize,
    /// The state recorded the message at the changed field (or at an
    /// object holding it, or inside it).
    pub recorded: usize,
    /// The state folded the message as it folds it without the field (a
    /// value of the wrong type at an optional field is read as absent).
    pub as_absent: usize,
    /// The state folded the message as it folds the original: it does not
    /// read the field.
    pub unread: usize,
    /// The state keeps the value as it was sent (a vendor's capability, an
    /// agent's info, a field of several types): the state of the original,
    /// with the new value where the old one (or what the state made of it)
    /// was; `null` clearing it, as a patch's `null` clears what it names.
    pub kept: usize,
    /// Neither: the state changed, silently, in a way that is none of the
    /// above. Empty when the state keeps its rule.
    pub silent: Vec<Mutation>,
}

/// A type's name and a value of it.
type Mutant = (&'static str, fn() -> Value);

/// The values a field of another type is changed into.
const MUTANTS: [Mutant; 5] = [
    ("string", || Value::from("mutated")),
    ("number", || Value::from(7)),
    ("array", || Value::Array(Vec::new())),
    ("boolean", || Value::Bool(true)),
    ("null", || Value::Null),
];

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every pointer below the root of `v`, outermost first.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let p = format!("{at}/{}", escape(k));
                out.push(p.clone());
                pointers(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, &p, out);
            }
        }
        _ => {}
    }
}

/// Whether one pointer lies on the path of the other (segment-wise).
fn related(a: &str, b: &str) -> bool {
    let on = |short: &str, long: &str| {
        long.strip_prefix(short)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    on(a, b) || on(b, a)
}

/// `v` with the value at `pointer` replaced (`Some`) or removed (`None`).
fn changed(v: &Value, pointer: &str, into: Option<Value>) -> Value {
    let mut copy = v.clone();
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let key = last.replace("~1", "/").replace("~0", "~");
    match copy.pointer_mut(parent) {
        Some(Value::Object(o)) => match into {
            Some(x) => {
                o.insert(key, x);
            }
            None => {
                o.shift_remove(&key);
            }
        },
        Some(Value::Array(a)) => {
            if let Ok(i) = key.parse::<usize>()
                && i < a.len()
            {
                match into {
                    Some(x) => a[i] = x,
                    None => {
                        a.remove(i);
                    }
                }
            }
        }
        _ => {}
    }
    copy
}

/// Whether `now` is `before` with `new` wherever the two differ (or, for
/// `null`, with what was there cleared: a patch's `null` clears what it
/// names).
fn kept_as_sent(before: &Value, now: &Value, new: &Value) -> bool {
    // The value sent, shown where the state showed what it made of the
    // old one (a summary of blocks, now a string).
    if before == now || now == new {
        return true;
    }
    // `null` clears: what it names, and what came with it (a title's source).
    if new.is_null() && now.is_null() {
        return true;
    }
    match (before, now) {
        (Value::Object(a), Value::Object(b)) => {
            b.keys().all(|k| a.contains_key(k))
                && a.iter().all(|(k, va)| match b.get(k) {
                    Some(vb) => kept_as_sent(va, vb, new),
                    None => new.is_null(),
                })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(va, vb)| kept_as_sent(va, vb, new))
        }
        _ => false,
    }
}

/// What a state shows, without its counts and records.
fn shown(state: &acp_extension_core::state::ConnectionState) -> Value {
    let mut v = serde_json::to_value(state).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        for k in ["invalid", "invalidCount", "messages", "accounting"] {
            o.remove(k);
        }
    }
    v
}

/// Runs every single-field type change (a string, a number, an array, a
/// boolean or `null` in place of any value below a message's root, where
/// its type differs) of every message of a transcript through the state,
/// the checker and the bridge (both ways, each target). None may panic;
/// the state must record the message at the changed field, or fold it by
/// a rule of the state's docs: as the original (a field it does not
/// read), as without the field (a wrong type read as absent), with the
/// value kept as sent, or cleared by `null`. The messages before the
/// changed one are folded first, as the transcript has them.
pub fn mutations(records: &[crate::check::input::Record]) -> MutationReport {
    use acp_extension_core::state::ConnectionState;

    use crate::bridge::{BridgeTarget, Translator};
    use crate::check::Checker;

    let mut report = MutationReport::default();
    let fold = |state: &mut ConnectionState, r: &crate::check::input::Record, m: &Value| {
        state.message_with_method(r.direction, m, r.request_method.as_deref());
    };
    let mut before = ConnectionState::new();
    let mut checker_before = Checker::new();
    let mut bridges: Vec<(Translator, Translator)> = [
        BridgeTarget::Core,
        BridgeTarget::Standard,
        BridgeTarget::Auto,
    ]
    .into_iter()
    .map(|t| (Translator::new(t), Translator::new(t)))
    .collect();
    for (n, r) in records.iter().enumerate() {
        let mut original = before.clone();
        fold(&mut original, r, &r.message);
        let original_shown = shown(&original);
        let mut places = Vec::new();
        pointers(&r.message, "", &mut places);
        for pointer in places {
            let Some(old) = r.message.pointer(&pointer) else {
                continue;
            };
            let mut absent: Option<Value> = None;
            for (into, make) in MUTANTS {
                // A string or number id only makes another kind of call
                // (a request of a notification): no type change.
                if type_name(old) == into
                    || (pointer == "/id" && matches!(into, "string" | "number"))
                {
                    continue;
                }
                report.tried += 1;
                let mutated = changed(&r.message, &pointer, Some(make()));
                let mut state = before.clone();
                let records_before = state.invalid_count();
                fold(&mut state, r, &mutated);
                let mut checker = checker_before.clone();
                checker.message_with_method(r.direction, &mutated, r.request_method.as_deref());
                let line = {
                    let mut l = serde_json::to_vec(&mutated).unwrap_or_default();
                    l.push(b'\n');
                    l
                };
                for (client, agent) in &bridges {
                    let (mut client, mut agent) = (client.clone(), agent.clone());
                    client.from_client(&line);
                    agent.from_agent(&line);
                }
                let new_records: Vec<_> = state
                    .invalid()
                    .skip(usize::try_from(records_before).unwrap_or(usize::MAX))
                    .collect();
                let at_field = state.invalid_count() > records_before
                    && (new_records.is_empty()
                        || new_records.iter().any(|i| related(&i.pointer, &pointer)));
                if at_field {
                    report.recorded += 1;
                    continue;
                }
                let now = shown(&state);
                if now == original_shown {
                    report.unread += 1;
                    continue;
                }
                // A patch's `null` clears the object or list it names, and
                // what the state derived from it (a run's state).
                if into == "null" && (old.is_object() || old.is_array()) {
                    report.kept += 1;
                    continue;
                }
                if kept_as_sent(&original_shown, &now, &make()) {
                    report.kept += 1;
                    continue;
                }
                let absent = absent.get_or_insert_with(|| {
                    let mut s = before.clone();
                    fold(&mut s, r, &changed(&r.message, &pointer, None));
                    shown(&s)
                });
                if now == *absent {
                    report.as_absent += 1;
                } else {
                    report.silent.push(Mutation {
                        message: n,
                        pointer: pointer.clone(),
                        into,
                    });
                }
            }
        }
        before = original;
        checker_before.message_with_method(r.direction, &r.message, r.request_method.as_deref());
        let line = {
            let mut l = serde_json::to_vec(&r.message).unwrap_or_default();
            l.push(b'\n');
            l
        };
        for (client, agent) in &mut bridges {
            client.from_client(&line);
            agent.from_agent(&line);
        }
    }
    report
}
