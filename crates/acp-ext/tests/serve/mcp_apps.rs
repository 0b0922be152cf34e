//! MCP apps

use super::*;

fn mcp_apps_client_caps() -> Value {
    json!({"_meta": {"lody": {"mcpApps": {"version": 1}}}})
}

#[tokio::test]
async fn app_is_tagged_and_served_when_mcp_apps_is_negotiated() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(mcp_apps_client_caps()).await;
        let sid = peer.new_session().await;
        peer.turn(&sid, "/app").await;
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        let id = call["toolCallId"].as_str().unwrap();
        let app = &meta(call, "lody")["mcpApp"];
        assert_eq!(app["version"], 1);
        assert_eq!(app["server"], "demo");
        assert_eq!(app["tool"], "chart");
        assert_eq!(app["resourceUri"], "ui://demo/chart");
        assert_eq!(app["preferredDisplayMode"], "inline");
        let done = last_tool_update(&updates, id);
        assert_eq!(done["status"], "completed");
        assert_eq!(done["content"][0]["content"]["type"], "text");

        // load: the app as tagged, the call's input and (completed) result.
        let load = peer
            .ok(
                "_lody/mcp_apps/load",
                json!({"sessionId": sid, "toolCallId": id}),
            )
            .await;
        assert_eq!(&load["app"], app);
        assert_eq!(load["toolInput"], call["rawInput"]);
        assert_eq!(load["toolResult"]["content"][0]["type"], "text");

        // resource/read of the app's UI resource, in either namespace.
        let read = peer
            .ok(
                "_ua/mcp_apps/resource/read",
                json!({"sessionId": sid, "toolCallId": id, "uri": "ui://demo/chart"}),
            )
            .await;
        let contents = read["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], "ui://demo/chart");
        assert_eq!(contents[0]["mimeType"], "text/html;profile=mcp-app");
        assert!(contents[0]["text"].as_str().unwrap().contains("<html"));

        // tool/call of the app's own tool.
        let result = peer
            .ok(
                "_lody/mcp_apps/tool/call",
                json!({"sessionId": sid, "toolCallId": id, "name": "chart",
                       "arguments": {"series": [4, 5]}}),
            )
            .await;
        assert_eq!(result["content"][0]["type"], "text");
        assert!(result["content"][0]["text"].is_string());

        // Any other tool is refused, naming it.
        let e = peer
            .call(
                "_lody/mcp_apps/tool/call",
                json!({"sessionId": sid, "toolCallId": id, "name": "delete_everything"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("delete_everything"), "{}", e.message);
        assert!(
            e.message.contains("not visible to the app"),
            "{}",
            e.message
        );

        // Requests are scoped to a tagged tool call of a known session.
        for params in [
            json!({"sessionId": sid, "toolCallId": "call-999"}),
            json!({"sessionId": "sess-999", "toolCallId": id}),
        ] {
            let e = peer
                .call("_lody/mcp_apps/load", params.clone())
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{params}");
        }
    })
    .await;
}

#[tokio::test]
async fn app_has_no_mcp_app_meta_without_the_client_capability() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/app").await.unwrap();
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        assert!(meta(call, "lody").get("mcpApp").is_none(), "{call}");
        assert!(meta(call, "ua").get("mcpApp").is_none(), "{call}");
        let id = call["toolCallId"].as_str().unwrap();
        // Not negotiated: the methods are not served.
        let e = peer
            .call(
                "_lody/mcp_apps/load",
                json!({"sessionId": sid, "toolCallId": id}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
    })
    .await;
}
