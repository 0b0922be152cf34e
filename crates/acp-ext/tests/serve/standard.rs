//! A client of standard ACP (`subagents: {}`, no extension at all, as the
//! official adapters' clients): serve writes its runs as `subagent_update`s
//! and child sessions, takes steers on `_session/steering` and goals on
//! `_session/goal`, and reports the turn's usage on the prompt result.

use acp_extension_core::state::{ConnectionState, Direction};

use super::*;

fn standard_caps() -> Value {
    json!({"subagents": {}, "session": {"compaction": {}, "notices": {}}})
}

/// The runs a client folds from what serve wrote: per run, its status and
/// its output text, in run order.
fn folded_runs(messages: &[Value], sid: &str) -> Vec<(String, String)> {
    let mut state = ConnectionState::new();
    for m in messages {
        state.message(Direction::AgentToClient, m);
    }
    let session = state.session(sid).expect("the session");
    session
        .subagent_runs
        .values()
        .map(|r| {
            let status = match r.standard.as_ref().and_then(|s| s.stop_reason.as_deref()) {
                Some(stop) => format!("{} ({stop})", r.state_name()),
                None => r.state_name().to_owned(),
            };
            (status, r.text.clone())
        })
        .collect()
}

#[tokio::test]
async fn runs_are_subagent_updates_on_the_root_and_child_sessions() {
    let mut sid_out = String::new();
    let messages = session(ServeOptions::default(), Answers::default(), |peer| {
        let sid_out = &mut sid_out;
        async move {
            let init = peer.init(standard_caps()).await;
            assert_eq!(init["_meta"]["steering"], json!({"supported": true}));
            let sid = peer.new_session().await;
            let r = peer.turn(&sid, "/subagents 2").await;
            // The turn's tokens, in the standard form.
            let usage = &r["usage"];
            assert_eq!(
                usage["totalTokens"].as_u64().unwrap(),
                usage["inputTokens"].as_u64().unwrap()
                    + usage["outputTokens"].as_u64().unwrap()
                    + usage["cachedReadTokens"].as_u64().unwrap()
            );
            *sid_out = sid;
        }
    })
    .await;
    let sid = sid_out;
    // Nothing of the extensions' own methods reaches this client.
    assert!(
        !messages.iter().any(|m| m["method"]
            .as_str()
            .is_some_and(|m| m.starts_with("_lody/") || m.starts_with("_ua/"))),
        "{messages:#?}"
    );
    let updates: Vec<&Value> = messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "subagent_update")
        .collect();
    // Two announcements, then two ends, all on the root session.
    assert_eq!(updates.len(), 4, "{updates:#?}");
    assert!(updates.iter().all(|u| u["params"]["sessionId"] == sid));
    let children: Vec<&str> = updates[..2]
        .iter()
        .map(|u| u["params"]["update"]["sessionId"].as_str().unwrap())
        .collect();
    for (i, child) in children.iter().enumerate() {
        assert!(child.starts_with(&format!("{sid}:subagent:")), "{child}");
        let announce = &updates[i]["params"]["update"];
        assert_eq!(announce["title"], format!("worker-{}", i + 1));
        assert_eq!(announce["state"], json!({"state": "running"}));
        assert_eq!(announce["capabilities"], json!({"cancel": {}}));
        // The child's output is its own session's.
        let own: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == *child)
            .collect();
        assert!(!own.is_empty(), "no output under {child}");
    }
    for end in &updates[2..] {
        assert_eq!(
            end["params"]["update"]["state"],
            json!({"state": "idle", "stopReason": "end_turn"})
        );
    }
    // A client folding it sees two finished runs with their output.
    let runs = folded_runs(&messages, &sid);
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (i, (status, text)) in runs.iter().enumerate() {
        assert_eq!(status, "idle (end_turn)");
        assert!(
            text.contains(&format!("worker-{}", i + 1)),
            "run {i}: {text:?}"
        );
    }
}

#[tokio::test]
async fn a_core_client_and_a_standard_client_fold_the_same_runs() {
    let mut sids = Vec::new();
    let mut transcripts = Vec::new();
    for caps in [full_client_caps(), standard_caps()] {
        let mut sid_out = String::new();
        let messages = session(ServeOptions::default(), Answers::default(), |peer| {
            let sid_out = &mut sid_out;
            async move {
                peer.init(caps).await;
                let sid = peer.new_session().await;
                peer.turn(&sid, "/subagents 3").await;
                *sid_out = sid;
            }
        })
        .await;
        sids.push(sid_out);
        transcripts.push(messages);
    }
    let core = folded_runs(&transcripts[0], &sids[0]);
    let standard = folded_runs(&transcripts[1], &sids[1]);
    assert_eq!(core.len(), 3);
    assert_eq!(core.len(), standard.len());
    for ((core_status, core_text), (std_status, std_text)) in core.iter().zip(&standard) {
        // The documented state mapping: completed ↔ idle (end_turn).
        assert_eq!(core_status, "completed");
        assert_eq!(std_status, "idle (end_turn)");
        assert_eq!(core_text, std_text);
    }
}

