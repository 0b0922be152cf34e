//! The sequence memory: what each rule remembers of earlier messages, and
//! the rules themselves.

use super::*;

/// The six usage counters of `ModelUsage`, in contract order.
pub(crate) const COUNTERS: [&str; 6] = [
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "reasoningOutputTokens",
    "webSearchRequests",
];

/// One model's cumulative totals as last reported.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Totals {
    pub(crate) counters: [f64; 6],
    /// `None`: unknown cost.
    pub(crate) cost: Option<f64>,
}

/// Which usage scope a session is in, and the scopes that ended in it.
#[derive(Debug, Default, Clone)]
struct UsageState {
    /// The current scope's key (unscoped updates have a per-session key).
    current: Option<u64>,
    /// Scopes that ended in this session.
    ended: BoundedSet,
}

/// The totals of one usage scope as last reported.
#[derive(Debug, Default, Clone)]
struct ScopeState {
    /// Per-model cumulative totals.
    models: HashMap<String, Totals>,
    /// Whether the scope's first update is measured from zero.
    baseline_zero: bool,
    /// Whether an update of the scope was seen.
    has_previous: bool,
}

/// One subagent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    /// The terminal state it reached (`completed`, `failed`, `cancelled`).
    terminal: Option<TerminalState>,
    /// Whether a snapshot of it was seen.
    has_snapshot: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TerminalState {
    Completed,
    Failed,
    Cancelled,
}

impl TerminalState {
    fn of(state: Option<&str>) -> Option<Self> {
        match state? {
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }
}

/// One steer sent on `session/steer`.
#[derive(Debug, Clone)]
struct SteerTrack {
    id: String,
    /// The turn it was sent in, when a prompt was running.
    turn: Option<u64>,
    injected: bool,
    applied: bool,
}

/// What was answered to one steer, judged against its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct SteerVerdict {
    /// Sent during a turn, answered after it ended.
    late: bool,
    /// Answered `injected` after its turn ended, never applied.
    unapplied: bool,
}

/// Prompt turns and steers of one session.
#[derive(Debug, Default, Clone)]
struct SteeringState {
    /// Every steer id sent in the session, on either transport.
    sent: BoundedSet,
    /// Prompts sent so far; the current turn's number.
    turn: u64,
    /// Whether the current turn's prompt awaits its response.
    open: bool,
    /// Recent request-transport steers, oldest first.
    steers: VecDeque<SteerTrack>,
}

impl SteeringState {
    fn prompt_sent(&mut self) {
        self.turn += 1;
        self.open = true;
    }

    fn steer_sent(&mut self, id: &str, cap: usize) {
        self.sent.insert(id_hash(id), cap);
        if cap == 0 {
            return;
        }
        while self.steers.len() >= cap {
            self.steers.pop_front();
        }
        self.steers.push_back(SteerTrack {
            id: id.to_owned(),
            turn: self.open.then_some(self.turn),
            injected: false,
            applied: false,
        });
    }

    fn applied(&mut self, id: &str) -> bool {
        if let Some(s) = self.steers.iter_mut().rev().find(|s| s.id == id) {
            s.applied = true;
        }
        self.sent.contains(id_hash(id))
    }

    fn answered(&mut self, id: &str, injected: bool) -> SteerVerdict {
        let (turn, open) = (self.turn, self.open);
        let Some(i) = self.steers.iter().rposition(|s| s.id == id) else {
            return SteerVerdict::default();
        };
        let s = &mut self.steers[i];
        s.injected = injected;
        let ended = s.turn.is_some_and(|t| t != turn || !open);
        let verdict = SteerVerdict {
            late: ended,
            unapplied: ended && injected && !s.applied,
        };
        if ended || !injected {
            self.steers.remove(i);
        }
        verdict
    }

    fn turn_ended(&mut self) -> Vec<String> {
        let turn = self.turn;
        self.open = false;
        let mut unapplied = Vec::new();
        self.steers.retain(|s| {
            if s.turn != Some(turn) {
                return true;
            }
            if s.injected && !s.applied {
                unapplied.push(s.id.clone());
            }
            // Unanswered steers of the turn stay, to judge their answer.
            !s.injected
        });
        unapplied
    }

    fn len(&self) -> usize {
        self.sent.len() + self.steers.len()
    }
}

