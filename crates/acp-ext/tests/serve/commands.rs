//! The scripted commands: subagents, tasks, compaction, goals, questions,
//! titles, cancelling, steering, rate limits, failures.

use super::*;

fn events(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "_lody/subagents/event")
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn subagents_stream_through_the_emitter_and_are_listed() {
    let mut sid = String::new();
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        sid = peer.start_session().await;
        peer.turn(&sid, "/subagents 2").await;
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        let tasks = list["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 2);
        for t in tasks {
            assert_eq!(t["status"], "completed");
            assert!(t["endedAtEpochSeconds"].is_number());
            let out = peer
                .ok(
                    "_lody/subagents/output",
                    json!({"sessionId": sid, "taskId": t["taskId"]}),
                )
                .await;
            assert!(out["output"].as_str().unwrap().contains("done"));
            let tail = peer
                .ok(
                    "_lody/subagents/output",
                    json!({"sessionId": sid, "taskId": t["taskId"], "tail": 1}),
                )
                .await;
            assert_eq!(tail["output"].as_str().unwrap().lines().count(), 1);
        }
        let active = peer
            .ok(
                "_lody/subagents/list",
                json!({"sessionId": sid, "activeOnly": true}),
            )
            .await;
        assert_eq!(active["tasks"], json!([]));
    })
    .await;
    let events = events(&messages);
    let mut runs: Vec<String> = Vec::new();
    for e in &events {
        assert_eq!(e["version"], 1);
        assert_eq!(e["sessionId"], sid.as_str(), "events name the root session");
        let run = e["runId"].as_str().unwrap();
        assert!(!run.is_empty());
        if !runs.iter().any(|r| r == run) {
            runs.push(run.to_owned());
        }
    }
    assert_eq!(runs.len(), 2, "one run id per child");
    for run in &runs {
        let mine: Vec<&Value> = events
            .iter()
            .filter(|e| e["runId"] == run.as_str())
            .collect();
        assert_eq!(mine[0]["type"], "snapshot");
        assert_eq!(mine[0]["snapshot"]["state"], "running");
        assert!(mine.iter().any(|e| e["type"] == "progress"));
        let outputs: Vec<&str> = mine
            .iter()
            .filter(|e| e["type"] == "output")
            .map(|e| e["update"]["sessionUpdate"].as_str().unwrap())
            .collect();
        assert!(outputs.contains(&"agent_message_chunk") && outputs.contains(&"tool_call"));
        let last = mine.last().unwrap();
        assert_eq!(last["type"], "snapshot");
        assert_eq!(last["snapshot"]["state"], "completed");
        // The parent tool call exists in the root session and carries the task.
        let parent = mine[0]["snapshot"]["parentToolCallId"].as_str().unwrap();
        let call = messages
            .iter()
            .find(|m| {
                m["params"]["update"]["sessionUpdate"] == "tool_call"
                    && m["params"]["update"]["toolCallId"] == parent
            })
            .expect("parent tool call");
        assert_eq!(
            call["params"]["update"]["_meta"]["lody"]["task"]["kind"],
            "subagent"
        );
    }
}

#[tokio::test]
async fn subagent_events_are_never_sent_without_negotiation() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        // The client advertises other extensions, but not subagentEvents.
        peer.init(json!({"_meta": {"lody": {"elicitation": {"version": 1}}}}))
            .await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/subagents 3").await.unwrap();
        // The runs exist all the same, through the subagents capability.
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        assert_eq!(list["tasks"].as_array().unwrap().len(), 3);
    })
    .await;
    assert!(
        !messages.iter().any(|m| m["method"]
            .as_str()
            .is_some_and(|s| s.ends_with("subagents/event"))),
        "no subagent event without the client's subagentEvents"
    );
}

