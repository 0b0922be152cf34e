//! session lifecycle

use super::*;

#[tokio::test]
async fn load_replays_resume_does_not_and_close_ends_the_lifetime() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "first").await.unwrap();
        let scope1 =
            peer.notes("_lody/session/usage_update")[0]["_meta"]["lody"]["usageScopeId"].clone();
        let before = peer.updates(&sid).len();
        peer.ok(
            "session/resume",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        assert_eq!(peer.updates(&sid).len(), before, "resume replays nothing");
        peer.ok(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        let replayed: Vec<Value> = peer.updates(&sid).split_off(before);
        assert_eq!(
            kinds(&replayed),
            ["user_message_chunk", "agent_message_chunk"]
        );
        assert_eq!(replayed[0]["content"]["text"], "first");

        assert_eq!(
            peer.ok("session/close", json!({"sessionId": sid})).await,
            json!({})
        );
        let e = peer.prompt(&sid, "closed?").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND);
        // Loading reopens it with a new accounting lifetime and a new scope.
        peer.ok(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
        peer.prompt(&sid, "second").await.unwrap();
        let usage = peer.notes("_lody/session/usage_update");
        let last = usage.last().unwrap();
        assert_ne!(last["_meta"]["lody"]["usageScopeId"], scope1);
        assert_eq!(
            last["delta"]["modelUsage"], last["modelUsage"],
            "totals restart from zero"
        );
        let list = peer.ok("session/list", json!({"cwd": "/tmp"})).await;
        assert_eq!(list["sessions"][0]["sessionId"], sid.as_str());
        assert!(
            list["sessions"][0]["updatedAt"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        let list = peer.ok("session/list", json!({"cwd": "/elsewhere"})).await;
        assert_eq!(list["sessions"], json!([]));
    })
    .await;
}

#[tokio::test]
async fn close_cancels_the_running_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let slow = peer.prompt_running(&sid, "/slow 30").await;
        peer.ok("session/close", json!({"sessionId": sid})).await;
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "cancelled");
    })
    .await;
}

#[tokio::test]
async fn fork_copies_history_up_to_the_requested_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let t1 = peer.prompt(&sid, "one").await.unwrap()["_meta"]["lody"]["turnId"].clone();
        peer.prompt(&sid, "two").await.unwrap();
        let fork = peer
            .ok(
                "session/fork",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [], "_meta": {"lody": {"forkAtTurn": {"version": 1, "turnId": t1}}}}),
            )
            .await;
        let child = fork["sessionId"].as_str().unwrap().to_owned();
        assert_ne!(child, sid);
        peer.ok("session/load", json!({"sessionId": child, "cwd": "/tmp", "mcpServers": []})).await;
        let texts: Vec<String> = peer
            .updates(&child)
            .iter()
            .filter(|u| u["sessionUpdate"] == "user_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(texts, ["one"]);
        let e = peer
            .call(
                "session/fork",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [], "_meta": {"lody": {"forkAtTurn": {"version": 1, "turnId": "turn-999"}}}}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("forkAtTurn"));
        // The fork is a live session of its own.
        peer.turn(&child, "three").await;
    })
    .await;
}

#[tokio::test]
async fn worktree_project_and_session_config_are_honoured() {
    let dir = std::env::temp_dir();
    let root = dir.to_str().unwrap().to_owned();
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let r = peer
            .ok(
                "session/new",
                json!({
                    "cwd": "/tmp", "mcpServers": [],
                    "_meta": {"lody": {
                        "worktreeProject": {"version": 1, "originProjectPath": root},
                        "sessionConfig": {"version": 1, "configOptionValues": {"plan_mode": true}}
                    }}
                }),
            )
            .await;
        assert_eq!(r["_meta"]["lody"]["worktreeProject"]["originProjectPath"], root.as_str());
        let plan = r["configOptions"].as_array().unwrap().iter().find(|o| o["id"] == "plan_mode").unwrap();
        assert_eq!(plan["type"], "boolean");
        assert_eq!(plan["currentValue"], true);
        let sid = r["sessionId"].as_str().unwrap().to_owned();
        peer.prompt(&sid, "change things").await.unwrap();
        assert!(peer.final_answer(&sid).contains("Plan mode"));
        let r = peer
            .ok("session/set_config_option", json!({"sessionId": sid, "configId": "plan_mode", "type": "boolean", "value": false}))
            .await;
        assert_eq!(r["configOptions"][0]["currentValue"], false);
        peer.prompt(&sid, "change things").await.unwrap();
        assert!(!peer.final_answer(&sid).contains("Plan mode"));

        // Load keeps the existing project assignment.
        let r = peer
            .ok(
                "session/load",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [],
                       "_meta": {"lody": {"worktreeProject": {"version": 1, "originProjectPath": "/"}}}}),
            )
            .await;
        assert_eq!(r["_meta"]["lody"]["worktreeProject"]["originProjectPath"], root.as_str());

        // An unresolvable project root is an error, not a silent success.
        for bad in ["/definitely/not/a/real/dir", "relative/path"] {
            let e = peer
                .call(
                    "session/new",
                    json!({"cwd": "/tmp", "mcpServers": [],
                           "_meta": {"lody": {"worktreeProject": {"version": 1, "originProjectPath": bad}}}}),
                )
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
            assert!(e.message.contains("worktreeProject"), "{}", e.message);
        }
        let e = peer
            .call(
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": [],
                       "_meta": {"lody": {"sessionConfig": {"version": 1, "configOptionValues": {"plan_mode": "yes"}}}}}),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("plan_mode"));
    })
    .await;
}

#[tokio::test]
async fn history_read_replays_the_transcript() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "remember me").await.unwrap();
        let before = peer.updates(&sid).len();
        assert_eq!(
            peer.ok("_lody/session/history/read", json!({"sessionId": sid}))
                .await,
            json!({})
        );
        let replayed = peer.updates(&sid).split_off(before);
        assert_eq!(replayed[0]["content"]["text"], "remember me");
        // Replay contributes nothing to usage.
        assert_eq!(peer.notes("_lody/session/usage_update").len(), 1);
    })
    .await;
}
