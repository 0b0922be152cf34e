//! Usage accounting: [`ModelUsage`] rows, the `_lody/session/usage_update`
//! payload ([`SessionUsageUpdate`]) and the per-lifetime ledger that builds it
//! ([`SessionUsageAccumulator`]).
//!
//! An adapter keeps **one** accumulator for the accounting lifetime of an
//! ACP session (not one per prompt), feeds it every native usage snapshot
//! keyed by a native operation id (a turn id, an SDK result id, …) and sends
//! whatever it returns. Repeated or lower snapshots of the same operation
//! return `None`: nothing new to account, nothing to send. Each update
//! carries the latest operation (`usage`), the cumulative per-model totals
//! of this lifetime (`modelUsage`), the contribution since the previous
//! emitted update (`delta`) and the accumulator's never-reused
//! `usageScopeId` under `_meta`.
//!
//! A missing `costUSD` means **unknown, not free**: it propagates as absent
//! through every sum.
//!
//! ```
//! use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator};
//! use acp_extension_core::wire::NonNegF64;
//! use acp_extension_core::Namespace;
//! use indexmap::IndexMap;
//! use serde_json::json;
//!
//! // One ledger for the whole accounting lifetime of the ACP session.
//! let mut ledger = SessionUsageAccumulator::new();
//!
//! // The native SDK reported a (possibly incomplete) snapshot for turn "t1"…
//! let mut rows = IndexMap::new();
//! rows.insert("model-a".to_owned(), ModelUsage::new(1200u64, 80u64, 0u64));
//! let first = ledger.update("sess-1", "t1", &rows).expect("new usage");
//!
//! // …then the completed one, now with a cost.
//! rows.insert(
//!     "model-a".to_owned(),
//!     ModelUsage::new(1500u64, 120u64, 300u64).cost_usd(NonNegF64::new(0.012)?),
//! );
//! let update = ledger.update("sess-1", "t1", &rows).expect("grew");
//! assert_eq!(update.model_usage.as_ref().unwrap()["model-a"].input_tokens.get(), 1500);
//! assert_eq!(update.delta.as_ref().unwrap().usage.input_tokens.get(), 300);
//! // The cost went from unknown to known: the delta cost stays unknown.
//! assert_eq!(update.delta.as_ref().unwrap().usage.cost_usd, None);
//! assert_eq!(update.usage_scope_id(), Some(ledger.usage_scope_id()));
//!
//! // A replayed snapshot accounts nothing and sends nothing.
//! assert!(ledger.update("sess-1", "t1", &rows).is_none());
//!
//! // Send it as the extension notification.
//! let notification = json!({
//!     "jsonrpc": "2.0",
//!     "method": Namespace::Lody.method("session/usage_update"),
//!     "params": update,
//! });
//! assert_eq!(notification["method"], "_lody/session/usage_update");
//! assert_eq!(notification["params"]["_meta"]["lody"]["usageScopeId"], ledger.usage_scope_id());
//! # let _ = first;
//! # Ok::<_, acp_extension_core::Rule>(())
//! ```
//!
//! # Exactness and cost
//!
//! The output equals the TypeScript reference's, including the bits of
//! every floating-point cost: sums run in JavaScript object order (keys that
//! are array indices first, ascending, then the others in insertion order),
//! as the reference's objects iterate. The reference re-sums every stored
//! operation on each update (quadratic over a session); this ledger keeps
//! running per-model totals, so an update costs time proportional to the
//! models it touches plus the size of its output, not to the history. See
//! [`SessionUsageAccumulator`] for how the float sums stay bit-identical.

use std::io::{BufRead, Write};

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::namespace::{self, Namespace};
use crate::violation::Rule;
use crate::wire::{Count, Map, NonNegF64};

mod ledger;
pub use ledger::{ModelRows, ScopeIdTooLong, SessionUsageAccumulator};

/// Longest `usageScopeId` the contract allows (in JavaScript string length,
/// that is UTF-16 code units).
pub const MAX_USAGE_SCOPE_ID_LENGTH: usize = 256;

/// The `_meta.<ns>` key that carries the usage scope id.
const USAGE_SCOPE_ID_KEY: &str = "usageScopeId";

/// A token or request counter: the crate's [`Count`] under its usage name.
pub type UsageCount = Count;

