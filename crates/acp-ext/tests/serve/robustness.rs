//! protocol robustness

use super::*;

#[tokio::test]
async fn bad_params_get_invalid_params_naming_the_field() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let cases = [
            ("session/new", json!({"mcpServers": []}), "cwd"),
            (
                "session/new",
                json!({"cwd": "relative/dir", "mcpServers": []}),
                "cwd",
            ),
            ("session/prompt", json!({"sessionId": "sess-1"}), "prompt"),
            (
                "session/prompt",
                json!({"sessionId": "sess-1", "prompt": "text"}),
                "prompt",
            ),
            (
                "session/load",
                json!({"cwd": "/tmp", "mcpServers": []}),
                "sessionId",
            ),
            (
                "_lody/session/steer",
                json!({"sessionId": "sess-1", "prompt": []}),
                "steerId",
            ),
            (
                "_lody/subagents/output",
                json!({"sessionId": "sess-1", "taskId": 5}),
                "taskId",
            ),
            (
                "session/set_config_option",
                json!({"sessionId": "sess-1", "configId": "nope", "value": true}),
                "configId",
            ),
        ];
        peer.new_session().await;
        for (method, params, field) in cases {
            let e = peer.call(method, params.clone()).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{method} {params}");
            assert!(
                e.message.contains(field),
                "{method}: {:?} should name {field}",
                e.message
            );
        }
        // The connection is still up and serving.
        let sid = peer.new_session().await;
        peer.turn(&sid, "ok").await;
    })
    .await;
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        for method in [
            "_x/anything",
            "_lody/no/such/method",
            "_ua/session/nope",
            "session/unknown",
        ] {
            let e = peer.call(method, json!({})).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
        }
        // Unknown notifications are ignored.
        peer.notify("_x/notify", json!({"a": 1}));
        peer.notify("session/cancel", json!({"sessionId": "no-such-session"}));
        let sid = peer.new_session().await;
        peer.turn(&sid, "ok").await;
    })
    .await;
}

#[tokio::test]
async fn unknown_sessions_are_resource_not_found() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        for (method, params) in [
            (
                "session/prompt",
                json!({"sessionId": "ghost", "prompt": [{"type": "text", "text": "x"}]}),
            ),
            (
                "session/load",
                json!({"sessionId": "ghost", "cwd": "/tmp", "mcpServers": []}),
            ),
            ("session/close", json!({"sessionId": "ghost"})),
            ("_lody/subagents/list", json!({"sessionId": "ghost"})),
        ] {
            let e = peer.call(method, params).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{method}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_second_prompt_in_flight_is_refused() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let other = peer.new_session().await;
        let slow = peer.prompt_running(&sid, "/slow 0.3").await;
        let e = peer.prompt(&sid, "me too").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_REQUEST);
        assert!(e.message.contains("in flight"), "{}", e.message);
        // Another session is independent.
        peer.turn(&other, "meanwhile").await;
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "end_turn");
    })
    .await;
}

#[tokio::test]
async fn two_hundred_sessions_share_one_connection() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let mut ids = Vec::new();
        for _ in 0..200 {
            ids.push(peer.new_session().await);
        }
        let prompts = ids.iter().enumerate().map(|(i, sid)| {
            let peer = peer.clone();
            let sid = sid.clone();
            async move {
                let text = if i % 10 == 0 {
                    format!("/slow 0.05 {i}")
                } else {
                    format!("message {i}")
                };
                let r = peer.prompt(&sid, &text).await.unwrap();
                (sid, text, r)
            }
        });
        let results = futures::future::join_all(prompts).await;
        let mut finals: std::collections::HashMap<String, Vec<String>> = Default::default();
        for m in peer.messages() {
            let u = &m["params"]["update"];
            if m["method"] == "session/update"
                && u["_meta"]["lody"]["messagePhase"] == "final_answer"
            {
                finals
                    .entry(m["params"]["sessionId"].as_str().unwrap().to_owned())
                    .or_default()
                    .push(u["content"]["text"].as_str().unwrap().to_owned());
            }
        }
        let mut turn_ids = std::collections::HashSet::new();
        for (sid, text, r) in &results {
            assert_eq!(r["stopReason"], "end_turn");
            assert!(turn_ids.insert(r["_meta"]["lody"]["turnId"].as_str().unwrap().to_owned()));
            let finals = &finals[sid];
            assert_eq!(finals.len(), 1, "{sid}");
            if !text.starts_with('/') {
                assert_eq!(
                    finals[0],
                    format!("You said: {text}"),
                    "{sid} got only its own answer"
                );
            }
        }
        let list = peer.ok("session/list", json!({})).await;
        assert_eq!(list["sessions"].as_array().unwrap().len(), 200);
    })
    .await;
}
