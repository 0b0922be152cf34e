//! Usage

use super::*;

#[test]
fn usage_scopes_sum_never_add_delta_and_report_decreases() {
    let mut delta = usage_update("s", Some("a"), 30, Some(0.3));
    delta["params"]["delta"] = json!({"usage": {"inputTokens": 20, "outputTokens": 0, "cacheReadInputTokens": 0},
        "modelUsage": {"m": {"inputTokens": 20, "outputTokens": 0, "cacheReadInputTokens": 0}}});
    let (mut state, _) = fold(&[
        (A2C, usage_update("s", Some("a"), 10, Some(0.1))),
        (A2C, delta),
        (A2C, usage_update("s", Some("b"), 5, None)),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.scopes.keys().collect::<Vec<_>>(), ["scope:a", "scope:b"]);
    assert_eq!(u.scopes["scope:a"].model_usage["m"].input_tokens.get(), 30);
    assert!(u.scopes["scope:a"].delta.is_some());
    // 30 + 5, not 30 + 20 + 5; scope b's cost is unknown, so the total's is.
    assert_eq!(u.totals["m"].input_tokens.get(), 35);
    assert_eq!(u.totals["m"].cost_usd, None);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    // A total that falls is reported and marks the scope incomplete.
    let changes = state.message(A2C, &usage_update("s", Some("b"), 4, None));
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.rule == "usage-total-decreased" && i.pointer == "/params/modelUsage/m/inputTokens")));
    assert!(state.session("s").unwrap().usage.scopes["scope:b"].incomplete);
    // Scope a comes back after b began: reported.
    state.message(A2C, &usage_update("s", Some("a"), 31, Some(0.31)));
    assert_eq!(
        invalid_rules(&state).last().unwrap(),
        "usage-scope-reentered"
    );
    // Standard usage_update is context occupancy only.
    state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
            "cost": {"amount": 0.5, "currency": "USD"}}),
        ),
    );
    let c = state.session("s").unwrap().usage.context.clone().unwrap();
    assert_eq!((c.used, c.size), (1200, 200000));
    // a's 31 and b's 5: b's fall to 4 was not believed.
    assert_eq!(
        state.session("s").unwrap().usage.totals["m"]
            .input_tokens
            .get(),
        36
    );
}

