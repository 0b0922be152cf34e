//! Capability objects (contract-facts §3): shapes, round trips, rejections,
//! unknown keys, and advertising into SDK capabilities.

mod common;

use acp_extension_core::capabilities::{
    AdvertiseExtensions, AgentExtensionCapabilities, ClientExtensionCapabilities, ConfigPolicy,
    ElicitationCapability, Feature, FeatureSide, GoalAction, GoalCapability, RateLimitsCapability,
    SteeringCapability, SteeringTransport, SubagentCapability, TaskCapability, UpstreamTurn,
    VersionOneCapability,
};
use acp_extension_core::namespace::NamespaceSet;
use acp_extension_core::validate::{Check, check};
use acp_extension_core::wire::WireObject;
use acp_extension_core::wire::{Map, True};
use agent_client_protocol::v1::schema::{AgentCapabilities, ClientCapabilities};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn corpus(path: &str) -> String {
    common::read(&format!("corpus/{path}"))
}

/// Parses `v` as `T`, checks it is valid, and that serializing gives `v` back.
fn round_trip<T: Check + DeserializeOwned + Serialize>(v: Value) -> T {
    assert_eq!(check::<T>(&v), vec![], "violations in {v}");
    let parsed: T = serde_json::from_value(v.clone()).expect("parses");
    assert_eq!(serde_json::to_value(&parsed).unwrap(), v);
    parsed
}

/// Asserts that `v` is rejected by serde and that `check` reports exactly
/// one violation at `pointer` with rule id `id`.
fn rejects<T: Check + DeserializeOwned>(v: Value, pointer: &str, id: &str) {
    assert!(
        serde_json::from_value::<T>(v.clone()).is_err(),
        "accepted {v}"
    );
    let found: Vec<(String, &str)> = check::<T>(&v)
        .iter()
        .map(|x| (x.pointer.clone(), x.rule.id()))
        .collect();
    assert_eq!(found, vec![(pointer.to_owned(), id)], "for {v}");
}

fn codex_v1_agent_section() -> Value {
    let v: Value = serde_json::from_str(&corpus(
        "acp-extension-codex/src____tests____CodexACPAgent__data__initialize-v1-routed-response.json",
    ))
    .unwrap();
    v["agentCapabilities"]["_meta"]["lody"].clone()
}

#[test]
fn real_agent_capabilities_round_trip() {
    let caps: AgentExtensionCapabilities = round_trip(codex_v1_agent_section());
    let steering = caps.steering.unwrap();
    assert_eq!(steering.transport, SteeringTransport::Request);
    assert_eq!(steering.upstream_turn, UpstreamTurn::Same);
    assert_eq!(steering.config_policy, ConfigPolicy::Active);
    let goal = caps.goal.unwrap();
    assert_eq!(
        goal.actions,
        vec![
            GoalAction::Set,
            GoalAction::Pause,
            GoalAction::Resume,
            GoalAction::Clear
        ]
    );
    assert_eq!(
        goal.control_actions,
        Some(vec![GoalAction::Pause, GoalAction::Clear])
    );
    assert_eq!(caps.rate_limits.unwrap().query, Some(True));
    assert_eq!(caps.tasks.unwrap().background, Some(True));
    assert!(caps.subagents.unwrap().list.is_none());
    assert!(caps.mcp_apps.is_none());

    // The Claude adapter's set: goal [set, clear] only, configPolicy apply.
    let line = corpus(
        "acp-extension-claude/src__tests__acp-scenarios____snapshots____air__session-setup.jsonl",
    );
    let first: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let caps: AgentExtensionCapabilities =
        round_trip(first["payload"]["agentCapabilities"]["_meta"]["lody"].clone());
    assert_eq!(caps.steering.unwrap().config_policy, ConfigPolicy::Apply);
    assert_eq!(
        caps.goal.unwrap().actions,
        vec![GoalAction::Set, GoalAction::Clear]
    );
}

