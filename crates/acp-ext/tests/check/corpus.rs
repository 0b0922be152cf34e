//! The real-world corpus

use super::*;

/// The corpus file whose path ends with `suffix`.
fn corpus_file(suffix: &str) -> PathBuf {
    corpus_files()
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap()
}

fn check_file(path: &Path) -> Vec<(u64, Finding)> {
    let mut out = Vec::new();
    let file = std::fs::File::open(path).unwrap();
    check_reader(
        BufReader::new(file),
        Format::Auto,
        &Options::default(),
        |l, f| out.push((l, f)),
    )
    .unwrap();
    out
}

#[test]
fn every_corpus_file_is_read_and_only_known_deviations_are_found() {
    let files = corpus_files();
    assert!(files.len() >= 48, "{} corpus files", files.len());
    let mut found = BTreeSet::new();
    let mut records = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let short = name.rsplit("__").next().unwrap().to_owned();
        // Every file yields messages…
        let mut n = 0;
        input::read(
            BufReader::new(std::fs::File::open(path).unwrap()),
            Format::Auto,
            |i| {
                assert!(!matches!(i, Item::Problem { .. }), "{name}: {i:?}");
                n += 1;
            },
        )
        .unwrap();
        assert!(n > 0, "{name} yielded nothing");
        records += n;
        // …and its findings are the known deviations only.
        for (line, f) in check_file(path) {
            found.insert((short.clone(), line, f.rule, f.path));
        }
    }
    assert!(records > 150, "{records} messages");
    let epoch = |file: &str, line: u64, key: &str| {
        (
            file.to_owned(),
            line,
            "epoch-zero",
            format!("/sessionUpdate/_meta/lody/goal/{key}"),
        )
    };
    let unplaced =
        |file: &str, line: u64, at: &str| (file.to_owned(), line, "shape", at.to_owned());
    let expected: BTreeSet<(String, u64, &str, String)> = [
        // codex: goal fixtures use createdAtEpochSeconds: 0 as a placeholder.
        epoch("prompt-v2-goal-command.json", 26, "createdAtEpochSeconds"),
        epoch("prompt-v2-goal-command.json", 26, "updatedAtEpochSeconds"),
        epoch(
            "prompt-v2-goal-resume-command.json",
            26,
            "createdAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-command.json",
            26,
            "updatedAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-no-continuation.json",
            20,
            "createdAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-no-continuation.json",
            20,
            "updatedAtEpochSeconds",
        ),
        // codex: its test fixtures keep updates without their `sessionId`
        // (placed in no session; counted by hand from the files).
        unplaced("prompt-v2-goal-command.json", 2, "/sessionUpdate"),
        unplaced("prompt-v2-goal-command.json", 26, "/sessionUpdate"),
        unplaced("prompt-v2-goal-command.json", 44, "/sessionUpdate"),
        unplaced("prompt-v2-goal-command.json", 50, "/sessionUpdate"),
        unplaced("prompt-v2-goal-resume-command.json", 2, "/sessionUpdate"),
        unplaced("prompt-v2-goal-resume-command.json", 26, "/sessionUpdate"),
        unplaced("prompt-v2-goal-resume-command.json", 44, "/sessionUpdate"),
        unplaced("prompt-v2-goal-resume-command.json", 50, "/sessionUpdate"),
        unplaced(
            "prompt-v2-goal-resume-no-continuation.json",
            2,
            "/sessionUpdate",
        ),
        unplaced(
            "prompt-v2-goal-resume-no-continuation.json",
            20,
            "/sessionUpdate",
        ),
        unplaced(
            "prompt-v2-goal-resume-no-continuation.json",
            38,
            "/sessionUpdate",
        ),
        unplaced(
            "prompt-v2-goal-resume-no-continuation.json",
            44,
            "/sessionUpdate",
        ),
        unplaced("prompt-v2-inserted.json", 44, "/sessionUpdate"),
        unplaced("prompt-v2-inserted.json", 62, "/sessionUpdate"),
        unplaced("prompt-v2-inserted.json", 68, "/sessionUpdate"),
        unplaced("prompt-v2-inserted.json", 79, "/sessionUpdate"),
        unplaced("review-turn-completed.json", 1, "/updates/0"),
        unplaced("tool-calls-and-messages-v2-message-ids.json", 2, ""),
        unplaced("tool-calls-and-messages-v2-message-ids.json", 10, ""),
        unplaced("tool-calls-and-messages-v2-message-ids.json", 18, ""),
        unplaced("tool-calls-and-messages-v2-message-ids.json", 31, ""),
        // claude: new-session responses carry _meta.lody.modelCapabilities.
        (
            "session-setup.jsonl".to_owned(),
            2,
            "unknown-meta-key",
            "/payload/_meta/lody/modelCapabilities".to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn codex_v2_initialize_is_read_from_capabilities() {
    let path = corpus_file("initialize-v2-response.json");
    let value: Value = serde_json::from_reader(std::fs::File::open(path).unwrap()).unwrap();
    let mut c = Checker::new();
    let findings = c.message_with_method(
        Direction::Unknown,
        &json!({"jsonrpc": "2.0", "id": null, "result": value}),
        None,
    );
    assert!(findings.is_empty(), "{findings:?}");
    let agent = c
        .agent_advertisement()
        .expect("read as an initialize response");
    for f in [
        Feature::McpApps,
        Feature::Goal,
        Feature::Usage,
        Feature::SubagentEvents,
    ] {
        assert!(agent.supports(f), "{f}");
    }
    // With the agent known, its usage updates are judged and allowed.
    let findings = c.message(
        Direction::Unknown,
        &note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(1)}),
        ),
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn claude_setup_negotiates_from_its_initialize_line() {
    let path = corpus_file("session-setup.jsonl");
    // The same file with a usage update appended that the agent advertised,
    // and an mcp app meta it did not.
    let mut text = std::fs::read_to_string(path).unwrap();
    text.push_str(&format!(
        "{}\n",
        json!({"kind": "sessionUpdate", "payload": {"sessionId": "x", "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t", "title": "app",
            "_meta": {"lody": {"mcpApp": {"version": 1, "server": "s", "tool": "t", "resourceUri": "ui://x"}}}}}})
    ));
    let found = check_text(&text, Format::Auto);
    let rules: Vec<&str> = found.iter().map(|(_, f)| f.rule).collect();
    assert_eq!(rules, ["unknown-meta-key", "not-advertised"]);
    assert_eq!(found[1].1.path, "/payload/update/_meta/lody/mcpApp");
}

