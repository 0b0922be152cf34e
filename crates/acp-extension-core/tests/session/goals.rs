//! goals

use super::*;

#[test]
fn goal_snapshot_round_trips() {
    // Placeholder zero timestamps (codex) and a null budget.
    let g: GoalSnapshot = round_trip(json!({
        "objective": "Ship it", "status": "active", "tokenBudget": null, "tokensUsed": 0,
        "timeUsedSeconds": 0, "createdAtEpochSeconds": 0, "updatedAtEpochSeconds": 0
    }));
    assert_eq!(g.token_budget, MaybeUndefined::Null);
    assert_eq!(g.created_at_epoch_seconds, Some(EpochSeconds::from_secs(0)));
    assert_eq!(g.last_reason, MaybeUndefined::Undefined);

    // Fractional epoch seconds are legal.
    let g: GoalSnapshot = round_trip(json!({
        "objective": "First task\nSecond task", "status": "limited", "iterations": 3,
        "lastReason": "budget", "tokenBudget": 1000, "tokensUsed": 1000,
        "createdAtEpochSeconds": 1710000000.123, "updatedAtEpochSeconds": 1710000030.5
    }));
    assert_eq!(g.status, GoalStatus::Limited);
    assert_eq!(g.token_budget, MaybeUndefined::Value(num(1000.0)));
    assert_eq!(g.last_reason, MaybeUndefined::Value("budget".to_owned()));

    let g: GoalSnapshot =
        round_trip(json!({"objective": "o", "status": "blocked", "lastReason": null}));
    assert_eq!(g.last_reason, MaybeUndefined::Null);
    for s in ["active", "paused", "blocked", "limited", "complete"] {
        round_trip::<GoalSnapshot>(json!({"objective": "o", "status": s}));
    }
}

#[test]
fn goal_snapshot_setters_keep_absent_and_null_apart() {
    let g = GoalSnapshot::new("o", GoalStatus::Paused)
        .token_budget(None)
        .iterations(num(2.0));
    assert_eq!(
        serde_json::to_value(&g).unwrap(),
        json!({"objective": "o", "status": "paused", "iterations": 2, "tokenBudget": null})
    );
}

#[test]
fn goal_snapshot_rejections() {
    rejects::<GoalSnapshot>(json!({"status": "active"}), &[("/objective", "required")]);
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "done"}),
        &[("/status", "one-of")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "iterations": null}),
        &[("/iterations", "not-null")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "createdAtEpochSeconds": null}),
        &[("/createdAtEpochSeconds", "not-null")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "tokensUsed": -1, "tokenBudget": "10"}),
        &[
            ("/tokensUsed", "finite-non-negative"),
            ("/tokenBudget", "type"),
        ],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "lastReason": 5}),
        &[("/lastReason", "type")],
    );
}

#[test]
fn goal_control_request_round_trips() {
    let r: GoalControlRequest =
        round_trip(json!({"sessionId": "s1", "action": "set", "objective": "Ship it"}));
    assert_eq!(r.tag(), "set");
    assert_eq!(r.session_id(), "s1");
    assert!(matches!(&r, GoalControlRequest::Set(s) if s.objective == "Ship it"));

    for action in ["pause", "resume", "clear"] {
        let r: GoalControlRequest = round_trip(json!({"sessionId": "s1", "action": action}));
        assert_eq!(r.tag(), action);
        assert_eq!(r.session_id(), "s1");
    }
    assert_eq!(
        GoalControlRequest::TAGS,
        ["set", "pause", "resume", "clear"]
    );

    // Extra keys survive, the tag is written first.
    round_trip::<GoalControlRequest>(json!({"sessionId": "s", "action": "clear", "x": true}));
    assert_eq!(
        serde_json::to_string(&GoalControlRequest::set("s", "o")).unwrap(),
        r#"{"action":"set","sessionId":"s","objective":"o"}"#
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::pause("s")).unwrap(),
        json!({"action": "pause", "sessionId": "s"})
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::resume("s")).unwrap(),
        json!({"action": "resume", "sessionId": "s"})
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::clear("s")).unwrap(),
        json!({"action": "clear", "sessionId": "s"})
    );
}

#[test]
fn goal_control_request_rejections() {
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "set"}),
        &[("/objective", "required")],
    );
    rejects::<GoalControlRequest>(json!({"action": "pause"}), &[("/sessionId", "required")]);
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "stop"}),
        &[("/action", "one-of")],
    );
    rejects::<GoalControlRequest>(json!({"sessionId": "s"}), &[("/action", "one-of")]);
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "set", "objective": null}),
        &[("/objective", "type")],
    );
    rejects::<GoalControlRequest>(json!("pause"), &[("", "type")]);
}

#[test]
fn goal_control_response_goal_is_required_but_nullable() {
    let r: GoalControlResponse = round_trip(json!({"goal": null}));
    assert_eq!(r.goal, None);
    let r: GoalControlResponse =
        round_trip(json!({"goal": {"objective": "o", "status": "active"}}));
    assert_eq!(r.goal.unwrap().status, GoalStatus::Active);
    assert_eq!(
        serde_json::to_value(GoalControlResponse::new(None)).unwrap(),
        json!({"goal": null})
    );
    rejects::<GoalControlResponse>(json!({}), &[("/goal", "required")]);
    rejects::<GoalControlResponse>(
        json!({"goal": {"objective": "o"}}),
        &[("/goal/status", "required")],
    );
}

#[test]
fn goal_prompt_control_round_trips_and_rejections() {
    let c: GoalPromptControl =
        round_trip(json!({"version": 1, "action": "set", "objective": "Ship it"}));
    assert!(matches!(c, GoalPromptControl::Set(ref s) if s.objective == "Ship it"));
    for action in ["pause", "resume", "clear"] {
        let c: GoalPromptControl = round_trip(json!({"version": 1, "action": action}));
        assert_eq!(c.tag(), action);
    }
    assert_eq!(
        serde_json::to_value(GoalPromptControl::set("o")).unwrap(),
        json!({"action": "set", "version": 1, "objective": "o"})
    );
    assert_eq!(
        serde_json::to_value(GoalPromptControl::resume()).unwrap(),
        json!({"action": "resume", "version": 1})
    );
    assert_eq!(GoalPromptControl::pause().tag(), "pause");
    assert_eq!(GoalPromptControl::clear().tag(), "clear");

    rejects::<GoalPromptControl>(json!({"action": "pause"}), &[("/version", "required")]);
    rejects::<GoalPromptControl>(
        json!({"version": "1", "action": "clear"}),
        &[("/version", "literal")],
    );
    rejects::<GoalPromptControl>(
        json!({"version": 1, "action": "set"}),
        &[("/objective", "required")],
    );
    rejects::<GoalPromptControl>(
        json!({"version": 1, "action": "SET", "objective": "o"}),
        &[("/action", "one-of")],
    );
}
