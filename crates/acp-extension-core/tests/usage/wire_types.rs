//! wire types

use super::*;

#[test]
fn model_usage_round_trips_and_keeps_unknown_keys() {
    let full = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
        "cacheCreationInputTokens": 4, "reasoningOutputTokens": 5, "webSearchRequests": 6,
        "costUSD": 0.125, "contextWindow": 200000, "x-vendor": {"a": [1]}});
    let minimal = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0});
    for v in [full, minimal] {
        assert!(check::<ModelUsage>(&v).is_empty());
        let parsed: ModelUsage = parse(v.clone());
        assert_eq!(serde_json::to_value(&parsed).unwrap(), v);
    }
}

#[test]
fn integral_floats_are_counts_and_are_written_as_integers() {
    let v = json!({"inputTokens": 100.0, "outputTokens": 0, "cacheReadInputTokens": 1e3, "contextWindow": 8.0});
    assert!(check::<ModelUsage>(&v).is_empty());
    let parsed: ModelUsage = parse(v);
    assert_eq!(parsed.input_tokens.get(), 100);
    assert_eq!(
        serde_json::to_string(&parsed).unwrap(),
        r#"{"inputTokens":100,"outputTokens":0,"cacheReadInputTokens":1000,"contextWindow":8}"#
    );
}

#[test]
fn model_usage_rejections_name_pointer_and_rule() {
    let base = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3});
    let cases = [
        ("inputTokens", json!(-1), "non-negative-integer"),
        ("inputTokens", json!(1.5), "non-negative-integer"),
        ("inputTokens", json!(1e20), "non-negative-integer"),
        ("inputTokens", json!(null), "type"),
        ("outputTokens", json!("2"), "type"),
        ("cacheCreationInputTokens", json!(null), "not-null"),
        ("reasoningOutputTokens", json!(-0.5), "non-negative-integer"),
        ("webSearchRequests", json!(true), "type"),
        ("costUSD", json!(null), "not-null"),
        ("costUSD", json!("0.1"), "type"),
        ("contextWindow", json!(-5), "non-negative-integer"),
    ];
    for (key, value, rule) in cases {
        let mut v = base.clone();
        v[key] = value.clone();
        assert_eq!(
            violations(check::<ModelUsage>, v.clone()),
            [(format!("/{key}"), rule)],
            "{key}: {value}"
        );
        assert!(
            serde_json::from_value::<ModelUsage>(v).is_err(),
            "{key}: {value}"
        );
    }
    for key in ["inputTokens", "outputTokens", "cacheReadInputTokens"] {
        let mut v = base.clone();
        v.as_object_mut().unwrap().remove(key);
        assert_eq!(
            violations(check::<ModelUsage>, v.clone()),
            [(format!("/{key}"), "required")]
        );
        assert!(serde_json::from_value::<ModelUsage>(v).is_err());
    }
    // Every violation is collected, not only the first.
    let bad = json!({"inputTokens": -1, "outputTokens": null, "costUSD": null});
    assert_eq!(
        violations(check::<ModelUsage>, bad),
        [
            ("/inputTokens".to_owned(), "non-negative-integer"),
            ("/outputTokens".to_owned(), "type"),
            ("/cacheReadInputTokens".to_owned(), "required"),
            ("/costUSD".to_owned(), "not-null"),
        ]
    );
    let err = serde_json::from_value::<ModelUsage>(json!({"inputTokens": -1})).unwrap_err();
    assert!(
        err.to_string().contains("must be a non-negative integer"),
        "{err}"
    );
}

#[test]
fn session_usage_update_round_trips_absent_and_null() {
    let zero = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0});
    let full = json!({"sessionId": "s", "usage": zero, "modelUsage": {"b": zero, "a": zero},
        "delta": {"usage": zero, "modelUsage": {"a": zero}, "extra": 1},
        "_meta": {"lody": {"usageScopeId": "x"}}, "more": true});
    let minimal = json!({"sessionId": "s", "usage": zero});
    for v in [full, minimal] {
        assert!(check::<SessionUsageUpdate>(&v).is_empty());
        let parsed: SessionUsageUpdate = parse(v.clone());
        // Value equality ignores key order; compare the text for it too.
        assert_eq!(serde_json::to_string(&parsed).unwrap(), v.to_string());
    }
    let mut v = minimal_update();
    v["modelUsage"] = Value::Null;
    v["delta"] = json!({"usage": zero});
    v["_meta"] = Value::Null;
    assert_eq!(
        violations(check::<SessionUsageUpdate>, v.clone()),
        [
            ("/modelUsage".to_owned(), "not-null"),
            ("/delta/modelUsage".to_owned(), "required"),
            ("/_meta".to_owned(), "not-null"),
        ]
    );
    assert!(serde_json::from_value::<SessionUsageUpdate>(v).is_err());
    let v = json!({"sessionId": 1, "usage": {"inputTokens": 0, "outputTokens": 0}, "modelUsage": {"m": {}}});
    assert_eq!(
        violations(check::<SessionUsageUpdate>, v),
        [
            ("/sessionId".to_owned(), "type"),
            ("/usage/cacheReadInputTokens".to_owned(), "required"),
            ("/modelUsage/m/inputTokens".to_owned(), "required"),
            ("/modelUsage/m/outputTokens".to_owned(), "required"),
            ("/modelUsage/m/cacheReadInputTokens".to_owned(), "required"),
        ]
    );
    let d: UsageDelta = parse(json!({"usage": zero, "modelUsage": {}}));
    assert!(d.model_usage.is_empty());
}

fn minimal_update() -> Value {
    json!({"sessionId": "s", "usage": {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0}})
}