#[test]
fn every_agent_key_round_trips_including_informational_ones() {
    let all = json!({
        "subagentEvents": {"version": 1},
        "sessionTitle": {"version": 1},
        "usage": {"version": 1},
        "rateLimits": {"version": 1},
        "forkAtTurn": {"version": 1},
        "steering": {"version": 1, "transport": "prompt", "upstreamTurn": "handoff", "configPolicy": "apply"},
        "tasks": {"version": 1, "background": true, "scheduled": true},
        "subagents": {"version": 1, "lifecycle": true, "list": true, "cancel": true, "output": true},
        "goal": {"version": 1, "actions": ["set"], "controlActions": [], "promptActions": ["set", "resume"]},
        "compaction": {"version": 1},
        "sessionHistory": {"version": 1},
        "sessionConfig": {"version": 1},
        "sessionActivity": {"version": 1},
        "worktreeProject": {"version": 1},
        "mcpApps": {"version": 1},
    });
    let caps: AgentExtensionCapabilities = round_trip(all);
    assert!(caps.session_config.is_some() && caps.session_activity.is_some());
    assert!(caps.extra().is_empty());
    round_trip::<AgentExtensionCapabilities>(json!({}));
}

#[test]
fn unknown_keys_survive_everywhere() {
    let v = json!({
        "mcp": {"version": 1, "supported": false},
        "usage": {"version": 1, "future": [1, 2]},
    });
    let caps: AgentExtensionCapabilities = round_trip(v);
    assert_eq!(
        caps.extra()["mcp"],
        json!({"version": 1, "supported": false})
    );
    assert_eq!(caps.usage.unwrap().extra()["future"], json!([1, 2]));
}

#[test]
fn absent_and_null_are_different() {
    // Every key is opt: absent is fine, null is a violation.
    rejects::<AgentExtensionCapabilities>(json!({"rateLimits": null}), "/rateLimits", "not-null");
    rejects::<ClientExtensionCapabilities>(
        json!({"elicitation": null}),
        "/elicitation",
        "not-null",
    );
    rejects::<ElicitationCapability>(
        json!({"version": 1, "answerNotes": null}),
        "/answerNotes",
        "not-null",
    );
    rejects::<GoalCapability>(
        json!({"version": 1, "actions": ["set"], "controlActions": null}),
        "/controlActions",
        "not-null",
    );
    rejects::<VersionOneCapability>(json!({"version": null}), "/version", "literal");
}

#[test]
fn versions_other_than_the_number_one_are_rejected() {
    for bad in [json!(2), json!("1"), json!(0), json!(true)] {
        rejects::<VersionOneCapability>(json!({"version": bad}), "/version", "literal");
    }
    rejects::<VersionOneCapability>(json!({}), "/version", "required");
    rejects::<VersionOneCapability>(json!([1]), "", "type");
    // 1.0 is the same JavaScript number as 1.
    assert!(check::<VersionOneCapability>(&json!({"version": 1.0})).is_empty());
}

#[test]
fn literal_true_flags_reject_false() {
    rejects::<ElicitationCapability>(
        json!({"version": 1, "answerNotes": false}),
        "/answerNotes",
        "literal",
    );
    rejects::<SubagentCapability>(json!({"version": 1}), "/lifecycle", "required");
    rejects::<SubagentCapability>(
        json!({"version": 1, "lifecycle": false}),
        "/lifecycle",
        "literal",
    );
    rejects::<SubagentCapability>(
        json!({"version": 1, "lifecycle": true, "cancel": "yes"}),
        "/cancel",
        "literal",
    );
    rejects::<TaskCapability>(
        json!({"version": 1, "background": false}),
        "/background",
        "literal",
    );
    rejects::<RateLimitsCapability>(json!({"version": 1, "query": 1}), "/query", "literal");
}

