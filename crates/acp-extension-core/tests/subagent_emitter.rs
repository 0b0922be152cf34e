//! The subagent emitter against the contract (facts §13, §17.3, §18) and
//! every scenario of `subagent-emitter.jsonl`.

use std::sync::{Arc, Mutex};

use acp_extension_core::Namespace;
use acp_extension_core::subagent_emitter::*;
use acp_extension_core::subagent_events::*;
use acp_extension_core::wire::NonEmptyString;
use futures::executor::block_on;
use serde_json::{Value, json};

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

fn emitter(session: &str) -> SubagentEmitter<Vec<SubagentEvent>> {
    SubagentEmitter::new(NonEmptyString::new(session).unwrap(), Vec::new())
        .with_id_generator(counter())
}

fn values(events: &[SubagentEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
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

/// The vectors whose input the typed API rejects where it is built,
/// with the pointers of the rejection (see the emitter's module docs).
const REJECTED_AT_BOUNDARY: &[(&str, &[&str])] = &[
    ("patch_not_validated", &["/state", "/support"]),
    ("start_snapshot_not_validated", &["/support"]),
    ("empty_session_id_not_validated", &["/sessionId"]),
];

/// Applies one vector call; `Err` holds the pointers of a boundary rejection.
fn apply_call(
    emitter: &mut SubagentEmitter<Vec<SubagentEvent>>,
    call: &Value,
) -> Result<(), Vec<String>> {
    let pointers = |v: Vec<acp_extension_core::Violation>| {
        v.into_iter().map(|v| v.pointer).collect::<Vec<_>>()
    };
    let native = call["nativeId"].as_str().unwrap_or_default().to_owned();
    let ids = || {
        let mut ids = OutputIds::new();
        if let Some(id) = call["ids"]["nativeTurnId"].as_str() {
            ids = ids.native_turn_id(id);
        }
        if let Some(id) = call["ids"]["messageId"].as_str() {
            ids = ids.message_id(id);
        }
        ids
    };
    block_on(async {
        match call["op"].as_str().unwrap() {
            "start" => {
                let snapshot = call["snapshot"].clone();
                let violations = acp_extension_core::validate::check::<SubagentSnapshot>(&snapshot);
                let Ok(snapshot) = serde_json::from_value::<SubagentSnapshot>(snapshot) else {
                    return Err(pointers(violations));
                };
                emitter.start(native, snapshot).await.unwrap();
            }
            "snapshot" => {
                let patch = SnapshotPatch::from_value(call["patch"].clone()).map_err(pointers)?;
                emitter.snapshot(&native, patch).await.unwrap();
            }
            "progress" => {
                let progress: SubagentProgress =
                    serde_json::from_value(call["progress"].clone()).unwrap();
                emitter.progress(&native, progress).await.unwrap();
            }
            "output" => emitter
                .output_value(&native, call["update"].clone(), ids())
                .await
                .unwrap(),
            "disconnect" => emitter.disconnect().await.unwrap(),
            op => panic!("unknown op {op}"),
        }
        Ok(())
    })
}

#[test]
fn every_emitter_vector_produces_exactly_its_events() {
    let lines = vector_file("subagent-emitter.jsonl");
    let mut scenarios = 0;
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        scenarios += 1;
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap();
        let expected = v["events"].as_array().unwrap();
        let rejection = REJECTED_AT_BOUNDARY.iter().find(|(n, _)| *n == name);

        let session = v["sessionId"].as_str().unwrap();
        let Ok(session) = NonEmptyString::new(session) else {
            let (_, pointers) = rejection.unwrap_or_else(|| panic!("{name}: empty session id"));
            assert_eq!(*pointers, ["/sessionId"], "{name}");
            continue;
        };
        let mut emitter = SubagentEmitter::new(session, Vec::new()).with_id_generator(counter());
        let mut rejected = None;
        for call in v["calls"].as_array().unwrap() {
            if let Err(pointers) = apply_call(&mut emitter, call) {
                rejected = Some(pointers);
                break;
            }
        }
        let got = values(emitter.sink());
        for event in &got {
            assert!(is_subagent_event(event), "{name}: invalid event {event}");
        }
        match (rejected, rejection) {
            (None, None) => assert_eq!(&got, expected, "{name}"),
            (Some(pointers), Some((_, want))) => {
                assert_eq!(pointers, *want, "{name}");
                // Everything before the rejected call was emitted as the reference does.
                assert_eq!(got, expected[..got.len()], "{name}");
            }
            (got, want) => panic!("{name}: rejection {got:?}, expected {want:?}"),
        }
    }
    assert_eq!(scenarios, 17);
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
        let text = serde_json::to_string(&e.sink()[1]).unwrap();
        assert_eq!(
            text,
            r#"{"version":1,"sessionId":"root","runId":"run-1","type":"output","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"nativeTurnId":"t","messageId":"m"}"#
        );
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
        assert_eq!(e.get("a").unwrap().run_id.as_str(), "run-2");
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
            e.output_value("a", bad, OutputIds::new()).await.unwrap();
        }
        let events = values(e.sink());
        assert_eq!(events.len(), 4);
        for ev in &events[1..] {
            let snap = snapshot_of(ev);
            assert_eq!(snap["state"], "running");
            assert_eq!(snap["outputIncomplete"], true);
            assert_eq!(snap["name"], "Worker");
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
        assert_eq!(
            e.get("a").unwrap().snapshot.extra["x-native"],
            json!({"pid": 7})
        );
        e.snapshot("a", SnapshotPatch::new().remove("x-native").unwrap())
            .await
            .unwrap();
        assert!(e.get("a").unwrap().snapshot.extra.is_empty());
    });
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
    // Accepted: `parentRunId` may be null, `summary` empty, numbers fractional.
    let ok = SnapshotPatch::from_value(json!({
        "parentRunId": null, "summary": "", "startedAtEpochSeconds": 1.5, "x": null,
    }));
    assert!(ok.is_ok());
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
        assert_eq!(e.get("c").unwrap().run_id.as_str(), "run-5");
        assert!(e.live("c"));
    });
}

