//! The subagent emitter against the contract (facts §13, §17.3, §18) and
//! every scenario of `subagent-emitter.jsonl`.

use acp_extension_core::wire::WireObject;
use std::sync::{Arc, Mutex};

use acp_extension_core::Namespace;
use acp_extension_core::subagent_emitter::*;
use acp_extension_core::subagent_events::*;
use futures::executor::block_on;
use serde_json::{Map, Value, json};

/// Reads a vector file from the nearest `shared/vectors/` above this crate
/// (the repository and the shared folder sit side by side), or from
/// `$ACP_VECTORS_DIR`.
fn vector_file(name: &str) -> String {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("ACP_VECTORS_DIR") {
        let p = std::path::Path::new(&dir).join(name);
        if let Ok(s) = std::fs::read_to_string(&p) {
            return s;
        }
        tried.push(p);
    }
    for dir in std::path::Path::new(env!("CARGO_MANIFEST_DIR")).ancestors() {
        let p = dir.join("shared/vectors").join(name);
        if let Ok(s) = std::fs::read_to_string(&p) {
            return s;
        }
        tried.push(p);
    }
    panic!("vector file {name} not found; tried {tried:?}");
}

/// Run ids `run-1`, `run-2`, … as the vectors expect.
fn counter() -> impl FnMut() -> String + Send + Sync + 'static {
    let mut n = 0;
    move || {
        n += 1;
        format!("run-{n}")
    }
}

fn emitter(session: &str) -> SubagentEmitter<Vec<EmittedEvent>> {
    SubagentEmitter::new(session, Vec::new()).with_id_generator(counter())
}

fn values(events: &[EmittedEvent]) -> Vec<Value> {
    events.iter().map(|e| e.as_value().clone()).collect()
}

fn support() -> SubagentSupport {
    SubagentSupport::new(vec![SubagentStream::Text], true, OutputRead::None, false)
}

/// The base snapshot B of §17.3.
fn base() -> SubagentSnapshot {
    SubagentSnapshot::new(SubagentState::Running, support()).name("Worker")
}

fn text_chunk(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

fn snapshot_of(event: &Value) -> &Value {
    assert_eq!(event["type"], "snapshot", "{event}");
    &event["snapshot"]
}

/// JSON equality with numbers compared by value (`1` equals `1.0`; the
/// vectors README allows 1e-9 relative). With `ordered`, object keys must
/// also come in the same order (the reference's key order).
fn same_json(got: &Value, want: &Value, ordered: bool) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
            _ => a == b,
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b, ordered))
        }
        (Value::Object(a), Value::Object(b)) if ordered => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb, ordered))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, va)| b.get(k).is_some_and(|vb| same_json(va, vb, ordered)))
        }
        _ => got == want,
    }
}

fn assert_same_events(name: &str, got: &[Value], want: &[Value], ordered: bool) {
    let same =
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| same_json(g, w, ordered));
    assert!(
        same,
        "{name}: events differ\n got: {}\nwant: {}",
        serde_json::to_string_pretty(got).unwrap(),
        serde_json::to_string_pretty(want).unwrap()
    );
}

/// Applies one vector call through the untyped API, as the vector gives it.
async fn apply_untyped(e: &mut SubagentEmitter<Vec<EmittedEvent>>, call: &Value) {
    let native = call["nativeId"].as_str().unwrap_or_default().to_owned();
    match call["op"].as_str().unwrap() {
        "start" => e.start_value(native, call["snapshot"].clone()).await,
        "snapshot" => {
            // A patch that is not an object spreads nothing in the reference.
            let patch = call["patch"].as_object().cloned().unwrap_or_default();
            e.snapshot_value(&native, patch).await
        }
        "progress" => e.progress_value(&native, call["progress"].clone()).await,
        "output" => {
            let ids = OutputIds::from_value(&call["ids"]);
            e.output_value(&native, call["update"].clone(), ids).await
        }
        "disconnect" => e.disconnect().await,
        op => panic!("unknown op {op}"),
    }
    .unwrap();
}

/// One vector call in typed form, if its input is valid for the typed API.
enum TypedCall {
    Start(String, SubagentSnapshot),
    Snapshot(String, SnapshotPatch),
    Progress(String, SubagentProgress),
    Output(String, Value, OutputIds),
    Disconnect,
}