crate::wire_struct! {
    /// Usage of one model, in disjoint buckets: input excludes cache reads
    /// and writes, output excludes reasoning; their sum is the total token
    /// count. A missing `costUSD` means unknown, not zero. `costUSD` is in
    /// US dollars (a provider bill or a documented estimate, never an
    /// authoritative invoice).
    pub struct ModelUsage {
        req {
            /// Input tokens, excluding cache reads and writes.
            input_tokens: UsageCount = "inputTokens",
            /// Output tokens, excluding reasoning.
            output_tokens: UsageCount = "outputTokens",
            /// Input tokens read from the prompt cache.
            cache_read_input_tokens: UsageCount = "cacheReadInputTokens",
        }
        opt {
            /// Input tokens written to the prompt cache.
            cache_creation_input_tokens: UsageCount = "cacheCreationInputTokens",
            /// Reasoning output tokens.
            reasoning_output_tokens: UsageCount = "reasoningOutputTokens",
            /// Web search requests.
            web_search_requests: UsageCount = "webSearchRequests",
            /// Cost in US dollars, `>= 0`; absent means unknown.
            cost_usd: NonNegF64 = "costUSD",
            /// The model's context window in tokens (informational; sums drop it).
            context_window: UsageCount = "contextWindow",
        }
    }
}

crate::wire_struct! {
    /// The contribution newly accounted since the previous emitted update
    /// (the first one: since the baseline). It is already included in
    /// `modelUsage`: never add both.
    pub struct UsageDelta {
        req {
            /// Sum of `modelUsage` below; its cost is absent unless every model's is known.
            usage: ModelUsage = "usage",
            /// Per-model contribution, covering every model of the lifetime.
            model_usage: IndexMap<String, ModelUsage> = "modelUsage",
        }
    }
}

crate::wire_struct! {
    /// Params of the `_lody/session/usage_update` (`_ua/…`) notification.
    ///
    /// Account with the cumulative `modelUsage` (persist and reconcile it;
    /// delivery is not exactly-once), not by summing successive `usage`
    /// snapshots or replayed deltas. With a `_meta.<ns>.usageScopeId`,
    /// `modelUsage` is cumulative within that scope only: account each scope
    /// on its own and sum the scopes.
    pub struct SessionUsageUpdate {
        req {
            /// The ACP session.
            session_id: String = "sessionId",
            /// The latest reported operation or turn, not a session total.
            usage: ModelUsage = "usage",
        }
        opt {
            /// Cumulative usage per model for the accounting lifetime (or scope).
            model_usage: IndexMap<String, ModelUsage> = "modelUsage",
            /// The contribution since the previous emitted update.
            delta: UsageDelta = "delta",
            /// Extension metadata; see [`SessionUsageUpdate::usage_scope_id`].
            meta: UsageUpdateMeta = "_meta",
        }
    }
}

impl SessionUsageUpdate {
    /// `_meta.ua.usageScopeId`, else `_meta.lody.usageScopeId`, when it is a
    /// string (`ua` wins when both are present).
    pub fn usage_scope_id(&self) -> Option<&str> {
        let meta = &self.meta.as_ref()?.0;
        namespace::read_key(meta, USAGE_SCOPE_ID_KEY).and_then(|(_, v)| v.as_str())
    }

    /// Writes `_meta.<namespace>.usageScopeId`, keeping every other `_meta` key.
    pub fn set_usage_scope_id(&mut self, namespace: Namespace, id: impl Into<String>) {
        let meta = &mut self.meta.get_or_insert_with(UsageUpdateMeta::default).0;
        namespace::write_key(
            meta,
            namespace,
            USAGE_SCOPE_ID_KEY,
            Value::String(id.into()),
        );
    }
}

/// How many counters a row has: `inputTokens`, `outputTokens`,
/// `cacheReadInputTokens`, `cacheCreationInputTokens`,
/// `reasoningOutputTokens`, `webSearchRequests`, in this order.
const COUNTERS: usize = 6;

/// A merged or summed usage row: all six counters plus an optional cost.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    counters: [u64; COUNTERS],
    cost: Option<f64>,
}

impl Row {
    const ZERO: Row = Row {
        counters: [0; COUNTERS],
        cost: None,
    };

    fn of(u: &ModelUsage) -> Row {
        let opt = |c: Option<UsageCount>| c.map_or(0, UsageCount::get);
        Row {
            counters: [
                u.input_tokens.get(),
                u.output_tokens.get(),
                u.cache_read_input_tokens.get(),
                opt(u.cache_creation_input_tokens),
                opt(u.reasoning_output_tokens),
                opt(u.web_search_requests),
            ],
            cost: u.cost_usd.map(NonNegF64::get),
        }
    }

