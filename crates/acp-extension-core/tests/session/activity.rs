//! activity

use super::*;

#[test]
fn activity_round_trips() {
    let a: ActivityMeta = round_trip(json!({"version": 1, "kind": "context_compaction"}));
    assert_eq!(a.kind, ActivityKind::ContextCompaction);
    assert_eq!(a.automatic, None);

    let a: ActivityMeta = round_trip(json!({
        "version": 1, "kind": "retry", "automatic": true,
        "usedTokensBefore": 120000, "usedTokensAfter": 30000.5,
        "durationMs": 1500, "failureReason": "overloaded", "x": [1]
    }));
    assert_eq!(a.kind, ActivityKind::Retry);
    assert_eq!(a.used_tokens_after, Some(num(30000.5)));
    assert_eq!(a.extra()["x"], json!([1]));
}

#[test]
fn activity_builder_writes_the_wire_shape() {
    let a = ActivityMeta::new(ActivityKind::ContextCompaction)
        .automatic(true)
        .duration_ms(num(12.0));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"version":1,"kind":"context_compaction","automatic":true,"durationMs":12}"#
    );
}

#[test]
fn activity_rejections() {
    rejects::<ActivityMeta>(json!({"kind": "retry"}), &[("/version", "required")]);
    rejects::<ActivityMeta>(
        json!({"version": 2, "kind": "retry"}),
        &[("/version", "literal")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "compaction"}),
        &[("/kind", "one-of")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "retry", "automatic": null}),
        &[("/automatic", "not-null")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "retry", "usedTokensBefore": -1}),
        &[("/usedTokensBefore", "finite-non-negative")],
    );
    rejects::<ActivityMeta>(json!([]), &[("", "type")]);
}
