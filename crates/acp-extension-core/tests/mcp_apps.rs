//! MCP Apps types (contract §6): round trips, absent versus `null`, and the
//! contract's rejections.

mod common;

use acp_extension_core::wire::WireObject;
use common::{rejects, round_trip};

use acp_extension_core::mcp_apps::*;
use acp_extension_core::wire::Map;
use acp_extension_core::wire::WireEnum;
use serde_json::{Value, json};

fn app() -> Value {
    json!({"version": 1, "server": "charts", "tool": "plot", "resourceUri": "ui://charts/plot"})
}

#[test]
fn tool_call_meta() {
    let m: McpAppToolCallMeta = round_trip(app());
    assert_eq!(m.resource_uri, "ui://charts/plot");
    assert_eq!(m.preferred_display_mode, None);

    let mut v = app();
    v["appName"] = json!("Charts");
    v["preferredDisplayMode"] = json!("fullscreen");
    let m: McpAppToolCallMeta = round_trip(v);
    assert_eq!(
        m.preferred_display_mode,
        Some(McpAppDisplayMode::Fullscreen)
    );
    assert_eq!(McpAppDisplayMode::ALL, ["inline", "fullscreen"]);

    let built = McpAppToolCallMeta::new("s", "t", "ui://s/t")
        .preferred_display_mode(McpAppDisplayMode::Inline);
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        r#"{"version":1,"server":"s","tool":"t","resourceUri":"ui://s/t","preferredDisplayMode":"inline"}"#
    );
}

#[test]
fn tool_call_meta_rejections() {
    rejects::<McpAppToolCallMeta>(
        json!({"server": "s", "tool": "t"}),
        &[("/version", "required"), ("/resourceUri", "required")],
    );
    let mut v = app();
    v["preferredDisplayMode"] = json!("modal");
    v["appName"] = json!(null);
    rejects::<McpAppToolCallMeta>(
        v,
        &[
            ("/appName", "not-null"),
            ("/preferredDisplayMode", "one-of"),
        ],
    );
    let mut v = app();
    v["version"] = json!(2);
    rejects::<McpAppToolCallMeta>(v, &[("/version", "literal")]);
}

#[test]
fn call_tool_result_is_forwarded_verbatim() {
    let v = json!({
        "content": [{"type": "text", "text": "ok"}, {"type": "future-kind", "x": 1}, 5],
        "structuredContent": {"rows": [1, 2]},
        "isError": false,
        "_meta": {"ui": {"visibility": ["app"]}},
        "vendor": true
    });
    let r: McpCallToolResult = round_trip(v);
    assert_eq!(r.content.len(), 3);
    assert_eq!(r.is_error, Some(false));
    assert_eq!(r.extra()["vendor"], json!(true));
    round_trip::<McpCallToolResult>(json!({"content": []}));
}

#[test]
fn call_tool_result_rejections() {
    rejects::<McpCallToolResult>(json!({}), &[("/content", "required")]);
    rejects::<McpCallToolResult>(
        json!({"content": null, "isError": null, "structuredContent": [], "_meta": null}),
        &[
            ("/content", "type"),
            ("/structuredContent", "type"),
            ("/isError", "not-null"),
            ("/_meta", "not-null"),
        ],
    );
}

#[test]
fn resource_contents() {
    let c: McpResourceContents = round_trip(json!({
        "uri": "ui://charts/plot", "mimeType": "text/html;profile=mcp-app", "text": "<html></html>"
    }));
    assert_eq!(c.mime_type.as_deref(), Some("text/html;profile=mcp-app"));
    round_trip::<McpResourceContents>(json!({"uri": "ui://x", "blob": "AAEC", "_meta": {}}));
    rejects::<McpResourceContents>(json!({"text": "t"}), &[("/uri", "required")]);
    rejects::<McpResourceContents>(
        json!({"uri": "u", "mimeType": null, "blob": 1}),
        &[("/mimeType", "not-null"), ("/blob", "type")],
    );
}

#[test]
fn load() {
    let r: McpAppLoadRequest = round_trip(json!({"sessionId": "s", "toolCallId": "c"}));
    assert_eq!(r.tool_call_id, "c");
    rejects::<McpAppLoadRequest>(json!({"sessionId": "s"}), &[("/toolCallId", "required")]);

    // `toolResult` is null until the originating call completes.
    let r: McpAppLoadResponse =
        round_trip(json!({"app": app(), "toolInput": {}, "toolResult": null}));
    assert!(r.tool_result.is_none());
    let r: McpAppLoadResponse = round_trip(json!({
        "app": app(), "toolInput": {"q": 1}, "toolResult": {"content": [], "isError": true}
    }));
    assert_eq!(r.tool_result.unwrap().is_error, Some(true));
    assert_eq!(r.tool_input["q"], json!(1));

    let built = McpAppLoadResponse::new(
        McpAppToolCallMeta::new("charts", "plot", "ui://charts/plot"),
        Map::new(),
        None,
    );
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"app": app(), "toolInput": {}, "toolResult": null})
    );
}

#[test]
fn load_response_rejections() {
    rejects::<McpAppLoadResponse>(
        json!({"app": app(), "toolInput": {}}),
        &[("/toolResult", "required")],
    );
    rejects::<McpAppLoadResponse>(
        json!({"app": {"version": 1}, "toolInput": null, "toolResult": {}}),
        &[
            ("/app/server", "required"),
            ("/app/tool", "required"),
            ("/app/resourceUri", "required"),
            ("/toolInput", "type"),
            ("/toolResult/content", "required"),
        ],
    );
}

#[test]
fn resource_read() {
    round_trip::<McpAppResourceReadRequest>(
        json!({"sessionId": "s", "toolCallId": "c", "uri": "ui://x"}),
    );
    rejects::<McpAppResourceReadRequest>(
        json!({"sessionId": "s", "toolCallId": "c"}),
        &[("/uri", "required")],
    );
    let r: McpAppResourceReadResponse =
        round_trip(json!({"contents": [{"uri": "ui://x", "text": "t"}]}));
    assert_eq!(r.contents[0].text.as_deref(), Some("t"));
    round_trip::<McpAppResourceReadResponse>(json!({"contents": []}));
    rejects::<McpAppResourceReadResponse>(
        json!({"contents": [{}]}),
        &[("/contents/0/uri", "required")],
    );
}

#[test]
fn tool_call() {
    let r: McpAppToolCallRequest = round_trip(json!({
        "sessionId": "s", "toolCallId": "c", "name": "refresh", "arguments": {"n": 1}
    }));
    assert_eq!(r.arguments.unwrap()["n"], json!(1));
    round_trip::<McpAppToolCallRequest>(
        json!({"sessionId": "s", "toolCallId": "c", "name": "refresh"}),
    );
    rejects::<McpAppToolCallRequest>(
        json!({"sessionId": "s", "toolCallId": "c", "name": "n", "arguments": null}),
        &[("/arguments", "not-null")],
    );
    rejects::<McpAppToolCallRequest>(
        json!({"sessionId": "s", "toolCallId": "c", "arguments": []}),
        &[("/name", "required"), ("/arguments", "type")],
    );
}
