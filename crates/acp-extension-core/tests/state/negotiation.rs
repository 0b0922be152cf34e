//! Negotiation

use super::*;

#[test]
fn a_malformed_capability_voids_only_itself() {
    let mut state = ConnectionState::new();
    init(
        &mut state,
        json!({"usage": {"version": 1}, "goal": {"version": 1, "actions": 5}}),
        json!({"subagentEvents": {"version": 1}}),
    );
    let agent = &state.negotiation().agent;
    assert!(agent.seen);
    assert!(agent.features.contains_key("usage"));
    assert!(!agent.features.contains_key("goal"));
    assert_eq!(agent.invalid, ["goal"]);
    let bad: Vec<&Invalid> = state.invalid().collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].method.as_deref(), Some("initialize"));
    assert!(
        bad[0]
            .pointer
            .starts_with("/result/agentCapabilities/_meta/lody/goal"),
        "{bad:?}"
    );
    assert!(
        state
            .negotiation()
            .client
            .features
            .contains_key("subagentEvents")
    );
}

#[test]
fn v2_capabilities_and_the_ua_namespace_are_read() {
    let (state, changes) = fold(&[
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2,
                "capabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1}}}}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2,
                "capabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1}, "usage": {"version": 1}}}}}}),
        ),
    ]);
    assert!(changes.contains(&Change::Negotiated {
        side: acp_extension_core::capabilities::Side::Agent
    }));
    let n = state.negotiation();
    assert_eq!(
        n.agent.features.keys().collect::<Vec<_>>(),
        ["subagentEvents", "usage"]
    );
    assert!(n.client.features.contains_key("subagentEvents"));
}
