//! Typed `_meta.<ns>.<field>` access on the SDK's standard messages.

use acp_extension_core::Namespace;
use acp_extension_core::meta::{self, HasMeta, MetaExt, SessionMeta, fields};
use acp_extension_core::session::{GoalStatus, MessagePhase, TaskKind, TaskMeta, TaskStatus};
use acp_extension_core::validate::check;
use acp_extension_core::wire::WireObject;
use agent_client_protocol::v1::schema::{ContentChunk, SessionInfoUpdate, ToolCall};
use serde_json::{Value, json};

#[test]
fn reads_prefer_ua_and_fall_back_to_lody() {
    let m = json!({"lody": {"turnId": "t-lody", "messagePhase": "commentary"}, "ua": {"turnId": "t-ua"}});
    let m = m.as_object().unwrap();
    assert_eq!(
        meta::read::<fields::TurnId>(m).unwrap().as_deref(),
        Some("t-ua")
    );
    assert_eq!(
        meta::read::<fields::MessagePhase>(m).unwrap(),
        Some(MessagePhase::Commentary)
    );
    assert_eq!(meta::read::<fields::Notice>(m).unwrap(), None);
}

#[test]
fn writes_keep_other_vendors_keys() {
    let mut m = json!({"codex": {"usageTurnId": "x"}, "lody": {"turnId": "t"}})
        .as_object()
        .unwrap()
        .clone();
    meta::write::<fields::MessagePhase>(&mut m, Namespace::Lody, &MessagePhase::FinalAnswer);
    meta::write::<fields::TurnId>(&mut m, Namespace::Ua, &"t2".to_string());
    assert_eq!(
        Value::Object(m),
        json!({"codex": {"usageTurnId": "x"}, "lody": {"turnId": "t", "messagePhase": "final_answer"}, "ua": {"turnId": "t2"}})
    );
}

#[test]
fn goal_is_object_or_null() {
    let m = json!({"lody": {"goal": null}});
    assert_eq!(
        meta::read::<fields::Goal>(m.as_object().unwrap()).unwrap(),
        Some(None)
    );
    let m = json!({"lody": {"goal": {"objective": "ship", "status": "active"}}});
    let goal = meta::read::<fields::Goal>(m.as_object().unwrap())
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(goal.status, GoalStatus::Active);
}

#[test]
fn invalid_fields_name_pointer_and_rule() {
    let m = json!({"lody": {"goal": {"objective": "ship", "status": "done", "lastReason": 5}}});
    let err = meta::read::<fields::Goal>(m.as_object().unwrap()).unwrap_err();
    assert_eq!(err.namespace, Namespace::Lody);
    let found: Vec<(&str, &str)> = err
        .violations
        .iter()
        .map(|v| (v.pointer.as_str(), v.rule.id()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("/lody/goal/status", "one-of"),
            ("/lody/goal/lastReason", "type")
        ]
    );
}

#[test]
fn sdk_messages_carry_typed_fields() {
    let task = TaskMeta::new("task-1", TaskKind::Background, TaskStatus::InProgress);
    let call = ToolCall::new("call-1", "Run tests")
        .with_ext::<fields::Task>(Namespace::Lody, task.clone())
        .with_ext::<fields::ToolName>(Namespace::Ua, "Bash".to_string());
    let wire = serde_json::to_value(&call).unwrap();
    assert_eq!(wire["_meta"]["lody"]["task"]["kind"], "background");
    assert_eq!(wire["_meta"]["lody"]["task"]["version"], 1);
    assert_eq!(wire["_meta"]["ua"]["toolName"], "Bash");

    let back: ToolCall = serde_json::from_value(wire).unwrap();
    assert_eq!(back.ext::<fields::Task>().unwrap(), Some(task));

    let mut chunk: ContentChunk =
        serde_json::from_value(json!({"content": {"type": "text", "text": "hi"}})).unwrap();
    assert_eq!(chunk.ext::<fields::MessagePhase>().unwrap(), None);
    chunk.set_ext::<fields::MessagePhase>(Namespace::Lody, MessagePhase::Commentary);
    chunk.remove_ext::<fields::MessagePhase>();
    assert_eq!(chunk.ext::<fields::MessagePhase>().unwrap(), None);

    let info = SessionInfoUpdate::new();
    assert!(info.ext_meta().is_none());
}

#[test]
fn session_meta_validates_every_field_and_keeps_unknown_keys() {
    let section = json!({
        "turnId": "t", "messagePhase": "final_answer", "goal": null,
        "titleSource": "generated", "modelCapabilities": {"x": 1}
    });
    assert!(check::<SessionMeta>(&section).is_empty());
    let parsed: SessionMeta = serde_json::from_value(section.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), section);
    assert!(parsed.extra().contains_key("modelCapabilities"));

    let bad = json!({"turnId": null, "titleSource": "user", "task": {"version": 2}});
    let found: Vec<(String, &str)> = check::<SessionMeta>(&bad)
        .into_iter()
        .map(|v| (v.pointer, v.rule.id()))
        .collect();
    assert!(found.contains(&("/turnId".into(), "not-null")), "{found:?}");
    assert!(
        found.contains(&("/titleSource".into(), "one-of")),
        "{found:?}"
    );
    assert!(
        found.contains(&("/task/version".into(), "literal")),
        "{found:?}"
    );
    assert!(
        found.contains(&("/task/taskId".into(), "required")),
        "{found:?}"
    );
}