fn typed_call(call: &Value) -> Option<TypedCall> {
    let native = call["nativeId"].as_str().unwrap_or_default().to_owned();
    Some(match call["op"].as_str()? {
        "start" => TypedCall::Start(
            native,
            serde_json::from_value(call["snapshot"].clone()).ok()?,
        ),
        "snapshot" => TypedCall::Snapshot(
            native,
            SnapshotPatch::from_value(call["patch"].clone()).ok()?,
        ),
        "progress" => TypedCall::Progress(
            native,
            serde_json::from_value(call["progress"].clone()).ok()?,
        ),
        "output" => {
            let mut ids = OutputIds::new();
            if let Some(id) = call["ids"].get("nativeTurnId") {
                ids = ids.native_turn_id(id.as_str()?);
            }
            if let Some(id) = call["ids"].get("messageId") {
                ids = ids.message_id(id.as_str()?);
            }
            TypedCall::Output(native, call["update"].clone(), ids)
        }
        "disconnect" => TypedCall::Disconnect,
        _ => return None,
    })
}

async fn apply_typed(e: &mut SubagentEmitter<Vec<EmittedEvent>>, call: TypedCall) {
    match call {
        TypedCall::Start(n, s) => e.start(n, s).await,
        TypedCall::Snapshot(n, p) => e.snapshot(&n, p).await,
        TypedCall::Progress(n, p) => e.progress(&n, p).await,
        // A valid update goes through `output`; an invalid one can only be
        // given untyped.
        TypedCall::Output(n, update, ids) => {
            match serde_json::from_value::<SubagentOutput>(update.clone()) {
                Ok(update) => e.output(&n, update, ids).await,
                Err(_) => e.output_value(&n, update, ids).await,
            }
        }
        TypedCall::Disconnect => e.disconnect().await,
    }
    .unwrap();
}

/// Every vector, through the untyped API: exactly the reference's events,
/// invalid ones included. Vectors whose input the typed API accepts are run
/// through it too, with the same result, and then every event is valid.
#[test]
fn every_emitter_vector_produces_exactly_its_events() {
    let lines = vector_file("subagent-emitter.jsonl");
    let (mut scenarios, mut typed_scenarios) = (0, 0);
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        scenarios += 1;
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap();
        let session = v["sessionId"].as_str().unwrap();
        let calls = v["calls"].as_array().unwrap();
        let expected = v["events"].as_array().unwrap();

        let mut e = emitter(session);
        block_on(async {
            for call in calls {
                apply_untyped(&mut e, call).await;
            }
        });
        // Untyped input is sent as given: same values, same key order.
        assert_same_events(name, &values(e.sink()), expected, true);
        for (event, want) in e.sink().iter().zip(expected) {
            assert_eq!(
                is_subagent_event(event.as_value()),
                is_subagent_event(want),
                "{name}: {event}"
            );
            assert_eq!(
                event.to_typed().is_ok(),
                is_subagent_event(event.as_value()),
                "{name}: {event}"
            );
        }

        let typed: Option<Vec<TypedCall>> = calls.iter().map(typed_call).collect();
        if let (Some(typed), false) = (typed, session.is_empty()) {
            typed_scenarios += 1;
            let mut e = emitter(session);
            block_on(async {
                for call in typed {
                    apply_typed(&mut e, call).await;
                }
            });
            // Typed values serialize in their declaration order.
            assert_same_events(name, &values(e.sink()), expected, false);
            for event in e.sink() {
                assert!(
                    is_subagent_event(event.as_value()),
                    "{name}: typed input gave {event}"
                );
            }
        }
    }
    assert_eq!(scenarios, 17);
    assert_eq!(typed_scenarios, 14, "all but the three garbage-in vectors");
}

/// The three vectors of unchecked input: what the typed view of their
/// events reports.
#[test]
fn garbage_in_vectors_give_events_that_name_their_violations() {
    let lines = vector_file("subagent-emitter.jsonl");
    let mut seen = Vec::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap().to_owned();
        let mut e = emitter(v["sessionId"].as_str().unwrap());
        block_on(async {
            for call in v["calls"].as_array().unwrap() {
                apply_untyped(&mut e, call).await;
            }
        });
        let invalid: Vec<Vec<(String, &str)>> = e
            .sink()
            .iter()
            .filter_map(|ev| ev.to_typed().err())
            .map(|vs| vs.into_iter().map(|v| (v.pointer, v.rule.id())).collect())
            .collect();
        let p = |s: &str, id: &'static str| (s.to_owned(), id);
        match name.as_str() {
            "patch_not_validated" => {
                assert_eq!(
                    invalid,
                    [vec![
                        p("/snapshot/state", "one-of"),
                        p("/snapshot/support", "type")
                    ]]
                );
                // `state: "bogus"` is not live: the output after it is dropped.
                assert!(!e.live("a"));
                assert_eq!(e.get("a").unwrap().state(), None);
            }
            "start_snapshot_not_validated" => {
                assert_eq!(invalid, [vec![p("/snapshot/support", "type")]]);
                assert!(e.live("a"));
            }
            "empty_session_id_not_validated" => {
                assert_eq!(
                    invalid,
                    [
                        vec![p("/sessionId", "non-empty")],
                        vec![p("/sessionId", "non-empty")]
                    ]
                );
                assert!(e.sink().iter().all(|ev| ev.as_value()["sessionId"] == ""));
            }
            _ => {
                assert!(invalid.is_empty(), "{name}: {invalid:?}");
                continue;
            }
        }
        seen.push(name);
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
}

