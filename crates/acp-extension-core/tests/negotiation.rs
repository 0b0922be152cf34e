//! Negotiation (contract-facts §2, §12.3, §17.2 Test A 1–3, §18 "supports"):
//! reading advertisements per feature and deciding what is active.

mod common;

use acp_extension_core::capabilities::{
    ConfigPolicy, Feature, FeatureOptions, GoalAction, SteeringTransport,
};
use acp_extension_core::namespace::Namespace;
use acp_extension_core::negotiation::{
    Advertisement, ProblemKind, Side, initialize_capabilities, negotiate, supports_subagent_events,
};
use acp_extension_core::wire::True;
use serde_json::{Value, json};

fn corpus(path: &str) -> String {
    common::read(&format!("corpus/{path}"))
}

fn codex(name: &str) -> Value {
    serde_json::from_str(&corpus(&format!(
        "acp-extension-codex/src____tests____CodexACPAgent__data__{name}.json"
    )))
    .unwrap()
}

fn claude_initialize() -> Value {
    let text = corpus(
        "acp-extension-claude/src__tests__acp-scenarios____snapshots____air__session-setup.jsonl",
    );
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["payload"].clone()
}

fn lody(section: Value) -> Value {
    json!({"_meta": {"lody": section}})
}

// ---- supports_subagent_events ----------------------------------------------

#[test]
fn test_a_negotiation_cases() {
    // §17.2 Test A 1–3.
    assert!(supports_subagent_events(&lody(
        json!({"subagentEvents": {"version": 1}})
    )));
    assert!(!supports_subagent_events(&lody(
        json!({"subagents": {"version": 1}})
    )));
    assert!(!supports_subagent_events(&lody(
        json!({"subagentEvents": {"version": 2}})
    )));
}

#[test]
fn probed_supports_cases() {
    // §18 "supports".
    assert!(!supports_subagent_events(&lody(
        json!({"subagentEvents": {"version": "1"}})
    )));
    assert!(supports_subagent_events(&lody(
        json!({"subagentEvents": {"version": 1, "extra": [true]}})
    )));
    assert!(!supports_subagent_events(&lody(
        json!({"subagentEvents": [1]})
    )));
    assert!(!supports_subagent_events(&json!({"_meta": []})));
    assert!(!supports_subagent_events(
        &json!([{"_meta": {"lody": {"subagentEvents": {"version": 1}}}}])
    ));
    // §12.3: missing version, not an object at each step, the whole message.
    assert!(!supports_subagent_events(&lody(
        json!({"subagentEvents": {}})
    )));
    assert!(!supports_subagent_events(&lody(
        json!({"subagentEvents": null})
    )));
    assert!(!supports_subagent_events(&json!({"_meta": {"lody": []}})));
    assert!(!supports_subagent_events(&json!({"_meta": null})));
    assert!(!supports_subagent_events(&json!({})));
    assert!(!supports_subagent_events(&Value::Null));
    assert!(!supports_subagent_events(&json!({
        "agentCapabilities": lody(json!({"subagentEvents": {"version": 1}}))
    })));
}

#[test]
fn supports_reads_ua_too_and_ua_wins() {
    let ua = |v: Value| json!({"_meta": {"ua": {"subagentEvents": v}}});
    assert!(supports_subagent_events(&ua(json!({"version": 1}))));
    assert!(!supports_subagent_events(&ua(json!({"version": 2}))));
    // Both present: ua decides.
    assert!(!supports_subagent_events(&json!({"_meta": {
        "ua": {"subagentEvents": {"version": 2}},
        "lody": {"subagentEvents": {"version": 1}},
    }})));
    assert!(supports_subagent_events(&json!({"_meta": {
        "ua": {"subagentEvents": {"version": 1}},
        "lody": {"subagentEvents": {"version": 2}},
    }})));
    // ua present without the key: lody is read.
    assert!(supports_subagent_events(&json!({"_meta": {
        "ua": {"usage": {"version": 1}},
        "lody": {"subagentEvents": {"version": 1}},
    }})));
}

