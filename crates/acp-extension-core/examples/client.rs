//! A small ACP client on the official SDK that keeps its view of the agent
//! in a [`ConnectionState`] instead of a hand-written reducer: it starts an
//! agent (by default `acp-ext serve`), advertises the client's extensions,
//! sends a few prompts and prints the state it folded.
//!
//! ```sh
//! cargo build -p acp-ext
//! cargo run -p acp-extension-core --example client -- target/debug/acp-ext serve
//! ```
//!
//! Every message the client sees goes into the state: the requests it sends
//! and their responses ([`ConnectionState::request`] /
//! [`ConnectionState::response`], with ids of the client's own choosing),
//! the agent's notifications through one untyped handler (so a session
//! update the SDK's types do not know is reported, not lost), and the
//! agent's permission requests. The state does the rest: subagent runs,
//! usage per scope, rate limits, titles, goals, tasks, steers.

use std::sync::{Arc, Mutex};

use acp_extension_core::state::{Change, ConnectionState, Direction};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{AcpAgent, Agent, Client, UntypedMessage};
use serde_json::{Value, json};

type Shared = Arc<Mutex<ConnectionState>>;

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, ConnectionState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends a request, folding it and its answer into the state.
async fn call(
    cx: &ConnectionTo<Agent>,
    state: &Shared,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value, agent_client_protocol::Error> {
    let id = json!(format!("client-{id}"));
    lock(state).request(Direction::ClientToAgent, &id, method, &params);
    let answer = cx
        .send_request(UntypedMessage::new(method, params)?)
        .block_task()
        .await;
    let outcome: Result<Value, Value> = answer
        .clone()
        .map_err(|e| json!({"code": i32::from(e.code), "message": e.message}));
    let changes = lock(state).response(Direction::AgentToClient, &id, outcome.as_ref());
    report(&changes);
    answer
}

/// Prints what a UI would react to: here, only what went wrong.
fn report(changes: &[Change]) {
    for change in changes {
        if let Change::Invalid(i) = change {
            eprintln!(
                "invalid: {} {} {} ({})",
                i.method.as_deref().unwrap_or("-"),
                i.pointer,
                i.message,
                i.rule
            );
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        args = vec!["acp-ext".into(), "serve".into()];
    }
    let agent = AcpAgent::from_args(&args).map_err(|e| format!("cannot start {args:?}: {e}"))?;
    let state: Shared = Arc::default();
    let (on_note, on_request, main_state) = (state.clone(), state.clone(), state.clone());
    Client
        .v1()
        .name("acp-extension-core-example-client")
        // Every notification, typed or not: `session/update`, `_lody/…`.
        .on_receive_notification(
            async move |n: UntypedMessage, _cx| {
                let changes =
                    lock(&on_note).notification(Direction::AgentToClient, &n.method, &n.params);
                report(&changes);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        // The agent's requests: allow every permission once; decline the rest.
        .on_receive_request(
            async move |r: UntypedMessage, responder, _cx| {
                let id = json!(format!("agent-{}", next_id()));
                lock(&on_request).request(Direction::AgentToClient, &id, &r.method, &r.params);
                let answer = match r.method.as_str() {
                    "session/request_permission" => {
                        let option = r.params["options"][0]["optionId"].clone();
                        json!({"outcome": {"outcome": "selected", "optionId": option}})
                    }
                    "elicitation/create" => json!({"action": "decline"}),
                    _ => {
                        lock(&on_request).response(
                            Direction::ClientToAgent,
                            &id,
                            Err(&json!({"code": -32601})),
                        );
                        return responder
                            .respond_with_error(agent_client_protocol::Error::method_not_found());
                    }
                };
                lock(&on_request).response(Direction::ClientToAgent, &id, Ok(&answer));
                responder.respond(answer)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx| {
            let state = main_state;
            let caps = json!({"_meta": {"lody": {
                "subagentEvents": {"version": 1},
                "elicitation": {"version": 1, "answerNotes": true},
            }}});
            call(
                &cx,
                &state,
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": caps}),
            )
            .await?;
            let cwd = std::env::temp_dir();
            let new = call(
                &cx,
                &state,
                1,
                "session/new",
                json!({"cwd": cwd, "mcpServers": []}),
            )
            .await?;
            let sid = new["sessionId"].as_str().unwrap_or_default().to_owned();
            for (i, text) in ["/title Example", "/subagents 2", "/limits", "hello"]
                .iter()
                .enumerate()
            {
                let params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
                call(&cx, &state, 2 + i as u64, "session/prompt", params).await?;
            }
            print(&lock(&state), &sid);
            Ok(())
        })
        .await?;
    Ok(())
}

fn print(state: &ConnectionState, sid: &str) {
    let Some(s) = state.session(sid) else {
        println!("no session {sid}");
        return;
    };
    println!("session {sid}: {:?} ({:?})", s.title, s.title_source);
    for (depth, id, run) in s.run_tree() {
        println!(
            "  {}run {id}: {}, last line {:?}",
            "  ".repeat(depth),
            run.state_name(),
            run.last_line()
        );
    }
    for (model, u) in &s.usage.totals {
        let cost = u.cost_usd.map(|c| c.get());
        println!(
            "  usage {model}: {} in, {} out, cost {cost:?}",
            u.input_tokens.get(),
            u.output_tokens.get()
        );
    }
    for (id, limit) in state.rate_limits() {
        let used: Vec<f64> = limit
            .rate_limit
            .windows
            .iter()
            .map(|w| w.used_percent.get())
            .collect();
        println!("  rate limit {id}: used {used:?} %");
    }
    println!(
        "  {} messages folded, {} invalid",
        state.messages(),
        state.invalid_count()
    );
}

/// A process-unique number for the ids of the agent's requests (the SDK
/// does not hand them to the handler).
fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