/// §17.3 "execution reuse, late output, incomplete content and disconnect
/// retain truthful snapshots".
#[test]
fn reference_test_table() {
    block_on(async {
        let mut e = emitter("root");
        let none = OutputIds::new;
        e.output_value("unknown", text_chunk("orphan"), none())
            .await
            .unwrap(); // 1
        e.start("native", base()).await.unwrap(); // 2
        e.start("native", base()).await.unwrap(); // 3
        e.progress(
            "native",
            SubagentProgress::new().tool_call_count(Some(3.0.try_into().unwrap())),
        )
        .await
        .unwrap(); // 4
        e.output_value("native", text_chunk("hello"), none())
            .await
            .unwrap(); // 5
        e.output_value("native", json!({"sessionUpdate": "permission"}), none())
            .await
            .unwrap(); // 6
        e.snapshot(
            "native",
            SnapshotPatch::new().state(SubagentState::Completed),
        )
        .await
        .unwrap(); // 7
        e.output_value("native", text_chunk("late"), none())
            .await
            .unwrap(); // 8
        e.snapshot("native", SnapshotPatch::new().state(SubagentState::Running))
            .await
            .unwrap(); // 9
        e.start("native", base()).await.unwrap(); // 10
        e.disconnect().await.unwrap(); // 11

        let events = values(e.sink());
        let summary: Vec<(String, String, Option<String>)> = events
            .iter()
            .map(|ev| {
                (
                    ev["runId"].as_str().unwrap().to_owned(),
                    ev["type"].as_str().unwrap().to_owned(),
                    ev["snapshot"]["state"].as_str().map(str::to_owned),
                )
            })
            .collect();
        let row = |run: &str, ty: &str, state: Option<&str>| {
            (run.to_owned(), ty.to_owned(), state.map(str::to_owned))
        };
        assert_eq!(
            summary,
            vec![
                row("run-1", "snapshot", Some("running")),
                row("run-1", "progress", None),
                row("run-1", "output", None),
                row("run-1", "snapshot", Some("running")),
                row("run-1", "snapshot", Some("completed")),
                row("run-2", "snapshot", Some("running")),
                row("run-2", "snapshot", Some("unknown")),
            ]
        );
        assert_eq!(events[3]["snapshot"]["outputIncomplete"], true);
        assert_eq!(events[4]["snapshot"]["outputIncomplete"], true);
        assert_eq!(events[6]["snapshot"]["reason"]["code"], "disconnected");
        assert_eq!(events[1]["progress"], json!({"toolCallCount": 3}));
        assert_eq!(events[2]["update"], text_chunk("hello"));
        assert!(events.iter().all(is_subagent_event));
        assert!(e.sink().iter().all(|ev| ev.to_typed().is_ok()));
    });
}

#[test]
fn events_carry_the_envelope_in_key_order() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        e.output_value(
            "a",
            text_chunk("x"),
            OutputIds::new().native_turn_id("t").message_id("m"),
        )
        .await
        .unwrap();
        e.progress_value("a", json!({"turnCount": 1}))
            .await
            .unwrap();
        let text = |i: usize| serde_json::to_string(&e.sink()[i]).unwrap();
        assert!(
            text(0).starts_with(
                r#"{"version":1,"sessionId":"root","runId":"run-1","type":"snapshot","snapshot":{"#
            ),
            "{}",
            text(0)
        );
        assert_eq!(
            text(1),
            r#"{"version":1,"sessionId":"root","runId":"run-1","type":"output","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"nativeTurnId":"t","messageId":"m"}"#
        );
        assert_eq!(
            text(2),
            r#"{"version":1,"sessionId":"root","runId":"run-1","type":"progress","progress":{"turnCount":1}}"#
        );
        // Display is the same compact JSON.
        assert_eq!(e.sink()[1].to_string(), text(1));
    });
}