#[test]
fn supports_agrees_with_the_advertisement() {
    for caps in [
        lody(json!({"subagentEvents": {"version": 1}})),
        lody(json!({"subagentEvents": {"version": 1.0}})),
        lody(json!({"subagentEvents": {"version": "1"}})),
        json!({"_meta": {"ua": {"subagentEvents": {"version": 1}}, "lody": 7}}),
        json!({"_meta": {"ua": {"subagentEvents": []}, "lody": {"subagentEvents": {"version": 1}}}}),
    ] {
        for side in [Side::Agent, Side::Client] {
            assert_eq!(
                supports_subagent_events(&caps),
                Advertisement::read(&caps, side).supports(Feature::SubagentEvents),
                "{caps}"
            );
        }
    }
}

// ---- Advertisement ----------------------------------------------------------

#[test]
fn real_agent_advertisements_are_clean() {
    let v1 = codex("initialize-v1-routed-response");
    let caps = initialize_capabilities(&v1, Side::Agent).unwrap();
    let adv = Advertisement::read(caps, Side::Agent);
    assert!(adv.is_clean(), "{adv:?}");
    let keys: Vec<Feature> = adv.features.iter().map(|f| f.feature).collect();
    assert_eq!(
        keys,
        [
            Feature::SubagentEvents,
            Feature::SessionTitle,
            Feature::Usage,
            Feature::RateLimits,
            Feature::ForkAtTurn,
            Feature::Steering,
            Feature::Tasks,
            Feature::Subagents,
            Feature::Goal,
            Feature::Compaction,
            Feature::SessionHistory,
            Feature::WorktreeProject,
        ]
    );
    assert!(adv.features.iter().all(|f| f.namespace == Namespace::Lody));
    assert_eq!(adv.get(Feature::Usage).unwrap().raw, json!({"version": 1}));

    // ACP v2 shape: `capabilities._meta.lody`, including mcpApps.
    let v2 = codex("initialize-v2-response");
    let caps = initialize_capabilities(&v2, Side::Agent).unwrap();
    let adv = Advertisement::read(caps, Side::Agent);
    assert!(adv.is_clean(), "{adv:?}");
    assert!(adv.supports(Feature::McpApps));

    let claude = claude_initialize();
    let adv = Advertisement::read(&claude["agentCapabilities"], Side::Agent);
    assert!(adv.is_clean(), "{adv:?}");
    assert_eq!(adv.features.len(), 10);
}

#[test]
fn each_feature_records_its_namespace_ua_winning_per_key() {
    let caps = json!({"_meta": {
        "lody": {"usage": {"version": 2}, "compaction": {"version": 1}},
        "ua": {"usage": {"version": 1}},
    }});
    let adv = Advertisement::read(&caps, Side::Agent);
    let usage = adv.get(Feature::Usage).unwrap();
    assert_eq!(usage.namespace, Namespace::Ua);
    assert!(usage.parsed.is_ok());
    assert_eq!(
        adv.get(Feature::Compaction).unwrap().namespace,
        Namespace::Lody
    );
    assert!(adv.get(Feature::Goal).is_none());
}

