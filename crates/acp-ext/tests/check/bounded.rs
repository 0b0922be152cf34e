//! Bounded state

use super::*;

#[test]
fn state_stays_bounded_on_a_long_stream() {
    let limits = SequenceLimits::default();
    let bound = |l: &SequenceLimits| {
        l.sessions
            * (1 + l.runs_per_session
                + l.native_ids_per_session
                + l.steer_ids_per_session
                + l.scopes_per_session
                + l.models_per_scope)
            + l.pending_requests
    };
    let mut c = Checker::new();
    let mut max_total = 0;
    let mut max_sessions = 0;
    for i in 0u64..60_000 {
        let sid = format!("s{}", i % 300);
        let msg = match i % 6 {
            0 => session_update(
                &sid,
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "x",
                    "_meta": {"lody": {"turnId": format!("turn{i}")}}}),
            ),
            1 => snapshot(&sid, &format!("r{i}"), "running"),
            2 => snapshot(&sid, &format!("r{}", i - 1), "completed"),
            3 => usage_update(&sid, &format!("scope{i}"), i, None),
            4 => req(
                i,
                "_lody/session/steer",
                json!({"sessionId": sid, "prompt": [], "steerId": format!("st{i}")}),
            ),
            _ => req(i, "session/prompt", json!({"sessionId": sid, "prompt": []})),
        };
        let dir = if i % 6 >= 4 { C2A } else { A2C };
        c.message(dir, &msg);
        if i % 500 == 0 {
            let t = c.tracked_state();
            max_total = max_total.max(t.total());
            max_sessions = max_sessions.max(t.sessions);
        }
    }
    let t = c.tracked_state();
    assert!(t.sessions <= limits.sessions && max_sessions <= limits.sessions);
    assert!(t.pending_requests <= limits.pending_requests);
    assert!(max_total <= bound(&limits), "{max_total}");

    // With small limits, every count stays within its own limit.
    let mut small = SequenceLimits::default();
    small.sessions = 2;
    small.runs_per_session = 8;
    small.native_ids_per_session = 16;
    small.steer_ids_per_session = 4;
    small.scopes_per_session = 4;
    small.pending_requests = 8;
    let mut c = Checker::with_limits(small);
    for i in 0u64..5_000 {
        let sid = format!("s{}", i % 3);
        c.message(A2C, &snapshot(&sid, &format!("r{i}"), "running"));
        c.message(A2C, &usage_update(&sid, &format!("scope{i}"), 1, None));
        c.message(
            A2C,
            &session_update(
                &sid,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{i}")}),
            ),
        );
        c.message(
            C2A,
            &req(
                i,
                "_lody/session/steer",
                json!({"sessionId": sid, "prompt": [], "steerId": format!("x{i}")}),
            ),
        );
        let t = c.tracked_state();
        assert!(t.sessions <= 2);
        assert!(t.runs <= 2 * 8);
        assert!(t.native_ids <= 2 * 16);
        assert!(t.steer_ids <= 2 * 4);
        assert!(t.ended_scopes <= 2 * 4);
        assert!(t.pending_requests <= 8);
    }
}

#[test]
fn closing_a_session_drops_its_state() {
    let mut c = Checker::new();
    c.message(A2C, &snapshot("s", "r", "running"));
    assert_eq!(c.tracked_state().sessions, 1);
    c.message(C2A, &req(1, "session/close", json!({"sessionId": "s"})));
    assert_eq!(c.tracked_state().sessions, 0);
}
