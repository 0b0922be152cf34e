//! Round-trip properties over every payload kind, with values generated
//! from each kind's JSON Schema (`common::arb`): a value parses into its
//! contract type, serializes back to the same JSON (absent stays absent,
//! `null` stays `null`, unknown keys are kept), parses again to the same
//! typed value, and `validate` accepts it. Targeted properties mutate one
//! optional key at a time: `null` where the contract forbids it is reported
//! as `not-null` at that key (keys of contract objects; the ACP objects
//! around contract sections are only sketched by their schemas), and
//! `null` or absence where it is allowed survives the round trip.
//!
//! `PROPTEST_CASES` raises the number of cases per kind (default 64).
//! Failures are persisted in `tests/roundtrip.proptest-regressions`.

#[path = "common/arb.rs"]
mod arb;

use std::fmt::Debug;

use acp_extension_core::capabilities::{AgentExtensionCapabilities, ClientExtensionCapabilities};
use acp_extension_core::elicitation::{ElicitationMeta, ElicitationQuestion};
use acp_extension_core::mcp_apps::{
    McpAppLoadRequest, McpAppLoadResponse, McpAppResourceReadRequest, McpAppResourceReadResponse,
    McpAppToolCallMeta, McpAppToolCallRequest, McpCallToolResult,
};
use acp_extension_core::meta::SessionMeta;
use acp_extension_core::methods::{
    ALL_METHODS, ExtensionNotification, ExtensionRequest, ExtensionResponse, MethodKind,
};
use acp_extension_core::rate_limits::{RateLimit, RateLimitsGetRequest, RateLimitsSnapshot};
use acp_extension_core::session::{
    ActivityMeta, EmptyResponse, ForkAtTurn, GoalControlRequest, GoalControlResponse,
    GoalPromptControl, GoalSnapshot, NoticeMeta, SessionActivityUpdate, SessionConfig,
    SessionHistoryReadRequest, SteerApplied, SteerPromptMeta, SteerRequest, SteerResponse,
    SubagentCancelRequest, SubagentOutputRequest, SubagentOutputResponse, SubagentTask,
    SubagentsListRequest, SubagentsListResponse, TaskMeta, WorktreeProject,
};
use acp_extension_core::subagent_events::{
    SubagentEvent, SubagentOutput, SubagentProgress, SubagentSnapshot,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageUpdate};
use acp_extension_core::validate::{Kind, Report, is_valid_slice, validate_slice, validate_value};
use arb::{Generated, SchemaGen};
use proptest::prelude::*;
use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, TestCaseError, TestRng, TestRunner,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// Kinds whose payload is one contract type, with that type. Every kind
/// must be here or in [`TREE_KINDS`] (`every_kind_is_covered`).
macro_rules! typed_kinds {
    ($($ty:ty,)*) => {
        const TYPED_KINDS: &[Kind] = &[$(Kind::of::<$ty>(),)*];

        /// Round-trips `v` through the contract type of `kind`.
        fn typed_round_trip(kind: Kind, v: &Value) -> Result<(), TestCaseError> {
            $(if kind == Kind::of::<$ty>() {
                return round_trip::<$ty>(v);
            })*
            unreachable!("{kind} is not a typed kind")
        }

        /// Whether `v` parses as the contract type of `kind`.
        fn typed_parses(kind: Kind, v: &Value) -> bool {
            $(if kind == Kind::of::<$ty>() {
                return serde_json::from_value::<$ty>(v.clone()).is_ok();
            })*
            unreachable!("{kind} is not a typed kind")
        }
    };
}

