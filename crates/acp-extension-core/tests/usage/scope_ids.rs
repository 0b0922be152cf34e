//! scope ids and namespaces

use super::*;

#[test]
fn scope_ids_are_limited_to_256_utf16_code_units() {
    assert!(SessionUsageAccumulator::with_scope_id("").is_ok());
    assert!(SessionUsageAccumulator::with_scope_id("x".repeat(256)).is_ok());
    let err = SessionUsageAccumulator::with_scope_id("x".repeat(257)).unwrap_err();
    assert_eq!(err.length, 257);
    assert!(err.to_string().contains("at most 256"), "{err}");
    // "🚀" is two UTF-16 code units, as JavaScript's `length` counts it.
    assert!(SessionUsageAccumulator::with_scope_id("🚀".repeat(128)).is_ok());
    let err = SessionUsageAccumulator::with_scope_id("🚀".repeat(129)).unwrap_err();
    assert_eq!(err.length, 258);
}

#[test]
fn the_scope_id_is_written_in_the_chosen_namespace() {
    let mut acc = SessionUsageAccumulator::with_scope_id("id-1")
        .unwrap()
        .with_namespace(Namespace::Ua);
    let out = acc.update("s", "op", &one("m", row(1, None))).unwrap();
    assert_eq!(
        to_value(&out)["_meta"],
        json!({"ua": {"usageScopeId": "id-1"}})
    );
    assert_eq!(out.usage_scope_id(), Some("id-1"));
}

#[test]
fn usage_scope_id_reads_ua_before_lody() {
    let base = json!({"sessionId": "s", "usage": {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0}});
    let with_meta = |meta: Value| {
        let mut v = base.clone();
        v["_meta"] = meta;
        parse::<SessionUsageUpdate>(v)
    };
    assert_eq!(
        with_meta(json!({"lody": {"usageScopeId": "l"}})).usage_scope_id(),
        Some("l")
    );
    assert_eq!(
        with_meta(json!({"lody": {"usageScopeId": "l"}, "ua": {"usageScopeId": "u"}}))
            .usage_scope_id(),
        Some("u")
    );
    // The id is a string of at most 256 UTF-16 units; anything else breaks the type.
    let mut v = base.clone();
    v["_meta"] = json!({"lody": {"usageScopeId": 5}});
    assert!(serde_json::from_value::<SessionUsageUpdate>(v.clone()).is_err());
    v["_meta"] = json!({"ua": {"usageScopeId": "x".repeat(257)}});
    let violations = acp_extension_core::violation::check::<SessionUsageUpdate>(&v);
    assert_eq!(violations[0].pointer, "/_meta/ua/usageScopeId");
    assert_eq!(violations[0].rule.id(), "max-length");
    assert_eq!(with_meta(json!({"other": 1})).usage_scope_id(), None);
    assert_eq!(
        parse::<SessionUsageUpdate>(base.clone()).usage_scope_id(),
        None
    );

    let mut update = with_meta(json!({"other": 1, "lody": {"turnId": "t"}}));
    update.set_usage_scope_id(Namespace::Lody, "new");
    assert_eq!(
        to_value(&update)["_meta"],
        json!({"other": 1, "lody": {"turnId": "t", "usageScopeId": "new"}})
    );
}

#[test]
fn accumulator_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<SessionUsageAccumulator>();
    assert_send_sync::<SessionUsageUpdate>();
}
