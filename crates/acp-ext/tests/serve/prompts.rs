//! scripted prompts

use super::*;

#[tokio::test]
async fn plain_text_streams_commentary_then_final_answer_with_usage() {
    let mut sid = String::new();
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        sid = peer.start_session().await;
        let r = peer.turn(&sid, "Explain the parser").await;
        let turn = r["_meta"]["lody"]["turnId"].as_str().unwrap().to_owned();
        let updates = peer.updates(&sid);
        let chunks: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .collect();
        let phases: Vec<&str> = chunks
            .iter()
            .map(|c| meta(c, "lody")["messagePhase"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["commentary", "final_answer"]);
        // Two messages, told apart by their ids, and apart in joined text.
        assert_ne!(chunks[0]["messageId"], chunks[1]["messageId"]);
        assert!(
            chunks[0]["content"]["text"]
                .as_str()
                .unwrap()
                .ends_with("\n\n")
        );
        for c in &chunks {
            assert_eq!(
                meta(c, "lody")["turnId"],
                turn.as_str(),
                "chunks carry the prompt's turn id"
            );
        }
        assert!(
            chunks[1]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("Explain the parser")
        );
        let plans: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "plan")
            .collect();
        assert!(!plans.is_empty());
        let last = plans.last().unwrap()["entries"].as_array().unwrap();
        assert!(last.iter().all(|e| e["status"] == "completed"));
        let usage: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "usage_update")
            .collect();
        assert_eq!(usage.len(), 1);
        assert!(usage[0]["used"].as_u64().unwrap() > 0);
        assert_eq!(usage[0]["cost"]["currency"], "USD");

        let ext = peer.notes("_lody/session/usage_update");
        assert_eq!(ext.len(), 1);
        let u = &ext[0];
        assert_eq!(u["sessionId"], sid.as_str());
        assert!(u["usage"]["inputTokens"].as_u64().unwrap() > 0);
        let scope = u["_meta"]["lody"]["usageScopeId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!scope.is_empty() && scope.len() <= 256);
        // The first update's delta is measured from zero: it equals the totals.
        assert_eq!(u["delta"]["modelUsage"], u["modelUsage"]);

        // A second turn in the same lifetime: same scope, cumulative totals.
        peer.prompt(&sid, "again").await.unwrap();
        let ext = peer.notes("_lody/session/usage_update");
        assert_eq!(ext.len(), 2);
        assert_eq!(ext[1]["_meta"]["lody"]["usageScopeId"], scope.as_str());
        let model = ext[1]["modelUsage"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let total = ext[1]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        let first = ext[0]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        let delta = ext[1]["delta"]["modelUsage"][&model]["inputTokens"]
            .as_u64()
            .unwrap();
        assert_eq!(
            total,
            first + delta,
            "delta is already included in modelUsage"
        );
        assert_eq!(
            ext[1]["usage"]["inputTokens"].as_u64().unwrap(),
            delta,
            "usage is the latest turn"
        );
    })
    .await;

    // Activity: running while the turn runs, idle afterwards.
    for m in messages
        .iter()
        .filter(|m| m["method"] == "_lody/session/activity_update")
    {
        assert_eq!(m["params"]["version"], 1);
        assert_eq!(m["params"]["sessionId"], sid.as_str());
    }
    assert_eq!(
        activity(&messages),
        [("running", 0), ("idle", 0), ("running", 0), ("idle", 0)]
    );
}

/// Removes what legitimately differs between two runs: timestamps, the
/// usage scope id (unique per lifetime by contract) and JSON-RPC ids (the
/// SDK assigns them).
fn normalize_message(v: &mut Value) {
    if let Some(id) = v.get_mut("id") {
        *id = json!("*");
    }
    normalize(v);
}

fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if k.ends_with("EpochSeconds") || k == "updatedAt" || k == "usageScopeId" {
                    *val = json!("*");
                } else {
                    normalize(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

#[tokio::test]
async fn the_same_input_gives_the_same_output() {
    let script = async |peer: Peer| {
        let a = peer.start_session().await;
        let b = peer.new_session().await;
        for text in [
            "hello",
            "/tool",
            "/subagents 2",
            "/compact",
            "/title",
            "/goal set ship it",
            "/ask",
        ] {
            peer.prompt(&a, text).await.unwrap();
        }
        peer.prompt(&b, "other").await.unwrap();
    };
    let mut first = session(ServeOptions::new(), Answers::default(), script).await;
    let mut second = session(ServeOptions::new(), Answers::default(), script).await;
    first.iter_mut().for_each(normalize_message);
    second.iter_mut().for_each(normalize_message);
    assert_eq!(first.len(), second.len());
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a, b);
    }
}

#[tokio::test]
async fn tool_asks_permission_and_honours_allow_and_deny() {
    for (answer, status) in [("allow", "completed"), ("deny", "failed")] {
        let answers = Answers {
            permission: answer,
            ..Answers::default()
        };
        session(ServeOptions::new(), answers, async |peer| {
            let sid = peer.start_session().await;
            peer.turn(&sid, "/tool").await;
            let updates = peer.updates(&sid);
            let call = first(&updates, "tool_call");
            let id = call["toolCallId"].as_str().unwrap();
            assert!(meta(call, "lody")["toolName"].is_string());
            let asks = peer.requests("session/request_permission");
            assert_eq!(asks.len(), 1);
            assert_eq!(asks[0]["toolCall"]["toolCallId"], id);
            let kinds: Vec<&str> = asks[0]["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect();
            assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"));
            let last = last_tool_update(&updates, id);
            assert_eq!(last["status"], status, "{answer}");
            assert!(meta(last, "lody")["toolName"].is_string());
            // While the permission was pending the session required action.
            let states: Vec<String> = peer
                .notes("_lody/session/activity_update")
                .iter()
                .map(|a| a["state"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(states, ["running", "requires_action", "running", "idle"]);
        })
        .await;
    }
}
