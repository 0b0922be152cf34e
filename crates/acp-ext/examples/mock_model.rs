//! A scripted model server on loopback, for running the official ACP
//! adapters end to end with no credentials and no network (the offline
//! tests run it inside `unshare -n`).
//!
//! ```text
//! mock_model --home DIR [--log FILE] -- COMMAND [ARGS…]
//! ```
//!
//! It listens on `127.0.0.1` (a free port), writes each agent's
//! configuration under `DIR` (codex's `config.toml`, claude's and gemini's
//! settings) pointing at itself, runs `COMMAND` with `HOME=DIR` and the
//! agents' environment (dummy keys that only this server sees), and exits
//! with the command's status. Every request it answers is appended to the
//! log as one JSON line `{"path", "reply", "body"}`.
//!
//! What it answers, by the last user message of a request (and whether a
//! tool result already follows it):
//!
//! | user says | first reply | after the tool result |
//! |---|---|---|
//! | `hello` | a text answer | |
//! | `run a command` | a shell call that needs permission | a text answer |
//! | `spawn a helper` | a subagent launch | a text answer |
//! | `resume the helper` | input for that subagent (codex) | a text answer |
//! | the subagent's own task | a text answer (the child's) | |
//! | anything else | a text answer | |
//!
//! Title and compaction requests get a title and a summary. Every reply
//! reports usage, so the adapters' usage and quota reach the client.
//!
//! The Responses API (codex) is served at `POST /v1/responses`, the
//! Messages API (claude) at `POST /v1/messages`, Gemini's at
//! `POST /v1beta/models/<m>:streamGenerateContent` and `:generateContent`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

static NEXT: AtomicU64 = AtomicU64::new(1);

fn next_id(prefix: &str) -> String {
    format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What the script decided to answer.
#[derive(Debug, Clone)]
enum Reply {
    Text(String),
    /// A tool call: the tool's name, its namespace (codex's multi-agent
    /// tools) and its arguments.
    Call {
        name: String,
        namespace: Option<String>,
        arguments: Value,
    },
}

impl Reply {
    fn label(&self) -> String {
        match self {
            Reply::Text(t) => format!("text: {t}"),
            Reply::Call { name, .. } => format!("call: {name}"),
        }
    }
}

/// The user messages of a request, in order, with whether a tool result
/// follows the last one; `texts` are every text of the request (system
/// prompts included), to spot title and compaction requests.
struct Conversation {
    last_user: String,
    tool_result_after: bool,
    all_text: String,
    /// The last subagent id a spawn returned (codex's `agent_id`).
    agent_id: Option<String>,
}

fn collect_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|x| collect_text(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_text(x, out)),
        _ => {}
    }
}

fn text_of(content: &Value) -> String {
    let mut s = String::new();
    match content {
        Value::String(t) => s.push_str(t),
        Value::Array(parts) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    s.push_str(t);
                    s.push('\n');
                }
            }
        }
        _ => {}
    }
    s
}

/// The conversation of a Responses API request (codex).
fn responses_conversation(body: &Value) -> Conversation {
    let mut last_user = String::new();
    let mut tool_result_after = false;
    let mut agent_id = None;
    for item in body
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" if item.get("role").and_then(Value::as_str) == Some("user") => {
                let t = text_of(item.get("content").unwrap_or(&Value::Null));
                // codex adds environment context as user messages.
                if !t.trim_start().starts_with('<') {
                    last_user = t;
                    tool_result_after = false;
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                tool_result_after = true;
                if let Some(id) = item
                    .get("output")
                    .and_then(Value::as_str)
                    .and_then(|o| serde_json::from_str::<Value>(o).ok())
                    .and_then(|o| o.get("agent_id").and_then(Value::as_str).map(str::to_owned))
                {
                    agent_id = Some(id);
                }
            }
            _ => {}
        }
    }
    let mut all_text = String::new();
    collect_text(
        body.get("instructions").unwrap_or(&Value::Null),
        &mut all_text,
    );
    collect_text(body.get("input").unwrap_or(&Value::Null), &mut all_text);
    Conversation {
        last_user,
        tool_result_after,
        all_text,
        agent_id,
    }
}

