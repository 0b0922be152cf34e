//! Properties: the emitter's runs and the accumulator's totals come back

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Start(u8, bool),
    Patch(u8, u8),
    Progress(u8, u8, Option<u32>),
    Text(u8, String),
    Tool(u8, u8, bool),
    Disconnect,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3u8, any::<bool>()).prop_map(|(n, t)| Op::Start(n, t)),
        (0..3u8, 0..5u8).prop_map(|(n, s)| Op::Patch(n, s)),
        (0..3u8, 0..3u8, proptest::option::of(0..100u32))
            .prop_map(|(n, k, v)| Op::Progress(n, k, v)),
        (0..3u8, "[a-z \n]{0,8}").prop_map(|(n, t)| Op::Text(n, t)),
        (0..3u8, 0..3u8, any::<bool>()).prop_map(|(n, t, done)| Op::Tool(n, t, done)),
        Just(Op::Disconnect),
    ]
}

fn state_name(i: u8) -> SubagentState {
    [
        SubagentState::Pending,
        SubagentState::Running,
        SubagentState::Completed,
        SubagentState::Failed,
        SubagentState::Cancelled,
    ][i as usize % 5]
}

fn counter() -> impl FnMut() -> String + Send + Sync + 'static {
    let mut n = 0;
    move || {
        n += 1;
        format!("run-{n}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn folding_the_emitters_events_gives_back_its_runs(ops in proptest::collection::vec(op(), 0..40)) {
        let mut e = SubagentEmitter::new("s", Vec::<EmittedEvent>::new()).with_id_generator(counter());
        let support = SubagentSupport::new(vec![SubagentStream::Text, SubagentStream::Tool], true, OutputRead::None, false);
        block_on(async {
            for op in &ops {
                let native = |n: &u8| format!("native-{n}");
                match op {
                    Op::Start(n, terminal) => {
                        let state = if *terminal { SubagentState::Completed } else { SubagentState::Running };
                        let snap = SubagentSnapshot::new(state, support.clone()).name(format!("w{n}")).parent_run_id(None);
                        e.start(native(n), snap).await.unwrap();
                    }
                    Op::Patch(n, s) => {
                        let patch = acp_extension_core::subagent_emitter::SnapshotPatch::new().state(state_name(*s));
                        e.snapshot(&native(n), patch).await.unwrap();
                    }
                    Op::Progress(n, k, v) => {
                        let key = ["summary", "turnCount", "toolCallCount"][*k as usize];
                        let value = match (k, v) {
                            (_, None) => Value::Null,
                            (0, Some(v)) => json!(format!("s{v}")),
                            (_, Some(v)) => json!(v),
                        };
                        e.progress_value(&native(n), json!({key: value})).await.unwrap();
                    }
                    Op::Text(n, t) => {
                        e.output_value(&native(n), text(t), OutputIds::new()).await.unwrap();
                    }
                    Op::Tool(n, t, done) => {
                        let u = if *done {
                            json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{t}"), "status": "completed"})
                        } else {
                            json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{t}"), "title": "x", "status": "pending"})
                        };
                        e.output_value(&native(n), u, OutputIds::new()).await.unwrap();
                    }
                    Op::Disconnect => e.disconnect().await.unwrap(),
                }
            }
        });
        let events: Vec<Value> = e.sink().iter().map(|ev| ev.as_value().clone()).collect();
        let mut state = ConnectionState::new();
        for ev in &events {
            state.message(A2C, &notify("_lody/subagents/event", ev.clone()));
        }
        prop_assert_eq!(state.invalid_count(), 0, "{:?}", state.invalid().collect::<Vec<_>>());
        // An independent model of each run, from the event list.
        let mut last_snapshot: IndexMap<String, Value> = IndexMap::new();
        let mut texts: IndexMap<String, String> = IndexMap::new();
        let mut ended: std::collections::HashSet<String> = Default::default();
        let mut progress: IndexMap<String, serde_json::Map<String, Value>> = IndexMap::new();
        let mut tools: IndexMap<String, IndexMap<String, Value>> = IndexMap::new();
        for ev in &events {
            let run = ev["runId"].as_str().unwrap().to_owned();
            match ev["type"].as_str().unwrap() {
                "snapshot" => { last_snapshot.insert(run, ev["snapshot"].clone()); }
                "progress" => {
                    let p = progress.entry(run).or_default();
                    for (k, v) in ev["progress"].as_object().unwrap() {
                        if v.is_null() { p.remove(k); } else { p.insert(k.clone(), v.clone()); }
                    }
                }
                _ => {
                    let u = &ev["update"];
                    if u["sessionUpdate"] == "agent_message_chunk" {
                        let t = u["content"]["text"].as_str().unwrap();
                        let text = texts.entry(run.clone()).or_default();
                        // A message after a tool call starts a new line.
                        if !t.is_empty() && ended.remove(&run) && !text.is_empty()
                            && !text.ends_with('\n') && !t.starts_with('\n') {
                            text.push('\n');
                        }
                        text.push_str(t);
                    } else {
                        ended.insert(run.clone());
                        let id = u["toolCallId"].as_str().unwrap().to_owned();
                        let row = tools.entry(run).or_default().entry(id).or_insert(json!({}));
                        for (k, v) in u.as_object().unwrap() {
                            if k != "sessionUpdate" { row[k] = v.clone(); }
                        }
                    }
                }
            }
        }
        let runs = state.session("s").map(|s| s.subagent_runs.clone()).unwrap_or_default();
        prop_assert_eq!(runs.keys().collect::<Vec<_>>(), last_snapshot.keys().collect::<Vec<_>>());
        for (run_id, snap) in &last_snapshot {
            let got = &runs[run_id];
            prop_assert_eq!(&serde_json::to_value(&got.snapshot).unwrap(), snap);
            prop_assert_eq!(&got.text, texts.get(run_id).map_or("", String::as_str));
            prop_assert_eq!(&got.progress, &progress.get(run_id).cloned().unwrap_or_default());
            let want_tools = tools.get(run_id).cloned().unwrap_or_default();
            let got_tools: IndexMap<String, Value> =
                got.tool_calls().map(|(id, call)| (id.to_owned(), Value::Object(call))).collect();
            prop_assert_eq!(&got_tools, &want_tools);
        }
        // And the emitter's current runs are among them, with its snapshot.
        for (_, run) in e.runs() {
            prop_assert_eq!(&serde_json::to_value(&runs[&run.run_id].snapshot).unwrap(), &run.snapshot);
        }
    }

    #[test]
    fn folding_the_accumulators_updates_gives_back_its_totals(
        mut steps in proptest::collection::vec((0..2usize, 0..3u8, 0..3u8, 0..1000u64, proptest::option::of(0..100u32)), 1..30)
    ) {
        // Scopes follow each other (a scope never comes back once another
        // began), so scope a's updates come first.
        steps.sort_by_key(|s| s.0);
        let mut accs = [
            SessionUsageAccumulator::with_scope_id("turn-a").unwrap(),
            SessionUsageAccumulator::with_scope_id("turn-b").unwrap(),
        ];
        let mut last: [Option<IndexMap<String, ModelUsage>>; 2] = [None, None];
        let mut state = ConnectionState::new();
        // The session start is seen, so every delta is judged from zero.
        state.message(C2A, &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}));
        state.message(A2C, &json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}));
        for (scope, op, model, input, cost) in steps {
            let mut row = ModelUsage::new(input, input / 2, 0u64);
            if let Some(c) = cost {
                row = row.cost_usd(acp_extension_core::wire::NonNegF64::new(f64::from(c) / 100.0).unwrap());
            }
            let mut rows = IndexMap::new();
            rows.insert(format!("m{model}"), row);
            if let Some(u) = accs[scope].update("s", &format!("op{op}"), &rows) {
                last[scope] = u.model_usage.clone();
                let params = serde_json::to_value(&u).unwrap();
                state.message(A2C, &notify("_lody/session/usage_update", params));
            }
        }
        prop_assert_eq!(state.invalid_count(), 0, "{:?}", state.invalid().collect::<Vec<_>>());
        let Some(s) = state.session("s") else { return Ok(()) };
        for (i, id) in ["turn-a", "turn-b"].iter().enumerate() {
            let got = s.usage.scopes.get(&format!("scope:{id}")).map(|x| x.model_usage.clone());
            prop_assert_eq!(got, last[i].clone());
        }
        // Totals: per model, the sum of both scopes; a cost only when every
        // scope reporting the model knows it.
        let mut want: IndexMap<String, (u64, Option<f64>)> = IndexMap::new();
        for rows in last.iter().flatten() {
            for (m, r) in rows {
                let e = want.entry(m.clone()).or_insert((0, Some(0.0)));
                e.0 += r.input_tokens.get();
                e.1 = match (e.1, r.cost_usd) { (Some(a), Some(b)) => Some(a + b.get()), _ => None };
            }
        }
        prop_assert_eq!(s.usage.totals.len(), want.len());
        for (m, (input, cost)) in want {
            let t = &s.usage.totals[&m];
            prop_assert_eq!(t.input_tokens.get(), input);
            match (t.cost_usd.map(|c| c.get()), cost) {
                (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-9, "{} vs {}", a, b),
                (a, b) => prop_assert_eq!(a, b),
            }
        }
    }
}
