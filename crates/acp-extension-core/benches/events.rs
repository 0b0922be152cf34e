//! Deterministic generator of subagent event lines shared by the bench and
//! the `gen_subagent_events` example.

/// A small linear congruential generator: reproducible without a crate.
fn mix(i: usize) -> u64 {
    let mut x = (i as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^ (x >> 33)
}

/// The `i`-th line of the stream.
pub fn event_line(i: usize) -> String {
    let r = mix(i);
    let run = format!("run-{}", r % 64);
    let invalid = r.is_multiple_of(10);
    let env = format!(r#""version":1,"sessionId":"sess-7f3a9c","runId":"{run}""#);
    match (r >> 8) % 20 {
        0..=9 => {
            let text = if invalid {
                "42".to_string()
            } else {
                format!(
                    "\"chunk {i} of the subagent's answer: reading src/lib.rs and planning the change\""
                )
            };
            format!(
                r#"{{{env},"type":"output","nativeTurnId":"turn-{}","messageId":"msg-{}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}"#,
                r % 97,
                r % 1013
            )
        }
        10..=14 => {
            let status = if invalid { "null" } else { "\"in_progress\"" };
            format!(
                r#"{{{env},"type":"output","update":{{"sessionUpdate":"tool_call","toolCallId":"tool-{i}","title":"Read src/lib.rs","kind":"read","status":{status},"locations":[{{"path":"/work/src/lib.rs","line":{}}}],"rawInput":{{"path":"/work/src/lib.rs"}}}}}}"#,
                r % 400
            )
        }
        15 => {
            let status = if invalid {
                "\"unknown\""
            } else {
                "\"completed\""
            };
            format!(
                r#"{{{env},"type":"output","update":{{"sessionUpdate":"tool_call_update","toolCallId":"tool-{}","status":{status},"content":[{{"type":"content","content":{{"type":"text","text":"fn main() {{}}"}}}},{{"type":"diff","path":"/work/src/lib.rs","oldText":null,"newText":"pub fn x() {{}}"}}]}}}}"#,
                i.saturating_sub(3)
            )
        }
        16..=17 => {
            let tokens = if invalid {
                "-1".to_string()
            } else {
                format!("{}", r % 200_000)
            };
            format!(
                r#"{{{env},"type":"progress","progress":{{"summary":"editing files","lastToolName":"Edit","toolsUsed":["Read","Edit"],"durationMs":{},"turnCount":{},"toolCallCount":{},"totalTokens":{tokens},"contextUsagePercent":{}.5}}}}"#,
                r % 100_000,
                r % 12,
                r % 40,
                r % 100
            )
        }
        _ => {
            let summary = if invalid { "null" } else { "\"halfway there\"" };
            format!(
                r#"{{{env},"type":"snapshot","snapshot":{{"state":"running","name":"Explorer","description":"Explore the codebase","parentToolCallId":"tool-1","startedAtEpochSeconds":1764460800,"summary":{summary},"support":{{"stream":["text","tool"],"progress":true,"outputRead":"live_tail","cancel":true}}}}}}"#
            )
        }
    }
}