    /// The merge rule of one snapshot into the stored row: each counter
    /// and the cost only grow; a row without cost keeps the stored cost;
    /// the first cost is at least 0.
    fn merged_with(&self, u: &ModelUsage) -> Row {
        let incoming = Row::of(u);
        let mut out = *self;
        for (o, i) in out.counters.iter_mut().zip(incoming.counters) {
            *o = (*o).max(i);
        }
        if let Some(c) = incoming.cost {
            out.cost = Some(js_max(self.cost.unwrap_or(0.0), c));
        }
        out
    }

    /// The wire form with all six counters; a non-finite cost (only from
    /// sums overflowing `f64`) is written as absent.
    fn to_usage(self) -> ModelUsage {
        let [input, output, cache_read, cache_creation, reasoning, web] = self.counters;
        let mut u = ModelUsage::new(input, output, cache_read)
            .cache_creation_input_tokens(cache_creation)
            .reasoning_output_tokens(reasoning)
            .web_search_requests(web);
        u.cost_usd = self.cost.and_then(|c| NonNegF64::new(c).ok());
        u
    }
}

/// The consumer's rule for a cumulative row that arrives again: each
/// counter keeps the higher of `stored` and `incoming` (a total that fell
/// is not believed), the cost keeps the higher of two known costs and is
/// otherwise what `incoming` says (a later row without a cost makes the
/// total's cost unknown again, as the ledger that sent it does), and
/// `contextWindow` is the incoming one, else the stored one. A row where
/// nothing fell comes back as sent. Used by the
/// consumer state ([`crate::state`]).
///
/// ```
/// use acp_extension_core::usage::{ModelUsage, keep_max};
/// use acp_extension_core::wire::NonNegF64;
///
/// let stored = ModelUsage::new(100u64, 10u64, 0u64).cost_usd(NonNegF64::new(0.5)?);
/// let fell = ModelUsage::new(90u64, 12u64, 0u64).cost_usd(NonNegF64::new(0.4)?);
/// let kept = keep_max(&stored, &fell);
/// assert_eq!((kept.input_tokens.get(), kept.output_tokens.get()), (100, 12));
/// assert_eq!(kept.cost_usd.map(NonNegF64::get), Some(0.5));
/// # Ok::<_, acp_extension_core::Rule>(())
/// ```
pub fn keep_max(stored: &ModelUsage, incoming: &ModelUsage) -> ModelUsage {
    let (old, new) = (Row::of(stored), Row::of(incoming));
    let fell = old.counters.iter().zip(new.counters).any(|(o, n)| n < *o)
        || matches!((old.cost, new.cost), (Some(o), Some(n)) if n < o);
    if !fell {
        let mut out = incoming.clone();
        out.context_window = incoming.context_window.or(stored.context_window);
        return out;
    }
    let mut row = new;
    for (o, n) in row.counters.iter_mut().zip(old.counters) {
        *o = (*o).max(n);
    }
    row.cost = match (old.cost, new.cost) {
        (Some(o), Some(n)) => Some(js_max(o, n)),
        (_, n) => n,
    };
    let mut out = row.to_usage();
    out.context_window = incoming.context_window.or(stored.context_window);
    out
}

/// `Math.max(a, b)` for non-NaN numbers, with `+0` winning over `-0` when
/// `a` is `+0` (the only way the ledger calls it).
fn js_max(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

/// The key's position class in JavaScript property order: `Some(n)` for an
/// array index (`"0"`, `"17"`, up to 2^32 − 2), which iterates before every
/// other key in ascending numeric order.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    match b {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        _ if b.len() <= 10 && b.iter().all(u8::is_ascii_digit) => key
            .parse::<u64>()
            .ok()
            .filter(|&n| n <= 4_294_967_294)
            .map(|n| n as u32),
        _ => None,
    }
}

/// A position in JavaScript property order: array indices first by value,
/// then other keys by an insertion rank (compared lexicographically).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum JsOrder {
    Index(u32),
    Named(u64, u64),
}

/// Sums counters without overflow; the result saturates at `u64::MAX`.
#[derive(Debug, Clone, Copy, Default)]
struct WideCounters([u128; COUNTERS]);

impl WideCounters {
    fn add(&mut self, c: &[u64; COUNTERS]) {
        for (s, v) in self.0.iter_mut().zip(c) {
            *s += u128::from(*v);
        }
    }

    fn replace(&mut self, old: &[u64; COUNTERS], new: &[u64; COUNTERS]) {
        for ((s, o), n) in self.0.iter_mut().zip(old).zip(new) {
            *s = *s - u128::from(*o) + u128::from(*n);
        }
    }