typed_kinds! {
    SubagentEvent,
    SubagentSnapshot,
    SubagentProgress,
    SubagentOutput,
    SessionUsageUpdate,
    ModelUsage,
    RateLimitsSnapshot,
    RateLimit,
    RateLimitsGetRequest,
    SteerRequest,
    SteerResponse,
    SteerApplied,
    SteerPromptMeta,
    GoalControlRequest,
    GoalControlResponse,
    GoalPromptControl,
    GoalSnapshot,
    SessionHistoryReadRequest,
    EmptyResponse,
    SessionActivityUpdate,
    SubagentsListRequest,
    SubagentsListResponse,
    SubagentTask,
    SubagentCancelRequest,
    SubagentOutputRequest,
    SubagentOutputResponse,
    TaskMeta,
    ActivityMeta,
    NoticeMeta,
    WorktreeProject,
    SessionConfig,
    ForkAtTurn,
    ElicitationMeta,
    ElicitationQuestion,
    SessionMeta,
    McpAppToolCallMeta,
    McpAppLoadRequest,
    McpAppLoadResponse,
    McpAppResourceReadRequest,
    McpAppResourceReadResponse,
    McpAppToolCallRequest,
    McpCallToolResult,
}

/// Kinds validated on the JSON tree, each with its own round trip below.
const TREE_KINDS: &[Kind] = &[
    Kind::AUTO,
    Kind::AGENT_CAPABILITIES,
    Kind::CLIENT_CAPABILITIES,
    Kind::ELICITATION_REQUEST,
];

/// Kinds whose values come from their own schema (`auto`'s schema says
/// nothing about params; its messages are built in `message`).
fn schema_kinds() -> impl Iterator<Item = Kind> {
    Kind::ALL.iter().copied().filter(|k| *k != Kind::AUTO)
}

/// Rule ids of relations across fields that JSON Schema cannot express; a
/// generated value breaking only these is discarded, not a failure.
fn is_cross_field(rule_id: &str) -> bool {
    // Question ids and note keys: non-empty, distinct, notes referencing
    // an existing question (contract-facts §4, wire rules).
    rule_id.starts_with("elicitation-note-") || rule_id.starts_with("elicitation-question-id-")
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // ChaCha is several times slower than XorShift in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        ..Config::default()
    })
}

/// One generator over every kind's definitions. `AcpContentBlock` (steer
/// prompts) is only sketched by its schema, which points at the ACP spec;
/// the contract's own `ContentBlock` describes the same blocks fully.
fn generator() -> SchemaGen {
    let mut defs = Map::new();
    for kind in Kind::ALL {
        let schema = Value::from(kind.schema());
        for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
            if let Some(seen) = defs.get(name) {
                assert_eq!(seen, def, "two schemas of {name}");
            }
            defs.insert(name.clone(), def.clone());
        }
    }
    SchemaGen::new(defs).alias("AcpContentBlock", "SubagentContentBlock")
}

fn strategy(g: &SchemaGen, kind: Kind) -> BoxedStrategy<Generated> {
    g.strategy(&Value::from(kind.schema()), TYPED_KINDS.contains(&kind))
        .prop_map(|mut generated| {
            settle_relations(&mut generated.value);
            generated
        })
        .boxed()
}

/// Makes generated values obey the simple relations JSON Schema cannot
/// express: an elicitation note (`noteFor`) never declares
/// `customAnswerFor`. (Note references between schema properties are left
/// to chance; `validates` discards the values that break them.)
fn settle_relations(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if obj.contains_key("noteFor") {
                obj.shift_remove("customAnswerFor");
            }
            obj.values_mut().for_each(settle_relations);
        }
        Value::Array(items) => items.iter_mut().for_each(settle_relations),
        _ => {}
    }
}

fn fail(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

/// Parse, serialize, parse again: same JSON, same typed value, through
/// both `serde_json::Value` and text.
fn round_trip<T>(v: &Value) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let t: T = serde_json::from_value(v.clone()).map_err(|e| fail(format!("parse: {e}")))?;
    let text = v.to_string();
    let from_text: T = serde_json::from_str(&text).map_err(|e| fail(format!("parse text: {e}")))?;
    prop_assert_eq!(&from_text, &t);
    let back = serde_json::to_value(&t).map_err(fail)?;
    prop_assert_eq!(&back, v, "serialized value differs");
    let written = serde_json::to_string(&t).map_err(fail)?;
    let reread: Value = serde_json::from_str(&written).map_err(fail)?;
    prop_assert_eq!(&reread, v, "serialized text differs");
    let again: T = serde_json::from_value(back).map_err(fail)?;
    prop_assert_eq!(&again, &t);
    Ok(())
}