#[test]
fn invalid_features_are_not_supported_and_say_why() {
    let caps = lody(json!({
        "usage": {"version": "1"},
        "steering": {"version": 1, "transport": "push", "upstreamTurn": "same", "configPolicy": "active"},
        "goal": {"version": 1, "actions": ["set", "restart"]},
        "tasks": [1],
        "subagents": {"version": 1},
        "compaction": {"version": 1},
    }));
    let adv = Advertisement::read(&caps, Side::Agent);
    let found = |f: Feature| -> Vec<(String, &str)> {
        let a = adv.get(f).unwrap();
        assert!(a.parsed.is_err() && a.options().is_none());
        a.violations()
            .iter()
            .map(|v| (v.pointer.clone(), v.rule.id()))
            .collect()
    };
    assert_eq!(
        found(Feature::Usage),
        [("/_meta/lody/usage/version".to_owned(), "literal")]
    );
    assert_eq!(
        found(Feature::Steering),
        [("/_meta/lody/steering/transport".to_owned(), "one-of")]
    );
    assert_eq!(
        found(Feature::Goal),
        [("/_meta/lody/goal/actions/1".to_owned(), "one-of")]
    );
    assert_eq!(
        found(Feature::Tasks),
        [("/_meta/lody/tasks".to_owned(), "type")]
    );
    assert_eq!(
        found(Feature::Subagents),
        [("/_meta/lody/subagents/lifecycle".to_owned(), "required")]
    );
    assert!(adv.supports(Feature::Compaction));
    assert_eq!(adv.violations().count(), 5);
    // Feature violations are not drift problems.
    assert!(adv.problems.is_empty());
}

#[test]
fn drift_is_reported_as_problems() {
    // The devin adapter injects `elicitation` into agent capabilities; `mcp`
    // is an early key no later version has.
    let agent = json!({"_meta": {"lody": {
        "elicitation": {"version": 1},
        "mcp": {"version": 1, "supported": false},
        "usage": {"version": 1},
    }, "authStatus": {}}});
    let adv = Advertisement::read(&agent, Side::Agent);
    let problems: Vec<(&str, ProblemKind)> = adv
        .problems
        .iter()
        .map(|p| (p.pointer.as_str(), p.kind))
        .collect();
    assert_eq!(
        problems,
        [
            ("/_meta/lody/elicitation", ProblemKind::WrongSide),
            ("/_meta/lody/mcp", ProblemKind::UnknownKey),
        ]
    );
    assert!(adv.problems.iter().all(|p| !p.message.is_empty()));
    assert!(adv.get(Feature::Elicitation).is_none());
    assert!(adv.supports(Feature::Usage));

    // A client advertising agent-only features.
    let client =
        json!({"_meta": {"ua": {"steering": {"version": 1}, "subagentEvents": {"version": 1}}}});
    let adv = Advertisement::read(&client, Side::Client);
    assert_eq!(adv.problems.len(), 1);
    assert_eq!(adv.problems[0].pointer, "/_meta/ua/steering");
    assert_eq!(adv.problems[0].kind, ProblemKind::WrongSide);
    assert!(adv.get(Feature::Steering).is_none());
    assert!(adv.supports(Feature::SubagentEvents));
}

#[test]
fn odd_shapes_never_panic() {
    let shapes = [
        Value::Null,
        json!([]),
        json!([{"_meta": {}}]),
        json!("caps"),
        json!(1),
        json!({}),
        json!({"_meta": []}),
        json!({"_meta": 5}),
        json!({"_meta": null}),
        json!({"_meta": {"lody": []}}),
        json!({"_meta": {"lody": null, "ua": "x"}}),
        json!({"_meta": {"lody": {"subagentEvents": [1]}}}),
        json!({"_meta": {"lody": {"usage": {"version": "1"}}}}),
        json!({"_meta": {"lody": {"goal": {"version": 1, "actions": {"0": "set"}}}}}),
        json!({"_meta": {"lody": {"": null, "~/": 1}}}),
        json!({"elicitation": [], "_meta": {"lody": {"elicitation": {"version": 1, "answerNotes": "yes"}}}}),
    ];
    for a in &shapes {
        for c in &shapes {
            let n = negotiate(a, c);
            assert!(!n.is_active(Feature::SubagentEvents));
            assert!(!n.answer_notes());
        }
        let _ = Advertisement::read(a, Side::Agent);
        let _ = Advertisement::read(a, Side::Client);
    }
    let pointer_kind = |v: &Value| {
        Advertisement::read(v, Side::Agent)
            .problems
            .into_iter()
            .map(|p| (p.pointer, p.kind))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pointer_kind(&json!([])),
        [(String::new(), ProblemKind::NotAnObject)]
    );
    assert_eq!(
        pointer_kind(&json!({"_meta": []})),
        [("/_meta".to_owned(), ProblemKind::NotAnObject)]
    );
    assert_eq!(
        pointer_kind(&json!({"_meta": {"lody": 5}})),
        [("/_meta/lody".to_owned(), ProblemKind::NotAnObject)]
    );
    assert_eq!(
        pointer_kind(&json!({"_meta": {"lody": {"a/b": 1}}})),
        [("/_meta/lody/a~1b".to_owned(), ProblemKind::UnknownKey)]
    );
    assert!(pointer_kind(&Value::Null).is_empty());
}