    fn saturated(&self) -> [u64; COUNTERS] {
        self.0.map(|s| u64::try_from(s).unwrap_or(u64::MAX))
    }
}

/// Sums rows given in iteration order: counters always (all six), cost
/// only when there is at least one row and every row has one, folded left
/// to right from 0.
fn sum_rows<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Row {
    let mut counters = WideCounters::default();
    let mut cost = Some(0.0);
    let mut any = false;
    for row in rows {
        any = true;
        counters.add(&row.counters);
        cost = match (cost, row.cost) {
            (Some(sum), Some(c)) => Some(sum + c),
            _ => None,
        };
    }
    Row {
        counters: counters.saturated(),
        cost: if any { cost } else { None },
    }
}

/// Sums per-model rows into one, as the contract's `sumModelUsage`.
///
/// - With at least one row, all six counters are present (a counter no row
///   has is 0); with no rows only the three required ones are (all 0).
/// - `costUSD` is present only when there is at least one row and every row
///   has a cost (unknown is not free); it is then the left-to-right sum in
///   JavaScript object order (array-index keys such as `"2"` first in
///   ascending order, then the others in map order), which is what makes
///   the float bits equal the reference's.
/// - `contextWindow` and unknown keys are never copied.
/// - Counters that would overflow `u64` saturate at `u64::MAX`.
///
/// ```
/// use acp_extension_core::usage::{sum_model_usage, ModelUsage};
/// use acp_extension_core::wire::NonNegF64;
/// use indexmap::IndexMap;
///
/// let mut rows = IndexMap::new();
/// rows.insert("a".to_owned(), ModelUsage::new(10u64, 1u64, 0u64).cost_usd(NonNegF64::new(0.1)?));
/// rows.insert("b".to_owned(), ModelUsage::new(20u64, 2u64, 0u64));
/// let sum = sum_model_usage(&rows);
/// assert_eq!(sum.input_tokens.get(), 30);
/// assert_eq!(sum.web_search_requests.map(|n| n.get()), Some(0));
/// assert_eq!(sum.cost_usd, None); // "b" has no cost: unknown, not free
/// # Ok::<_, acp_extension_core::Rule>(())
/// ```
pub fn sum_model_usage(rows: &IndexMap<String, ModelUsage>) -> ModelUsage {
    if rows.is_empty() {
        return ModelUsage::new(0u64, 0u64, 0u64);
    }
    let mut order: Vec<(JsOrder, Row)> = rows
        .iter()
        .enumerate()
        .map(|(i, (k, u))| {
            let key = array_index(k).map_or(JsOrder::Named(i as u64, 0), JsOrder::Index);
            (key, Row::of(u))
        })
        .collect();
    order.sort_by_key(|(k, _)| *k);
    sum_rows(order.iter().map(|(_, r)| r)).to_usage()
}

/// A `usageScopeId`: a string of at most [`MAX_USAGE_SCOPE_ID_LENGTH`]
/// UTF-16 code units (JavaScript's `length`), the contract's
/// `SessionUsageScopeMeta` rule. A longer id fails [`Rule::MaxLength`];
/// consumers treat its update as unscoped.
///
/// ```
/// use acp_extension_core::usage::UsageScopeId;
///
/// assert!(UsageScopeId::new("turn-1").is_ok());
/// assert!(UsageScopeId::new("x".repeat(257)).is_err());
/// assert!(serde_json::from_str::<UsageScopeId>(&format!("{:?}", "é".repeat(256))).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct UsageScopeId(String);