/// Every `_meta.ua` / `_meta.lody` section of `v`, or `v` itself when it
/// has no `_meta` (the two shapes the capability kinds accept).
fn capability_sections(v: &Value) -> Vec<&Value> {
    match v.get("_meta") {
        Some(meta) => ["ua", "lody"]
            .iter()
            .filter_map(|ns| meta.get(ns))
            .collect(),
        None => vec![v],
    }
}

/// Every `_meta.<ns>.elicitation` of an object.
fn elicitation_metas(scope: &Value) -> Vec<&Value> {
    ["ua", "lody"]
        .iter()
        .filter_map(|ns| scope.get("_meta")?.get(ns)?.get("elicitation"))
        .collect()
}

fn tree_round_trip(kind: Kind, v: &Value) -> Result<(), TestCaseError> {
    match kind {
        Kind::AGENT_CAPABILITIES => capability_sections(v)
            .into_iter()
            .try_for_each(round_trip::<AgentExtensionCapabilities>),
        Kind::CLIENT_CAPABILITIES => capability_sections(v)
            .into_iter()
            .try_for_each(round_trip::<ClientExtensionCapabilities>),
        Kind::ELICITATION_REQUEST => {
            let mut metas = elicitation_metas(v);
            if let Some(props) = v
                .pointer("/requestedSchema/properties")
                .and_then(Value::as_object)
            {
                metas.extend(props.values().flat_map(elicitation_metas));
            }
            metas
                .into_iter()
                .try_for_each(round_trip::<ElicitationMeta>)
        }
        _ => unreachable!("{kind} has no tree round trip"),
    }
}

/// `validate` verdicts on `v`: from the value, from the text, and the
/// boolean fast path. Discards the case when only cross-field rules break.
fn validates(kind: Kind, v: &Value) -> Result<(), TestCaseError> {
    let report = validate_value(kind, v);
    if !report.is_valid()
        && report
            .violations
            .iter()
            .all(|x| is_cross_field(x.rule.id()))
    {
        return Err(TestCaseError::reject("a relation across fields"));
    }
    prop_assert!(report.is_valid(), "{kind} rejects {v}:\n{report}");
    let text = v.to_string();
    prop_assert_eq!(validate_slice(kind, text.as_bytes()), Report::default());
    prop_assert!(is_valid_slice(kind, text.as_bytes()));
    Ok(())
}

/// The whole property for one value of `kind`.
fn accept(kind: Kind, v: &Value) -> Result<(), TestCaseError> {
    validates(kind, v)?;
    if TYPED_KINDS.contains(&kind) {
        typed_round_trip(kind, v)
    } else {
        tree_round_trip(kind, v)
    }
}

/// Runs `property` on values of every kind generated from its schema.
fn for_every_kind(property: impl Fn(Kind, Generated) -> Result<(), TestCaseError>) {
    let g = generator();
    for kind in schema_kinds() {
        runner()
            .run(&strategy(&g, kind), |generated| property(kind, generated))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

#[test]
fn every_kind_is_covered() {
    for kind in Kind::ALL {
        let typed = TYPED_KINDS.contains(kind);
        let tree = TREE_KINDS.contains(kind);
        assert!(typed ^ tree, "{kind} must be in exactly one list");
    }
    assert_eq!(TYPED_KINDS.len() + TREE_KINDS.len(), Kind::ALL.len());
}

#[test]
fn generated_values_round_trip_and_validate() {
    for_every_kind(|kind, generated| accept(kind, &generated.value));
}

/// Cross-field rules discard some generated values; each kind must still
/// be tested on most of them.
#[test]
fn most_generated_values_are_accepted() {
    let g = generator();
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::XorShift),
    );
    for kind in schema_kinds() {
        let s = strategy(&g, kind);
        let total = 200;
        let accepted = (0..total)
            .filter(|_| {
                let v = s.new_tree(&mut runner).expect("a value").current().value;
                validate_value(kind, &v).is_valid()
            })
            .count();
        assert!(
            accepted * 2 >= total,
            "{kind}: only {accepted} of {total} generated values are valid"
        );
    }
}