#[test]
fn adapter_deviations_listed_in_the_corpus_readme() {
    // pi (older): usage without advertising it, cumulative totals in `usage`
    // and no `modelUsage`; omp: advertises nothing, emits usage anyway.
    let cumulative = |n: u64| {
        note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(n)}),
        )
    };
    let findings = run(&with(
        init(json!({}), json!({})),
        vec![(A2C, cumulative(10)), (A2C, cumulative(25))],
    ));
    assert_eq!(rule_ids(&findings), ["not-advertised", "not-advertised"]);

    // kimi, grok: extra `_meta.lody` keys outside the contract.
    let extra = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task",
            "_meta": {"lody": {"turnOrigin": "user", "turnEnded": false, "subagentRunId": "r",
                "subagentToolCallId": "t"}}}),
    );
    let findings = run(&[
        (A2C, extra),
        (
            A2C,
            ok(
                0,
                json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"modelReasoningEfforts": {}}}}}),
            ),
        ),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::UNKNOWN_META_KEY)),
        [
            "/params/update/_meta/lody/turnOrigin",
            "/params/update/_meta/lody/turnEnded",
            "/params/update/_meta/lody/subagentRunId",
            "/params/update/_meta/lody/subagentToolCallId",
            "/result/agentCapabilities/_meta/lody/modelReasoningEfforts",
        ]
    );
    assert_eq!(findings.len(), 5);

    // devin: `elicitation` in the agent's capabilities.
    let findings = run(&init(json!({"elicitation": {"version": 1}}), json!({})));
    assert_eq!(rule_ids(&findings), ["wrong-side-capability"]);

    // dsh, pi, kimi: fractional epoch seconds in goal, task and subagent timestamps.
    let task = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task",
            "_meta": {"lody": {"task": {"version": 1, "taskId": "k", "kind": "subagent", "status": "in_progress",
                "startedAtEpochSeconds": 1710000000.25}}}}),
    );
    let goal = goal_info(
        json!({"objective": "o", "status": "active", "updatedAtEpochSeconds": 1710000000.5}),
    );
    let findings = run(&[(A2C, task), (A2C, goal)]);
    assert_eq!(
        rule_ids(&findings),
        ["epoch-fractional", "epoch-fractional"]
    );

    // claude: integral rate-limit percentages are fine; codex: the legacy
    // `_meta.codex.usageTurnId` is another vendor's namespace.
    let rounded = note(
        "_lody/rate_limits/update",
        json!({"rateLimits": [{"limitId": "l", "scope": {"providerId": "anthropic"},
            "windows": [{"usedPercent": 42, "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1710000000}]}]}),
    );
    let codex_usage = note(
        "_lody/session/usage_update",
        json!({"sessionId": "s", "usage": row(1), "_meta": {"codex": {"usageTurnId": "t1"}, "lody": {"usageScopeId": "t1"}}}),
    );
    assert_clean(&[(A2C, rounded), (A2C, codex_usage)]);
}

#[test]
fn checkers_can_move_between_threads() {
    fn send<T: Send + 'static>() {}
    send::<Checker>();
}