impl UsageScopeId {
    /// Wraps `id`, or returns [`Rule::MaxLength`] when it is too long.
    pub fn new(id: impl Into<String>) -> Result<Self, Rule> {
        let id = id.into();
        match scope_id_fits(&id) {
            Ok(()) => Ok(Self(id)),
            Err(_) => Err(Rule::MaxLength(MAX_USAGE_SCOPE_ID_LENGTH)),
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for UsageScopeId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for UsageScopeId {
    type Error = Rule;
    fn try_from(s: &str) -> Result<Self, Rule> {
        Self::new(s)
    }
}

impl TryFrom<String> for UsageScopeId {
    type Error = Rule;
    fn try_from(s: String) -> Result<Self, Rule> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for UsageScopeId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

impl crate::violation::Check for UsageScopeId {
    const EXPECTED: &'static str = "a string of at most 256 characters";
    fn check(v: &Value, at: &str, out: &mut Vec<crate::violation::Violation>) {
        match v.as_str() {
            Some(s) => {
                if let Err(rule) = Self::new(s) {
                    out.push(crate::violation::Violation::new(at, rule));
                }
            }
            None => out.push(crate::violation::Violation::new(
                at,
                Rule::type_of("a string", v),
            )),
        }
    }
}

// JSON Schema counts code points; the contract counts UTF-16 units, which
// the validators apply exactly.
crate::wire::inline_schema!(
    UsageScopeId,
    { "type": "string", "maxLength": MAX_USAGE_SCOPE_ID_LENGTH }
);

/// The contract's one length rule for scope ids: at most
/// [`MAX_USAGE_SCOPE_ID_LENGTH`] UTF-16 code units; `Err` holds the length.
fn scope_id_fits(id: &str) -> Result<(), usize> {
    let length = id.encode_utf16().count();
    if length > MAX_USAGE_SCOPE_ID_LENGTH {
        Err(length)
    } else {
        Ok(())
    }
}

/// The `_meta` of a usage update: any object, whose `_meta.<ns>.usageScopeId`
/// (when present) is a [`UsageScopeId`]. Every other key is kept as sent.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(transparent)]
pub struct UsageUpdateMeta(pub Map);

impl UsageUpdateMeta {
    fn violations(meta: &Map, at: &str, out: &mut Vec<crate::violation::Violation>) {
        use crate::violation::{Violation, child};
        for ns in Namespace::ALL {
            let here = child(at, ns.key());
            match meta.get(ns.key()) {
                None => {}
                Some(Value::Object(section)) => {
                    if let Some(id) = section.get(USAGE_SCOPE_ID_KEY) {
                        let at = child(&here, USAGE_SCOPE_ID_KEY);
                        <UsageScopeId as crate::violation::Check>::check(id, &at, out);
                    }
                }
                Some(Value::Null) => out.push(Violation::new(
                    here,
                    Rule::NotNull {
                        expected: "an object",
                    },
                )),
                Some(other) => out.push(Violation::new(here, Rule::type_of("an object", other))),
            }
        }
    }
}

impl From<Map> for UsageUpdateMeta {
    fn from(map: Map) -> Self {
        Self(map)
    }
}

impl<'de> Deserialize<'de> for UsageUpdateMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        let mut out = Vec::new();
        Self::violations(&map, "", &mut out);
        match out.first() {
            None => Ok(Self(map)),
            Some(v) => Err(serde::de::Error::custom(format_args!(
                "{}: {}",
                v.pointer,
                v.message()
            ))),
        }
    }
}

impl crate::violation::Check for UsageUpdateMeta {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<crate::violation::Violation>) {
        match v.as_object() {
            Some(map) => Self::violations(map, at, out),
            None => out.push(crate::violation::Violation::new(
                at,
                Rule::type_of("an object", v),
            )),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for UsageUpdateMeta {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UsageUpdateMeta".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let id = g.subschema_for::<UsageScopeId>();
        let section = serde_json::json!({"type": "object", "properties": {"usageScopeId": id}});
        schemars::json_schema!({
            "type": "object",
            "properties": {"ua": section, "lody": section},
        })
    }
}

/// Counts of one [`fold_lines`] run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FoldSummary {
    /// Input lines read (each produced one output line).
    pub lines: u64,
    /// Lines that produced an update.
    pub emitted: u64,
    /// Lines that were not a valid step (an error line was written).
    pub errors: u64,
}

/// One input line of [`fold_lines`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FoldStep {
    session_id: String,
    operation_id: String,
    rows: IndexMap<String, ModelUsage>,
}

/// Feeds JSON Lines snapshots through `acc`.
///
/// Each input line is `{"sessionId", "operationId", "rows": {model:
/// ModelUsage}}` (other keys ignored). For each line exactly one line is
/// written: the update as JSON, `null` when the snapshot changed nothing,
/// or `{"error":{"line":N,"message":…}}` (N counts from 1; the message
/// starts with the JSON pointer of the offending field and states the
/// rule) when the line is not a valid step, after which folding goes on.
/// Blank lines and invalid UTF-8 are errors too, so output line N always
/// answers input line N; a final newline does not make an extra line.
/// Memory stays constant apart from the ledger; only I/O errors stop the
/// fold. The output is flushed once at the end (pass a
/// [`std::io::LineWriter`] to see each line as it is written).
///
/// ```
/// use acp_extension_core::usage::{fold_lines, SessionUsageAccumulator};
///
/// let input = r#"{"sessionId":"s","operationId":"t1","rows":{"m":{"inputTokens":5,"outputTokens":1,"cacheReadInputTokens":0}}}
/// {"sessionId":"s","operationId":"t1","rows":{"m":{"inputTokens":5,"outputTokens":1,"cacheReadInputTokens":0}}}
/// {"sessionId":"s","operationId":"t2","rows":{"m":{"inputTokens":-1,"outputTokens":1,"cacheReadInputTokens":0}}}
/// "#;
/// let mut acc = SessionUsageAccumulator::with_scope_id("scope-1").unwrap();
/// let mut out = Vec::new();
/// let summary = fold_lines(input.as_bytes(), &mut out, &mut acc)?;
/// assert_eq!((summary.lines, summary.emitted, summary.errors), (3, 1, 1));
/// let out = String::from_utf8(out).unwrap();
/// let lines: Vec<&str> = out.lines().collect();
/// assert!(lines[0].starts_with(r#"{"sessionId":"s","usage":{"inputTokens":5"#));
/// assert_eq!(lines[1], "null");
/// assert!(lines[2].contains("/rows/m/inputTokens"));
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn fold_lines<R: BufRead, W: Write>(
    mut input: R,
    mut output: W,
    acc: &mut SessionUsageAccumulator,
) -> std::io::Result<FoldSummary> {
    let mut summary = FoldSummary::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        summary.lines += 1;
        let mut line = buf.as_slice();
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        match parse_step(line) {
            Ok(step) => match acc.update(&step.session_id, &step.operation_id, &step.rows) {
                Some(update) => {
                    summary.emitted += 1;
                    serde_json::to_writer(&mut output, &update)?;
                }
                None => output.write_all(b"null")?,
            },
            Err(message) => {
                summary.errors += 1;
                let error = serde_json::json!({
                    "error": { "line": summary.lines, "message": message }
                });
                serde_json::to_writer(&mut output, &error)?;
            }
        }
        output.write_all(b"\n")?;
    }
    output.flush()?;
    Ok(summary)
}

