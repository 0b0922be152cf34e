//! `validate`: kinds, whole messages, pointers and rules, hostile input.

use acp_extension_core::session::NoticeMeta;
use acp_extension_core::session::SubagentOutputResponse;
use acp_extension_core::subagent_events::SubagentEvent;
use acp_extension_core::usage::ModelUsage;
use acp_extension_core::validate::{
    Kind, is_valid_slice, validate_slice, validate_str, validate_value,
};
use serde_json::json;

fn found(kind: Kind, v: serde_json::Value) -> Vec<(String, &'static str)> {
    validate_value(kind, &v)
        .violations
        .into_iter()
        .map(|v| (v.pointer, v.rule.id()))
        .collect()
}

#[test]
fn every_kind_has_a_unique_name_and_round_trips() {
    let mut names = std::collections::HashSet::new();
    for &k in Kind::ALL {
        assert!(names.insert(k.name()), "duplicate {}", k.name());
        assert_eq!(k.name().parse::<Kind>().unwrap(), k);
        assert!(
            k.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{}",
            k.name()
        );
    }
    assert!("subagent_event".parse::<Kind>().is_err());
}

#[test]
fn reports_every_violation_not_just_the_first() {
    let v = json!({"version": 2, "sessionId": "", "runId": "r", "type": "snapshot",
        "snapshot": {"state": "running", "summary": null, "outputIncomplete": false,
            "support": {"stream": ["text", "video"], "progress": "no", "outputRead": "none", "cancel": false}}});
    let got = found(Kind::of::<SubagentEvent>(), v);
    for want in [
        ("/version", "literal"),
        ("/sessionId", "non-empty"),
        ("/snapshot/summary", "not-null"),
        ("/snapshot/outputIncomplete", "literal"),
        ("/snapshot/support/stream/1", "one-of"),
        ("/snapshot/support/progress", "type"),
    ] {
        assert!(
            got.contains(&(want.0.to_string(), want.1)),
            "missing {want:?} in {got:?}"
        );
    }
}

#[test]
fn auto_selects_the_kind_from_the_method() {
    let ok = json!({"jsonrpc": "2.0", "method": "_ua/session/steer_applied", "params": {"sessionId": "s", "steerId": "x"}});
    assert_eq!(found(Kind::AUTO, ok), vec![]);
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "_lody/rate_limits/get", "params": {"modelId": 7}});
    assert_eq!(
        found(Kind::AUTO, bad),
        vec![("/params/modelId".to_string(), "type")]
    );
    let unknown = json!({"jsonrpc": "2.0", "method": "_lody/session/teleport", "params": {}});
    assert_eq!(
        found(Kind::AUTO, unknown),
        vec![("/method".to_string(), "unknown-extension-method")]
    );
}

#[test]
fn auto_names_what_is_no_message_instead_of_calling_it_valid() {
    let no_message = |v| found(Kind::AUTO, v);
    // No `method`, `result` or `error`: nothing to classify it by.
    assert_eq!(
        no_message(json!({"foo": 1})),
        vec![(String::new(), "not-a-message")]
    );
    assert_eq!(
        no_message(json!({})),
        vec![(String::new(), "not-a-message")]
    );
    // A `tap --record` line is named as one.
    let record = json!({"dir": "c2a", "t": 0.5, "msg": {"jsonrpc": "2.0", "method": "x"}});
    let report = validate_value(Kind::AUTO, &record);
    assert_eq!(report.violations.len(), 1, "{report:?}");
    assert!(
        report.violations[0]
            .message()
            .contains("`tap --record` line"),
        "{report:?}"
    );
    // The envelope's own rules, as the connection follower applies them.
    assert_eq!(
        no_message(json!({"jsonrpc": "2.0", "id": 1})),
        vec![(String::new(), "not-a-message")]
    );
    assert_eq!(
        no_message(json!({"jsonrpc": "2.0", "id": [1], "result": {}})),
        vec![("/id".to_string(), "not-a-message")]
    );
    assert_eq!(
        no_message(json!({"jsonrpc": "2.0", "method": 7})),
        vec![("/method".to_string(), "not-a-message")]
    );
    // Responses and errors are messages; a bare subagent event is judged
    // as one.
    assert_eq!(
        no_message(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}})),
        vec![]
    );
    assert_eq!(
        no_message(json!({"version": 1, "sessionId": "", "runId": "r", "type": "heartbeat"})),
        found(
            Kind::of::<SubagentEvent>(),
            json!({"version": 1, "sessionId": "", "runId": "r", "type": "heartbeat"})
        )
    );
    assert!(
        !no_message(json!({"version": 1, "sessionId": "", "runId": "r", "type": "heartbeat"}))
            .is_empty()
    );
}