#[test]
fn a_scope_row_keeps_the_counters_and_the_cost_alone() {
    let mut u = usage_update("s", Some("a"), 10, Some(0.1));
    u["params"]["modelUsage"]["m"]["contextWindow"] = json!(200000);
    u["params"]["modelUsage"]["m"]["vendorCounter"] = json!(7);
    let (state, _) = fold(&[(A2C, u)]);
    let scope = &state.session("s").unwrap().usage.scopes["scope:a"];
    // The row as written by hand from the rule: counters and cost only.
    assert_eq!(
        serde_json::to_value(&scope.model_usage["m"]).unwrap(),
        json!({"inputTokens": 10, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": 0.1})
    );
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
}

#[test]
fn the_total_sums_cumulative_model_usage_never_the_operations() {
    // Three operations of 100, 200 and 50 input tokens, as an accumulator
    // reports them: `usage` is each operation, `modelUsage` the running total.
    let op = |usage: u64, total: u64| {
        notify(
            "_lody/session/usage_update",
            json!({"sessionId": "s",
                "usage": {"inputTokens": usage, "outputTokens": 0, "cacheReadInputTokens": 0},
                "modelUsage": {"a": {"inputTokens": total, "outputTokens": 0, "cacheReadInputTokens": 0, "costUSD": 0.01}}}),
        )
    };
    let (state, _) = fold(&[(A2C, op(100, 100)), (A2C, op(200, 300)), (A2C, op(50, 350))]);
    let u = &state.session("s").unwrap().usage;
    let total = u.total.as_ref().unwrap();
    assert_eq!(total.input_tokens.get(), 350);
    assert_eq!(total.cost_usd.map(|c| c.get()), Some(0.01));
    assert_eq!(u.unattributed, None);
    assert!(!u.scopes["session"].incomplete);
}

#[test]
fn an_update_without_model_usage_is_kept_apart_and_marks_the_scope() {
    let bare = notify(
        "_lody/session/usage_update",
        json!({"sessionId": "s", "usage": {"inputTokens": 500, "outputTokens": 5, "cacheReadInputTokens": 0}}),
    );
    let (state, _) = fold(&[(A2C, usage_update("s", None, 10, Some(0.1))), (A2C, bare)]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.total.as_ref().unwrap().input_tokens.get(), 10);
    assert_eq!(u.unattributed.as_ref().unwrap().input_tokens.get(), 500);
    assert_eq!(u.scopes["session"].unattributed_updates, 1);
    assert!(u.scopes["session"].incomplete);
    // Only unattributed usage: no total at all.
    let (state, _) = fold(&[(
        A2C,
        notify(
            "_lody/session/usage_update",
            json!({"sessionId": "t", "usage": {"inputTokens": 7, "outputTokens": 0, "cacheReadInputTokens": 0}}),
        ),
    )]);
    assert_eq!(state.session("t").unwrap().usage.total, None);
}

#[test]
fn a_falling_counter_keeps_the_maximum_and_the_record_says_so() {
    let (state, changes) = fold(&[
        (A2C, usage_update("s", None, 100, Some(0.5))),
        (A2C, usage_update("s", None, 90, Some(0.4))),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.totals["m"].input_tokens.get(), 100);
    assert_eq!(u.totals["m"].cost_usd.map(|c| c.get()), Some(0.5));
    assert!(u.scopes["session"].incomplete);
    let record = changes
        .iter()
        .find_map(|c| match c {
            Change::Invalid(i) if i.rule == "usage-total-decreased" => Some(i.clone()),
            _ => None,
        })
        .expect("the fall is recorded");
    assert!(record.folded, "{record:?}");
    assert!(
        record.message.contains("higher value is kept"),
        "{record:?}"
    );
}

#[test]
fn negative_costs_are_rejected_everywhere() {
    let (state, _) = fold(&[(A2C, usage_update("s", None, 10, Some(-0.5)))]);
    assert!(
        invalid_rules(&state).contains(&"finite-non-negative".to_owned()),
        "{:?}",
        invalid_rules(&state)
    );
    assert!(state.session("s").is_none_or(|s| s.usage.total.is_none()));
    // The type and the validator reject it too.
    let row =
        json!({"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": -0.5});
    assert!(serde_json::from_value::<acp_extension_core::usage::ModelUsage>(row).is_err());
}

#[test]
fn a_cost_once_seen_is_not_lost() {
    // Core: a later cumulative row without a cost makes the total's cost
    // unknown (as the ledger that sent it says), but the floor stays.
    let (state, _) = fold(&[
        (A2C, usage_update("s", None, 10, Some(0.25))),
        (A2C, usage_update("s", None, 20, None)),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.total.as_ref().unwrap().cost_usd, None);
    assert_eq!(u.cost_usd_at_least, Some(0.25));
    // Standard: claude's cost rides on a turn's last `usage_update` only.
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.75, "currency": "USD"}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 20, "size": 100}),
            ),
        ),
    ]);
    let c = state.session("s").unwrap().usage.context.clone().unwrap();
    assert_eq!(c.used, 20);
    assert_eq!(c.cost.unwrap()["amount"], 0.75);
}