/// Every violation of one fold line that is JSON: `sessionId` and
/// `operationId` strings, `rows` a map of [`ModelUsage`], each checked by
/// the contract's rules, all at once.
fn step_violations(v: &Value) -> Vec<crate::violation::Violation> {
    use crate::violation::{Rule, Violation};
    use crate::wire::check_req;
    let mut out = Vec::new();
    let Some(o) = v.as_object() else {
        out.push(Violation::new(
            "",
            Rule::type_of("a JSON object with sessionId, operationId and rows", v),
        ));
        return out;
    };
    check_req::<String>(o, "sessionId", "", &mut out);
    check_req::<String>(o, "operationId", "", &mut out);
    check_req::<IndexMap<String, ModelUsage>>(o, "rows", "", &mut out);
    out
}

/// Parses one fold line, or says what is wrong with it and where: every
/// field that breaks its rule, each with its JSON pointer, one per `; `.
fn parse_step(line: &[u8]) -> Result<FoldStep, String> {
    let parsed = parse_step_first(line);
    if parsed.is_ok() {
        return parsed;
    }
    if let Ok(v) = serde_json::from_slice::<Value>(line) {
        let violations = step_violations(&v);
        if !violations.is_empty() {
            let all: Vec<String> = violations
                .iter()
                .map(|x| {
                    let at = if x.pointer.is_empty() {
                        "(root)"
                    } else {
                        x.pointer.as_str()
                    };
                    format!("{at}: {}", x.message())
                })
                .collect();
            return Err(all.join("; "));
        }
    }
    parsed
}

/// The typed parse, naming the first field it stopped at (and the JSON
/// syntax error of a line that is no JSON).
fn parse_step_first(line: &[u8]) -> Result<FoldStep, String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(
            "blank line: expected a JSON object with sessionId, operationId and rows".into(),
        );
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let step: FoldStep = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let mut pointer = String::new();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => {
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                }
                serde_path_to_error::Segment::Map { key } => {
                    pointer = crate::violation::child(&pointer, key);
                }
                serde_path_to_error::Segment::Enum { variant } => {
                    pointer = crate::violation::child(&pointer, variant);
                }
                // A key that could not be read has no name to point at.
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let at = if pointer.is_empty() {
            "(root)"
        } else {
            pointer.as_str()
        };
        format!("{at}: {}", e.into_inner())
    })?;
    de.end().map_err(|e| format!("(root): {e}"))?;
    Ok(step)
}