#[test]
fn steering_needs_all_three_closed_fields() {
    let ok = json!({"version": 1, "transport": "request", "upstreamTurn": "same", "configPolicy": "active"});
    round_trip::<SteeringCapability>(ok.clone());
    for (key, bad) in [
        ("transport", json!("push")),
        ("upstreamTurn", json!("other")),
        ("configPolicy", json!(["active"])),
    ] {
        let mut v = ok.clone();
        v[key] = bad;
        rejects::<SteeringCapability>(v, &format!("/{key}"), "one-of");
        let mut v = ok.clone();
        v.as_object_mut().unwrap().remove(key);
        rejects::<SteeringCapability>(v, &format!("/{key}"), "required");
    }
}

#[test]
fn goal_actions_are_a_closed_set() {
    rejects::<GoalCapability>(json!({"version": 1}), "/actions", "required");
    rejects::<GoalCapability>(
        json!({"version": 1, "actions": ["set", "restart"]}),
        "/actions/1",
        "one-of",
    );
    rejects::<GoalCapability>(
        json!({"version": 1, "actions": [], "promptActions": "set"}),
        "/promptActions",
        "type",
    );
}

#[test]
fn client_capabilities_of_the_elicitation_fixture() {
    // §17.4: accepted.
    let c: ClientExtensionCapabilities =
        round_trip(json!({"elicitation": {"version": 1, "answerNotes": true}}));
    assert_eq!(c.elicitation.unwrap().answer_notes, Some(True));
    round_trip::<ClientExtensionCapabilities>(json!({}));
    let c: ClientExtensionCapabilities = round_trip(json!({"elicitation": {"version": 1}}));
    assert_eq!(c.elicitation.unwrap().answer_notes, None);
    // §17.4: rejected, future versions need explicit support.
    rejects::<ClientExtensionCapabilities>(
        json!({"elicitation": {"version": 2}}),
        "/elicitation/version",
        "literal",
    );
    // The host product's advertisement (§3.3).
    round_trip::<ClientExtensionCapabilities>(json!({
        "elicitation": {"version": 1, "answerNotes": true},
        "subagentEvents": {"version": 1},
        "mcpApps": {"version": 1},
    }));
}

#[test]
fn builders_produce_the_wire_shape() {
    let caps = AgentExtensionCapabilities::new()
        .steering(SteeringCapability::new(
            SteeringTransport::Request,
            UpstreamTurn::Same,
            ConfigPolicy::Active,
        ))
        .goal(
            GoalCapability::new(vec![GoalAction::Set, GoalAction::Clear])
                .control_actions(vec![GoalAction::Clear]),
        )
        .subagents(SubagentCapability::new(True).output(True))
        .tasks(TaskCapability::new().scheduled(True));
    assert_eq!(
        serde_json::to_value(&caps).unwrap(),
        json!({
            "steering": {"version": 1, "transport": "request", "upstreamTurn": "same", "configPolicy": "active"},
            "tasks": {"version": 1, "scheduled": true},
            "subagents": {"version": 1, "lifecycle": true, "output": true},
            "goal": {"version": 1, "actions": ["set", "clear"], "controlActions": ["clear"]},
        })
    );
}

#[test]
fn to_meta_writes_one_or_both_namespaces() {
    let caps = AgentExtensionCapabilities::new().usage(VersionOneCapability::new());
    let section = json!({"usage": {"version": 1}});
    assert_eq!(
        Value::Object(caps.to_meta(NamespaceSet::Lody)),
        json!({"lody": section})
    );
    assert_eq!(
        Value::Object(caps.to_meta(NamespaceSet::Ua)),
        json!({"ua": section})
    );
    assert_eq!(
        Value::Object(caps.to_meta(NamespaceSet::Both)),
        json!({"ua": section, "lody": section})
    );
    // An empty client advertisement is still written: `{}` means "no extensions".
    assert_eq!(
        Value::Object(ClientExtensionCapabilities::new().to_meta(NamespaceSet::Lody)),
        json!({"lody": {}})
    );
}