/// Sets `site.key` of the object at `site.object` to `to` (`None` removes it).
fn mutate(v: &Value, object: &str, key: &str, to: Option<Value>) -> Value {
    let mut out = v.clone();
    let obj = out
        .pointer_mut(object)
        .and_then(Value::as_object_mut)
        .expect("a site is an object");
    match to {
        Some(x) => {
            obj.insert(key.to_owned(), x);
        }
        None => {
            obj.shift_remove(key);
        }
    }
    out
}

#[test]
fn null_is_rejected_where_the_contract_forbids_it() {
    for_every_kind(|kind, generated| {
        validates(kind, &generated.value)?;
        for site in generated.sites.iter().filter(|s| s.owned && !s.nullable) {
            let v = mutate(&generated.value, &site.object, &site.key, Some(Value::Null));
            let got: Vec<(String, &str)> = validate_value(kind, &v)
                .violations
                .iter()
                .map(|x| (x.pointer.clone(), x.rule.id()))
                .collect();
            prop_assert_eq!(got, vec![(site.pointer(), "not-null")], "{}", v);
            if TYPED_KINDS.contains(&kind) {
                prop_assert!(!typed_parses(kind, &v), "{} parses: {}", kind, v);
            }
        }
        Ok(())
    });
}

#[test]
fn null_and_absence_survive_where_the_contract_allows_null() {
    for_every_kind(|kind, generated| {
        validates(kind, &generated.value)?;
        for site in generated.sites.iter().filter(|s| s.nullable) {
            for to in [Some(Value::Null), None] {
                let v = mutate(&generated.value, &site.object, &site.key, to);
                accept(kind, &v)?;
            }
        }
        Ok(())
    });
}

/// The method path → (params kind, result kind) table of the contract.
fn method_kinds(path: &str) -> (Kind, Option<Kind>) {
    match path {
        "rate_limits/get" => (
            Kind::of::<RateLimitsGetRequest>(),
            Some(Kind::of::<RateLimitsSnapshot>()),
        ),
        "session/steer" => (
            Kind::of::<SteerRequest>(),
            Some(Kind::of::<SteerResponse>()),
        ),
        "session/goal" => (
            Kind::of::<GoalControlRequest>(),
            Some(Kind::of::<GoalControlResponse>()),
        ),
        "session/history/read" => (
            Kind::of::<SessionHistoryReadRequest>(),
            Some(Kind::of::<EmptyResponse>()),
        ),
        "subagents/list" => (
            Kind::of::<SubagentsListRequest>(),
            Some(Kind::of::<SubagentsListResponse>()),
        ),
        "subagents/cancel" => (
            Kind::of::<SubagentCancelRequest>(),
            Some(Kind::of::<EmptyResponse>()),
        ),
        "subagents/output" => (
            Kind::of::<SubagentOutputRequest>(),
            Some(Kind::of::<SubagentOutputResponse>()),
        ),
        "mcp_apps/load" => (
            Kind::of::<McpAppLoadRequest>(),
            Some(Kind::of::<McpAppLoadResponse>()),
        ),
        "mcp_apps/resource/read" => (
            Kind::of::<McpAppResourceReadRequest>(),
            Some(Kind::of::<McpAppResourceReadResponse>()),
        ),
        "mcp_apps/tool/call" => (
            Kind::of::<McpAppToolCallRequest>(),
            Some(Kind::of::<McpCallToolResult>()),
        ),
        "subagents/event" => (Kind::of::<SubagentEvent>(), None),
        "session/usage_update" => (Kind::of::<SessionUsageUpdate>(), None),
        "rate_limits/update" => (Kind::of::<RateLimitsSnapshot>(), None),
        "session/steer_applied" => (Kind::of::<SteerApplied>(), None),
        "session/activity_update" => (Kind::of::<SessionActivityUpdate>(), None),
        other => panic!("method {other} is missing from this table"),
    }
}

