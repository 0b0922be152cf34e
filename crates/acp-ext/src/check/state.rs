//! Bounded per-connection and per-session state of the checker.
//!
//! Ids are remembered as 64-bit hashes in insertion-ordered sets and maps
//! with a fixed capacity: the oldest entry goes when a new one would exceed
//! it. So memory stays bounded however long the transcript, at the price of
//! forgetting very old ids (documented in [`Limits`]).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};

/// Capacities of the checker's state. When one is reached the oldest entry
/// is forgotten, so a rule that needs it may stay silent (never wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Sessions tracked at once; the least recently used one is dropped.
    pub sessions: usize,
    /// Subagent runs remembered per session.
    pub runs_per_session: usize,
    /// Native ids (tool call, task, turn ids) remembered per session.
    pub native_ids_per_session: usize,
    /// Steer ids remembered per session.
    pub steer_ids_per_session: usize,
    /// Finished usage scopes remembered per session.
    pub scopes_per_session: usize,
    /// Usage scopes whose totals are tracked, over all sessions.
    pub usage_scopes: usize,
    /// Models tracked per usage scope.
    pub models_per_scope: usize,
    /// Requests awaiting a response.
    pub pending_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            sessions: 64,
            runs_per_session: 1024,
            native_ids_per_session: 4096,
            steer_ids_per_session: 256,
            scopes_per_session: 1024,
            usage_scopes: 256,
            models_per_scope: 256,
            pending_requests: 1024,
        }
    }
}

/// A stable 64-bit hash of an id (SipHash with fixed keys).
pub(crate) fn id_hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// An insertion-ordered set of hashes with a capacity.
#[derive(Debug, Default)]
pub(crate) struct BoundedSet {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl BoundedSet {
    pub(crate) fn contains(&self, h: u64) -> bool {
        self.set.contains(&h)
    }

    pub(crate) fn insert(&mut self, h: u64, cap: usize) {
        if cap == 0 || !self.set.insert(h) {
            return;
        }
        self.order.push_back(h);
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }
}

/// An insertion-ordered map from hashes with a capacity.
#[derive(Debug)]
pub(crate) struct BoundedMap<V> {
    map: HashMap<u64, V>,
    order: VecDeque<u64>,
}

impl<V> Default for BoundedMap<V> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<V> BoundedMap<V> {
    pub(crate) fn get_mut(&mut self, h: u64) -> Option<&mut V> {
        self.map.get_mut(&h)
    }

    pub(crate) fn contains(&self, h: u64) -> bool {
        self.map.contains_key(&h)
    }

    pub(crate) fn insert(&mut self, h: u64, v: V, cap: usize) {
        if cap == 0 {
            return;
        }
        if self.map.insert(h, v).is_none() {
            self.order.push_back(h);
        }
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    pub(crate) fn remove(&mut self, h: u64) -> Option<V> {
        let v = self.map.remove(&h)?;
        if let Some(i) = self.order.iter().position(|&x| x == h) {
            self.order.remove(i);
        }
        Some(v)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values()
    }
}

/// The six usage counters, in contract order.
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
#[derive(Debug, Default)]
pub(crate) struct UsageState {
    /// The current scope's key (unscoped updates have a per-session key).
    pub(crate) current: Option<u64>,
    /// Scopes that ended in this session.
    pub(crate) ended: BoundedSet,
}

/// The totals of one usage scope as last reported.
#[derive(Debug, Default)]
pub(crate) struct ScopeState {
    /// Per-model cumulative totals.
    pub(crate) models: HashMap<String, Totals>,
    /// Whether the scope's first update is measured from zero.
    pub(crate) baseline_zero: bool,
    /// Whether an update of the scope was seen.
    pub(crate) has_previous: bool,
}

/// One subagent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) terminal: bool,
}

/// One steer sent on `session/steer`.
#[derive(Debug, Clone)]
pub(crate) struct SteerTrack {
    id: String,
    /// The turn it was sent in, when a prompt was running.
    turn: Option<u64>,
    injected: bool,
    applied: bool,
}

/// What was answered to one steer, judged against its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SteerVerdict {
    /// Sent during a turn, answered after it ended.
    pub(crate) late: bool,
    /// Answered `injected` after its turn ended, never applied.
    pub(crate) unapplied: bool,
}