/// Everything remembered about one session.
#[derive(Debug, Default, Clone)]
struct SessionMemory {
    /// Whether the session's start was seen (`session/new` response,
    /// `session/load|resume|fork`): usage baselines are then known.
    started: bool,
    runs: BoundedMap<Run>,
    native_ids: BoundedSet,
    steering: SteeringState,
    usage: UsageState,
    last_used: u64,
}

/// The sessions of one connection, least recently used dropped first.
#[derive(Debug, Default, Clone)]
struct Sessions {
    map: HashMap<String, SessionMemory>,
    tick: u64,
}

impl Sessions {
    fn get_or_create(&mut self, id: &str, cap: usize) -> &mut SessionMemory {
        self.tick += 1;
        let tick = self.tick;
        if !self.map.contains_key(id) {
            while !self.map.is_empty() && self.map.len() >= cap.max(1) {
                let oldest = self
                    .map
                    .iter()
                    .min_by_key(|(_, s)| s.last_used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    self.map.remove(&k);
                }
            }
            self.map.insert(id.to_owned(), SessionMemory::default());
        }
        #[expect(clippy::expect_used, reason = "the key is inserted just above")]
        let s = self.map.get_mut(id).expect("inserted above");
        s.last_used = tick;
        s
    }
}

/// Counts of what a tracker currently remembers, to show that its state
/// stays bounded on long streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TrackedState {
    /// Sessions with state.
    pub sessions: usize,
    /// Subagent runs, over all sessions.
    pub runs: usize,
    /// Native ids, over all sessions.
    pub native_ids: usize,
    /// Steer ids, over all sessions.
    pub steer_ids: usize,
    /// Ended usage scopes, over all sessions.
    pub ended_scopes: usize,
    /// Usage scopes with totals.
    pub usage_scopes: usize,
    /// Models with totals, over all usage scopes.
    pub usage_models: usize,
    /// Requests awaiting a response (counted by the tracker's owner).
    pub pending_requests: usize,
}

impl TrackedState {
    /// The sum of every count.
    pub fn total(&self) -> usize {
        self.sessions
            + self.runs
            + self.native_ids
            + self.steer_ids
            + self.ended_scopes
            + self.usage_scopes
            + self.usage_models
            + self.pending_requests
    }
}

/// The sequence memory of one connection; see the [module docs](self).
///
/// Feed it the events in connection order. Every method is cheap (hash
/// lookups) and never panics, whatever the JSON.
#[derive(Debug, Default, Clone)]
pub(crate) struct SequenceTracker {
    limits: SequenceLimits,
    sessions: Sessions,
    scopes: BoundedMap<ScopeState>,
    /// Sessions opened (`session/new` or `fork` answered, `load`,
    /// `resume`) or prompted on this connection.
    opened: BoundedSet,
    /// Whether `opened` dropped a session for room: then no session is
    /// called unknown.
    opened_overflowed: bool,
}

/// The key of a session's unscoped usage updates.
fn unscoped_key(sid: &str) -> u64 {
    id_hash(&format!("\0unscoped\0{sid}"))
}

fn totals_of(row: &Value) -> Option<Totals> {
    let obj = row.as_object()?;
    let mut t = Totals::default();
    for (i, name) in COUNTERS.iter().enumerate() {
        t.counters[i] = obj.get(*name).and_then(Value::as_f64).unwrap_or(0.0);
    }
    t.cost = obj.get("costUSD").and_then(Value::as_f64);
    Some(t)
}

fn cost_differs(a: f64, b: f64) -> bool {
    (a - b).abs() > 1e-9 * (1.0 + a.abs().max(b.abs()))
}