#[tokio::test]
async fn a_subagent_can_be_cancelled_while_it_runs() {
    let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let turn = {
            let peer = peer.clone();
            let sid = sid.clone();
            tokio::spawn(async move { peer.prompt(&sid, "/subagents 2 0.5").await })
        };
        peer.wait_for("two running children", |m| {
            events(m).iter().filter(|e| e["type"] == "progress").count() >= 4
        })
        .await;
        let list = peer
            .ok(
                "_lody/subagents/list",
                json!({"sessionId": sid, "activeOnly": true}),
            )
            .await;
        let tasks = list["tasks"].as_array().unwrap().clone();
        assert_eq!(tasks.len(), 2);
        assert!(
            tasks
                .iter()
                .all(|t| t["status"] == "running" && t["endedAtEpochSeconds"].is_null())
        );
        let victim = tasks[0]["taskId"].clone();
        let r = peer
            .ok(
                "_lody/subagents/cancel",
                json!({"sessionId": sid, "taskId": victim, "reason": "not needed"}),
            )
            .await;
        assert_eq!(r, json!({}));
        let e = peer
            .call(
                "_lody/subagents/cancel",
                json!({"sessionId": sid, "taskId": "task-999"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("taskId"));
        let r = turn.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "end_turn");
        let list = peer
            .ok("_lody/subagents/list", json!({"sessionId": sid}))
            .await;
        let statuses: Vec<&str> = list["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["killed", "completed"]);
    })
    .await;
    let finals: Vec<&str> = events(&messages)
        .iter()
        .filter(|e| e["type"] == "snapshot")
        .filter_map(|e| e["snapshot"]["state"].as_str())
        .filter(|s| *s != "running")
        .map(|s| {
            if s == "cancelled" {
                "cancelled"
            } else {
                "other"
            }
        })
        .collect();
    assert!(finals.contains(&"cancelled"));
    let cancelled = events(&messages)
        .into_iter()
        .find(|e| e["snapshot"]["state"] == "cancelled")
        .unwrap();
    assert_eq!(cancelled["snapshot"]["reason"]["code"], "cancelled");
    // Nothing is emitted for a run after its terminal snapshot.
    let run = cancelled["runId"].clone();
    let after: Vec<Value> = events(&messages)
        .into_iter()
        .skip_while(|e| e["snapshot"]["state"] != "cancelled")
        .skip(1)
        .filter(|e| e["runId"] == run)
        .collect();
    assert!(after.is_empty(), "late events: {after:?}");
}

#[tokio::test]
async fn background_and_scheduled_tasks_outlive_the_turn() {
    for (command, kind, first_status) in [
        ("/background 0.2", "background", "in_progress"),
        ("/schedule 0.2", "scheduled", "pending"),
    ] {
        let mut sid = String::new();
        let messages = session(ServeOptions::new(), Answers::default(), async |peer| {
            sid = peer.start_session().await;
            let r = peer.prompt(&sid, command).await.unwrap();
            assert_eq!(
                r["stopReason"], "end_turn",
                "the turn ends while the task runs"
            );
            let updates = peer.updates(&sid);
            let call = first(&updates, "tool_call");
            let task = &meta(call, "lody")["task"];
            assert_eq!(task["version"], 1);
            assert_eq!(task["kind"], kind);
            assert_eq!(task["status"], first_status);
            let id = call["toolCallId"].as_str().unwrap().to_owned();
            peer.wait_for("task completion", |m| {
                m.iter().any(|m| {
                    let u = &m["params"]["update"];
                    u["toolCallId"] == id.as_str()
                        && u["_meta"]["lody"]["task"]["status"] == "completed"
                })
            })
            .await;
            peer.wait_for("idle with no background task", |m| {
                m.last().is_some_and(|l| {
                    l["method"] == "_lody/session/activity_update"
                        && l["params"]["backgroundTaskCount"] == 0
                })
            })
            .await;
        })
        .await;
        assert_eq!(
            activity(&messages),
            [("running", 0), ("running", 1), ("idle", 1), ("idle", 0)],
            "{command}: activity also changes between prompts"
        );
        // The completion came after the prompt response.
        let response = messages
            .iter()
            .position(|m| m["result"]["stopReason"].is_string())
            .unwrap();
        let done = messages
            .iter()
            .position(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"] == "completed")
            .unwrap();
        assert!(done > response);
        if kind == "scheduled" {
            let statuses: Vec<&str> = messages
                .iter()
                .filter_map(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"].as_str())
                .collect();
            assert_eq!(statuses, ["pending", "in_progress", "completed"]);
        }
        // A task has a start time once it runs, not while it is pending.
        for m in &messages {
            let task = &m["params"]["update"]["_meta"]["lody"]["task"];
            if task.is_object() {
                let started = task.get("startedAtEpochSeconds").is_some();
                assert_eq!(started, task["status"] != "pending", "{command}: {task}");
            }
        }
    }
}

#[tokio::test]
async fn cancel_without_a_turn_stops_background_work() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/background 30").await.unwrap();
        peer.notify("session/cancel", json!({"sessionId": sid}));
        peer.wait_for("the task to fail as cancelled", |m| {
            m.iter()
                .any(|m| m["params"]["update"]["_meta"]["lody"]["task"]["status"] == "failed")
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn compact_reports_compaction_activity() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "fill the context a little")
            .await
            .unwrap();
        peer.prompt(&sid, "/compact").await.unwrap();
        let updates = peer.updates(&sid);
        let call = first(&updates, "tool_call");
        let activity = &meta(call, "lody")["activity"];
        assert_eq!(activity["version"], 1);
        assert_eq!(activity["kind"], "context_compaction");
        let before = activity["usedTokensBefore"].as_u64().unwrap();
        let done = updates
            .iter()
            .find(|u| {
                u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == call["toolCallId"]
            })
            .unwrap();
        assert_eq!(done["status"], "completed");
        let after = meta(done, "lody")["activity"]["usedTokensAfter"]
            .as_u64()
            .unwrap();
        assert!(after < before);
        // Compaction never resets the accounting lifetime.
        let usage = peer.notes("_lody/session/usage_update");
        let scopes: Vec<&Value> = usage
            .iter()
            .map(|u| &u["_meta"]["lody"]["usageScopeId"])
            .collect();
        assert_eq!(scopes[0], scopes[1]);
    })
    .await;
}

