//! `producer::AgentExtensions` on a real SDK connection: an agent built with
//! it, a client that records every line the agent writes.

use std::io;
use std::sync::{Arc, Mutex};

use acp_extension_core::capabilities::{
    AdvertiseExtensions, AgentExtensionCapabilities, ClientExtensionCapabilities, Feature,
    VersionOneCapability,
};
use acp_extension_core::meta::{MetaExt, fields};
use acp_extension_core::namespace::{Namespace, NamespaceSet};
use acp_extension_core::producer::{AgentExtensions, Delivery, SendError, Withheld};
use acp_extension_core::rate_limits::RateLimitsSnapshot;
use acp_extension_core::session::{
    ActivityKind, ActivityMeta, NoticeLevel, NoticeMeta, SessionActivityState,
    SessionActivityUpdate, TaskKind, TaskMeta, TaskStatus, TitleSource,
};
use acp_extension_core::subagent_emitter::SnapshotPatch;
use acp_extension_core::subagent_events::{
    OutputRead, SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport,
};
use acp_extension_core::usage::ModelUsage;
use acp_extension_core::validate::{Kind, validate_value};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ClientCapabilities, InitializeRequest, InitializeResponse, SessionId,
    SessionInfoUpdate, SessionUpdate, ToolCall,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Lines, UntypedMessage};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use indexmap::IndexMap;
use serde_json::{Value, json};

fn to_io<E: std::fmt::Display>(e: E) -> io::Error {
    io::Error::other(e.to_string())
}