#[test]
fn emitted_event_accessors_and_conversions() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        e.progress("a", SubagentProgress::new()).await.unwrap();
        e.output_value("a", text_chunk("x"), OutputIds::new())
            .await
            .unwrap();
        let [snap, progress, output] = &e.sink()[..] else {
            panic!("three events");
        };
        assert_eq!(snap.as_value()["type"], "snapshot");
        assert_eq!(progress.as_value()["type"], "progress");
        assert_eq!(output.as_value()["type"], "output");
        assert_eq!(
            (&snap.as_value()["sessionId"], snap.run_id()),
            (&json!("root"), "run-1")
        );
        assert_eq!(snap.payload(), &serde_json::to_value(base()).unwrap());
        assert_eq!(progress.payload(), &json!({}));
        assert_eq!(output.payload(), &text_chunk("x"));

        let typed = snap.to_typed().unwrap();
        assert_eq!(typed.snapshot(), Some(&base()));
        // A typed event converts back to the same JSON.
        assert_eq!(EmittedEvent::from(typed), *snap);
        let value: Value = output.clone().into();
        assert_eq!(*output, value);
        assert_eq!(value, *output);
        assert_eq!(output.clone().into_value(), value);
    });
}

#[test]
fn start_with_a_terminal_snapshot_emits_then_ignores_everything() {
    block_on(async {
        let mut e = emitter("root");
        let done = SubagentSnapshot::new(SubagentState::Completed, support());
        e.start("a", done).await.unwrap();
        assert!(!e.live("a"));
        e.snapshot("a", SnapshotPatch::new().summary("x"))
            .await
            .unwrap();
        e.progress("a", SubagentProgress::new()).await.unwrap();
        e.output_value("a", text_chunk("x"), OutputIds::new())
            .await
            .unwrap();
        e.disconnect().await.unwrap();
        assert_eq!(e.sink().len(), 1);
        e.start("a", base()).await.unwrap();
        assert_eq!(e.get("a").unwrap().run_id, "run-2");
        assert_eq!(e.sink().len(), 2);
    });
}

#[test]
fn output_ids_are_spread_into_the_event() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        let update: SubagentOutput = serde_json::from_value(text_chunk("x")).unwrap();
        e.output(
            "a",
            update,
            OutputIds::new().native_turn_id("turn-1").message_id(""),
        )
        .await
        .unwrap();
        let ev = &values(e.sink())[1];
        assert_eq!(ev["nativeTurnId"], "turn-1");
        assert_eq!(ev["messageId"], "");
        assert_eq!(ev["runId"], "run-1");
        assert!(is_subagent_event(ev));
    });
}

/// Output ids are spread unchecked, like the reference, but only
/// `nativeTurnId` and `messageId` are ever taken (no envelope overwrite).
#[test]
fn output_ids_from_json_are_sent_as_given_and_touch_nothing_else() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        let ids =
            json!({"messageId": null, "nativeTurnId": 7, "runId": "x", "update": 1, "type": "y"});
        e.output_value("a", text_chunk("x"), OutputIds::from_value(&ids))
            .await
            .unwrap();
        let ev = &e.sink()[1];
        assert_eq!(
            ev.as_value(),
            &json!({"version": 1, "sessionId": "root", "runId": "run-1", "type": "output",
                    "update": text_chunk("x"), "nativeTurnId": 7, "messageId": null})
        );
        let pointers: Vec<String> = ev
            .to_typed()
            .unwrap_err()
            .into_iter()
            .map(|v| v.pointer)
            .collect();
        assert_eq!(pointers, ["/nativeTurnId", "/messageId"]);

        // Anything that is not an object gives no ids.
        for ids in [json!(null), json!("ab"), json!([1])] {
            assert_eq!(OutputIds::from_value(&ids), OutputIds::new());
        }
        assert_eq!(
            OutputIds::from_value(&json!({"nativeTurnId": "t"})),
            OutputIds::new().native_turn_id("t")
        );
    });
}

#[test]
fn repeated_invalid_output_resends_an_incomplete_snapshot_each_time() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        for bad in [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "x"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "", "title": "t"}),
            json!("not an object"),
        ] {
            e.output_value("a", bad, OutputIds::new().message_id("m"))
                .await
                .unwrap();
        }
        let events = values(e.sink());
        assert_eq!(events.len(), 4);
        for ev in &events[1..] {
            let snap = snapshot_of(ev);
            assert_eq!(snap["state"], "running");
            assert_eq!(snap["outputIncomplete"], true);
            assert_eq!(snap["name"], "Worker");
            assert!(ev.get("messageId").is_none(), "ids go only with output");
        }
        assert!(e.live("a"));
    });
}