/// The conversation of a Messages API request (claude).
fn messages_conversation(body: &Value) -> Conversation {
    let mut last_user = String::new();
    let mut tool_result_after = false;
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if m.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let content = m.get("content").unwrap_or(&Value::Null);
        let has_result = content.as_array().is_some_and(|a| {
            a.iter()
                .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        let t = text_of(content);
        let t: String = t
            .lines()
            .filter(|l| !l.trim_start().starts_with('<'))
            .collect::<Vec<_>>()
            .join("\n");
        if has_result {
            tool_result_after = true;
        } else if !t.trim().is_empty() {
            last_user = t;
            tool_result_after = false;
        }
    }
    let mut all_text = String::new();
    collect_text(body.get("system").unwrap_or(&Value::Null), &mut all_text);
    collect_text(body.get("messages").unwrap_or(&Value::Null), &mut all_text);
    Conversation {
        last_user,
        tool_result_after,
        all_text,
        agent_id: None,
    }
}

/// The conversation of a Gemini request.
fn gemini_conversation(body: &Value) -> Conversation {
    let mut last_user = String::new();
    let mut tool_result_after = false;
    for c in body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if c.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let parts = c
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if parts.iter().any(|p| p.get("functionResponse").is_some()) {
            tool_result_after = true;
            continue;
        }
        let t = text_of(&Value::Array(parts));
        if !t.trim().is_empty() {
            last_user = t;
            tool_result_after = false;
        }
    }
    let mut all_text = String::new();
    collect_text(body, &mut all_text);
    Conversation {
        last_user,
        tool_result_after,
        all_text,
        agent_id: None,
    }
}

/// The script.
fn decide(c: &Conversation, vendor: &str) -> Reply {
    let all = c.all_text.to_ascii_lowercase();
    if all.contains("generate a very short title") || all.contains("title for this") {
        return Reply::Text(if vendor == "claude" {
            json!({"title": "Mock session"}).to_string()
        } else {
            "Mock session".to_owned()
        });
    }
    if all.contains("context checkpoint compaction")
        || all.contains("<summary>") && all.contains("text only")
    {
        return Reply::Text("<summary>We said hello and ran one command.</summary>".to_owned());
    }
    let user = c.last_user.to_ascii_lowercase();
    if user.contains("run a command") {
        if c.tool_result_after {
            return Reply::Text("The command ran.".to_owned());
        }
        return match vendor {
            "codex" => Reply::Call {
                name: "exec_command".to_owned(),
                namespace: None,
                arguments: json!({"cmd": "echo mock > mock.txt", "sandbox_permissions": "require_escalated",
                    "justification": "write a file for the test"}),
            },
            "claude" => Reply::Call {
                name: "Bash".to_owned(),
                namespace: None,
                arguments: json!({"command": "echo mock > mock.txt", "description": "Write a file"}),
            },
            _ => Reply::Call {
                name: "run_shell_command".to_owned(),
                namespace: None,
                arguments: json!({"command": "echo mock > mock.txt", "description": "Write a file"}),
            },
        };
    }
    if user.contains("spawn a helper") {
        if c.tool_result_after {
            return Reply::Text("The helper is done.".to_owned());
        }
        return match vendor {
            "codex" => Reply::Call {
                name: "spawn_agent".to_owned(),
                namespace: Some("multi_agent_v1".to_owned()),
                arguments: json!({"message": "helper task: count to three", "agent_type": "explorer"}),
            },
            "claude" => Reply::Call {
                name: "Agent".to_owned(),
                namespace: None,
                arguments: json!({"description": "Count", "prompt": "helper task: count to three",
                    "subagent_type": "general-purpose"}),
            },
            _ => Reply::Call {
                name: "invoke_agent".to_owned(),
                namespace: None,
                arguments: json!({"agent_name": "codebase_investigator", "prompt": "helper task: count to three"}),
            },
        };
    }
    if user.contains("resume the helper") {
        if c.tool_result_after {
            return Reply::Text("The helper is resumed.".to_owned());
        }
        if vendor == "codex"
            && let Some(id) = c.agent_id.clone()
        {
            return Reply::Call {
                name: "send_input".to_owned(),
                namespace: Some("multi_agent_v1".to_owned()),
                arguments: json!({"target": id, "message": "helper task: count again"}),
            };
        }
        return Reply::Text("There is no helper to resume.".to_owned());
    }
    if user.contains("helper task") {
        if user.contains("count again") {
            return Reply::Text("Four, five, six.".to_owned());
        }
        return Reply::Text("One, two, three.".to_owned());
    }
    if user.contains("hello") {
        return Reply::Text("Hello from the mock model.".to_owned());
    }
    Reply::Text("Done.".to_owned())
}

fn sse(out: &mut String, event: Option<&str>, data: &Value) {
    if let Some(e) = event {
        out.push_str(&format!("event: {e}\n"));
    }
    out.push_str(&format!("data: {data}\n\n"));
}