/// What the agent's handle said about each send: `Ok("sent")`,
/// `Ok("withheld: …")` or `Ok("unchanged")`, or the error.
type Outcome = (&'static str, Result<String, String>);
type Outcomes = Arc<Mutex<Vec<Outcome>>>;

fn outcome(r: Result<Delivery, SendError>) -> Result<String, String> {
    match r {
        Ok(Delivery::Sent) => Ok("sent".to_owned()),
        Ok(Delivery::Withheld(w)) => Ok(format!("withheld: {w}")),
        Ok(Delivery::Unchanged) => Ok("unchanged".to_owned()),
        Ok(other) => Ok(format!("{other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The names whose outcome starts with `prefix` (`Ok`) or that failed
/// (`prefix` "error").
fn named<'a>(outcomes: &'a [Outcome], prefix: &str) -> Vec<&'a str> {
    outcomes
        .iter()
        .filter(|(_, r)| match r {
            Ok(o) => o.starts_with(prefix),
            Err(_) => prefix == "error",
        })
        .map(|(w, _)| *w)
        .collect()
}

fn agent_capabilities() -> AgentCapabilities {
    let ours = AgentExtensionCapabilities::new()
        .usage(VersionOneCapability::new())
        .session_title(VersionOneCapability::new())
        .subagent_events(VersionOneCapability::new())
        .session_activity(VersionOneCapability::new())
        .compaction(VersionOneCapability::new());
    // The migration setting the docs suggest: both spellings.
    AgentCapabilities::new().extensions(&ours, NamespaceSet::Both)
}

/// Everything the handle can send, once the client's initialize arrived.
async fn send_everything(ext: AgentExtensions, outcomes: Outcomes) {
    let sid = SessionId::new("s1");
    let record = |what: &'static str, r: Result<Delivery, SendError>| {
        outcomes.lock().unwrap().push((what, outcome(r)));
    };
    let ran = |r: Result<(), SendError>| r.map(|()| Delivery::Sent);
    record(
        "title",
        ext.title(&sid, "Fix the parser", TitleSource::Generated),
    );
    let mut acc = ext.usage_accumulator().expect("usage is active");
    let mut rows = IndexMap::new();
    rows.insert("m".to_owned(), ModelUsage::new(10u64, 2u64, 0u64));
    let update = acc.update("s1", "turn-1", &rows).expect("a first update");
    record("usage", ext.usage_update(update));
    record(
        "activity",
        ext.activity_update(SessionActivityUpdate::new(
            "s1",
            SessionActivityState::Running,
            1u64,
        )),
    );
    record(
        "notice",
        ext.notice(&sid, NoticeMeta::new(NoticeLevel::Warning, "slow network")),
    );
    let (call, _) = ext.with_meta::<fields::Activity, _>(
        ToolCall::new("call-1", "Compacting"),
        ActivityMeta::new(ActivityKind::ContextCompaction),
    );
    record(
        "tool call",
        ext.session_update(&sid, SessionUpdate::ToolCall(call)),
    );
    // Task metadata without `tasks`: withheld, the tool call untouched.
    let (untouched, delivery) = ext.with_meta::<fields::Task, _>(
        ToolCall::new("call-2", "Background"),
        TaskMeta::new("t1", TaskKind::Background, TaskStatus::InProgress),
    );
    assert!(untouched.meta.is_none(), "{untouched:?}");
    record("task meta", Ok(delivery));
    // `_meta` of the other namespace on a standard update: refused.
    let other = match ext.negotiated().agent_writes {
        Namespace::Lody => Namespace::Ua,
        _ => Namespace::Lody,
    };
    let stray =
        ToolCall::new("call-3", "Stray").with_ext::<fields::TurnId>(other, "t-1".to_owned());
    record(
        "wrong namespace",
        ext.session_update(&sid, SessionUpdate::ToolCall(stray)),
    );
    // An untagged title where `sessionTitle` is negotiated: refused.
    record(
        "untagged title",
        ext.session_update(
            &sid,
            SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title("Untagged")),
        ),
    );
    // A title tagged `unset` says there is no title: an error, not sent.
    record(
        "unset title",
        ext.title(&sid, "Nothing", TitleSource::Unset),
    );
    // Not advertised: refused, not sent.
    record(
        "rate limits",
        ext.rate_limits_update(RateLimitsSnapshot::new(vec![])),
    );
    record("goal", ext.goal(&sid, None));
    record("steer applied", ext.steer_applied(&sid, "st-1"));
    match ext.subagent_emitter(&sid) {
        Some(runs) => {
            let support =
                SubagentSupport::new(vec![SubagentStream::Text], false, OutputRead::None, false);
            let r = runs
                .start(
                    "child",
                    SubagentSnapshot::new(SubagentState::Running, support)
                        .name("Explorer".to_owned())
                        .parent_run_id(None),
                )
                .await;
            record("subagent", ran(r));
            // Another call hands out the same runs: the run goes on.
            let again = ext.subagent_emitter(&sid).expect("still active");
            record(
                "subagent again",
                ran(again
                    .snapshot(
                        "child",
                        SnapshotPatch::new().state(SubagentState::Completed),
                    )
                    .await),
            );
            // A run nobody started is an error, not a silent drop.
            record(
                "unknown run",
                ran(again
                    .snapshot(
                        "stranger",
                        SnapshotPatch::new().state(SubagentState::Completed),
                    )
                    .await),
            );
        }
        None => {
            for what in ["subagent", "subagent again", "unknown run"] {
                record(
                    what,
                    Ok(Delivery::Withheld(Withheld::NotNegotiated(
                        Feature::SubagentEvents,
                    ))),
                );
            }
        }
    }
    // One ledger per session: another session's usage starts from zero.
    let mut rows = IndexMap::new();
    rows.insert("m".to_owned(), ModelUsage::new(7u64, 1u64, 0u64));
    record(
        "usage of s2",
        ext.usage(&SessionId::new("s2"), "turn-1", &rows),
    );
}

/// Runs the agent against a client advertising `client_ext` under
/// `client_ns`; returns every line the agent wrote and the handle's outcomes.
async fn connect(
    client_ext: ClientExtensionCapabilities,
    client_ns: NamespaceSet,
) -> (Vec<Value>, Vec<Outcome>) {
    connect_with(ClientCapabilities::new().extensions(&client_ext, client_ns)).await
}

/// Like [`connect`], with the client's capabilities as given.
async fn connect_with(caps: ClientCapabilities) -> (Vec<Value>, Vec<Outcome>) {
    let (c2a_tx, c2a_rx) = mpsc::unbounded::<String>();
    let (a2c_tx, a2c_rx) = mpsc::unbounded::<String>();
    let agent_transport = Lines::new(a2c_tx.sink_map_err(to_io), c2a_rx.map(Ok));
    let log: Arc<Mutex<Vec<Value>>> = Arc::default();
    let tap = log.clone();
    let client_incoming = a2c_rx.map(move |line: String| {
        tap.lock()
            .unwrap()
            .push(serde_json::from_str(&line).unwrap());
        Ok(line)
    });
    let client_transport = Lines::new(c2a_tx.sink_map_err(to_io), client_incoming);

    let outcomes: Outcomes = Arc::default();
    let sent = outcomes.clone();
    let agent = Agent
        .v1()
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        cx: ConnectionTo<Client>| {
                let response = InitializeResponse::new(ProtocolVersion::V1)
                    .agent_capabilities(agent_capabilities());
                let ext = AgentExtensions::from_initialize(cx.clone(), &request, &response);
                responder.respond(response)?;
                let sent = sent.clone();
                cx.spawn(async move {
                    send_everything(ext, sent).await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            // Answered after everything above was written: a flush.
            async move |_: UntypedMessage,
                        responder: Responder<Value>,
                        _cx: ConnectionTo<Client>| { responder.respond(json!({})) },
            agent_client_protocol::on_receive_request!(),
        );
    let agent = tokio::spawn(agent.connect_to(agent_transport));
    let waiting = outcomes.clone();
    Client
        .v1()
        .on_receive_notification(
            async move |_: UntypedMessage, _cx: ConnectionTo<Agent>| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(client_transport, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
                .block_task()
                .await?;
            // The agent sends from a task; wait until all sixteen outcomes exist.
            for _ in 0..200 {
                if outcomes_len(&waiting) >= 16 {
                    break;
                }
                tokio::task::yield_now().await;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            cx.send_request(UntypedMessage::new("_test/flush", json!({}))?)
                .block_task()
                .await?;
            Ok(())
        })
        .await
        .expect("the client connection");
    drop(agent);
    let lines = log.lock().unwrap().clone();
    let outcomes = outcomes_take(&outcomes);
    (lines, outcomes)
}

fn outcomes_len(o: &Outcomes) -> usize {
    o.lock().unwrap().len()
}

fn outcomes_take(o: &Outcomes) -> Vec<Outcome> {
    std::mem::take(&mut *o.lock().unwrap())
}

/// The namespaces of every method and `_meta.<ns>` key the agent wrote
/// after its initialize response.
fn namespaces_written(lines: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        if line
            .get("result")
            .is_some_and(|r| r.get("agentCapabilities").is_some())
        {
            continue;
        }
        if let Some(m) = line["method"].as_str()
            && let Some((ns, _)) = acp_extension_core::namespace::split_method(m)
        {
            out.push(ns.key().to_owned());
        }
        collect_meta(line, &mut out);
    }
    out
}

fn collect_meta(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if k == "_meta"
                    && let Some(m) = x.as_object()
                {
                    out.extend(m.keys().filter(|k| *k == "ua" || *k == "lody").cloned());
                }
                collect_meta(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_meta(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn a_lody_client_gets_lody_for_every_feature() {
    let client = ClientExtensionCapabilities::new().subagent_events(VersionOneCapability::new());
    let (lines, outcomes) = connect(client, NamespaceSet::Lody).await;
    let written = namespaces_written(&lines);
    assert!(written.len() >= 6, "{lines:#?}");
    assert!(
        written.iter().all(|ns| ns == "lody"),
        "{written:?}\n{lines:#?}"
    );
    // Every message is valid, and the features not advertised were refused.
    for line in &lines {
        assert!(
            validate_value(Kind::AUTO, line).violations.is_empty(),
            "{line}"
        );
    }
    // What the client did not ask for is withheld (an `Ok`, which `?`
    // passes); what is wrong as written is an error.
    assert_eq!(
        named(&outcomes, "withheld"),
        ["task meta", "rate limits", "goal", "steer applied"],
        "{outcomes:?}"
    );
    assert_eq!(
        named(&outcomes, "error"),
        [
            "wrong namespace",
            "untagged title",
            "unset title",
            "unknown run"
        ],
        "{outcomes:?}"
    );
    // The second call's snapshot went to the run the first call started.
    let events: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "_lody/subagents/event")
        .collect();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[0]["params"]["runId"], events[1]["params"]["runId"]);
    assert_eq!(events[1]["params"]["snapshot"]["state"], "completed");
    // Session s2's usage is its own: 7 input tokens, not s1's plus 7.
    let s2 = lines
        .iter()
        .find(|l| l["params"]["sessionId"] == "s2")
        .expect("s2's usage");
    assert_eq!(s2["params"]["modelUsage"]["m"]["inputTokens"], 7);
    assert_ne!(
        s2["params"]["_meta"]["lody"]["usageScopeId"],
        lines
            .iter()
            .find(
                |l| l["method"] == "_lody/session/usage_update" && l["params"]["sessionId"] == "s1"
            )
            .unwrap()["params"]["_meta"]["lody"]["usageScopeId"]
    );
    assert!(!lines.iter().any(|l| l.to_string().contains("Untagged")));
    assert!(!lines.iter().any(|l| l.to_string().contains("Nothing")));
    assert!(!lines.iter().any(|l| l.to_string().contains("call-2")));
    assert!(!lines.iter().any(|l| l.to_string().contains("call-3")));
    let methods: Vec<&str> = lines.iter().filter_map(|l| l["method"].as_str()).collect();
    assert!(
        methods.contains(&"_lody/session/usage_update"),
        "{methods:?}"
    );
    assert!(
        methods.contains(&"_lody/session/activity_update"),
        "{methods:?}"
    );
    assert!(methods.contains(&"_lody/subagents/event"), "{methods:?}");
    assert!(!methods.iter().any(|m| m.contains("rate_limits")));
    let usage = lines
        .iter()
        .find(|l| l["method"] == "_lody/session/usage_update")
        .unwrap();
    assert!(usage["params"]["_meta"]["lody"]["usageScopeId"].is_string());
    let title = lines
        .iter()
        .find(|l| l["params"]["update"]["title"] == "Fix the parser")
        .expect("the title");
    assert_eq!(
        title["params"]["update"]["_meta"]["lody"]["titleSource"],
        "generated"
    );
}

#[tokio::test]
async fn a_ua_client_gets_ua_and_no_subagent_events_without_the_flag() {
    let (lines, outcomes) = connect(ClientExtensionCapabilities::new(), NamespaceSet::Ua).await;
    let written = namespaces_written(&lines);
    assert!(!written.is_empty());
    assert!(written.iter().all(|ns| ns == "ua"), "{written:?}");
    let subagent = outcomes.iter().find(|(w, _)| *w == "subagent").unwrap();
    assert!(
        subagent
            .1
            .as_ref()
            .unwrap()
            .contains("withheld: `subagentEvents`"),
        "{outcomes:?}"
    );
    let methods: Vec<&str> = lines.iter().filter_map(|l| l["method"].as_str()).collect();
    assert!(methods.contains(&"_ua/session/usage_update"), "{methods:?}");
    assert!(!methods.iter().any(|m| m.contains("subagents/event")));
}

#[cfg(feature = "unstable_subagents")]
#[tokio::test]
async fn a_standard_client_gets_subagent_updates_and_no_extension() {
    // Standard `subagents: {}` and no extension at all: the official
    // adapters' client.
    let caps = ClientCapabilities::new()
        .subagents(agent_client_protocol::v1::schema::SubagentCapabilities::new());
    let (lines, outcomes) = connect_with(caps).await;
    let methods: Vec<&str> = lines.iter().filter_map(|l| l["method"].as_str()).collect();
    assert!(
        !methods
            .iter()
            .any(|m| m.starts_with("_lody/") || m.starts_with("_ua/")),
        "{methods:?}"
    );
    for what in ["subagent", "subagent again"] {
        let outcome = outcomes.iter().find(|(w, _)| *w == what).unwrap();
        assert!(outcome.1.is_ok(), "{outcomes:?}");
    }
    let unknown = outcomes.iter().find(|(w, _)| *w == "unknown run").unwrap();
    assert!(
        unknown.1.as_ref().unwrap_err().contains("stranger"),
        "{outcomes:?}"
    );
    // The run is announced on the root session, then patched to idle.
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["params"]["update"]["sessionUpdate"] == "subagent_update")
        .collect();
    assert_eq!(updates.len(), 2, "{lines:#?}");
    let child = updates[0]["params"]["update"]["sessionId"]
        .as_str()
        .unwrap();
    assert!(child.starts_with("s1:subagent:"), "{child}");
    assert_eq!(
        updates[0]["params"],
        json!({"sessionId": "s1", "update": {"sessionUpdate": "subagent_update",
            "sessionId": child, "title": "Explorer", "capabilities": {},
            "state": {"state": "running"}}})
    );
    assert_eq!(
        updates[1]["params"],
        json!({"sessionId": "s1", "update": {"sessionUpdate": "subagent_update",
            "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}}})
    );
}

#[test]
fn a_withheld_message_names_the_feature() {
    let w = Withheld::NotNegotiated(Feature::RateLimits);
    assert_eq!(
        w.to_string(),
        "`rateLimits` is not active on this connection; it was not sent"
    );
}

#[tokio::test]
async fn a_plain_client_gets_no_extension_notification() {
    // No `_meta.ua` or `_meta.lody` at all: a plain ACP client.
    let (lines, outcomes) = connect_with(ClientCapabilities::new()).await;
    let methods: Vec<&str> = lines.iter().filter_map(|l| l["method"].as_str()).collect();
    assert!(
        !methods
            .iter()
            .any(|m| m.starts_with("_lody/") || m.starts_with("_ua/")),
        "{methods:?}"
    );
    let usage = outcomes.iter().find(|(w, _)| *w == "usage").unwrap();
    assert_eq!(
        usage.1.as_deref(),
        Ok(
            "withheld: the client advertised no extension; extension notifications are not sent to it"
        ),
        "{outcomes:?}"
    );
    // `_meta` on standard traffic is the same as for any client.
    assert!(
        lines
            .iter()
            .any(|l| l["params"]["update"]["title"] == "Fix the parser"),
        "{lines:#?}"
    );
}