/// Prompt turns and steers of one session, for the steering timing rules.
#[derive(Debug, Default)]
pub(crate) struct SteeringState {
    /// Prompts sent so far; the current turn's number.
    turn: u64,
    /// Whether the current turn's prompt awaits its response.
    open: bool,
    /// Recent steers, oldest first (at most the steer-id capacity).
    steers: VecDeque<SteerTrack>,
}

impl SteeringState {
    pub(crate) fn prompt_sent(&mut self) {
        self.turn += 1;
        self.open = true;
    }

    pub(crate) fn steer_sent(&mut self, id: &str, cap: usize) {
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

    pub(crate) fn applied(&mut self, id: &str) {
        if let Some(s) = self.steers.iter_mut().rev().find(|s| s.id == id) {
            s.applied = true;
        }
    }

    /// The steer's answer arrived.
    pub(crate) fn answered(&mut self, id: &str, injected: bool) -> SteerVerdict {
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

    /// The current turn's prompt was answered: its injected steers that
    /// were never applied, which are then forgotten with the turn's others.
    pub(crate) fn turn_ended(&mut self) -> Vec<String> {
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

    pub(crate) fn len(&self) -> usize {
        self.steers.len()
    }
}

/// Everything remembered about one session.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// Whether the session's start was seen (`session/new` response,
    /// `session/load|resume|fork`): usage baselines are then known.
    pub(crate) started: bool,
    pub(crate) runs: BoundedMap<Run>,
    pub(crate) native_ids: BoundedSet,
    pub(crate) steer_ids: BoundedSet,
    pub(crate) steering: SteeringState,
    pub(crate) usage: UsageState,
    pub(crate) last_used: u64,
}

impl SessionState {
    /// Forgets everything about the session except its recency, and marks
    /// its start as seen (`session/new`, `load`, `resume`, `fork`).
    pub(crate) fn restart(&mut self) {
        let last_used = self.last_used;
        *self = SessionState {
            started: true,
            last_used,
            ..SessionState::default()
        };
    }
}

/// Counts of what the checker currently remembers, to show that its state
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
    /// Requests awaiting a response.
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

/// The sessions of one connection, least recently used dropped first.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: HashMap<String, SessionState>,
    tick: u64,
}

impl Sessions {
    pub(crate) fn get_or_create(&mut self, id: &str, cap: usize) -> &mut SessionState {
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
            self.map.insert(id.to_owned(), SessionState::default());
        }
        let s = self.map.get_mut(id).expect("inserted above");
        s.last_used = tick;
        s
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut SessionState> {
        self.map.get_mut(id)
    }

    pub(crate) fn remove(&mut self, id: &str) {
        self.map.remove(id);
    }

    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    pub(crate) fn tracked(&self) -> TrackedState {
        let mut t = TrackedState {
            sessions: self.map.len(),
            ..TrackedState::default()
        };
        for s in self.map.values() {
            t.runs += s.runs.len();
            t.native_ids += s.native_ids.len();
            t.steer_ids += s.steer_ids.len() + s.steering.len();
            t.ended_scopes += s.usage.ended.len();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_set_forgets_the_oldest() {
        let mut s = BoundedSet::default();
        for i in 0..10 {
            s.insert(i, 3);
        }
        assert_eq!(s.len(), 3);
        assert!(s.contains(9) && s.contains(7) && !s.contains(6));
    }

    #[test]
    fn bounded_map_forgets_the_oldest_and_removes() {
        let mut m = BoundedMap::default();
        for i in 0..5 {
            m.insert(i, i, 2);
        }
        assert_eq!(m.len(), 2);
        assert_eq!(m.remove(4), Some(4));
        assert!(m.contains(3) && !m.contains(2));
    }

    #[test]
    fn sessions_drop_the_least_recently_used() {
        let mut s = Sessions::default();
        s.get_or_create("a", 2);
        s.get_or_create("b", 2);
        s.get_or_create("a", 2);
        s.get_or_create("c", 2);
        assert!(s.get_mut("a").is_some());
        assert!(s.get_mut("b").is_none());
        assert_eq!(s.tracked().sessions, 2);
    }
}