#[test]
fn a_patch_removes_and_adds_keys() {
    block_on(async {
        let mut e = emitter("root");
        let snap = base().reason(SubagentReason::new(SubagentReasonCode::Error).message("m"));
        e.start("a", snap).await.unwrap();
        // The reference's `{reason: undefined, summary: "s"}`.
        let patch = SnapshotPatch::new().remove("reason").unwrap().summary("s");
        e.snapshot("a", patch).await.unwrap();
        let events = values(e.sink());
        assert_eq!(
            snapshot_of(&events[1]),
            &json!({"state": "running", "name": "Worker", "summary": "s",
                    "support": {"stream": ["text"], "progress": true, "cancel": false, "outputRead": "none"}})
        );
        // Removing an absent or unknown key is fine; extra keys may be set and removed.
        let patch = SnapshotPatch::new()
            .remove("description")
            .unwrap()
            .set("x-native", json!({"pid": 7}))
            .unwrap();
        e.snapshot("a", patch).await.unwrap();
        let run = e.get("a").unwrap();
        assert_eq!(run.snapshot["x-native"], json!({"pid": 7}));
        assert_eq!(
            run.to_typed().unwrap().extra()["x-native"],
            json!({"pid": 7})
        );
        e.snapshot("a", SnapshotPatch::new().remove("x-native").unwrap())
            .await
            .unwrap();
        assert!(e.get("a").unwrap().to_typed().unwrap().extra().is_empty());
        assert!(e.sink().iter().all(|e| is_subagent_event(e.as_value())));
    });
}

/// Patch keys already in the snapshot keep their place; new ones go last
/// (the reference's object spread).
#[test]
fn a_patch_keeps_key_positions() {
    let patch = SnapshotPatch::new()
        .summary("s")
        .state(SubagentState::Failed)
        .remove_unchecked("name");
    let mut snapshot = json!({"state": "running", "name": "W", "support": {}})
        .as_object()
        .cloned()
        .unwrap();
    patch.apply(&mut snapshot);
    assert_eq!(
        serde_json::to_string(&snapshot).unwrap(),
        r#"{"state":"failed","support":{},"summary":"s"}"#
    );
    let entries: Vec<(&str, Option<&Value>)> = patch.entries().collect();
    assert_eq!(
        entries,
        [
            ("summary", Some(&json!("s"))),
            ("state", Some(&json!("failed"))),
            ("name", None)
        ]
    );
    assert!(!patch.is_empty() && SnapshotPatch::new().is_empty());
}

#[test]
fn patches_are_validated_where_they_are_built() {
    let pointers = |r: Result<SnapshotPatch, Vec<acp_extension_core::Violation>>| {
        r.unwrap_err()
            .into_iter()
            .map(|v| (v.pointer, v.rule.id()))
            .collect::<Vec<_>>()
    };
    let p = |k: &str| format!("/{k}");
    assert_eq!(
        pointers(SnapshotPatch::new().set("summary", Value::Null)),
        [(p("summary"), "not-null")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().set("state", json!("bogus"))),
        [(p("state"), "one-of")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().set("outputIncomplete", json!(false))),
        [(p("outputIncomplete"), "literal")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().set("startedAtEpochSeconds", json!(-1))),
        [(p("startedAtEpochSeconds"), "finite-non-negative")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().set("reason", json!({"code": "lost", "message": null}))),
        [("/reason/message".to_owned(), "not-null")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().remove("state")),
        [(p("state"), "required")]
    );
    assert_eq!(
        pointers(SnapshotPatch::new().remove("support")),
        [(p("support"), "required")]
    );
    assert_eq!(
        pointers(SnapshotPatch::from_value(json!([]))),
        [(String::new(), "type")]
    );
    assert_eq!(
        pointers(SnapshotPatch::from_value(
            json!({"state": "bogus", "support": "nope", "extra": 1})
        )),
        [(p("state"), "one-of"), (p("support"), "type")]
    );
    // Accepted: `parentRunId` may be null, `summary` empty, numbers fractional.
    let ok = SnapshotPatch::from_value(json!({
        "parentRunId": null, "summary": "", "startedAtEpochSeconds": 1.5, "x": null,
    }));
    assert!(ok.is_ok());
}

