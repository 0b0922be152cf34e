//! session establishment

use super::*;

#[test]
fn worktree_project() {
    let w: WorktreeProject = round_trip(json!({"version": 1, "originProjectPath": "/repo"}));
    assert_eq!(w.origin_project_path, "/repo");
    rejects::<WorktreeProject>(json!({"version": 1}), &[("/originProjectPath", "required")]);
    rejects::<WorktreeProject>(
        json!({"version": 1, "originProjectPath": null}),
        &[("/originProjectPath", "type")],
    );
}

#[test]
fn session_config_values_are_strings_or_booleans_in_wire_order() {
    let text = r#"{"version":1,"configOptionValues":{"zeta":"high","plan_mode":true,"alpha":false},"modelId":"gpt-5"}"#;
    let c: SessionConfig = serde_json::from_str(text).unwrap();
    assert_eq!(c.model_id.as_deref(), Some("gpt-5"));
    assert_eq!(
        c.config_option_values.keys().collect::<Vec<_>>(),
        ["zeta", "plan_mode", "alpha"]
    );
    assert_eq!(c.config_option_values["zeta"].as_str(), Some("high"));
    assert_eq!(c.config_option_values["plan_mode"].as_bool(), Some(true));
    assert_eq!(serde_json::to_string(&c).unwrap(), text);

    round_trip::<SessionConfig>(json!({"version": 1, "configOptionValues": {}}));

    let built = SessionConfig::new(
        [
            ("mode", ConfigOptionValue::from("plan")),
            ("fast", true.into()),
        ]
        .into_iter()
        .collect::<ConfigOptionValues>(),
    );
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        r#"{"version":1,"configOptionValues":{"mode":"plan","fast":true}}"#
    );
}

#[test]
fn session_config_rejections() {
    rejects::<SessionConfig>(
        json!({"version": 1}),
        &[("/configOptionValues", "required")],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": {"a": 1, "b": null, "c/d": ["x"]}}),
        &[
            ("/configOptionValues/a", "type"),
            ("/configOptionValues/b", "type"),
            ("/configOptionValues/c~1d", "type"),
        ],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": {}, "modelId": null}),
        &[("/modelId", "not-null")],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": []}),
        &[("/configOptionValues", "type")],
    );
}

#[test]
fn fork_at_turn() {
    let f: ForkAtTurn = round_trip(json!({"version": 1}));
    assert_eq!(f.turn_id, None);
    let f: ForkAtTurn = round_trip(json!({"version": 1, "turnId": "turn-3"}));
    assert_eq!(f.turn_id.as_deref(), Some("turn-3"));
    rejects::<ForkAtTurn>(
        json!({"version": 1, "turnId": null}),
        &[("/turnId", "not-null")],
    );
    rejects::<ForkAtTurn>(json!({"turnId": "t"}), &[("/version", "required")]);
}

#[test]
fn session_activity_update() {
    let u: SessionActivityUpdate = round_trip(json!({
        "version": 1, "sessionId": "s", "state": "requires_action", "backgroundTaskCount": 2
    }));
    assert_eq!(u.state, SessionActivityState::RequiresAction);
    assert_eq!(u.background_task_count, Count::new(2));
    round_trip::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "idle", "backgroundTaskCount": 0}),
    );
    rejects::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "running"}),
        &[("/backgroundTaskCount", "required")],
    );
    rejects::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "busy", "backgroundTaskCount": -1}),
        &[
            ("/state", "one-of"),
            ("/backgroundTaskCount", "non-negative-integer"),
        ],
    );
}

#[test]
fn session_history_read_request() {
    round_trip::<SessionHistoryReadRequest>(json!({"sessionId": "s"}));
    rejects::<SessionHistoryReadRequest>(json!({}), &[("/sessionId", "required")]);
}

#[test]
fn schemas_describe_unions_and_maps() {
    let s = serde_json::to_value(schemars::schema_for!(SessionConfig)).unwrap();
    let values = &s["properties"]["configOptionValues"];
    assert_eq!(values["type"], "object");
    assert_eq!(
        values["additionalProperties"]["type"],
        json!(["string", "boolean"])
    );

    let s = serde_json::to_value(schemars::schema_for!(GoalControlRequest)).unwrap();
    assert_eq!(s["oneOf"].as_array().unwrap().len(), 4);

    let s = serde_json::to_value(schemars::schema_for!(SteerRequest)).unwrap();
    assert_eq!(s["required"], json!(["sessionId", "prompt", "steerId"]));
}