#[tokio::test]
async fn session_steering_injects_into_a_running_turn_and_asks_for_a_prompt_otherwise() {
    session(
        ServeOptions::default(),
        Answers::default(),
        |peer| async move {
            peer.init(standard_caps()).await;
            let sid = peer.new_session().await;
            let steer = |prompt_required: bool| {
                let mut params = json!({"sessionId": sid,
                "prompt": [{"type": "text", "text": "Prefer the retry helper"}]});
                if prompt_required {
                    params["_meta"] = json!({"steering": {"idleBehavior": "promptRequired"}});
                }
                params
            };
            // No turn: `promptRequired` when asked for, else `failed`.
            assert_eq!(
                peer.ok("_session/steering", steer(true)).await,
                json!({"outcome": "promptRequired", "reason": "noRunningTurn"})
            );
            assert_eq!(
                peer.ok("_session/steering", steer(false)).await,
                json!({"outcome": "failed"})
            );
            // No activity updates for this client: the turn's first chunk
            // says it runs.
            let turn = {
                let (peer, sid) = (peer.clone(), sid.clone());
                tokio::spawn(async move { peer.prompt(&sid, "/slow 0.5").await })
            };
            peer.wait_for("the slow turn", |m| {
                m.iter().any(|m| {
                    m["params"]["update"]["content"]["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("Working for"))
                })
            })
            .await;
            assert_eq!(
                peer.ok("_session/steering", steer(true)).await,
                json!({"outcome": "injected"})
            );
            let r = turn.await.unwrap().unwrap();
            assert_eq!(r["stopReason"], "end_turn");
            assert!(
                peer.final_answer(&sid).contains("Prefer the retry helper"),
                "{}",
                peer.final_answer(&sid)
            );
            // A standard client gets no `steer_applied`.
            assert!(peer.notes("_lody/session/steer_applied").is_empty());
            assert!(peer.notes("_ua/session/steer_applied").is_empty());
            // Malformed params are the caller's error.
            let e = peer
                .call("_session/steering", json!({"sessionId": sid}))
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        },
    )
    .await;
}

#[tokio::test]
async fn session_goal_sets_pauses_and_clears_and_answers_an_empty_object() {
    session(
        ServeOptions::default(),
        Answers::default(),
        |peer| async move {
            peer.init(standard_caps()).await;
            let sid = peer.new_session().await;
            let goal = |action: &str| {
                let mut p = json!({"sessionId": sid, "action": action});
                if action == "set" {
                    p["objective"] = json!("Make CI green");
                }
                p
            };
            for action in ["set", "pause", "resume", "clear"] {
                assert_eq!(peer.ok("_session/goal", goal(action)).await, json!({}));
            }
            let goals: Vec<Value> = peer
                .updates(&sid)
                .iter()
                .filter(|u| u["sessionUpdate"] == "session_info_update")
                .map(|u| u["_meta"]["lody"]["goal"].clone())
                .collect();
            let statuses: Vec<&str> = goals
                .iter()
                .map(|g| g["status"].as_str().unwrap_or("none"))
                .collect();
            assert_eq!(
                statuses,
                ["active", "paused", "active", "none"],
                "{goals:#?}"
            );
            assert_eq!(goals[0]["objective"], "Make CI green");
            // The contract's own goal request still refuses `set` (it travels
            // on `session/prompt`).
            let e = peer
                .call("_lody/session/goal", goal("set"))
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        },
    )
    .await;
}

#[tokio::test]
async fn cancelling_a_child_session_cancels_its_run() {
    let messages = session(
        ServeOptions::default(),
        Answers::default(),
        |peer| async move {
            peer.init(standard_caps()).await;
            let sid = peer.new_session().await;
            let turn = {
                let peer = peer.clone();
                let sid = sid.clone();
                tokio::spawn(async move { peer.prompt(&sid, "/subagents 2 5").await })
            };
            peer.wait_for("both announcements", |m| {
                m.iter()
                    .filter(|m| m["params"]["update"]["sessionUpdate"] == "subagent_update")
                    .count()
                    >= 2
            })
            .await;
            let first = peer
                .messages()
                .iter()
                .find(|m| m["params"]["update"]["sessionUpdate"] == "subagent_update")
                .unwrap()["params"]["update"]["sessionId"]
                .as_str()
                .unwrap()
                .to_owned();
            peer.notify("session/cancel", json!({"sessionId": first}));
            peer.wait_for("the child's end", |m| {
                m.iter().any(|m| {
                    m["params"]["update"]["sessionId"] == first.as_str()
                        && m["params"]["update"]["state"]["state"] == "idle"
                })
            })
            .await;
            // The other run and the turn go on; cancel the turn to end.
            peer.notify("session/cancel", json!({"sessionId": sid}));
            let r = turn.await.unwrap().unwrap();
            assert_eq!(r["stopReason"], "cancelled");
        },
    )
    .await;
    let ends: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["params"]["update"]["sessionUpdate"] == "subagent_update"
                && m["params"]["update"]["state"]["state"] == "idle"
        })
        .collect();
    assert_eq!(
        ends[0]["params"]["update"]["state"],
        json!({"state": "idle", "stopReason": "cancelled"})
    );
}