/// Garbage in, garbage out, as in the reference: unchecked start snapshots,
/// patches and progress are stored and sent as given.
#[test]
fn unchecked_input_is_sent_as_given() {
    block_on(async {
        let mut e = emitter("root");
        e.start_value(
            "a",
            json!({"state": "running", "support": "bad", "extra": true}),
        )
        .await
        .unwrap();
        assert!(e.live("a"));
        assert_eq!(e.get("a").unwrap().state(), Some(SubagentState::Running));
        let pointers: Vec<String> = e
            .get("a")
            .unwrap()
            .to_typed()
            .unwrap_err()
            .into_iter()
            .map(|v| v.pointer)
            .collect();
        assert_eq!(pointers, ["/support"]);

        e.progress_value("a", json!({"turnCount": -1, "toolsUsed": [1]}))
            .await
            .unwrap();
        e.progress_value("a", json!("not an object")).await.unwrap();
        let mut patch = Map::new();
        patch.insert("summary".into(), Value::Null);
        patch.insert("outputIncomplete".into(), json!(false));
        e.snapshot_value("a", patch).await.unwrap();

        let events = values(e.sink());
        assert_eq!(
            events[1]["progress"],
            json!({"turnCount": -1, "toolsUsed": [1]})
        );
        assert_eq!(events[2]["progress"], "not an object");
        assert_eq!(
            snapshot_of(&events[3]),
            &json!({"state": "running", "support": "bad", "extra": true, "summary": null, "outputIncomplete": false})
        );
        assert!(events.iter().all(|ev| !is_subagent_event(ev)));
        assert!(e.live("a"));
    });
}

/// A start snapshot that is not an object, or has no live `state`, is sent
/// and leaves the run finished; nothing panics.
#[test]
fn a_start_snapshot_without_a_live_state_is_sent_and_not_live() {
    block_on(async {
        let mut e = emitter("root");
        let odd = [
            json!(null),
            json!("running"),
            json!(["running"]),
            json!(5),
            json!({}),
            json!({"state": ["running"]}),
            json!({"state": "Running"}),
        ];
        for (i, snapshot) in odd.iter().enumerate() {
            let native = format!("n{i}");
            e.start_value(native.clone(), snapshot.clone())
                .await
                .unwrap();
            assert!(!e.live(&native), "{snapshot}");
            assert_eq!(e.get(&native).unwrap().state(), None);
            assert!(e.get(&native).unwrap().to_typed().is_err());
            e.snapshot(&native, SnapshotPatch::new().summary("x"))
                .await
                .unwrap();
            e.progress_value(&native, json!({})).await.unwrap();
            e.output_value(&native, text_chunk("x"), OutputIds::new())
                .await
                .unwrap();
        }
        e.disconnect().await.unwrap();
        let events = values(e.sink());
        assert_eq!(events.len(), odd.len());
        for (ev, snapshot) in events.iter().zip(&odd) {
            assert_eq!(&ev["snapshot"], snapshot);
        }
        // A new start of the same native id is a new run.
        e.start("n0", base()).await.unwrap();
        assert_eq!(
            e.get("n0").unwrap().run_id,
            format!("run-{}", odd.len() + 1)
        );
    });
}

/// The reference's `{state: undefined}`: the snapshot loses its state and
/// the run is no longer live.
#[test]
fn removing_the_state_unchecked_ends_the_run() {
    block_on(async {
        let mut e = emitter("root");
        e.start("a", base()).await.unwrap();
        e.snapshot("a", SnapshotPatch::new().remove_unchecked("state"))
            .await
            .unwrap();
        let events = values(e.sink());
        assert_eq!(events.len(), 2);
        assert!(snapshot_of(&events[1]).get("state").is_none());
        assert!(!e.live("a"));
        e.output_value("a", text_chunk("x"), OutputIds::new())
            .await
            .unwrap();
        e.disconnect().await.unwrap();
        assert_eq!(e.sink().len(), 2);
    });
}

#[test]
fn an_empty_session_id_is_copied_into_events() {
    block_on(async {
        let mut e = emitter("");
        e.start("a", base()).await.unwrap();
        let event = &e.sink()[0];
        assert_eq!(event.as_value()["sessionId"], "");
        assert!(!is_subagent_event(event.as_value()));
        let violations = event.to_typed().unwrap_err();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].pointer, "/sessionId");
        assert_eq!(violations[0].rule.id(), "non-empty");
    });
}

