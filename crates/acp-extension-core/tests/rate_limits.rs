//! Rate limit types (contract §8): round trips, absent versus `null`, and
//! the contract's rejections.

mod common;

use common::{rejects, round_trip};

use acp_extension_core::rate_limits::*;
use acp_extension_core::wire::{EpochSeconds, MaybeUndefined, Percent};
use serde_json::{Value, json};

fn window() -> Value {
    json!({"usedPercent": 42, "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1710018000})
}

#[test]
fn window_round_trips_with_and_without_label() {
    // Version-1 payloads without `label` stay valid.
    let w: RateLimitWindow = round_trip(window());
    assert_eq!(w.label, None);
    assert_eq!(w.used_percent.get(), 42.0);
    assert_eq!(
        w.window_duration_seconds,
        Some(acp_extension_core::wire::NonNegF64::new(18000.0).unwrap())
    );

    let w: RateLimitWindow = round_trip(json!({
        "label": "Fable", "usedPercent": 99.5,
        "windowDurationSeconds": null, "resetsAtEpochSeconds": null
    }));
    assert_eq!(w.label.as_deref(), Some("Fable"));
    assert_eq!(w.window_duration_seconds, None);
    assert_eq!(w.resets_at_epoch_seconds, None);

    // Fractional epoch seconds are legal.
    round_trip::<RateLimitWindow>(json!({
        "usedPercent": 0, "windowDurationSeconds": 604800, "resetsAtEpochSeconds": 1710000000.75
    }));
}

#[test]
fn window_builder_writes_required_nulls() {
    let w = RateLimitWindow::new(Percent::new(10.0).unwrap(), None, None).label("Weekly");
    assert_eq!(
        serde_json::to_string(&w).unwrap(),
        r#"{"usedPercent":10,"windowDurationSeconds":null,"resetsAtEpochSeconds":null,"label":"Weekly"}"#
    );
}

#[test]
fn window_rejections() {
    // req|null keys must be present.
    rejects::<RateLimitWindow>(
        json!({"usedPercent": 1}),
        &[
            ("/windowDurationSeconds", "required"),
            ("/resetsAtEpochSeconds", "required"),
        ],
    );
    rejects::<RateLimitWindow>(
        json!({"usedPercent": null, "windowDurationSeconds": null, "resetsAtEpochSeconds": null}),
        &[("/usedPercent", "type")],
    );
    rejects::<RateLimitWindow>(
        json!({"usedPercent": "50", "windowDurationSeconds": -1, "resetsAtEpochSeconds": null}),
        &[
            ("/usedPercent", "type"),
            ("/windowDurationSeconds", "finite-non-negative"),
        ],
    );
    // `label` is opt: null is not allowed.
    rejects::<RateLimitWindow>(
        json!({"label": null, "usedPercent": 1, "windowDurationSeconds": null, "resetsAtEpochSeconds": null}),
        &[("/label", "not-null")],
    );
}

fn wallet() -> Value {
    json!({
        "balanceCents": -250, "totalCents": 10000,
        "monthlyChargeLimitEnabled": true, "monthlyChargeLimitCents": 5000,
        "monthlyUsedCents": 1234.5, "currency": "USD"
    })
}

#[test]
fn wallet_allows_negative_balances() {
    let w: RateLimitWallet = round_trip(wallet());
    assert_eq!(w.balance_cents.get(), -250.0);
    assert!(w.monthly_charge_limit_enabled);
    assert_eq!(w.currency, "USD");
}

#[test]
fn wallet_rejections() {
    let mut v = wallet();
    v.as_object_mut().unwrap().remove("currency");
    v["monthlyChargeLimitEnabled"] = json!("yes");
    rejects::<RateLimitWallet>(
        v,
        &[
            ("/monthlyChargeLimitEnabled", "type"),
            ("/currency", "required"),
        ],
    );
}

#[test]
fn scope() {
    let s: RateLimitScope = round_trip(json!({"providerId": "openai"}));
    assert_eq!(s.account_id, None);
    round_trip::<RateLimitScope>(json!({"providerId": "openai", "accountId": "a", "modelId": "m"}));
    rejects::<RateLimitScope>(json!({"accountId": "a"}), &[("/providerId", "required")]);
    rejects::<RateLimitScope>(
        json!({"providerId": "p", "modelId": null}),
        &[("/modelId", "not-null")],
    );
}

#[test]
fn rate_limit_names_and_wallet_are_optional_and_nullable() {
    let base = json!({"limitId": "weekly", "scope": {"providerId": "p"}, "windows": []});
    let r: RateLimit = round_trip(base.clone());
    assert_eq!(r.limit_name, MaybeUndefined::Undefined);
    assert_eq!(r.wallet, MaybeUndefined::Undefined);

    let mut v = base.clone();
    v["limitName"] = json!(null);
    v["planName"] = json!(null);
    v["wallet"] = json!(null);
    let r: RateLimit = round_trip(v);
    assert_eq!(r.limit_name, MaybeUndefined::Null);
    assert_eq!(r.plan_name, MaybeUndefined::Null);
    assert_eq!(r.wallet, MaybeUndefined::Null);

    let mut v = base;
    v["limitName"] = json!("Weekly");
    v["planName"] = json!("Pro");
    v["wallet"] = wallet();
    v["windows"] = json!([window()]);
    let r: RateLimit = round_trip(v);
    assert_eq!(r.plan_name, MaybeUndefined::Value("Pro".to_owned()));
    assert!(matches!(r.wallet, MaybeUndefined::Value(ref w) if w.currency == "USD"));
}

#[test]
fn windows_are_never_merged() {
    // Two identical windows are two concurrent meters and both survive.
    let v = json!({
        "limitId": "l", "scope": {"providerId": "p"},
        "windows": [window(), window(), {"label": "Opus", "usedPercent": 42,
                    "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1710018000}]
    });
    let r: RateLimit = round_trip(v);
    assert_eq!(r.windows.len(), 3);
    assert_eq!(r.windows[0], r.windows[1]);
    assert_eq!(r.windows[2].label.as_deref(), Some("Opus"));
}

#[test]
fn rate_limit_rejections() {
    rejects::<RateLimit>(
        json!({"limitId": "l", "scope": {}}),
        &[("/scope/providerId", "required"), ("/windows", "required")],
    );
    rejects::<RateLimit>(
        json!({"limitId": "l", "scope": {"providerId": "p"}, "windows": [{"usedPercent": 1}],
               "limitName": 5, "wallet": {}}),
        &[
            ("/windows/0/windowDurationSeconds", "required"),
            ("/windows/0/resetsAtEpochSeconds", "required"),
            ("/limitName", "type"),
            ("/wallet/balanceCents", "required"),
            ("/wallet/totalCents", "required"),
            ("/wallet/monthlyChargeLimitEnabled", "required"),
            ("/wallet/monthlyChargeLimitCents", "required"),
            ("/wallet/monthlyUsedCents", "required"),
            ("/wallet/currency", "required"),
        ],
    );
}

#[test]
fn snapshot() {
    let s: RateLimitsSnapshot = round_trip(json!({"rateLimits": []}));
    assert_eq!(s.fetched_at_epoch_seconds, None);
    let s: RateLimitsSnapshot = round_trip(json!({
        "rateLimits": [{"limitId": "l", "scope": {"providerId": "p"}, "windows": [window()]}],
        "fetchedAtEpochSeconds": 1710000000.5
    }));
    assert_eq!(s.rate_limits[0].windows.len(), 1);
    assert_eq!(
        s.fetched_at_epoch_seconds,
        Some(EpochSeconds::new(1710000000.5).unwrap())
    );
    rejects::<RateLimitsSnapshot>(json!({}), &[("/rateLimits", "required")]);
    rejects::<RateLimitsSnapshot>(
        json!({"rateLimits": [], "fetchedAtEpochSeconds": null}),
        &[("/fetchedAtEpochSeconds", "not-null")],
    );
    rejects::<RateLimitsSnapshot>(
        json!({"rateLimits": [], "fetchedAtEpochSeconds": -5}),
        &[("/fetchedAtEpochSeconds", "finite-non-negative")],
    );
}

#[test]
fn get_request_filters_are_all_optional() {
    let r: RateLimitsGetRequest = round_trip(json!({}));
    assert_eq!(r.session_id, None);
    let r: RateLimitsGetRequest =
        round_trip(json!({"sessionId": "s", "accountId": "a", "modelId": "m"}));
    assert_eq!(r.model_id.as_deref(), Some("m"));
    assert_eq!(
        serde_json::to_string(&RateLimitsGetRequest::new().session_id("s")).unwrap(),
        r#"{"sessionId":"s"}"#
    );
    rejects::<RateLimitsGetRequest>(json!({"sessionId": null}), &[("/sessionId", "not-null")]);
    rejects::<RateLimitsGetRequest>(json!([]), &[("", "type")]);
}