/// Whole JSON-RPC messages (`auto`): every extension method in both
/// namespaces with generated params parses into the typed request or
/// notification, whose params and result serialize back unchanged.
#[test]
fn extension_messages_round_trip_and_validate() {
    let g = generator();
    for m in ALL_METHODS {
        let (path, method_kind) = (m.path, &m.kind);
        let (params_kind, result_kind) = method_kinds(path);
        assert_eq!(result_kind.is_some(), *method_kind == MethodKind::Request);
        let result = match result_kind {
            Some(k) => strategy(&g, k).prop_map(Some).boxed(),
            None => Just(None).boxed(),
        };
        let s = (
            proptest::sample::select(vec!["_lody/", "_ua/"]),
            strategy(&g, params_kind),
            result,
        );
        runner()
            .run(&s, |(ns, params, result)| {
                let params = params.value;
                validates(params_kind, &params)?;
                let method = format!("{ns}{path}");
                let mut message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
                match result {
                    Some(result) => {
                        message["id"] = json!(1);
                        let (_, request) = ExtensionRequest::parse(&method, &params)
                            .map_err(fail)?
                            .ok_or_else(|| fail("not an extension request"))?;
                        prop_assert_eq!(request.params(), params.clone());
                        validates(result_kind.expect("a result kind"), &result.value)?;
                        let response =
                            ExtensionResponse::parse(&method, &result.value).map_err(fail)?;
                        prop_assert_eq!(response.to_json(), result.value.clone());
                        let reply = json!({ "jsonrpc": "2.0", "id": 1, "result": result.value });
                        validates(Kind::AUTO, &reply)?;
                    }
                    None => {
                        let (_, notification) = ExtensionNotification::parse(&method, &params)
                            .map_err(fail)?
                            .ok_or_else(|| fail("not an extension notification"))?;
                        prop_assert_eq!(notification.params(), params.clone());
                    }
                }
                validates(Kind::AUTO, &message)
            })
            .unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}

/// Standard ACP messages carrying contract sections under `_meta.<ns>`
/// (`auto` finds and checks them): capabilities in `initialize` and a
/// session `_meta` on `session/prompt`.
#[test]
fn standard_messages_with_contract_meta_validate() {
    let g = generator();
    let s = (
        proptest::sample::select(vec!["ua", "lody"]),
        strategy(&g, Kind::of::<SessionMeta>()),
        g.strategy(
            &json!({ "$ref": "#/$defs/AgentExtensionCapabilities" }),
            true,
        ),
        g.strategy(
            &json!({ "$ref": "#/$defs/ClientExtensionCapabilities" }),
            true,
        ),
    );
    runner()
        .run(&s, |(ns, meta, agent, client)| {
            validates(Kind::of::<SessionMeta>(), &meta.value)?;
            let prompt = json!({ "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": { "sessionId": "s", "prompt": [], "_meta": { ns: meta.value } } });
            validates(Kind::AUTO, &prompt)?;
            let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": 1,
                    "clientCapabilities": { "_meta": { ns: client.value } } } });
            validates(Kind::AUTO, &init)?;
            let reply = json!({ "jsonrpc": "2.0", "id": 1,
                "result": { "protocolVersion": 1,
                    "agentCapabilities": { "_meta": { ns: agent.value } } } });
            validates(Kind::AUTO, &reply)
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