#[test]
fn write_meta_keeps_other_keys() {
    let mut meta: Map =
        json!({"authStatus": {}, "lody": {"custom": 1, "usage": {"version": 2}}, "ua": 5})
            .as_object()
            .unwrap()
            .clone();
    AgentExtensionCapabilities::new()
        .usage(VersionOneCapability::new())
        .write_meta(&mut meta, NamespaceSet::Both);
    assert_eq!(
        Value::Object(meta),
        json!({
            "authStatus": {},
            "lody": {"custom": 1, "usage": {"version": 1}},
            "ua": {"usage": {"version": 1}},
        })
    );
}

#[test]
fn extensions_on_sdk_agent_capabilities() {
    let mut meta = Map::new();
    meta.insert("authStatus".into(), json!({}));
    let sdk = AgentCapabilities::new()
        .load_session(true)
        .meta(meta)
        .extensions(
            &AgentExtensionCapabilities::new().subagent_events(VersionOneCapability::new()),
            NamespaceSet::Lody,
        );
    let wire = serde_json::to_value(&sdk).unwrap();
    assert_eq!(wire["loadSession"], json!(true));
    assert_eq!(
        wire["_meta"],
        json!({"authStatus": {}, "lody": {"subagentEvents": {"version": 1}}})
    );
    // The advertisement is what supports() reads back.
    assert!(acp_extension_core::negotiation::supports_subagent_events(
        &wire
    ));
}

#[test]
fn extensions_on_sdk_client_capabilities() {
    let sdk = ClientCapabilities::new().extensions(
        &ClientExtensionCapabilities::new()
            .elicitation(ElicitationCapability::new().answer_notes(True)),
        NamespaceSet::Ua,
    );
    let wire = serde_json::to_value(&sdk).unwrap();
    assert_eq!(
        wire["_meta"],
        json!({"ua": {"elicitation": {"version": 1, "answerNotes": true}}})
    );
}

#[test]
fn features_know_their_keys_and_sides() {
    assert_eq!(Feature::ALL.len(), 16);
    let keys: Vec<&str> = Feature::ALL.iter().map(|f| f.key()).collect();
    assert_eq!(
        keys,
        [
            "subagentEvents",
            "sessionTitle",
            "usage",
            "rateLimits",
            "forkAtTurn",
            "steering",
            "tasks",
            "subagents",
            "goal",
            "compaction",
            "sessionHistory",
            "sessionConfig",
            "sessionActivity",
            "worktreeProject",
            "mcpApps",
            "elicitation",
        ]
    );
    // Every agent key is a field of AgentExtensionCapabilities; the client ones of ClientExtensionCapabilities.
    for f in Feature::ALL {
        assert_eq!(Feature::from_key(f.key()), Some(f));
        assert_eq!(
            AgentExtensionCapabilities::KEYS.contains(&f.key()),
            f != Feature::Elicitation,
            "{f}"
        );
        assert_eq!(
            ClientExtensionCapabilities::KEYS.contains(&f.key()),
            f.side() != FeatureSide::AgentOnly,
            "{f}"
        );
    }
    assert_eq!(Feature::SubagentEvents.side(), FeatureSide::Both);
    assert_eq!(Feature::McpApps.side(), FeatureSide::Both);
    assert_eq!(Feature::Elicitation.side(), FeatureSide::ClientOnly);
    assert_eq!(Feature::Goal.side(), FeatureSide::AgentOnly);
    assert_eq!(Feature::from_key("mcp"), None);
    assert_eq!(
        serde_json::to_value(Feature::ForkAtTurn).unwrap(),
        json!("forkAtTurn")
    );
    assert!(serde_json::from_value::<Feature>(json!("nope")).is_err());
}

#[test]
fn schemas_list_the_contract_keys() {
    let schema = serde_json::to_value(schemars::schema_for!(AgentExtensionCapabilities)).unwrap();
    let props = schema["properties"].as_object().unwrap();
    assert_eq!(props.len(), 15);
    assert_eq!(schema["required"], json!([]));
    let steering = serde_json::to_value(schemars::schema_for!(SteeringCapability)).unwrap();
    assert_eq!(
        steering["required"],
        json!(["version", "transport", "upstreamTurn", "configPolicy"])
    );
}