// ---- negotiate --------------------------------------------------------------

#[test]
fn agent_only_features_need_only_the_agent() {
    let v1 = codex("initialize-v1-routed-response");
    let n = negotiate(&v1["agentCapabilities"], &json!({}));
    for f in [
        Feature::SessionTitle,
        Feature::Usage,
        Feature::RateLimits,
        Feature::ForkAtTurn,
        Feature::Steering,
        Feature::Tasks,
        Feature::Subagents,
        Feature::Goal,
        Feature::Compaction,
        Feature::SessionHistory,
        Feature::WorktreeProject,
    ] {
        assert!(n.is_active(f), "{f}");
    }
    assert!(
        !n.is_active(Feature::SubagentEvents),
        "client did not advertise"
    );
    assert!(!n.is_active(Feature::SessionActivity));
    assert_eq!(n.agent_writes, Namespace::Lody);

    let steering = n.steering().unwrap();
    assert_eq!(steering.transport, SteeringTransport::Request);
    assert_eq!(steering.config_policy, ConfigPolicy::Active);
    let goal = n.goal().unwrap();
    assert_eq!(
        goal.prompt_actions.as_deref(),
        Some(
            &[
                GoalAction::Set,
                GoalAction::Pause,
                GoalAction::Resume,
                GoalAction::Clear
            ][..]
        )
    );
    assert_eq!(n.subagents().unwrap().lifecycle, True);
    assert_eq!(n.tasks().unwrap().background, Some(True));
    assert_eq!(n.rate_limits().unwrap().query, Some(True));
    assert!(matches!(
        n.get(Feature::Usage).unwrap().options,
        FeatureOptions::VersionOne(_)
    ));
}

#[test]
fn subagent_events_and_mcp_apps_need_both_peers() {
    let v2 = codex("initialize-v2-response");
    let agent = &v2["capabilities"];
    let none = negotiate(agent, &json!({"_meta": {"lody": {}}}));
    assert!(!none.is_active(Feature::SubagentEvents));
    assert!(!none.is_active(Feature::McpApps));

    let client = lody(json!({"subagentEvents": {"version": 1}, "mcpApps": {"version": 1}}));
    let both = negotiate(agent, &client);
    assert!(both.is_active(Feature::SubagentEvents));
    assert!(both.is_active(Feature::McpApps));

    // The client alone is not enough either.
    let only_client = negotiate(&json!({}), &client);
    assert!(only_client.active.is_empty());

    // An invalid client flag does not count.
    let bad = negotiate(agent, &lody(json!({"subagentEvents": {"version": 2}})));
    assert!(!bad.is_active(Feature::SubagentEvents));
}