#[test]
fn get_and_live() {
    block_on(async {
        let mut e = emitter("root");
        assert!(!e.live("never-started"));
        assert!(e.get("never-started").is_none());
        assert_eq!(e.session_id(), "root");
        e.start("a", base()).await.unwrap();
        let run = e.get("a").unwrap();
        assert_eq!(run.run_id.as_str(), "run-1");
        assert_eq!(run.snapshot, base());
        assert!(run.live() && e.live("a"));
        let pending = SubagentSnapshot::new(SubagentState::Pending, support());
        e.start("p", pending).await.unwrap();
        assert!(e.live("p"));
    });
}

#[test]
fn run_ids_never_reuse_native_ids_or_issued_ids_and_are_never_empty() {
    block_on(async {
        let script = Arc::new(Mutex::new(
            vec!["", "a", "b", "run-x", "run-x", "run-y"].into_iter(),
        ));
        let next = script.clone();
        let mut e = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), Vec::new())
            .with_id_generator(move || next.lock().unwrap().next().unwrap_or_default().to_owned());
        e.start("b", base()).await.unwrap(); // "" is empty; "a" is not (yet) a native id
        assert_eq!(e.get("b").unwrap().run_id.as_str(), "a");
        e.start("a", base()).await.unwrap(); // "b" is a native id, then "run-x"
        assert_eq!(e.get("a").unwrap().run_id.as_str(), "run-x");
        e.start("c", base()).await.unwrap(); // "run-x" already issued, then "run-y"
        assert_eq!(e.get("c").unwrap().run_id.as_str(), "run-y");

        // A generator that only ever returns the native id: falls back to a UUID.
        let mut stuck = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), Vec::new())
            .with_id_generator(|| "same".to_owned());
        stuck.start("same", base()).await.unwrap();
        let run_id = stuck.get("same").unwrap().run_id.as_str().to_owned();
        assert_ne!(run_id, "same");
        assert!(uuid::Uuid::parse_str(&run_id).is_ok());

        // The default generator issues UUIDs.
        let mut default = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), Vec::new());
        default.start("n", base()).await.unwrap();
        assert!(uuid::Uuid::parse_str(default.get("n").unwrap().run_id.as_str()).is_ok());
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
        let sink = FnSink(move |event: SubagentEvent| {
            let (fail, seen) = (*f.lock().unwrap(), s.clone());
            async move {
                if fail {
                    return Err(Refused);
                }
                seen.lock().unwrap().push(event);
                Ok(())
            }
        });
        let mut e = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), sink)
            .with_id_generator(counter());
        e.start("a", base()).await.unwrap();
        e.start("b", base()).await.unwrap();
        *fail.lock().unwrap() = true;
        let done = SnapshotPatch::new().state(SubagentState::Completed);
        assert_eq!(e.snapshot("a", done).await, Err(Refused));
        assert!(!e.live("a"), "the state change persists");
        assert_eq!(e.start("c", base()).await, Err(Refused));
        assert_eq!(e.get("c").unwrap().run_id.as_str(), "run-3");
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
    let mut events: Vec<SubagentEvent> = Vec::new();
    block_on(async {
        let mut e = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), &mut events)
            .with_id_generator(counter());
        e.start("a", base()).await.unwrap();
    });
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].run_id(), "run-1");
}

#[test]
fn emitter_and_its_futures_are_send_and_sync() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}
    let mut e = emitter("root");
    sync(&e);
    send(&e);
    send(&e.start("a", base()));
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
                let mut e = SubagentEmitter::new(NonEmptyString::new("root").unwrap(), sink)
                    .with_id_generator(counter());
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
        Namespace::Lody.method(SUBAGENT_EVENT_PATH),
        SUBAGENT_EVENT_METHOD
    );
}