#[test]
fn auto_checks_meta_sections_on_standard_messages_by_context() {
    let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
        "sessionUpdate": "session_info_update", "title": "T",
        "_meta": {"lody": {"titleSource": "model"}, "ua": {"goal": {"objective": "x"}}, "other": {"titleSource": 1}}}}});
    assert_eq!(
        found(Kind::AUTO, update),
        vec![
            (
                "/params/update/_meta/ua/goal/status".to_string(),
                "required"
            ),
            (
                "/params/update/_meta/lody/titleSource".to_string(),
                "one-of"
            ),
        ]
    );
    // Under agentCapabilities, `goal` is the goal capability, not a snapshot.
    let init = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {
        "goal": {"version": 1, "actions": ["set", "teleport"]}, "usage": {"version": 1}}}}}});
    assert_eq!(
        found(Kind::AUTO, init),
        vec![(
            "/result/agentCapabilities/_meta/lody/goal/actions/1".to_string(),
            "one-of"
        )]
    );
}

#[test]
fn capabilities_kinds_accept_the_whole_object_or_the_extension_object() {
    let whole = json!({"loadSession": true, "_meta": {"ua": {"usage": {"version": 1}}, "lody": {"usage": {"version": "1"}}}});
    assert_eq!(
        found(Kind::AGENT_CAPABILITIES, whole),
        vec![("/_meta/lody/usage/version".to_string(), "literal")]
    );
    assert_eq!(
        found(
            Kind::CLIENT_CAPABILITIES,
            json!({"elicitation": {"version": 1, "answerNotes": true}})
        ),
        vec![]
    );
    assert_eq!(
        found(
            Kind::CLIENT_CAPABILITIES,
            json!({"elicitation": {"version": 1, "answerNotes": false}})
        ),
        vec![("/elicitation/answerNotes".to_string(), "literal")]
    );
}

#[test]
fn hostile_input_is_a_violation_never_a_panic() {
    let deep = "[".repeat(100_000);
    for kind in Kind::ALL.iter().copied() {
        for input in [
            &b"\xff\xfe"[..],
            b"",
            b"{",
            b"null",
            b"[]",
            b"1e999",
            deep.as_bytes(),
            b"{\"a\":1}{\"b\":2}",
        ] {
            let r = validate_slice(kind, input);
            let shown = String::from_utf8_lossy(&input[..input.len().min(20)]).into_owned();
            assert!(!r.is_valid(), "{kind} accepted {shown:?}");
            assert!(
                !is_valid_slice(kind, input),
                "{kind} fast path accepted {shown:?}"
            );
        }
    }
    // Duplicate keys: the last one wins, as in JSON.parse.
    let dup = r#"{"inputTokens":-1,"inputTokens":1,"outputTokens":2,"cacheReadInputTokens":3}"#;
    assert!(validate_str(Kind::of::<ModelUsage>(), dup).is_valid());
    // A huge but valid value.
    let big = format!(r#"{{"sessionId":"s","output":"{}"}}"#, "x".repeat(8 << 20));
    assert!(validate_str(Kind::of::<SubagentOutputResponse>(), &big).is_valid());
}

#[test]
fn syntax_errors_name_the_problem() {
    let r = validate_str(Kind::of::<NoticeMeta>(), "{\"level\": \"info\",");
    assert_eq!(r.violations.len(), 1);
    assert_eq!(r.violations[0].rule.id(), "syntax");
    assert_eq!(r.violations[0].pointer, "");
}

#[test]
fn capabilities_meta_may_be_null_but_not_a_namespace_section() {
    // ACP types `_meta` as object-or-null; the contract's sections are optional, never null.
    let null_meta = json!({"loadSession": true, "_meta": null});
    assert_eq!(found(Kind::AGENT_CAPABILITIES, null_meta), vec![]);
    assert_eq!(
        found(
            Kind::CLIENT_CAPABILITIES,
            json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}, "ua": null}})
        ),
        vec![("/_meta/ua".to_string(), "not-null")]
    );
}

#[test]
fn a_one_of_message_quotes_each_allowed_string() {
    use acp_extension_core::violation::Rule;
    assert_eq!(
        Rule::OneOf(&["text", "image", "resource_link"]).to_string(),
        r#"must be one of "text", "image", "resource_link""#
    );
    assert_eq!(Rule::OneOf(&["low"]).to_string(), r#"must be one of "low""#);
    // The message a record of an invalid content block carries.
    let bad = json!({"version": 1, "sessionId": "s", "runId": "r", "type": "output",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "video"}}});
    let violations = acp_extension_core::validate::check::<
        acp_extension_core::subagent_events::SubagentEvent,
    >(&bad);
    assert_eq!(
        violations
            .iter()
            .map(|v| (v.pointer.as_str(), v.message()))
            .collect::<Vec<_>>(),
        [(
            "/update/content/type",
            r#"must be one of "text", "image", "audio", "resource_link", "resource""#.to_owned()
        )]
    );
}
