//! Compaction, notices

use super::*;

#[test]
fn compaction_and_notices_map_from_both_dialects() {
    let meta_activity = json!({"lody": {"activity": {"version": 1, "kind": "context_compaction"}}});
    let extension = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Compacting",
                "status": "in_progress", "_meta": meta_activity}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "session_info_update",
                "_meta": {"lody": {"notice": {"level": "warning", "message": "slow down"}}}}),
            ),
        ),
    ])
    .0;
    let standard = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
                "content": {"type": "text", "text": "summary"}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "notice", "severity": "warning", "title": "slow down"}),
            ),
        ),
    ])
    .0;
    let (e, s) = (
        extension.session("s").unwrap(),
        standard.session("s").unwrap(),
    );
    for x in [e, s] {
        let a = &x.activities["c1"];
        assert_eq!(serde_json::to_value(a.kind).unwrap(), "context_compaction");
        assert_eq!(a.status.as_deref(), Some("completed"));
        assert_eq!(x.notices.len(), 1);
        assert_eq!(x.notices[0].message, "slow down");
        assert_eq!(serde_json::to_value(x.notices[0].level).unwrap(), "warning");
    }
    assert_eq!(s.activities["c1"].summary.as_deref(), Some("summary"));
    assert_eq!(
        (e.activities["c1"].dialect, s.activities["c1"].dialect),
        (Dialect::Extension, Dialect::Standard)
    );
}

#[test]
fn unknown_session_updates_are_changes_and_sdk_notifications_fold() {
    let mut state = ConnectionState::new();
    let changes = state.message(
        A2C,
        &update("s", json!({"sessionUpdate": "async_widget_update", "x": 1})),
    );
    assert!(matches!(&changes[..], [Change::Invalid(i)]
        if i.rule == "unknown-session-update" && i.pointer == "/params/update/sessionUpdate"));
    // The same through the untyped entry point an SDK client uses when its
    // typed update fails to decode.
    let changes = state.notification(
        Direction::AgentToClient,
        "session/update",
        &json!({"sessionId": "s", "update": {"sessionUpdate": "x"}}),
    );
    assert!(matches!(&changes[..], [Change::Invalid(_)]));
    use agent_client_protocol::v1::schema::{
        SessionInfoUpdate, SessionNotification, SessionUpdate,
    };
    let n = SessionNotification::new(
        "s",
        SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title("Typed")),
    );
    let changes = state.session_notification(&n);
    assert_eq!(
        changes,
        [Change::Title {
            session_id: "s".into()
        }]
    );
    assert_eq!(state.session("s").unwrap().title.as_deref(), Some("Typed"));
    let changes = state.line(A2C, "{not json");
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "not-json"));
}
