//! Method names, normalization and typed dispatch in both namespaces.

mod common;

use acp_extension_core::Namespace;
use acp_extension_core::methods::{
    self, ExtensionNotification, ExtensionRequest, ExtensionResponse, MethodKind, method_kind,
    normalize_method,
};
use serde_json::json;

#[test]
fn normalize_matches_every_reference_vector() {
    let vectors = common::jsonl("vectors/method-normalize.jsonl");
    assert!(vectors.len() >= 15);
    for v in vectors {
        let input = v["input"].as_str().unwrap();
        assert_eq!(
            normalize_method(input),
            v["output"].as_str().unwrap(),
            "input {input:?}"
        );
    }
}

#[test]
fn every_method_is_named_in_both_namespaces() {
    use acp_extension_core::Namespace;
    use methods::ContractMethod;
    assert_eq!(
        ContractMethod::SubagentEvent.method(Namespace::Lody),
        "_lody/subagents/event"
    );
    assert_eq!(
        ContractMethod::SubagentEvent.method(Namespace::Ua),
        "_ua/subagents/event"
    );
    assert_eq!(
        ContractMethod::McpAppsResourceRead.method(Namespace::Lody),
        "_lody/mcp_apps/resource/read"
    );
    assert_eq!(
        ContractMethod::SessionActivityUpdate.method(Namespace::Ua),
        "_ua/session/activity_update"
    );
    // Each row's full names are its path behind the namespace's prefix,
    // and lead back to the row.
    for m in methods::ALL_METHODS {
        assert_eq!(m.method.path(), m.path);
        for ns in Namespace::ALL {
            let full = m.method.method(ns);
            assert_eq!(full, format!("_{}/{}", ns.key(), m.path));
            assert_eq!(methods::contract_method(full), Some(m.method));
        }
    }
    // 10 requests and 5 notifications: the repository's 14 plus the seed's activity update.
    let requests = methods::ALL_METHODS
        .iter()
        .filter(|m| m.kind == MethodKind::Request)
        .count();
    assert_eq!((requests, methods::ALL_METHODS.len()), (10, 15));
}

#[test]
fn method_kind_reads_every_spelling() {
    for m in [
        "_lody/session/steer",
        "_ua/session/steer",
        "lody/session/steer",
        "ua/session/steer",
    ] {
        assert_eq!(method_kind(m), Some(MethodKind::Request), "{m}");
    }
    assert_eq!(
        method_kind("_lody/session/steer_applied"),
        Some(MethodKind::Notification)
    );
    assert_eq!(method_kind("session/prompt"), None);
    assert_eq!(method_kind("_lody/unknown"), None);
}

#[test]
fn requests_parse_in_either_namespace_and_serialize_back() {
    let params = json!({"sessionId": "s", "steerId": "st-1", "prompt": [{"type": "text", "text": "also run tests"}]});
    for (method, ns) in [
        ("_lody/session/steer", Namespace::Lody),
        ("ua/session/steer", Namespace::Ua),
    ] {
        let (got_ns, req) = ExtensionRequest::parse(method, &params).unwrap().unwrap();
        assert_eq!(got_ns, ns);
        assert_eq!(req.path(), "session/steer");
        assert_eq!(req.params(), params);
    }
}

#[test]
fn non_extension_methods_are_none_and_bad_params_list_every_violation() {
    assert_eq!(
        ExtensionRequest::parse("session/prompt", &json!({})).unwrap(),
        None
    );
    assert_eq!(
        ExtensionRequest::parse("_lody/nope", &json!({})).unwrap(),
        None
    );
    assert_eq!(
        ExtensionNotification::parse("_lody/session/steer", &json!({})).unwrap(),
        None
    );

    let err = ExtensionRequest::parse("_lody/subagents/output", &json!({"taskId": 5, "tail": -1}))
        .unwrap_err();
    let found: Vec<(&str, &str)> = err
        .violations
        .iter()
        .map(|v| (v.pointer.as_str(), v.rule.id()))
        .collect();
    assert!(found.contains(&("/sessionId", "required")), "{found:?}");
    assert!(found.contains(&("/taskId", "type")), "{found:?}");
    assert!(
        found.contains(&("/tail", "finite-non-negative")),
        "{found:?}"
    );
    let rpc = err.to_rpc_error();
    assert_eq!(i32::from(rpc.code), -32602);
    assert!(rpc.message.contains("/sessionId"), "{}", rpc.message);
}

#[test]
fn notifications_parse_typed() {
    let (ns, n) = ExtensionNotification::parse(
        "_ua/session/activity_update",
        &json!({"version": 1, "sessionId": "s", "state": "running", "backgroundTaskCount": 2}),
    )
    .unwrap()
    .unwrap();
    assert_eq!(ns, Namespace::Ua);
    assert!(matches!(n, ExtensionNotification::SessionActivityUpdate(_)));
}

#[test]
fn responses_parse_by_method() {
    let r = ExtensionResponse::parse("_lody/session/goal", &json!({"goal": null})).unwrap();
    assert_eq!(r.to_json(), json!({"goal": null}));
    assert!(ExtensionResponse::parse("_lody/session/goal", &json!({})).is_err());
    let r = ExtensionResponse::parse("subagents/cancel", &json!({})).unwrap();
    assert_eq!(r.to_json(), json!({}));
}