impl SequenceTracker {
    /// A tracker with these capacities.
    pub fn with_limits(limits: SequenceLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Forgets everything (a new `initialize` starts a new connection).
    pub fn reset(&mut self) {
        self.sessions = Sessions::default();
        self.scopes = BoundedMap::default();
        self.opened = BoundedSet::default();
        self.opened_overflowed = false;
    }

    fn open(&mut self, sid: &str) {
        let h = id_hash(sid);
        if !self.opened.contains(h) && self.opened.len() >= self.limits.sessions {
            self.opened_overflowed = true;
        }
        self.opened.insert(h, self.limits.sessions);
    }

    /// A contract notification of the agent for session `sid`: a finding
    /// when the connection was followed from its `initialize`
    /// (`from_initialize`), opened sessions (so its sessions are known: a
    /// fixture that opens none is not judged) and never opened or prompted
    /// `sid`.
    pub fn session_notification(
        &self,
        sid: &str,
        from_initialize: bool,
    ) -> Option<SequenceFinding> {
        (from_initialize
            && !self.opened_overflowed
            && self.opened.len() > 0
            && !self.opened.contains(id_hash(sid)))
        .then(
            || {
                SequenceFinding::new(
                    SequenceRule::SessionNotOpened,
                    "/params/sessionId",
                    format!(
                        "session {sid:?} was never opened on this connection (no `session/new`, `load`, `resume` or `fork` named it): a client has no session to show it in"
                    ),
                )
            },
        )
    }

    /// Session `sid` (re)starts: `session/new` answered, `session/load`,
    /// `resume` or `fork`. Its memory is cleared (except recency), and its
    /// usage baseline is known from here on.
    pub fn session_started(&mut self, sid: &str) {
        self.open(sid);
        let s = self.sessions.get_or_create(sid, self.limits.sessions);
        let last_used = s.last_used;
        *s = SessionMemory {
            started: true,
            last_used,
            ..SessionMemory::default()
        };
    }

    /// Session `sid` is closed or deleted.
    pub fn session_closed(&mut self, sid: &str) {
        self.sessions.map.remove(sid);
        self.scopes.remove(unscoped_key(sid));
    }

    /// A `session/prompt` of `sid` was sent: a turn begins.
    pub fn prompt_sent(&mut self, sid: &str) {
        self.open(sid);
        self.sessions
            .get_or_create(sid, self.limits.sessions)
            .steering
            .prompt_sent();
    }

    /// The prompt of `sid` was answered: its turn ended. Reports the
    /// request steers answered `injected` in it that no `steer_applied`
    /// named.
    pub fn prompt_answered(&mut self, sid: &str) -> Vec<SequenceFinding> {
        let Some(s) = self.sessions.map.get_mut(sid) else {
            return Vec::new();
        };
        s.steering
            .turn_ended()
            .into_iter()
            .map(|id| {
                SequenceFinding::new(
                    SequenceRule::SteerNotApplied,
                    "",
                    format!("the turn ended, but steer {id:?} was answered `injected` and no `session/steer_applied` named it"),
                )
            })
            .collect()
    }

    /// A steer with `id` was sent on `session/steer` (`request: true`) or
    /// in a prompt's `_meta.<ns>.steer` (`request: false`).
    pub fn steer_sent(&mut self, sid: &str, id: &str, request: bool) {
        let cap = self.limits.steer_ids_per_session;
        let s = self.sessions.get_or_create(sid, self.limits.sessions);
        if request {
            s.steering.steer_sent(id, cap);
        } else {
            s.steering.sent.insert(id_hash(id), cap);
        }
    }

    /// The answer to the `session/steer` request of steer `id` arrived:
    /// `injected` when its outcome is `injected`.
    pub fn steer_answered(&mut self, sid: &str, id: &str, injected: bool) -> Vec<SequenceFinding> {
        let Some(s) = self.sessions.map.get_mut(sid) else {
            return Vec::new();
        };
        let verdict = s.steering.answered(id, injected);
        let mut out = Vec::new();
        if verdict.late {
            out.push(SequenceFinding::new(
                SequenceRule::SteerAnsweredAfterTurn,
                "",
                format!("steer {id:?} was sent while a prompt was running but answered after that prompt's response; run the turn off the dispatch loop so that steers are answered mid-turn"),
            ));
        }
        if verdict.unapplied {
            out.push(SequenceFinding::new(
                SequenceRule::SteerNotApplied,
                "/result/outcome",
                format!("steer {id:?} is answered `injected` after its turn ended, and no `session/steer_applied` named it"),
            ));
        }
        out
    }

    /// `session/steer_applied` named steer `id` of `sid`. With
    /// `client_seen` (the client's side of the connection is part of the
    /// stream), an id the client never sent is reported.
    pub fn steer_applied(
        &mut self,
        sid: &str,
        id: &str,
        client_seen: bool,
    ) -> Option<SequenceFinding> {
        let known = self
            .sessions
            .map
            .get_mut(sid)
            .is_some_and(|s| s.steering.applied(id));
        (client_seen && !known).then(|| {
            SequenceFinding::new(
                SequenceRule::SteerUnknownId,
                "/params/steerId",
                format!(
                    "steer {id:?} was applied, but the client never sent a steer with that id in this session"
                ),
            )
        })
    }

    /// A native id (tool call, task or turn id) of session `sid`, found at
    /// pointer `at`: reported when a run id of the session equals it.
    pub fn native_id(&mut self, sid: &str, id: &str, at: &str) -> Option<SequenceFinding> {
        let cap = self.limits.native_ids_per_session;
        let s = self.sessions.get_or_create(sid, self.limits.sessions);
        let h = id_hash(id);
        let clash = s.runs.contains(h) && !s.native_ids.contains(h);
        s.native_ids.insert(h, cap);
        clash.then(|| {
            SequenceFinding::new(
                SequenceRule::SubagentRunIdNative,
                at,
                format!("native id {id:?} equals the run id of a subagent run in this session; run ids never reuse native ids"),
            )
        })
    }

    /// A subagent event's params (`subagents/event`): the run lifecycle
    /// rules, and whether a consumer folds it. Params without a string
    /// `sessionId` and `runId` are left to validation (not accepted, no
    /// finding).
    ///
    /// The event may be the params as JSON or the typed event (an
    /// [`EventFacts`] either way): the verdict is the same.
    pub fn subagent_event<'e>(&mut self, event: impl Into<EventFacts<'e>>) -> RunVerdict {
        let facts = event.into();
        let mut verdict = RunVerdict::default();
        let (Some(sid), Some(run)) = (facts.session_id, facts.run_id) else {
            return verdict;
        };
        if sid.is_empty() || run.is_empty() {
            return verdict;
        }
        let out = &mut verdict.findings;
        let kind = facts.event_type;
        let limits = self.limits;
        let s = self.sessions.get_or_create(sid, limits.sessions);
        let own = [facts.parent_tool_call_id, facts.native_turn_id];
        for id in own.into_iter().flatten() {
            s.native_ids
                .insert(id_hash(id), limits.native_ids_per_session);
        }
        let h = id_hash(run);
        if s.native_ids.contains(h) {
            out.push(SequenceFinding::new(
                SequenceRule::SubagentRunIdNative,
                "/params/runId",
                format!("run id {run:?} equals a native id seen in session {sid:?}; run ids are opaque and never reuse native ids"),
            ));
        }
        let is_snapshot = kind == Some("snapshot");
        let terminal = if is_snapshot {
            TerminalState::of(facts.snapshot_state)
        } else {
            None
        };
        let kind_name = kind.unwrap_or("untyped");
        match s.runs.get_mut(h) {
            None => {
                if !is_snapshot {
                    out.push(SequenceFinding::new(
                        SequenceRule::SubagentFirstNotSnapshot,
                        "/params/type",
                        format!("the first event of run {run:?} has type `{kind_name}`; a run starts with a snapshot"),
                    ));
                }
                verdict.accepted = is_snapshot;
                let run = Run {
                    terminal,
                    has_snapshot: is_snapshot,
                };
                s.runs.insert(h, run, limits.runs_per_session);
            }
            Some(r) if r.terminal.is_some() => {
                if is_snapshot && terminal == r.terminal {
                    verdict.accepted = true;
                } else {
                    out.push(SequenceFinding::new(
                        SequenceRule::SubagentAfterTerminal,
                        "/params/type",
                        format!("`{kind_name}` event for run {run:?} after its terminal snapshot; a new execution needs a new run id"),
                    ));
                }
            }
            Some(r) if !r.has_snapshot && !is_snapshot => {
                out.push(SequenceFinding::new(
                    SequenceRule::SubagentFirstNotSnapshot,
                    "/params/type",
                    format!("`{kind_name}` event for run {run:?}, which has had no snapshot yet; a run starts with a snapshot"),
                ));
            }
            Some(r) => {
                if is_snapshot {
                    r.terminal = terminal;
                    r.has_snapshot = true;
                }
                verdict.accepted = true;
            }
        }
        verdict
    }

