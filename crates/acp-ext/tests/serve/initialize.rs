//! initialize

use super::*;

const CONTRACT_FEATURES: &[&str] = &[
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
    "worktreeProject",
    "sessionActivity",
    "mcpApps",
];

#[tokio::test]
async fn initialize_advertises_every_extension_under_both_namespaces() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let r = peer.init(json!({})).await;
        assert_eq!(r["protocolVersion"], 1);
        let caps = &r["agentCapabilities"];
        assert_eq!(caps["loadSession"], true);
        for key in ["list", "resume", "close", "fork"] {
            assert!(
                caps["sessionCapabilities"][key].is_object(),
                "sessionCapabilities.{key}"
            );
        }
        assert!(
            r.get("authMethods")
                .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty))
        );
        let ua = &caps["_meta"]["ua"];
        assert_eq!(
            ua, &caps["_meta"]["lody"],
            "same content in both namespaces"
        );
        for key in CONTRACT_FEATURES {
            assert_eq!(ua[key]["version"], 1, "{key} advertised with version 1");
        }
        let steering = &ua["steering"];
        assert!(["request", "prompt"].contains(&steering["transport"].as_str().unwrap()));
        assert!(["same", "handoff"].contains(&steering["upstreamTurn"].as_str().unwrap()));
        assert!(["active", "apply"].contains(&steering["configPolicy"].as_str().unwrap()));
        assert_eq!(ua["subagents"]["lifecycle"], true);
        let goal = &ua["goal"];
        for a in goal["controlActions"].as_array().unwrap() {
            assert!(
                ["pause", "clear"].contains(&a.as_str().unwrap()),
                "control actions never start work"
            );
        }
        assert!(
            goal["promptActions"]
                .as_array()
                .unwrap()
                .contains(&json!("set"))
        );
    })
    .await;
}

#[tokio::test]
async fn only_advertises_a_subset_and_serves_nothing_else() {
    let options = ServeOptions::new()
        .namespace(ServeNamespace::Ua)
        .only(["usage", "steering"]);
    let messages = session(options, Answers::default(), async |peer| {
        let r = peer.init(full_client_caps()).await;
        let meta = &r["agentCapabilities"]["_meta"];
        assert!(
            meta.get("lody").is_none(),
            "--namespace ua advertises under ua only"
        );
        let keys: Vec<&String> = meta["ua"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["usage", "steering"]);
        // Unadvertised methods are not served.
        for method in [
            "_ua/rate_limits/get",
            "_lody/rate_limits/get",
            "_ua/subagents/list",
        ] {
            let e = peer
                .call(method, json!({"sessionId": "x"}))
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
        }
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/limits").await.unwrap();
        peer.prompt(&sid, "/subagents 1").await.unwrap();
        peer.prompt(&sid, "hello").await.unwrap();
    })
    .await;
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert!(!methods.iter().any(|m| m.ends_with("rate_limits/update")));
    assert!(
        !methods.iter().any(|m| m.ends_with("subagents/event")),
        "subagentEvents not advertised"
    );
    assert!(!methods.iter().any(|m| m.ends_with("activity_update")));
    assert!(
        methods.contains(&"_ua/session/usage_update"),
        "usage is advertised, in ua"
    );
    assert!(!methods.iter().any(|m| m.starts_with("_lody/")));
}

#[tokio::test]
async fn extension_messages_follow_the_client_namespace() {
    // A client that advertises under `ua` only gets `_ua/…`.
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({"_meta": {"ua": {}}})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "hi").await.unwrap();
    })
    .await;
    let ext: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .filter(|m| m.starts_with('_'))
        .collect();
    assert!(!ext.is_empty());
    assert!(ext.iter().all(|m| m.starts_with("_ua/")), "{ext:?}");

    // Anything else (here: no extension capabilities at all) gets `_lody/…`.
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "hi").await.unwrap();
    })
    .await;
    assert!(
        messages
            .iter()
            .filter_map(|m| m["method"].as_str())
            .filter(|m| m.starts_with('_'))
            .all(|m| m.starts_with("_lody/"))
    );
}