#[test]
fn disconnect_touches_only_live_runs_in_first_start_order() {
    block_on(async {
        let mut e = emitter("root");
        for id in ["a", "b", "c"] {
            e.start(id, base()).await.unwrap();
        }
        e.snapshot("a", SnapshotPatch::new().state(SubagentState::Completed))
            .await
            .unwrap();
        e.start("a", base()).await.unwrap(); // run-4, keeps a's first position
        e.snapshot("b", SnapshotPatch::new().state(SubagentState::Failed))
            .await
            .unwrap();
        let order: Vec<&str> = e.runs().map(|(native, _)| native).collect();
        assert_eq!(order, ["a", "b", "c"]);
        let before = e.sink().len();
        e.disconnect().await.unwrap();
        let events = values(&e.sink()[before..]);
        let runs: Vec<&str> = events
            .iter()
            .map(|ev| ev["runId"].as_str().unwrap())
            .collect();
        assert_eq!(runs, ["run-4", "run-3"]);
        for ev in &events {
            let snap = snapshot_of(ev);
            assert_eq!(snap["state"], "unknown");
            assert_eq!(snap["outputIncomplete"], true);
            assert_eq!(snap["reason"], json!({"code": "disconnected"}));
            assert_eq!(snap["name"], "Worker");
        }
        let len = e.sink().len();
        e.disconnect().await.unwrap();
        assert_eq!(e.sink().len(), len, "a second disconnect sends nothing");
        e.start("c", base()).await.unwrap();
        assert_eq!(e.get("c").unwrap().run_id, "run-5");
        assert!(e.live("c"));
    });
}

#[test]
fn get_and_live() {
    block_on(async {
        let mut e = emitter("root");
        assert!(!e.live("never-started"));
        assert!(e.get("never-started").is_none());
        e.start("a", base()).await.unwrap();
        let run = e.get("a").unwrap();
        assert_eq!(run.run_id, "run-1");
        assert_eq!(run.snapshot, serde_json::to_value(base()).unwrap());
        assert_eq!(run.to_typed().unwrap(), base());
        assert!(run.live() && e.live("a"));
        let pending = SubagentSnapshot::new(SubagentState::Pending, support());
        e.start("p", pending).await.unwrap();
        assert!(e.live("p"));
        assert_eq!(e.get("p").unwrap().state(), Some(SubagentState::Pending));
    });
}

/// Like the reference, the generator is called exactly once per new run and
/// its id is used as returned.
#[test]
fn the_id_generator_is_called_once_per_new_run() {
    block_on(async {
        let calls = Arc::new(Mutex::new(0));
        let script = Arc::new(Mutex::new(vec!["a", "", "run-x"].into_iter()));
        let (count, next) = (calls.clone(), script.clone());
        let mut e =
            SubagentEmitter::new("root", Vec::<EmittedEvent>::new()).with_id_generator(move || {
                *count.lock().unwrap() += 1;
                next.lock().unwrap().next().unwrap_or_default().to_owned()
            });
        e.start("a", base()).await.unwrap();
        e.start("a", base()).await.unwrap(); // live: no call
        assert_eq!(*calls.lock().unwrap(), 1);
        assert_eq!(e.get("a").unwrap().run_id, "a", "used as returned");
        e.start("b", base()).await.unwrap();
        assert_eq!(e.get("b").unwrap().run_id, "");
        assert!(
            !is_subagent_event(e.sink()[1].as_value()),
            "an empty run id makes an invalid event"
        );
        e.start("c", base()).await.unwrap();
        assert_eq!(*calls.lock().unwrap(), 3);

        // The default generator issues UUIDs.
        let mut default = SubagentEmitter::new("root", Vec::<EmittedEvent>::new());
        default.start("n", base()).await.unwrap();
        default
            .snapshot("n", SnapshotPatch::new().state(SubagentState::Completed))
            .await
            .unwrap();
        default.start("n", base()).await.unwrap();
        let first = default.sink()[0].run_id().to_owned();
        let second = default.get("n").unwrap().run_id.clone();
        assert!(uuid::Uuid::parse_str(&first).is_ok());
        assert!(uuid::Uuid::parse_str(&second).is_ok());
        assert_ne!(first, second);
    });
}

#[derive(Debug, PartialEq)]
struct Refused;

#[test]
fn state_changes_before_the_sink_and_its_error_reaches_the_caller() {
    block_on(async {
        let fail = Arc::new(Mutex::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (f, s) = (fail.clone(), seen.clone());
        let sink = FnSink(move |event: EmittedEvent| {
            let (fail, seen) = (*f.lock().unwrap(), s.clone());
            async move {
                if fail {
                    return Err(Refused);
                }
                seen.lock().unwrap().push(event);
                Ok(())
            }
        });
        let mut e = SubagentEmitter::new("root", sink).with_id_generator(counter());
        e.start("a", base()).await.unwrap();
        e.start("b", base()).await.unwrap();
        *fail.lock().unwrap() = true;
        let done = SnapshotPatch::new().state(SubagentState::Completed);
        assert_eq!(e.snapshot("a", done).await, Err(Refused));
        assert!(!e.live("a"), "the state change persists");
        assert_eq!(e.start("c", base()).await, Err(Refused));
        assert_eq!(e.get("c").unwrap().run_id, "run-3");
        // disconnect stops at the first failure; later runs stay live.
        assert_eq!(e.disconnect().await, Err(Refused));
        assert!(!e.live("b"));
        assert!(e.live("c"));
        *fail.lock().unwrap() = false;
        e.disconnect().await.unwrap();
        assert!(!e.live("c"));
        let runs: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.run_id().to_owned())
            .collect();
        assert_eq!(runs, ["run-1", "run-2", "run-3"]);
    });
}