#[test]
fn turn_usage_and_quota_are_kept_per_turn_and_summed_apart() {
    let prompt = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}})
    };
    // codex's spelling, then claude's, then gemini's snake_case.
    let codex = json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn",
        "usage": {"totalTokens": 1300, "inputTokens": 200, "cachedReadTokens": 1000, "cachedWriteTokens": 0, "outputTokens": 100, "thoughtTokens": 40},
        "_meta": {"quota": {"token_count": {"totalTokens": 1300, "inputTokens": 200, "cachedInputTokens": 1000, "cacheWriteInputTokens": 5, "outputTokens": 100, "reasoningOutputTokens": 40},
            "model_usage": [{"model": "gpt-5.5", "token_count": {"totalTokens": 1300, "inputTokens": 200}}]}}}});
    let claude = json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn",
        "usage": {"totalTokens": 10, "inputTokens": 4, "outputTokens": 6},
        "_meta": {"quota": {"token_count": {"totalTokens": 10, "cachedWriteTokens": 3}, "model_usage": []}}}});
    let gemini = json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"total_tokens": 7, "input_tokens": 7}, "model_usage": [{"model": "auto", "token_count": {"total_tokens": 7}}]}}}});
    let (state, changes) = fold(&[
        (C2A, prompt(1)),
        (A2C, codex),
        (C2A, prompt(2)),
        (A2C, claude),
        (C2A, prompt(3)),
        (A2C, gemini),
    ]);
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::TurnUsage { .. }))
    );
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.turns.len(), 3);
    assert_eq!(u.turns[0].usage.as_ref().unwrap()["thoughtTokens"], 40);
    // Two turns reported `usage` (gemini's only a quota); all three a quota.
    assert_eq!(u.turn_totals.turns, 2);
    assert_eq!(u.turn_totals.quota_turns, 3);
    assert_eq!(u.turn_totals.usage["totalTokens"], 1310);
    assert_eq!(u.turn_totals.quota["totalTokens"], 1317);
    assert_eq!(u.turn_totals.quota["cacheWriteInputTokens"], 8);
    assert_eq!(u.turn_totals.quota["inputTokens"], 207);
    assert_eq!(u.turn_totals.quota_models["auto"]["totalTokens"], 7);
    // Never mixed with the Core ledger.
    assert_eq!(u.total, None);
    assert!(u.scopes.is_empty());
    // v2: the idle `state_update` that ends foreground work carries the
    // turn's usage.
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "state_update", "state": "running"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                    "usage": {"totalTokens": 1300, "inputTokens": 200, "outputTokens": 100},
                    "_meta": {"quota": {"token_count": null, "model_usage": []}}}),
            ),
        ),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.turn_totals.usage["totalTokens"], 1300);
    assert_eq!(u.turns[0].stop_reason.as_deref(), Some("end_turn"));
    // A counter that is not a count is left out and recorded.
    let (state, _) = fold(&[
        (C2A, prompt(1)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn", "usage": {"totalTokens": -1, "inputTokens": 2}}}),
        ),
    ]);
    assert_eq!(invalid_rules(&state), ["non-negative-integer"]);
    assert_eq!(
        state.session("s").unwrap().usage.turn_totals.usage["inputTokens"],
        2
    );
}

#[test]
fn claude_rate_limits_ride_on_usage_update() {
    let init = [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {},
                "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "version": "0.101.0"}}}),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 53755, "size": 200000,
                "_meta": {"_claude/rateLimit": {"status": "allowed_warning", "resetsAt": 1790092800u64, "rateLimitType": "five_hour", "utilization": 0.91},
                    "_claude/model": "claude-sonnet-4-6"}}),
            ),
        ),
    ];
    let (state, _) = fold(&init);
    let row = &state.rate_limits()["claude:five_hour"];
    assert_eq!(row.rate_limit.scope.provider_id, "anthropic");
    let w = &row.rate_limit.windows[0];
    assert!((w.used_percent.get() - 91.0).abs() < 1e-9);
    assert_eq!(w.window_duration_seconds.map(|s| s.get()), Some(18000.0));
    assert_eq!(
        w.resets_at_epoch_seconds.map(|s| s.get()),
        Some(1790092800.0)
    );
    // What claude-agent-acp 0.101 sends on every turn against a real
    // account: `unifiedWindows` and no top-level figure. Each window is a
    // row; a `rejected` marker without a figure invents none.
    let (state, _) = fold(&[(
        A2C,
        update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 200000,
                "_meta": {"_claude/rateLimit": {"status": "allowed", "unifiedWindows": {
                    "five_hour": {"utilization": 0.12, "resetsAt": 1790000000u64},
                    "seven_day": {"utilization": 0.4, "resetsAt": 1790500000u64}}}}}),
        ),
    )]);
    let rows: Vec<(&str, f64, Option<f64>, Option<f64>)> = state
        .rate_limits()
        .iter()
        .map(|(id, r)| {
            let w = &r.rate_limit.windows[0];
            (
                id.as_str(),
                w.used_percent.get(),
                w.window_duration_seconds.map(|s| s.get()),
                w.resets_at_epoch_seconds.map(|s| s.get()),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "claude:five_hour");
    assert!((rows[0].1 - 12.0).abs() < 1e-9);
    assert_eq!((rows[0].2, rows[0].3), (Some(18000.0), Some(1790000000.0)));
    assert_eq!(rows[1].0, "claude:seven_day");
    assert!((rows[1].1 - 40.0).abs() < 1e-9);
    assert_eq!((rows[1].2, rows[1].3), (Some(604800.0), Some(1790500000.0)));
    let (state, _) = fold(&[(
        A2C,
        update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 200000,
                "_meta": {"_claude/rateLimit": {"status": "rejected", "rateLimitType": "five_hour"}}}),
        ),
    )]);
    assert!(state.rate_limits().is_empty());
}