/// The Responses API stream of a reply.
fn responses_stream(reply: &Reply) -> String {
    let mut s = String::new();
    let id = next_id("resp");
    sse(
        &mut s,
        Some("response.created"),
        &json!({"type": "response.created", "response": {"id": id}}),
    );
    let item = match reply {
        Reply::Text(t) => {
            let mid = next_id("msg");
            sse(
                &mut s,
                Some("response.output_item.added"),
                &json!({"type": "response.output_item.added",
                "output_index": 0, "item": {"type": "message", "id": mid, "role": "assistant", "content": []}}),
            );
            sse(
                &mut s,
                Some("response.output_text.delta"),
                &json!({"type": "response.output_text.delta",
                "item_id": mid, "output_index": 0, "content_index": 0, "delta": t}),
            );
            json!({"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": t, "annotations": []}]})
        }
        Reply::Call {
            name,
            namespace,
            arguments,
        } => {
            let mut item = json!({"type": "function_call", "id": next_id("fc"), "call_id": next_id("call"),
                "name": name, "arguments": arguments.to_string(), "status": "completed"});
            if let Some(ns) = namespace {
                item["namespace"] = json!(ns);
            }
            item
        }
    };
    sse(
        &mut s,
        Some("response.output_item.done"),
        &json!({"type": "response.output_item.done",
        "output_index": 0, "item": item}),
    );
    sse(
        &mut s,
        Some("response.completed"),
        &json!({"type": "response.completed", "response": {"id": id,
        "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 200},
            "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 8}, "total_tokens": 1240}}}),
    );
    s
}

/// The Messages API stream of a reply.
fn messages_stream(reply: &Reply, model: &str) -> String {
    let mut s = String::new();
    let id = next_id("msg");
    sse(
        &mut s,
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": id, "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 300, "output_tokens": 1}}}),
    );
    let stop = match reply {
        Reply::Text(t) => {
            sse(
                &mut s,
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            );
            sse(
                &mut s,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": t}}),
            );
            "end_turn"
        }
        Reply::Call {
            name, arguments, ..
        } => {
            sse(
                &mut s,
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": next_id("toolu"), "name": name, "input": {}}}),
            );
            sse(
                &mut s,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": arguments.to_string()}}),
            );
            "tool_use"
        }
    };
    sse(
        &mut s,
        Some("content_block_stop"),
        &json!({"type": "content_block_stop", "index": 0}),
    );
    sse(
        &mut s,
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": stop,
        "stop_sequence": null}, "usage": {"output_tokens": 40}}),
    );
    sse(
        &mut s,
        Some("message_stop"),
        &json!({"type": "message_stop"}),
    );
    s
}

/// Gemini's candidate for a reply.
fn gemini_candidate(reply: &Reply) -> Value {
    let part = match reply {
        Reply::Text(t) => json!({"text": t}),
        Reply::Call {
            name, arguments, ..
        } => json!({"functionCall": {"name": name, "args": arguments}}),
    };
    json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240,
            "cachedContentTokenCount": 200, "thoughtsTokenCount": 8}})
}

struct Request {
    path: String,
    body: Value,
}

fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                reader.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0; n];
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    }
    // Some clients compress request bodies; this mock asks them not to by
    // answering only what it can read.
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(Some(Request { path, body }))
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, extra: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

