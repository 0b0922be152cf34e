//! steering

use super::*;

#[test]
fn steer_prompt_meta() {
    let s: SteerPromptMeta = round_trip(json!({"id": "steer-1"}));
    assert_eq!(s.id, "steer-1");
    rejects::<SteerPromptMeta>(json!({}), &[("/id", "required")]);
    rejects::<SteerPromptMeta>(json!({"id": null}), &[("/id", "type")]);
}

#[test]
fn steer_request_keeps_blocks_verbatim_and_exposes_sdk_blocks() {
    let v = json!({
        "sessionId": "s1",
        "steerId": "steer-1",
        "prompt": [
            {"type": "text", "text": "use the other API", "vendorKey": {"a": 1}},
            {"type": "resource_link", "name": "spec", "uri": "file:///spec.md"}
        ]
    });
    let r: SteerRequest = round_trip(v);
    let blocks: Vec<&ContentBlock> = r.content_blocks().collect();
    assert!(matches!(blocks[0], ContentBlock::Text(t) if t.text == "use the other API"));
    assert!(matches!(blocks[1], ContentBlock::ResourceLink(l) if l.uri == "file:///spec.md"));
    // The key the SDK type does not know is still on the wire.
    assert_eq!(r.prompt[0].as_value()["vendorKey"], json!({"a": 1}));

    let built = SteerRequest::new(
        "s1",
        vec![AcpContentBlock::from(ContentBlock::Text(TextContent::new(
            "hi",
        )))],
        "steer-2",
    );
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}], "steerId": "steer-2"})
    );
    let block: ContentBlock = built.prompt[0].clone().into();
    assert_eq!(block, ContentBlock::Text(TextContent::new("hi")));
    round_trip::<SteerRequest>(json!({"sessionId": "s", "prompt": [], "steerId": "x"}));
}

#[test]
fn steer_request_rejections() {
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x"}),
        &[("/prompt", "required")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": {"type": "text", "text": "t"}}),
        &[("/prompt", "type")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"type": "video"}]}),
        &[("/prompt/0/type", "one-of")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"text": "no type"}]}),
        &[("/prompt/0/type", "one-of")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"type": "text", "text": "ok"}, {"type": "text"}]}),
        &[("/prompt/1/text", "required")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": ["hi"]}),
        &[("/prompt/0", "type")],
    );
    let bad = check::<SteerRequest>(&json!({
        "sessionId": "s", "steerId": "x", "prompt": [{"type": "text", "text": 5}]
    }));
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].pointer, "/prompt/0/text");
    assert_eq!(bad[0].rule.id(), "acp-content-block");

    assert!(AcpContentBlock::from_value(json!({"type": "image"})).is_err());
    assert!(AcpContentBlock::from_value(json!(null)).is_err());
}

#[test]
fn steer_response_and_applied() {
    let r: SteerResponse = round_trip(json!({"outcome": "injected"}));
    assert_eq!(r.outcome, SteerOutcome::Injected);
    let r: SteerResponse = round_trip(json!({"outcome": "failed"}));
    assert_eq!(r.outcome, SteerOutcome::Failed);
    rejects::<SteerResponse>(json!({"outcome": "queued"}), &[("/outcome", "one-of")]);
    rejects::<SteerResponse>(json!({}), &[("/outcome", "required")]);

    let a: SteerApplied = round_trip(json!({"sessionId": "s", "steerId": "x"}));
    assert_eq!(a.steer_id, "x");
    rejects::<SteerApplied>(json!({"sessionId": "s"}), &[("/steerId", "required")]);
}