#[test]
fn a_rejected_load_or_resume_names_no_session() {
    let (state, changes) = fold(&[
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": "gone", "cwd": "/"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "real"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "unknown session"}}),
        ),
    ]);
    assert_eq!(state.sessions().keys().collect::<Vec<_>>(), ["real"]);
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::SessionDiscarded { session_id } if session_id == "gone"))
    );
    // A session that had content before a failed resume stays.
    let (state, _) = fold(&[
        (A2C, usage_update("kept", None, 1, None)),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": "kept", "cwd": "/"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found"}}),
        ),
    ]);
    assert!(state.session("kept").is_some());
}

#[test]
fn legacy_rate_limits_take_the_provider_from_agent_info_and_codexs_lone_five_hour_is_weekly() {
    let (state, _) = fold(&[
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {},
                "agentInfo": {"name": "codex-acp", "version": "1"}}}),
        ),
        (
            A2C,
            notify(
                "_acp_ext:session_rate_limits",
                json!({"planName": "plus", "fiveHour": 12, "sevenDay": null, "fiveHourResetAt": 1767225600u64}),
            ),
        ),
    ]);
    let row = &state.rate_limits()["legacy"];
    assert_eq!(row.rate_limit.scope.provider_id, "codex-acp");
    assert_eq!(
        row.rate_limit.windows[0]
            .window_duration_seconds
            .map(|s| s.get()),
        Some(604800.0)
    );
}

#[test]
fn an_oversized_scope_id_falls_back_to_unscoped() {
    let long = "x".repeat(300);
    let (state, changes) = fold(&[(A2C, usage_update("s", Some(&long), 10, None))]);
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.rule == "scope-id-fallback" && i.folded)));
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.scopes.keys().collect::<Vec<_>>(), ["session"]);
}