fn handle(mut stream: TcpStream, log: &Mutex<Option<std::fs::File>>) {
    let Ok(Some(req)) = read_request(&mut stream) else {
        return;
    };
    let path = req.path.split('?').next().unwrap_or("").to_owned();
    let (reply, content_type, extra, body) = if path.ends_with("/responses") {
        let reply = decide(&responses_conversation(&req.body), "codex");
        let extra = "x-codex-primary-used-percent: 12\r\nx-codex-primary-window-minutes: 300\r\n\
                     x-codex-secondary-used-percent: 40\r\nx-codex-secondary-window-minutes: 10080\r\n";
        let body = responses_stream(&reply);
        (reply, "text/event-stream", extra.to_owned(), body)
    } else if path.ends_with("/messages") {
        let reply = decide(&messages_conversation(&req.body), "claude");
        let model = req
            .body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("claude-mock");
        // The CLI keeps a window only while its reset is ahead, so the
        // resets are set from the clock: the five-hour window resets at
        // the next full hour plus two, the seven-day one in five days.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let five_hour = (now / 3600 + 2) * 3600;
        let seven_day = (now / 3600 + 120) * 3600;
        let extra = format!(
            "anthropic-ratelimit-unified-status: allowed_warning\r\n\
             anthropic-ratelimit-unified-5h-utilization: 0.91\r\n\
             anthropic-ratelimit-unified-5h-reset: {five_hour}\r\n\
             anthropic-ratelimit-unified-5h-status: allowed_warning\r\n\
             anthropic-ratelimit-unified-5h-surpassed-threshold: 0.9\r\n\
             anthropic-ratelimit-unified-7d-utilization: 0.4\r\n\
             anthropic-ratelimit-unified-7d-reset: {seven_day}\r\n\
             anthropic-ratelimit-unified-7d-status: allowed\r\n\
             anthropic-ratelimit-unified-representative-claim: five_hour\r\n\
             anthropic-ratelimit-unified-reset: {five_hour}\r\n"
        );
        let body = if req.body.get("stream").and_then(Value::as_bool) == Some(true) {
            messages_stream(&reply, model)
        } else {
            let text = match &reply {
                Reply::Text(t) => t.clone(),
                Reply::Call { .. } => String::new(),
            };
            json!({"id": next_id("msg"), "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 10}})
            .to_string()
        };
        let ct = if body.starts_with("event:") {
            "text/event-stream"
        } else {
            "application/json"
        };
        (reply, ct, extra, body)
    } else if path.contains(":streamGenerateContent") {
        let reply = decide(&gemini_conversation(&req.body), "gemini");
        let mut s = String::new();
        sse(&mut s, None, &gemini_candidate(&reply));
        (reply, "text/event-stream", String::new(), s)
    } else if path.contains(":generateContent") {
        // gemini's routing classifier asks for JSON.
        let reply =
            Reply::Text(json!({"reasoning": "simple", "model_choice": "flash"}).to_string());
        let body = gemini_candidate(&reply).to_string();
        (reply, "application/json", String::new(), body)
    } else if path.contains(":countTokens") {
        let body = json!({"totalTokens": 10}).to_string();
        (
            Reply::Text(String::new()),
            "application/json",
            String::new(),
            body,
        )
    } else {
        respond(&mut stream, "404 Not Found", "application/json", "", "{}");
        write_log(log, &path, "404", &req.body);
        return;
    };
    write_log(log, &path, &reply.label(), &req.body);
    respond(&mut stream, "200 OK", content_type, &extra, &body);
}

fn write_log(log: &Mutex<Option<std::fs::File>>, path: &str, reply: &str, body: &Value) {
    if let Ok(mut guard) = log.lock()
        && let Some(f) = guard.as_mut()
    {
        let _ = writeln!(f, "{}", json!({"path": path, "reply": reply, "body": body}));
    }
}

/// Writes each agent's configuration under `home`, pointing at `port`.
fn configure(home: &Path, port: u16) -> std::io::Result<()> {
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex)?;
    std::fs::write(
        codex.join("config.toml"),
        format!(
            r#"model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false
[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 30000
[analytics]
enabled = false
[otel]
exporter = "none"
"#
        ),
    )?;
    let claude = home.join(".claude");
    std::fs::create_dir_all(&claude)?;
    std::fs::write(
        claude.join("settings.json"),
        json!({"permissions": {"defaultMode": "default"}}).to_string(),
    )?;
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(&gemini)?;
    std::fs::write(
        gemini.join("settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"disableAutoUpdate": true, "disableUpdateNag": true}})
        .to_string(),
    )?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut home = None;
    let mut log_path = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--home" => {
                home = args.get(i + 1).map(PathBuf::from);
                i += 2;
            }
            "--log" => {
                log_path = args.get(i + 1).map(PathBuf::from);
                i += 2;
            }
            "--" => {
                i += 1;
                break;
            }
            other => {
                eprintln!("mock_model: unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(home), Some(program)) = (home, args.get(i)) else {
        eprintln!("usage: mock_model --home DIR [--log FILE] -- COMMAND [ARGS…]");
        return ExitCode::from(2);
    };
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mock_model: cannot listen on 127.0.0.1: {e}");
            return ExitCode::from(2);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    if let Err(e) = configure(&home, port) {
        eprintln!("mock_model: cannot write the agents' configuration: {e}");
        return ExitCode::from(2);
    }
    let log = Arc::new(Mutex::new(
        log_path.and_then(|p| std::fs::File::create(p).ok()),
    ));
    {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || handle(stream, &log));
            }
        });
    }
    let base = format!("http://127.0.0.1:{port}");
    let status = Command::new(program)
        .args(&args[i + 1..])
        .env("HOME", &home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("MOCK_API_KEY", "test-key")
        .env("INITIAL_AGENT_MODE", "read-only")
        .env("ANTHROPIC_BASE_URL", &base)
        .env("CLAUDE_CODE_OAUTH_TOKEN", "test-key")
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("GEMINI_API_KEY", "test-key")
        .env("GOOGLE_GEMINI_BASE_URL", &base)
        .env("GEMINI_TELEMETRY_ENABLED", "false")
        .env("MOCK_MODEL_URL", &base)
        .status();
    match status {
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("mock_model: cannot run {program}: {e}");
            ExitCode::from(2)
        }
    }
}