#[test]
fn a_borrowed_sink_keeps_the_events_with_the_caller() {
    let mut events: Vec<EmittedEvent> = Vec::new();
    block_on(async {
        let mut e = SubagentEmitter::new("root", &mut events).with_id_generator(counter());
        e.start("a", base()).await.unwrap();
    });
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].run_id(), "run-1");
}

/// A `Vec<SubagentEvent>` sink keeps typed events and refuses invalid ones.
#[test]
fn a_typed_vec_sink_refuses_invalid_events() {
    block_on(async {
        let session = acp_extension_core::wire::NonEmptyString::new("root").unwrap();
        let mut e = SubagentEmitter::new(&session, Vec::<SubagentEvent>::new())
            .with_id_generator(counter());
        e.start("a", base()).await.unwrap();
        e.output_value("a", text_chunk("x"), OutputIds::new())
            .await
            .unwrap();
        let refused = e
            .progress_value("a", json!({"turnCount": -1}))
            .await
            .unwrap_err();
        assert_eq!(refused[0].pointer, "/progress/turnCount");
        assert_eq!(refused[0].rule.id(), "finite-non-negative");
        assert_eq!(e.sink().len(), 2);
        assert_eq!(e.sink()[0].snapshot(), Some(&base()));
        assert_eq!(e.sink()[1].run_id.as_str(), "run-1");
        assert!(e.sink()[1].output().is_some());
    });
}

#[test]
fn emitter_and_its_futures_are_send_and_sync() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}
    let mut e = emitter("root");
    sync(&e);
    send(&e);
    send(&e.start("a", base()));
    send(&e.start_value("a", json!({})));
    send(&e.snapshot_value("a", Map::new()));
    send(&e.progress_value("a", json!({})));
    send(&e.output_value("a", json!({}), OutputIds::new()));
    send(&e.disconnect());
}

/// The ACP sink: a client receives `_lody/subagents/event` (or `_ua/…`)
/// notifications whose params are the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_sink_sends_extension_notifications_to_the_client() {
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v1::schema::{InitializeRequest, InitializeResponse};
    use agent_client_protocol::{Agent, Client, UntypedMessage};

    for ns in [Namespace::Lody, Namespace::Ua] {
        let agent = Agent.v1().on_receive_request(
            async move |init: InitializeRequest, responder, cx| {
                responder.respond(InitializeResponse::new(init.protocol_version))?;
                let sink = AcpNotificationSink::new(cx, ns);
                let mut e = SubagentEmitter::new("root", sink).with_id_generator(counter());
                e.start("child", base()).await?;
                e.output_value("child", text_chunk("hi"), OutputIds::new().message_id("m1"))
                    .await?;
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        );

        let (tx, mut rx) = futures::channel::mpsc::unbounded::<(String, Value)>();
        let received = Client
            .v1()
            .on_receive_notification(
                async move |n: UntypedMessage, _cx| {
                    tx.unbounded_send((n.method, n.params)).ok();
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(agent, async |cx| {
                cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let mut got = Vec::new();
                while got.len() < 2 {
                    use futures::StreamExt;
                    let next = tokio::time::timeout(std::time::Duration::from_secs(10), rx.next());
                    match next.await {
                        Ok(Some(n)) => got.push(n),
                        _ => break,
                    }
                }
                Ok(got)
            })
            .await
            .unwrap();

        let method = ns.method("subagents/event");
        assert_eq!(received.len(), 2, "{ns}: {received:?}");
        assert_eq!(received[0].0, method);
        assert_eq!(received[1].0, method);
        let expected_snapshot = json!({
            "version": 1, "sessionId": "root", "runId": "run-1", "type": "snapshot",
            "snapshot": serde_json::to_value(base()).unwrap(),
        });
        assert_eq!(received[0].1, expected_snapshot);
        assert_eq!(
            received[1].1,
            json!({"version": 1, "sessionId": "root", "runId": "run-1", "type": "output",
                   "update": text_chunk("hi"), "messageId": "m1"})
        );
        assert!(received.iter().all(|(_, p)| is_subagent_event(p)));
    }
    assert_eq!(
        Namespace::Lody.method(
            <SubagentEvent as acp_extension_core::methods::ExtensionNotificationMethod>::PATH
        ),
        "_lody/subagents/event"
    );
}