fn goals(updates: &[Value]) -> Vec<Value> {
    updates
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "session_info_update" && u["_meta"]["lody"].get("goal").is_some()
        })
        .map(|u| u["_meta"]["lody"]["goal"].clone())
        .collect()
}

#[tokio::test]
async fn goals_travel_on_prompts_and_the_control_request() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/goal set ship the parser")
            .await
            .unwrap();
        let g = goals(&peer.updates(&sid));
        assert_eq!(g.first().unwrap()["status"], "active");
        assert_eq!(g.last().unwrap()["objective"], "ship the parser");
        assert_eq!(g.last().unwrap()["iterations"], 1);

        // Status-only actions on the request, accepted mid-prompt.
        let slow = {
            let peer = peer.clone();
            let sid = sid.clone();
            tokio::spawn(async move { peer.prompt(&sid, "/slow 0.3").await })
        };
        peer.wait_for("the slow turn", |m| {
            m.iter().any(|m| {
                m["params"]["update"]["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Working for"))
            })
        })
        .await;
        let r = peer
            .ok(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "pause"}),
            )
            .await;
        assert_eq!(r["goal"]["status"], "paused");
        assert_eq!(slow.await.unwrap().unwrap()["stopReason"], "end_turn");
        // Work-starting actions are refused on the request.
        let e = peer
            .call(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "set", "objective": "x"}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("action"));

        // `resume` through prompt metadata starts a goal turn.
        let r = peer
            .ok(
                "session/prompt",
                json!({
                    "sessionId": sid,
                    "prompt": [{"type": "text", "text": "continue"}],
                    "_meta": {"lody": {"goalControl": {"version": 1, "action": "resume"}}}
                }),
            )
            .await;
        assert_eq!(r["stopReason"], "end_turn");
        let g = goals(&peer.updates(&sid));
        assert_eq!(g.last().unwrap()["status"], "active");
        assert_eq!(g.last().unwrap()["iterations"], 2);

        let r = peer
            .ok(
                "_lody/session/goal",
                json!({"sessionId": sid, "action": "clear"}),
            )
            .await;
        assert_eq!(r, json!({"goal": null}));
        assert_eq!(
            goals(&peer.updates(&sid)).last().unwrap(),
            &Value::Null,
            "null means no goal"
        );
    })
    .await;
}

#[tokio::test]
async fn ask_sends_a_note_only_to_clients_that_keep_notes() {
    // answerNotes advertised: the note property references the question.
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        let asks = peer.requests("elicitation/create");
        assert_eq!(asks.len(), 1);
        let req = &asks[0];
        assert_eq!(req["mode"], "form");
        assert_eq!(req["sessionId"], sid.as_str());
        let props = req["requestedSchema"]["properties"].as_object().unwrap();
        let notes: Vec<(&String, &Value)> = props
            .iter()
            .filter(|(_, p)| p["_meta"]["lody"]["elicitation"]["noteFor"].is_string())
            .collect();
        assert_eq!(notes.len(), 1);
        let target = notes[0].1["_meta"]["lody"]["elicitation"]["noteFor"]
            .as_str()
            .unwrap();
        assert!(
            props.contains_key(target),
            "the note references a question in the schema"
        );
        let required = req["requestedSchema"]["required"].as_array().unwrap();
        assert!(required.contains(&json!(target)) && !required.contains(&json!(notes[0].0)));
        let question = &req["_meta"]["lody"]["elicitation"]["questions"][0];
        assert_eq!(question["note"]["fieldId"], notes[0].0.as_str());
        let answer = peer.updates(&sid).last().cloned();
        let text = peer.final_answer(&sid);
        assert!(
            text.contains("Small change") && text.contains("Keep the public API stable."),
            "{answer:?}"
        );
    })
    .await;
    // Without answerNotes: no noteFor anywhere (the legacy custom answer instead).
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 1}}}}))
            .await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        let req = peer.requests("elicitation/create").remove(0);
        assert!(!req.to_string().contains("noteFor"));
        assert!(req.to_string().contains("customAnswerFor"));
    })
    .await;
    // Without form elicitation: nothing is asked.
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(json!({})).await;
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/ask").await.unwrap();
        assert!(peer.requests("elicitation/create").is_empty());
    })
    .await;
}