#[test]
fn each_side_writes_one_namespace_read_from_the_other_side() {
    use acp_extension_core::capabilities::Side;
    let features = json!({"subagentEvents": {"version": 1}, "usage": {"version": 1}, "sessionTitle": {"version": 1}});
    let both = json!({"_meta": {"ua": features, "lody": features}});
    let ua = json!({"_meta": {"ua": {"subagentEvents": {"version": 1}}}});
    let lody_caps = lody(json!({"subagentEvents": {"version": 1}}));
    let plain = json!({"fs": {"readTextFile": true}});

    // The migration setting: the agent advertises both spellings. What it
    // writes follows the client alone, the same for every feature.
    let n = negotiate(&both, &lody_caps);
    assert!(n.is_active(Feature::SubagentEvents) && n.is_active(Feature::Usage));
    assert_eq!(n.agent_writes, Namespace::Lody);
    assert_eq!(n.namespace(Side::Agent), Namespace::Lody);
    assert_eq!(
        n.client_writes,
        Namespace::Lody,
        "an agent reading both gets lody"
    );

    let n = negotiate(&both, &ua);
    assert_eq!(n.agent_writes, Namespace::Ua);
    assert_eq!(n.namespace(Side::Client), Namespace::Lody);

    assert_eq!(negotiate(&ua, &both).agent_writes, Namespace::Lody);
    assert_eq!(negotiate(&ua, &both).client_writes, Namespace::Ua);
    assert_eq!(negotiate(&both, &plain).agent_writes, Namespace::Lody);
    assert_eq!(negotiate(&both, &Value::Null).agent_writes, Namespace::Lody);
    // A non-object section is not an advertisement.
    let broken = json!({"_meta": {"ua": {}, "lody": 5}});
    assert_eq!(negotiate(&both, &broken).agent_writes, Namespace::Ua);
}

#[test]
fn elicitation_answer_notes_come_from_the_client() {
    let agent = lody(json!({"usage": {"version": 1}}));
    let with_notes = negotiate(
        &agent,
        &lody(json!({"elicitation": {"version": 1, "answerNotes": true}})),
    );
    assert!(with_notes.is_active(Feature::Elicitation));
    assert!(with_notes.answer_notes());

    let without = negotiate(&agent, &lody(json!({"elicitation": {"version": 1}})));
    assert!(without.is_active(Feature::Elicitation));
    assert!(!without.answer_notes());

    // §17.4: version 2 is not supported.
    let future = negotiate(
        &agent,
        &lody(json!({"elicitation": {"version": 2, "answerNotes": true}})),
    );
    assert!(!future.is_active(Feature::Elicitation));
    assert!(!future.answer_notes());

    // answerNotes must be literal true.
    let bad = negotiate(
        &agent,
        &lody(json!({"elicitation": {"version": 1, "answerNotes": false}})),
    );
    assert!(!bad.answer_notes());

    // Advertised by the agent: ignored.
    let wrong = negotiate(
        &lody(json!({"elicitation": {"version": 1, "answerNotes": true}})),
        &json!({}),
    );
    assert!(!wrong.is_active(Feature::Elicitation));
    assert!(!wrong.answer_notes());
    assert_eq!(wrong.agent.problems[0].kind, ProblemKind::WrongSide);
}

#[test]
fn client_advertised_agent_features_are_ignored() {
    let client = lody(json!({
        "steering": {"version": 1, "transport": "request", "upstreamTurn": "same", "configPolicy": "active"},
        "usage": {"version": 1},
    }));
    let n = negotiate(&json!({}), &client);
    assert!(n.steering().is_none());
    assert!(!n.is_active(Feature::Usage));
    assert_eq!(n.client.problems.len(), 2);
}

#[test]
fn standard_form_elicitation_is_read_from_the_client() {
    let form = json!({"elicitation": {"form": {}}});
    assert!(negotiate(&json!({}), &form).form_elicitation);
    assert!(!negotiate(&json!({}), &json!({"elicitation": {"form": null}})).form_elicitation);
    assert!(!negotiate(&json!({}), &json!({"elicitation": {"url": {}}})).form_elicitation);
    assert!(!negotiate(&json!({}), &json!({})).form_elicitation);
}

#[test]
fn initialize_capabilities_picks_the_side() {
    let req = json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}});
    assert_eq!(
        initialize_capabilities(&req, Side::Client),
        Some(&json!({"terminal": true}))
    );
    assert_eq!(initialize_capabilities(&req, Side::Agent), None);
    assert_eq!(initialize_capabilities(&json!([]), Side::Agent), None);
}