    /// A usage update's params (`session/usage_update`): totals never fall
    /// within a scope, `delta` is the change since the scope's previous
    /// update, a scope id never comes back after another began.
    pub fn usage_update(&mut self, params: &Value) -> Vec<SequenceFinding> {
        let mut out = Vec::new();
        let Some(sid) = str_at(params, "sessionId") else {
            return out;
        };
        let scope = params
            .get("_meta")
            .and_then(Value::as_object)
            .and_then(|m| namespace::read_key(m, "usageScopeId"))
            .and_then(|(ns, v)| v.as_str().map(|s| (ns, s)));
        let scope_at = scope
            .map(|(ns, _)| format!("/params/_meta/{}/usageScopeId", ns.key()))
            .unwrap_or_default();
        // Scope ids are unique within an ACP session: scopes are per session.
        let key = match scope {
            Some((_, id)) => id_hash(&format!("{sid}\0{id}")),
            None => unscoped_key(sid),
        };
        let limits = self.limits;
        let session = self.sessions.get_or_create(sid, limits.sessions);
        let started = session.started;
        let u = &mut session.usage;
        let mut reentered = false;
        let mut switched = false;
        if let Some(current) = u.current
            && current != key
        {
            switched = true;
            if let (true, Some((_, id))) = (u.ended.contains(key), scope) {
                reentered = true;
                out.push(SequenceFinding::new(
                    SequenceRule::UsageScopeReentered,
                    &scope_at,
                    format!("usage scope {id:?} reappears after another scope began; a scope id is never reused"),
                ));
            }
            u.ended.insert(current, limits.scopes_per_session);
        }
        u.current = Some(key);
        if !self.scopes.contains(key) {
            // A new scope is a new accounting lifetime, counted from zero,
            // when the session's start or an earlier scope was seen.
            let state = ScopeState {
                baseline_zero: !reentered && (started || switched),
                ..ScopeState::default()
            };
            self.scopes.insert(key, state, limits.usage_scopes);
        }
        let Some(u) = self.scopes.get_mut(key) else {
            return out;
        };
        let Some(model_usage) = params.get("modelUsage").and_then(Value::as_object) else {
            return out;
        };
        for (model, row) in model_usage {
            let (Some(prev), Some(cur)) = (u.models.get(model), totals_of(row)) else {
                continue;
            };
            let at = child("/params/modelUsage", model);
            if let Some(i) = (0..COUNTERS.len()).find(|&i| cur.counters[i] < prev.counters[i]) {
                out.push(SequenceFinding::new(
                    SequenceRule::UsageTotalDecreased,
                    child(&at, COUNTERS[i]),
                    format!(
                        "cumulative `{}` of {model:?} fell from {} to {} within one usage scope",
                        COUNTERS[i], prev.counters[i], cur.counters[i]
                    ),
                ));
            } else if let (Some(p), Some(c)) = (prev.cost, cur.cost)
                && c < p
                && cost_differs(c, p)
            {
                out.push(SequenceFinding::new(
                    SequenceRule::UsageTotalDecreased,
                    child(&at, "costUSD"),
                    format!("cumulative `costUSD` of {model:?} fell from {p} to {c} within one usage scope"),
                ));
            }
        }
        let judge = u.has_previous || u.baseline_zero;
        if judge
            && let Some(delta) = params
                .get("delta")
                .and_then(|d| d.get("modelUsage"))
                .and_then(Value::as_object)
        {
            delta_findings(u, model_usage, delta, &mut out);
        }
        for (model, row) in model_usage {
            if let Some(t) = totals_of(row)
                && (u.models.contains_key(model) || u.models.len() < limits.models_per_scope)
            {
                u.models.insert(model.clone(), t);
            }
        }
        u.has_previous = true;
        out
    }

