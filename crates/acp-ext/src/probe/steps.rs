//! The probe's steps on the connection to the agent: `initialize`, a
//! session, prompts and the contract's queries, and the answers the probe
//! gives the agent's requests.

use super::*;

/// The connection to the agent, as the probe's steps see it.
/// The probe's connection: raw JSON-RPC with no version guard (the SDK's
/// `Client.v1()` would rewrite a v2 `initialize` to v1); the probe speaks
/// the version the agent answers, from its JSON.
pub(super) type AgentCx = agent_client_protocol::ConnectionTo<agent_client_protocol::Agent>;

/// Where the probe's steps write what happened (shared with the report).
#[derive(Clone)]
struct Recorder(Arc<Mutex<report::Outcome>>);

impl Recorder {
    fn record(&self, f: impl FnOnce(&mut report::Outcome)) {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Records an error that stops the probe.
    fn stop(&self, msg: String) {
        self.record(|o| {
            o.errors.push(msg.clone());
            o.stopped = Some(msg);
        });
    }
}

/// What the steps after `initialize` need of it.
struct Initialized {
    /// The agent's `initialize` result.
    result: Value,
    negotiated: Negotiated,
    /// The namespace the probe (the client) writes in: the one the agent reads.
    ns: Namespace,
    /// The probe plays a plain client: it writes nothing of the extensions.
    plain: bool,
    /// The agent answered ACP v2: a prompt's answer is a receipt, its turn
    /// ended by the `idle` `state_update`.
    v2: bool,
}

/// The `idle` `state_update`s of the agent's, in the order the lines
/// passed (ACP v2 ends a turn with one), and where each prompt receipt
/// (`{messageId}`) fell among them: a prompt's turn ends at its session's
/// first idle after its receipt (an idle before it ends other work, such
/// as a turn the agent started itself).
#[derive(Debug, Default)]
pub(super) struct Idles(Mutex<IdlesSeen>);

#[derive(Debug, Default)]
struct IdlesSeen {
    /// Each idle's session and `stopReason`, in order.
    idles: Vec<(String, Option<String>)>,
    /// How many idles had passed when the receipt with this `messageId`
    /// did.
    receipts: std::collections::HashMap<String, usize>,
}

impl Idles {
    /// Notes `line` when it is an idle `state_update` or a receipt.
    pub(super) fn observe(&self, line: &str) {
        if !line.contains("state_update") && !line.contains("messageId") {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = v.get("result")
            && r.get("stopReason").is_none()
            && let Some(id) = r.get("messageId").and_then(Value::as_str)
        {
            let at = seen.idles.len();
            seen.receipts.insert(id.to_owned(), at);
            return;
        }
        let sid = v.pointer("/params/sessionId").and_then(Value::as_str);
        let update = v.pointer("/params/update");
        let is = |key: &str, want: &str| {
            update.and_then(|u| u.get(key)).and_then(Value::as_str) == Some(want)
        };
        if let Some(sid) = sid
            && is("sessionUpdate", "state_update")
            && is("state", "idle")
        {
            let stop = update
                .and_then(|u| u.get("stopReason"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            seen.idles.push((sid.to_owned(), stop));
        }
    }

    /// How many idles have passed.
    fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).idles.len()
    }

    /// Where the receipt with `message_id` fell, when it was seen.
    fn receipt(&self, message_id: &str) -> Option<usize> {
        let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.receipts.get(message_id).copied()
    }

    /// Waits for the first idle of `sid` from the `from`-th on: its stop
    /// reason, or `None` at the deadline.
    async fn after(&self, sid: &str, from: usize, timeout: Duration) -> Option<Option<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((_, stop)) = seen.idles.iter().skip(from).find(|(s, _)| s == sid) {
                    return Some(stop.clone());
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub(super) async fn drive(
    agent: AcpAgent,
    options: &ProbeOptions,
    outcome: Arc<Mutex<report::Outcome>>,
    idles: Arc<Idles>,
    session_dir: &Path,
) -> anyhow::Result<()> {
    let options = options.clone();
    let rec = Recorder(outcome);
    let root = session_dir.to_path_buf();
    agent_client_protocol::Builder::new(Client)
        .name("acp-ext probe")
        .on_receive_request(
            async move |req: UntypedMessage, responder, _cx| match auto_answer(
                &req.method,
                &req.params,
                &root,
            ) {
                Some(Ok(v)) => responder.respond(v),
                Some(Err(e)) => responder.respond_with_error(e),
                None => {
                    responder.respond_with_error(agent_client_protocol::Error::method_not_found())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async move |cx| {
            let Some(init) = initialize(&cx, &options, &rec).await else {
                return Ok(());
            };
            if !options.session && options.prompts.is_empty() {
                return Ok(());
            }
            let Some(session_id) =
                new_session(&cx, &init, session_dir, options.timeout, &rec).await
            else {
                return Ok(());
            };
            let last_turn = prompts(&cx, &init, &session_id, &options, &rec, &idles).await;
            queries(
                &cx,
                &init,
                &session_id,
                last_turn.as_deref(),
                session_dir,
                options.timeout,
                &rec,
            )
            .await;
            Ok(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// `initialize` with the client capabilities of `options`, asking for the
/// version `options.protocol` names; `None` (recorded) when it fails. A
/// refusal of the version asked (`-32022`, with the versions the agent
/// supports) is named as such; under [`ProtocolChoice::Auto`] the probe
/// then asks again for a version the agent supports.
async fn initialize(cx: &AgentCx, options: &ProbeOptions, rec: &Recorder) -> Option<Initialized> {
    let client_caps = client_capabilities(options.namespace, options.client);
    let mut asked = match options.protocol {
        ProtocolChoice::V1 => 1,
        ProtocolChoice::V2 | ProtocolChoice::Auto => 2,
    };
    let mut retried = false;
    let result = loop {
        let params = if asked >= 2 {
            json!({
                "protocolVersion": asked,
                "capabilities": client_caps,
                "info": {"name": "acp-ext-probe", "title": "acp-ext probe", "version": env!("CARGO_PKG_VERSION")},
            })
        } else {
            json!({
                "protocolVersion": asked,
                "clientCapabilities": client_caps,
                "clientInfo": {"name": "acp-ext-probe", "title": "acp-ext probe", "version": env!("CARGO_PKG_VERSION")},
            })
        };
        match request(cx, "initialize", params, options.timeout).await {
            Ok(v) => break v,
            Err(e) => {
                if let Some(supported) = version_refused(&e) {
                    let fallback = supported.iter().copied().filter(|v| *v != asked).max();
                    // `auto` asks once more, for a version the agent named.
                    if let (ProtocolChoice::Auto, Some(v), false) =
                        (options.protocol, fallback, retried)
                    {
                        asked = v;
                        retried = true;
                        continue;
                    }
                    let list = match supported.as_slice() {
                        [] => "named no version it supports".to_owned(),
                        some => format!(
                            "it supports {}",
                            some.iter()
                                .map(|v| format!("v{v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    let msg = format!(
                        "the agent refused ACP v{asked} (-32022); {list} (--protocol selects the version asked)"
                    );
                    rec.record(|o| {
                        o.protocol_asked = Some(asked);
                        o.protocol = Some((Severity::Error, "protocol-refused", msg.clone()));
                        o.stopped = Some(msg);
                    });
                } else {
                    rec.stop(format!("initialize failed: {e}"));
                }
                return None;
            }
        }
    };
    let v2 = result
        .get("protocolVersion")
        .and_then(Value::as_u64)
        .is_some_and(|v| v >= 2);
    rec.record(|o| o.protocol_asked = Some(asked));
    if options.protocol == ProtocolChoice::V2 && !v2 {
        let msg = format!(
            "asked for ACP v2, the agent answered protocolVersion {}: it does not speak v2",
            result.get("protocolVersion").unwrap_or(&Value::Null)
        );
        rec.record(|o| o.protocol = Some((Severity::Warning, "protocol-version", msg)));
    }
    let agent_caps = acp_extension_core::negotiation::initialize_capabilities(&result, Side::Agent)
        .cloned()
        .unwrap_or(Value::Null);
    let negotiated = negotiate(&agent_caps, &client_caps);
    let advertisement = Advertisement::read(&agent_caps, Side::Agent);
    let ns = negotiated.client_writes;
    rec.record(|o| {
        o.initialize = Some(result.clone());
        o.advertisement = Some(advertisement);
    });
    Some(Initialized {
        result,
        negotiated,
        ns,
        plain: options.client == ClientDialect::Plain,
        v2,
    })
}

/// The versions an agent supports, when `e` is its refusal of the version
/// asked (ACP v2's `-32022`, `data: {requested, supported}`).
fn version_refused(e: &RequestError) -> Option<Vec<u64>> {
    let RequestError::Rpc {
        code: Some(-32022),
        data,
        ..
    } = e
    else {
        return None;
    };
    let supported = data.as_ref().and_then(|d| d.get("supported"));
    Some(match supported {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_u64).collect(),
        Some(v) => v.as_u64().into_iter().collect(),
        None => Vec::new(),
    })
}

/// `session/new` in `dir`, with the contract's `_meta` the agent takes;
/// the session id, or `None` (recorded: a login needed, an error).
async fn new_session(
    cx: &AgentCx,
    init: &Initialized,
    dir: &Path,
    timeout: Duration,
    rec: &Recorder,
) -> Option<String> {
    let (negotiated, ns) = (&init.negotiated, init.ns);
    let mut params = json!({"cwd": dir.to_string_lossy(), "mcpServers": []});
    let mut meta = serde_json::Map::new();
    // A plain client writes no `_meta.<ns>` (the agent's advertisement
    // alone makes a feature look active).
    let extensions = !init.plain;
    if extensions && negotiated.is_active(Feature::WorktreeProject) {
        let project = json!({"version": 1, "originProjectPath": dir.to_string_lossy()});
        namespace::write_key(&mut meta, ns, "worktreeProject", project);
    }
    if extensions && negotiated.is_active(Feature::SessionConfig) {
        namespace::write_key(
            &mut meta,
            ns,
            "sessionConfig",
            json!({"version": 1, "configOptionValues": {}}),
        );
    }
    if !meta.is_empty() {
        params["_meta"] = Value::Object(meta);
    }
    match request(cx, "session/new", params, timeout).await {
        Ok(v) => match v.get("sessionId").and_then(Value::as_str) {
            Some(id) => {
                rec.record(|o| o.session_id = Some(id.to_owned()));
                Some(id.to_owned())
            }
            None => {
                rec.stop("session/new returned no sessionId".into());
                None
            }
        },
        Err(e) => {
            let auth = e.code() == Some(-32000);
            let offered = auth_methods(&init.result);
            let msg = if auth {
                format!("session/new needs authentication ({e}); auth methods offered: {offered}")
            } else {
                format!("session/new failed: {e}; auth methods offered: {offered}")
            };
            rec.record(|o| {
                if auth {
                    o.auth_required = Some(msg.clone());
                } else {
                    o.errors.push(msg.clone());
                }
                o.stopped = Some(msg);
            });
            None
        }
    }
}

/// The agent's login methods, by id and name (`none` when it offers none):
/// a failed `session/new` often means one is needed first.
fn auth_methods(init: &Value) -> String {
    let methods: Vec<String> = init
        .get("authMethods")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| {
                    let id = m.get("id").and_then(Value::as_str)?;
                    Some(match m.get("name").and_then(Value::as_str) {
                        Some(n) if n != id => format!("{id} ({n})"),
                        _ => id.to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if methods.is_empty() {
        "none".to_owned()
    } else {
        methods.join(", ")
    }
}

/// Sends each prompt in turn (steering a running turn when the agent takes
/// steers by request); the last turn id the agent reported. A prompt that
/// times out stops the rest.
async fn prompts(
    cx: &AgentCx,
    init: &Initialized,
    session_id: &str,
    options: &ProbeOptions,
    rec: &Recorder,
    idles: &Idles,
) -> Option<String> {
    let steer_by_request = init
        .negotiated
        .steering()
        .is_some_and(|st| st.transport == SteeringTransport::Request);
    // A standard client steers on `_session/steering`, when the agent
    // advertises it, asking for `promptRequired` as a client should.
    let standard_steering = options.steer
        && options.client == ClientDialect::Standard
        && acp_extension_core::standard::advertises_steering(&init.result);
    let steer_by_request = options.steer && steer_by_request;
    let mut last_turn: Option<String> = None;
    for (i, text) in options.prompts.iter().enumerate() {
        let content = json!([{"type": "text", "text": "Also keep the public API stable."}]);
        let steer = if standard_steering {
            Some((
                acp_extension_core::standard::STEERING_METHOD.to_owned(),
                json!({"sessionId": session_id, "prompt": content,
                    "_meta": {"steering": {"idleBehavior": "promptRequired"}}}),
            ))
        } else if steer_by_request && options.client == ClientDialect::Core {
            Some((
                ContractMethod::SessionSteer.method(init.ns).to_owned(),
                json!({"sessionId": session_id, "steerId": format!("probe-steer-{}", i + 1),
                    "prompt": content}),
            ))
        } else {
            None
        };
        let end = init.v2.then_some(idles);
        let (r, took, steered) = prompt(cx, session_id, text, steer, end, options.timeout).await;
        if let Some(turn) = r
            .as_ref()
            .ok()
            .and_then(|v| v.get("_meta"))
            .and_then(Value::as_object)
            .and_then(|m| namespace::read_key(m, "turnId"))
            .and_then(|(_, t)| t.as_str())
        {
            last_turn = Some(turn.to_owned());
        }
        let result = PromptResult {
            prompt: text.clone(),
            stop_reason: r
                .as_ref()
                .ok()
                .and_then(|v| v.get("stopReason"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            error: r.as_ref().err().map(ToString::to_string),
            millis: took.as_millis() as u64,
            ..PromptResult::default()
        };
        rec.record(|o| {
            o.prompts.push(result);
            o.queries.extend(steered);
        });
        if let Err(e @ RequestError::Timeout { .. }) = &r {
            let why = format!("the prompt before it {e}");
            rec.record(|o| o.stopped = Some(why));
            break;
        }
    }
    last_turn
}

/// One `session/prompt`: its answer, the turn's time (taken when the answer
/// arrives), and the steer sent into it. On a v2 connection (`v2_end`,
/// the idles seen) the answer is a receipt: the turn ends at the session's
/// first `idle` `state_update` after it, whose stop reason is added to the
/// receipt. With `steer` (the steer request's
/// method and params), one steer goes 100 ms into a turn that is still running;
/// a turn that ends sooner is not steered, and its time is its own. The
/// checker judges the steer's timing (`steer-answered-after-turn`,
/// `steer-not-applied`).
async fn prompt(
    cx: &AgentCx,
    session_id: &str,
    text: &str,
    steer: Option<(String, Value)>,
    v2_end: Option<&Idles>,
    timeout: Duration,
) -> (Result<Value, RequestError>, Duration, Option<QueryResult>) {
    let started = Instant::now();
    let sent_at = v2_end.map_or(0, Idles::count);
    let prompt = async {
        let mut r = request(
            cx,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
            timeout,
        )
        .await;
        if let (Some(idles), Ok(receipt)) = (v2_end, &mut r)
            && receipt.get("stopReason").is_none()
        {
            // From the receipt on (an older draft's `{}` receipt: from
            // the prompt on).
            let from = receipt
                .get("messageId")
                .and_then(Value::as_str)
                .and_then(|id| idles.receipt(id))
                .unwrap_or(sent_at);
            let left = timeout.saturating_sub(started.elapsed());
            match idles.after(session_id, from, left).await {
                Some(stop) => {
                    if let (Some(o), Some(stop)) = (receipt.as_object_mut(), stop) {
                        o.insert("stopReason".into(), Value::String(stop));
                    }
                }
                None => {
                    r = Err(RequestError::Timeout {
                        method: "session/prompt (its turn's idle state_update)".to_owned(),
                        after: timeout,
                    })
                }
            }
        }
        (r, started.elapsed())
    };
    tokio::pin!(prompt);
    let Some((method, params)) = steer else {
        let (r, took) = prompt.await;
        return (r, took, None);
    };
    tokio::select! {
        (r, took) = &mut prompt => (r, took, None),
        () = tokio::time::sleep(Duration::from_millis(100)) => {
            let steer = request(cx, &method, params, timeout);
            let ((r, took), s) = tokio::join!(&mut prompt, steer);
            let outcome = s
                .as_ref()
                .ok()
                .and_then(|v| v.get("outcome"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let steered = QueryResult {
                method,
                ok: s.is_ok(),
                error: s.err().map(|e| e.to_string()),
                outcome,
                skipped: None,
            };
            (r, took, Some(steered))
        }
    }
}

/// The queries the agent advertised: `session/fork` at the last turn,
/// rate limits, the subagent list, the session history; none, each
/// reported as skipped, for a plain client.
async fn queries(
    cx: &AgentCx,
    init: &Initialized,
    session_id: &str,
    last_turn: Option<&str>,
    dir: &Path,
    timeout: Duration,
    rec: &Recorder,
) {
    let (negotiated, ns) = (&init.negotiated, init.ns);
    let mut queries = Vec::new();
    if negotiated.rate_limits().is_some_and(|r| r.query.is_some()) {
        queries.push((
            ContractMethod::RateLimitsGet,
            json!({"sessionId": session_id}),
        ));
    }
    if negotiated.subagents().is_some_and(|s| s.list.is_some()) {
        queries.push((
            ContractMethod::SubagentsList,
            json!({"sessionId": session_id}),
        ));
    }
    if negotiated.is_active(Feature::SessionHistory) {
        queries.push((
            ContractMethod::SessionHistoryRead,
            json!({"sessionId": session_id}),
        ));
    }
    // A plain client sends nothing of the extensions: each query the agent
    // advertised is reported as skipped, and why.
    if init.plain {
        let forks = negotiated.is_active(Feature::ForkAtTurn) && last_turn.is_some();
        let skipped = queries
            .iter()
            .map(|(method, _)| method.method(ns).to_owned())
            .chain(forks.then(|| "session/fork (_meta.forkAtTurn)".to_owned()));
        for method in skipped {
            let q = QueryResult {
                method,
                ok: true,
                error: None,
                outcome: None,
                skipped: Some("a plain client sends no extension method".to_owned()),
            };
            rec.record(|o| o.queries.push(q));
        }
        return;
    }
    if let (true, Some(turn)) = (negotiated.is_active(Feature::ForkAtTurn), last_turn) {
        let mut meta = serde_json::Map::new();
        namespace::write_key(
            &mut meta,
            ns,
            "forkAtTurn",
            json!({"version": 1, "turnId": turn}),
        );
        let params = json!({
            "sessionId": session_id,
            "cwd": dir.to_string_lossy(),
            "mcpServers": [],
            "_meta": meta,
        });
        let r = request(cx, "session/fork", params, timeout).await;
        let q = QueryResult {
            method: "session/fork".into(),
            ok: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
            outcome: None,
            skipped: None,
        };
        rec.record(|o| o.queries.push(q));
    }
    for (method, params) in queries {
        let method = method.method(ns).to_owned();
        let r = request(cx, &method, params, timeout).await;
        let q = QueryResult {
            method,
            ok: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
            outcome: None,
            skipped: None,
        };
        rec.record(|o| o.queries.push(q));
    }
}

/// Answers the agent's requests the way a cooperative user would:
/// permissions get the first "allow" option, elicitations are accepted
/// with a plausible value for every property, and files are read and
/// written inside `root` (the session's directory) only.
fn auto_answer(
    method: &str,
    params: &Value,
    root: &std::path::Path,
) -> Option<Result<Value, agent_client_protocol::Error>> {
    if let Some(answer) = fs_answer(method, params, root) {
        return Some(answer);
    }
    Some(Ok(match method {
        "session/request_permission" => {
            let options = params.get("options").and_then(Value::as_array)?;
            let pick = options
                .iter()
                .find(|o| {
                    o.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k.starts_with("allow"))
                })
                .or_else(|| options.first())?;
            json!({"outcome": {"outcome": "selected", "optionId": pick.get("optionId")?}})
        }
        "elicitation/create" => {
            let mut content = serde_json::Map::new();
            if let Some(props) = params
                .pointer("/requestedSchema/properties")
                .and_then(Value::as_object)
            {
                for (key, schema) in props {
                    content.insert(key.clone(), sample_value(schema));
                }
            }
            json!({"action": "accept", "content": content})
        }
        _ => return None,
    }))
}

/// `fs/read_text_file` and `fs/write_text_file`, confined to `root`.
pub(super) fn fs_answer(
    method: &str,
    params: &Value,
    root: &std::path::Path,
) -> Option<Result<Value, agent_client_protocol::Error>> {
    use agent_client_protocol::Error;
    let write = match method {
        "fs/read_text_file" => false,
        "fs/write_text_file" => true,
        _ => return None,
    };
    let path = match params.get("path").and_then(Value::as_str) {
        Some(p) if std::path::Path::new(p).is_absolute() => std::path::PathBuf::from(p),
        _ => {
            return Some(Err(
                Error::invalid_params().data("path: must be an absolute path")
            ));
        }
    };
    // Inside the session's directory, after resolving what exists of it.
    let parent = path.parent().and_then(|p| p.canonicalize().ok());
    let inside = parent.is_some_and(|p| root.canonicalize().is_ok_and(|r| p.starts_with(r)));
    if !inside || path.file_name().is_none() {
        return Some(Err(Error::invalid_params().data(format!(
            "path: the probe serves files inside its session directory {} only",
            root.display()
        ))));
    }
    if write {
        let Some(content) = params.get("content").and_then(Value::as_str) else {
            return Some(Err(
                Error::invalid_params().data("content: must be a string")
            ));
        };
        return Some(
            std::fs::write(&path, content)
                .map(|()| json!({}))
                .map_err(|e| Error::internal_error().data(e.to_string())),
        );
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(Err(
                Error::new(-32002, "Resource not found").data(path.display().to_string())
            ));
        }
        Err(e) => return Some(Err(Error::internal_error().data(e.to_string()))),
    };
    // `line` (1-based) and `limit` select lines, as ACP defines them.
    let line = params
        .get("line")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .map(|l| l as usize);
    let content = if line == 1 && limit.is_none() {
        text
    } else {
        let lines = text.split_inclusive('\n').skip(line - 1);
        match limit {
            Some(n) => lines.take(n).collect(),
            None => lines.collect(),
        }
    };
    Some(Ok(json!({"content": content})))
}

fn sample_value(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(c) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|o| o.get("const"))
        {
            return c.clone();
        }
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(true),
        Some("number") | Some("integer") => json!(1),
        Some("array") => {
            let item = schema
                .get("items")
                .map(sample_value)
                .unwrap_or(json!("probe"));
            json!([item])
        }
        _ => json!("probe answer"),
    }
}

/// The probe's own folder in the system's temporary directory, removed on
/// drop (also when the probe is dropped mid-run): the session's folder,
/// where the agent's files go, and the guard's report beside it. A guard
/// that writes after the probe is gone finds no folder and leaves nothing.
pub(super) struct TempDir {
    path: std::path::PathBuf,
}

impl TempDir {
    /// The session's folder: its `cwd`, and where the agent's files go.
    pub(super) fn session(&self) -> std::path::PathBuf {
        self.path.join("session")
    }

    /// Where the guard tells how the agent ended.
    pub(super) fn guard_report(&self) -> std::path::PathBuf {
        self.path.join("guard")
    }
}

pub(super) fn tempdir() -> std::io::Result<TempDir> {
    let path = std::env::temp_dir().join(format!(
        "acp-ext-probe-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    let dir = TempDir { path };
    std::fs::create_dir_all(dir.session())?;
    Ok(dir)
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