#[tokio::test]
async fn title_is_generated_and_tagged() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        peer.prompt(&sid, "fix the flaky login test").await.unwrap();
        peer.prompt(&sid, "/title").await.unwrap();
        let info = peer
            .updates(&sid)
            .into_iter()
            .find(|u| u["sessionUpdate"] == "session_info_update")
            .unwrap();
        assert_eq!(info["_meta"]["lody"]["titleSource"], "generated");
        let title = info["title"].as_str().unwrap().to_owned();
        assert!(title.to_lowercase().contains("login"));
        let list = peer.ok("session/list", json!({})).await;
        assert_eq!(list["sessions"][0]["title"], title.as_str());
    })
    .await;
}

#[tokio::test]
async fn cancel_ends_a_slow_turn_with_cancelled() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let started = tokio::time::Instant::now();
        let slow = peer.prompt_running(&sid, "/slow 30").await;
        peer.notify("session/cancel", json!({"sessionId": sid}));
        let r = slow.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "cancelled");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The slot is free again.
        peer.turn(&sid, "after").await;
    })
    .await;
}

#[tokio::test]
async fn cancel_request_on_the_prompt_ends_the_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let sent = peer.cx.send_request(
            UntypedMessage::new(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/slow 30"}]}),
            )
            .unwrap(),
        );
        peer.wait_for("the slow turn", |m| {
            m.iter().any(|m| m["params"]["state"] == "running")
        })
        .await;
        sent.cancel().unwrap();
        let r = tokio::time::timeout(TIMEOUT, sent.block_task())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r["stopReason"], "cancelled");
    })
    .await;
}

#[tokio::test]
async fn steer_is_injected_into_a_running_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let r = peer
            .ok("_lody/session/steer", json!({"sessionId": sid, "steerId": "s0", "prompt": [{"type": "text", "text": "x"}]}))
            .await;
        assert_eq!(r["outcome"], "failed", "nothing to steer without a turn");
        let slow = peer.prompt_running(&sid, "/slow 0.3").await;
        let r = peer
            .ok(
                "_lody/session/steer",
                json!({"sessionId": sid, "steerId": "steer-a", "prompt": [{"type": "text", "text": "use tabs"}]}),
            )
            .await;
        assert_eq!(r["outcome"], "injected");
        let r = slow.await.unwrap().unwrap();
        assert_eq!(r["stopReason"], "end_turn");
        let applied = peer.notes("_lody/session/steer_applied");
        assert_eq!(applied, [json!({"sessionId": sid, "steerId": "steer-a"})]);
        assert!(peer.final_answer(&sid).contains("use tabs"));
    })
    .await;
}

#[tokio::test]
async fn rate_limits_are_pushed_and_queryable() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        peer.init(full_client_caps()).await;
        let got = peer.ok("_lody/rate_limits/get", json!({})).await;
        let limits = got["rateLimits"].as_array().unwrap();
        assert!(!limits.is_empty());
        for l in limits {
            assert!(l["limitId"].is_string() && l["scope"]["providerId"].is_string());
            let windows = l["windows"].as_array().unwrap();
            assert!(
                windows.len() >= 2,
                "concurrent windows are reported separately"
            );
            for w in windows {
                let p = w["usedPercent"].as_f64().unwrap();
                assert!((0.0..=100.0).contains(&p));
                assert!(
                    w.get("windowDurationSeconds").is_some()
                        && w.get("resetsAtEpochSeconds").is_some()
                );
            }
        }
        // Requests are read in either namespace.
        let ua = peer
            .ok("_ua/rate_limits/get", json!({"modelId": "m"}))
            .await;
        assert!(ua["rateLimits"].is_array());
        let sid = peer.new_session().await;
        peer.prompt(&sid, "/limits").await.unwrap();
        let pushed = peer.notes("_lody/rate_limits/update");
        assert_eq!(pushed.len(), 1);
        assert!(pushed[0]["rateLimits"].is_array());
    })
    .await;
}

#[tokio::test]
async fn fail_sends_an_error_notice_and_fails_the_turn() {
    session(ServeOptions::new(), Answers::default(), async |peer| {
        let sid = peer.start_session().await;
        let e = peer.prompt(&sid, "/fail").await.unwrap_err();
        assert!(e.message.to_lowercase().contains("fail"));
        let notice = peer
            .updates(&sid)
            .into_iter()
            .find(|u| {
                u["sessionUpdate"] == "session_info_update"
                    && u["_meta"]["lody"].get("notice").is_some()
            })
            .map(|u| u["_meta"]["lody"]["notice"].clone())
            .expect("an error notice on session_info_update");
        assert_eq!(notice["level"], "error");
        assert!(notice["message"].is_string());
        peer.turn(&sid, "still here").await;
    })
    .await;
}
