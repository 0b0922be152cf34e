//! The consumer state: every fold rule, the dialects mapping onto the same
//! state, malformed input and rule breaks as changes, bounded mode, and
//! property tests against the emitter and the accumulator.

use acp_extension_core::state::*;
use acp_extension_core::subagent_emitter::{EmittedEvent, OutputIds, SubagentEmitter};
use acp_extension_core::subagent_events::{
    OutputRead, SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator};
use futures::executor::block_on;
use indexmap::IndexMap;
use proptest::prelude::*;
use serde_json::{Value, json};

const A2C: Direction = Direction::AgentToClient;
const C2A: Direction = Direction::ClientToAgent;

fn notify(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn update(sid: &str, update: Value) -> Value {
    notify(
        "session/update",
        json!({"sessionId": sid, "update": update}),
    )
}

fn support() -> Value {
    json!({"stream": ["text", "tool"], "progress": true, "outputRead": "none", "cancel": false})
}

fn snapshot(sid: &str, run: &str, state: &str) -> Value {
    notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "snapshot",
            "snapshot": {"state": state, "support": support(), "parentRunId": null,
                "parentToolCallId": "toolu_1", "name": "Worker"}}),
    )
}

fn output(sid: &str, run: &str, update: Value) -> Value {
    notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "output", "update": update}),
    )
}

fn text(t: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

/// Initialize with these agent and client `_meta.lody` sections.
fn init(state: &mut ConnectionState, agent: Value, client: Value) {
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"_meta": {"lody": client}}}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": agent}}}}),
    );
}

fn fold(messages: &[(Direction, Value)]) -> (ConnectionState, Vec<Change>) {
    let mut state = ConnectionState::new();
    let mut changes = Vec::new();
    for (d, m) in messages {
        changes.extend(state.message(*d, m));
    }
    (state, changes)
}

fn invalid_rules(state: &ConnectionState) -> Vec<String> {
    state.invalid().map(|i| i.rule.clone()).collect()
}

mod accounting;
mod bounded;
mod compaction;
mod dialects;
mod negotiation;
mod properties;
mod runs;
mod sessions_meta;
mod steering;
mod usage;
mod v2;

fn goal(sid: &str, goal: Option<Value>) -> Value {
    let mut u = json!({"sessionUpdate": "session_info_update", "_meta": {"lody": {}}});
    if let Some(g) = goal {
        u["_meta"]["lody"]["goal"] = g;
    }
    update(sid, u)
}

fn title(sid: &str, t: Value, source: Option<&str>) -> Value {
    let mut u = json!({"sessionUpdate": "session_info_update", "title": t});
    if let Some(s) = source {
        u["_meta"] = json!({"lody": {"titleSource": s}});
    }
    update(sid, u)
}

fn usage_update(sid: &str, scope: Option<&str>, input: u64, cost: Option<f64>) -> Value {
    let mut row = json!({"inputTokens": input, "outputTokens": 1, "cacheReadInputTokens": 0});
    if let Some(c) = cost {
        row["costUSD"] = json!(c);
    }
    let mut p = json!({"sessionId": sid, "usage": row, "modelUsage": {"m": row}});
    if let Some(s) = scope {
        p["_meta"] = json!({"lody": {"usageScopeId": s}});
    }
    notify("_lody/session/usage_update", p)
}