#[test]
fn legacy_usage_and_rate_limits_map_onto_the_same_state() {
    let session_new = [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        ),
    ];
    let mut legacy = session_new.to_vec();
    legacy.push((
        A2C,
        notify(
            "_acp_ext:session_usage_update",
            json!({"usage": {"inputTokens": 10, "outputTokens": 1, "cacheReadInputTokens": 0, "contextWindow": null},
                "modelUsage": {"m": {"inputTokens": 10, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": 0.1, "contextWindow": null}}}),
        ),
    ));
    legacy.push((
        A2C,
        notify(
            "_acp_ext:session_rate_limits",
            json!({"schemaVersion": 2, "planName": "pro", "limitId": "codex",
                "windows": [{"usedPercent": 140, "windowDurationMins": 300, "resetsAt": 1767225600123u64}],
                "apiUnavailable": false}),
        ),
    ));
    let mut extension = session_new.to_vec();
    extension.push((A2C, usage_update("s", None, 10, Some(0.1))));
    extension.push((
        A2C,
        notify(
            "_lody/rate_limits/update",
            json!({"rateLimits": [{"limitId": "codex", "scope": {"providerId": "unknown"}, "planName": "pro",
                "windows": [{"usedPercent": 100, "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1767225600}]}]}),
        ),
    ));
    let (l, _) = fold(&legacy);
    let (e, _) = fold(&extension);
    // Read, and each recorded as the legacy API an adapter must not send;
    // the clamped percentage (140) and the reset time in milliseconds are
    // recorded where they are, folded.
    assert_eq!(
        invalid_rules(&l),
        [
            "legacy-method",
            "legacy-method",
            "percent-clamped",
            "epoch-milliseconds"
        ]
    );
    let pointers: Vec<&str> = l.invalid().skip(2).map(|i| i.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/params/windows/0/usedPercent",
            "/params/windows/0/resetsAt"
        ]
    );
    assert!(l.invalid().all(|i| i.folded));
    let (lu, eu) = (
        &l.session("s").unwrap().usage,
        &e.session("s").unwrap().usage,
    );
    assert_eq!(lu.totals, eu.totals);
    assert_eq!(lu.scopes["session"].dialect, Dialect::Legacy);
    let (lr, er) = (&l.rate_limits()["codex"], &e.rate_limits()["codex"]);
    assert_eq!(lr.rate_limit, er.rate_limit);
    assert_eq!(lr.dialect, Dialect::Legacy);
    // Legacy usage before any session: nowhere to put it, reported.
    let (state, _) = fold(&[(
        A2C,
        notify(
            "_acp_ext:session_usage_update",
            json!({"usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0}}),
        ),
    )]);
    assert_eq!(invalid_rules(&state), ["legacy-method", "no-session"]);
}

#[test]
fn rate_limits_merge_per_limit_and_replace_within_it() {
    let row = |id: &str, windows: Value| json!({"limitId": id, "scope": {"providerId": "p"}, "windows": windows});
    let w = |pct: u32| json!({"usedPercent": pct, "windowDurationSeconds": 3600, "resetsAtEpochSeconds": null});
    let push = |rows: Value| notify("_ua/rate_limits/update", json!({"rateLimits": rows}));
    let (mut state, _) = fold(&[(
        A2C,
        push(json!([
            row("a", json!([w(1), w(2)])),
            row("b", json!([w(3)]))
        ])),
    )]);
    state.message(A2C, &push(json!([row("a", json!([w(9)]))])));
    state.message(A2C, &push(json!([])));
    let r = state.rate_limits();
    assert_eq!(r.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(r["a"].rate_limit.windows.len(), 1);
    assert_eq!(r["a"].rate_limit.windows[0].used_percent.get(), 9.0);
    assert_eq!(r["b"].rate_limit.windows[0].used_percent.get(), 3.0);
    // A query result upserts the same way.
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "_lody/rate_limits/get", "params": {}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 9, "result": {"rateLimits": [row("c", json!([w(5)]))]}}),
    );
    assert_eq!(
        state.rate_limits().keys().collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    // An older observation does not override a fresher one.
    let at = |t: u64, pct: u32| {
        notify(
            "_lody/rate_limits/update",
            json!({"rateLimits": [row("c", json!([w(pct)]))], "fetchedAtEpochSeconds": t}),
        )
    };
    state.message(A2C, &at(200, 50));
    let changes = state.message(A2C, &at(100, 10));
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(
        state.rate_limits()["c"].rate_limit.windows[0]
            .used_percent
            .get(),
        50.0
    );
    state.message(A2C, &at(300, 60));
    assert_eq!(
        state.rate_limits()["c"].rate_limit.windows[0]
            .used_percent
            .get(),
        60.0
    );
    // The time is written as it came: a whole number stays whole.
    let doc = serde_json::to_string(&state.rate_limits()["c"]).unwrap();
    assert!(doc.contains(r#""fetchedAtEpochSeconds":300,"#), "{doc}");
    // A failed query keeps the data, marked stale; a fresh row clears it.
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 10, "method": "_lody/rate_limits/get", "params": {}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 10, "error": {"code": -32603, "message": "upstream down"}}),
    );
    let r = state.rate_limits();
    assert!(r.values().all(|e| e.stale));
    assert_eq!(r["c"].rate_limit.windows[0].used_percent.get(), 60.0);
    state.message(A2C, &at(400, 61));
    assert!(!state.rate_limits()["c"].stale);
    assert!(state.rate_limits()["a"].stale);
}

/// consumer-facts: "a valid `extraUsage` becomes `wallet`"; an invalid one
/// is not invented into one.
#[test]
fn legacy_extra_usage_is_the_wallet() {
    let legacy = |extra: Value| {
        notify(
            "_acp_ext:session_rate_limits",
            json!({"planName": "max", "limitId": "claude", "fiveHour": 40, "extraUsage": extra}),
        )
    };
    let wallet = json!({"balanceCents": 500, "totalCents": 1000, "monthlyChargeLimitEnabled": true,
        "monthlyChargeLimitCents": 2000, "monthlyUsedCents": 250, "currency": "USD"});
    let (state, _) = fold(&[(A2C, legacy(wallet.clone()))]);
    let row = serde_json::to_value(&state.rate_limits()["claude"].rate_limit).unwrap();
    assert_eq!(row["wallet"], wallet);
    let (state, _) = fold(&[(A2C, legacy(json!({"isEnabled": true})))]);
    let row = serde_json::to_value(&state.rate_limits()["claude"].rate_limit).unwrap();
    assert!(row.get("wallet").is_none_or(Value::is_null), "{row}");
}
