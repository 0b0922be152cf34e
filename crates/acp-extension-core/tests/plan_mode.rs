//! Plan mode (contract §11), against `vectors/plan-mode.json`.

mod common;

use acp_extension_core::plan_mode::*;
use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SetSessionConfigOptionRequest,
};
use serde_json::{Value, json};

fn vectors() -> Value {
    serde_json::from_str(&common::read("vectors/plan-mode.json")).unwrap()
}

#[test]
fn constants() {
    assert_eq!(PLAN_MODE_CONFIG_ID, "plan_mode");
    assert_eq!(PLAN_MODE_NAME, "Plan");
    assert_eq!(
        PLAN_MODE_DESCRIPTION,
        "Plan before implementing; permissions are controlled separately."
    );
}

#[test]
fn option_matches_the_vectors_exactly() {
    let vectors = vectors();
    for (key, current) in [("true", true), ("false", false)] {
        let expected = &vectors[key];
        let option = plan_mode_config_option(current);
        assert_eq!(&serde_json::to_value(&option).unwrap(), expected, "{key}");

        // Exactly these five keys, in this order.
        let text = serde_json::to_string(&option).unwrap();
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["id", "name", "description", "type", "currentValue"]);
        assert_eq!(text, serde_json::to_string(expected).unwrap());

        // The vector parses back into the same SDK value.
        let parsed: SessionConfigOption = serde_json::from_value(expected.clone()).unwrap();
        assert_eq!(parsed, option);
        assert!(
            matches!(parsed.kind, SessionConfigKind::Boolean(ref b) if b.current_value == current)
        );
    }
}

#[test]
fn reads_plan_mode_from_set_config_option() {
    let req = |v: Value| serde_json::from_value::<SetSessionConfigOptionRequest>(v).unwrap();

    let on =
        req(json!({"sessionId": "s", "configId": "plan_mode", "type": "boolean", "value": true}));
    assert_eq!(plan_mode_value(&on), Some(true));
    let off =
        req(json!({"sessionId": "s", "configId": "plan_mode", "type": "boolean", "value": false}));
    assert_eq!(plan_mode_value(&off), Some(false));

    // Plan mode takes boolean values only.
    let id_value = req(json!({"sessionId": "s", "configId": "plan_mode", "value": "true"}));
    assert_eq!(plan_mode_value(&id_value), None);
    // Other options are not plan mode.
    let other =
        req(json!({"sessionId": "s", "configId": "fast", "type": "boolean", "value": true}));
    assert_eq!(plan_mode_value(&other), None);

    let built = SetSessionConfigOptionRequest::new("s", PLAN_MODE_CONFIG_ID, true);
    assert_eq!(plan_mode_value(&built), Some(true));
}