    /// How much the tracker holds right now (bounded by [`SequenceLimits`]).
    pub fn tracked(&self) -> TrackedState {
        let mut t = TrackedState {
            sessions: self.sessions.map.len(),
            usage_scopes: self.scopes.len(),
            usage_models: self.scopes.values().map(|s| s.models.len()).sum(),
            ..TrackedState::default()
        };
        for s in self.sessions.map.values() {
            t.runs += s.runs.len();
            t.native_ids += s.native_ids.len();
            t.steer_ids += s.steering.len();
            t.ended_scopes += s.usage.ended.len();
        }
        t
    }
}

fn delta_findings(
    u: &ScopeState,
    model_usage: &serde_json::Map<String, Value>,
    delta: &serde_json::Map<String, Value>,
    out: &mut Vec<SequenceFinding>,
) {
    let zero = Totals {
        counters: [0.0; 6],
        cost: Some(0.0),
    };
    for (model, row) in model_usage {
        let Some(cur) = totals_of(row) else { continue };
        let prev = u.models.get(model).copied().unwrap_or(zero);
        let at = child("/params/delta/modelUsage", model);
        let d = delta.get(model).and_then(totals_of);
        let dd = d.unwrap_or_default();
        let mismatch = (0..COUNTERS.len())
            .find(|&i| (dd.counters[i] - (cur.counters[i] - prev.counters[i])).abs() > 1e-6);
        if let Some(i) = mismatch {
            let path = if d.is_some() {
                child(&at, COUNTERS[i])
            } else {
                "/params/delta/modelUsage".to_owned()
            };
            out.push(SequenceFinding::new(
                SequenceRule::UsageDeltaMismatch,
                path,
                format!(
                    "delta `{}` of {model:?} is {}, but `modelUsage` grew by {} since the previous update of this scope",
                    COUNTERS[i],
                    dd.counters[i],
                    cur.counters[i] - prev.counters[i]
                ),
            ));
            continue;
        }
        if let Some(dc) = dd.cost {
            let problem = match (cur.cost, prev.cost) {
                (Some(c), Some(p)) if cost_differs(dc, c - p) => Some(format!(
                    "delta `costUSD` of {model:?} is {dc}, but the cumulative cost grew by {}",
                    c - p
                )),
                (None, _) => Some(format!(
                    "delta `costUSD` of {model:?} is {dc}, but the cumulative cost is unknown"
                )),
                (Some(_), None) => Some(format!(
                    "delta `costUSD` of {model:?} is {dc}, but the previous cumulative cost was unknown; the delta cost must be omitted"
                )),
                _ => None,
            };
            if let Some(message) = problem {
                out.push(SequenceFinding::new(
                    SequenceRule::UsageDeltaMismatch,
                    child(&at, "costUSD"),
                    message,
                ));
            }
        }
    }
    for (model, row) in delta {
        if model_usage.contains_key(model) {
            continue;
        }
        if let Some(d) = totals_of(row)
            && let Some(i) = (0..COUNTERS.len()).find(|&i| d.counters[i] != 0.0)
        {
            out.push(SequenceFinding::new(
                SequenceRule::UsageDeltaMismatch,
                child(&child("/params/delta/modelUsage", model), COUNTERS[i]),
                format!(
                    "delta `{}` of {model:?} is {}, but `modelUsage` does not report that model",
                    COUNTERS[i], d.counters[i]
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_drop_the_least_recently_used() {
        let mut s = Sessions::default();
        s.get_or_create("a", 2);
        s.get_or_create("b", 2);
        s.get_or_create("a", 2);
        s.get_or_create("c", 2);
        assert!(s.map.contains_key("a"));
        assert!(!s.map.contains_key("b"));
        assert_eq!(s.map.len(), 2);
    }

    #[test]
    fn unknown_is_not_terminal_and_a_repeated_terminal_state_is_accepted() {
        let mut t = SequenceTracker::default();
        let snap = |state: &str| {
            serde_json::json!({"version": 1, "sessionId": "s", "runId": "r", "type": "snapshot",
                "snapshot": {"state": state}})
        };
        assert!(t.subagent_event(&snap("running")).accepted);
        assert!(t.subagent_event(&snap("unknown")).accepted);
        assert!(t.subagent_event(&snap("running")).accepted);
        assert!(t.subagent_event(&snap("failed")).accepted);
        let again = t.subagent_event(&snap("failed"));
        assert!(again.accepted && again.findings.is_empty());
        let other = t.subagent_event(&snap("completed"));
        assert!(!other.accepted);
        assert_eq!(other.findings[0].rule, SequenceRule::SubagentAfterTerminal);
        assert!(TerminalState::of(Some("unknown")).is_none());
    }

    #[test]
    fn events_of_a_run_without_snapshot_are_rejected_every_time() {
        let mut t = SequenceTracker::default();
        let progress = serde_json::json!({"version": 1, "sessionId": "s", "runId": "r",
            "type": "progress", "progress": {}});
        for _ in 0..2 {
            let v = t.subagent_event(&progress);
            assert!(!v.accepted);
            assert_eq!(v.findings[0].rule, SequenceRule::SubagentFirstNotSnapshot);
        }
    }
}
