//! The per-lifetime ledger: [`SessionUsageAccumulator`] and the rows it
//! takes.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexMap;

use super::*;

/// The error of [`SessionUsageAccumulator::with_scope_id`] for an id longer
/// than [`MAX_USAGE_SCOPE_ID_LENGTH`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "usageScopeId is {length} characters long (UTF-16 code units); the contract allows at most {max}",
    max = MAX_USAGE_SCOPE_ID_LENGTH
)]
#[non_exhaustive]
pub struct ScopeIdTooLong {
    /// The id's length in UTF-16 code units (JavaScript `length`).
    pub length: usize,
}

/// One operation of the ledger: its models' merged rows in the order they
/// were first reported for it.
#[derive(Debug, Clone)]
struct Operation {
    /// Where this operation sorts among a model's contributions.
    key: JsOrder,
    /// Merged rows; a row's index never changes.
    rows: Vec<OpRow>,
}

#[derive(Debug, Clone)]
struct OpRow {
    model: usize,
    row: Row,
}

/// One operation's part of a model's total.
#[derive(Debug, Clone)]
struct Contribution {
    /// The operation's [`Operation::key`]; contributions are sorted by it.
    key: JsOrder,
    /// The model's row index inside that operation.
    slot: usize,
    /// This operation's cost for the model.
    cost: Option<f64>,
    /// Left-to-right sum of the costs up to and including this one, an
    /// unknown cost counting as 0 (only read when none is unknown).
    prefix: f64,
}

/// Everything the ledger knows about one model.
#[derive(Debug, Clone)]
struct ModelLedger {
    name: String,
    /// Where the model sorts in `modelUsage`.
    order: JsOrder,
    /// Sorted by [`Contribution::key`]: the reference's summation order.
    contributions: Vec<Contribution>,
    /// How many contributions have no cost.
    unknown_costs: usize,
    /// Exact counter sums over all contributions.
    sums: WideCounters,
    /// The total of the last emitted update (the reference's `totals`).
    emitted: Option<Row>,
}

impl ModelLedger {
    /// Recomputes cost prefixes from contribution `from` to the end.
    fn refold(&mut self, from: usize) {
        let mut sum = if from == 0 {
            0.0
        } else {
            self.contributions[from - 1].prefix
        };
        for c in &mut self.contributions[from..] {
            sum += c.cost.unwrap_or(0.0);
            c.prefix = sum;
        }
    }

    fn total(&self) -> Row {
        Row {
            counters: self.sums.saturated(),
            cost: if self.unknown_costs == 0 {
                self.contributions.last().map(|c| c.prefix)
            } else {
                None
            },
        }
    }
}

/// The process-local ledger behind `_lody/session/usage_update`: merges
/// repeated snapshots of each operation monotonically and reports
/// per-model cumulative totals and deltas, exactly like the contract's
/// reference `SessionUsageAccumulator`.
///
/// Keep one instance for the accounting lifetime of an ACP session: replay
/// must not contribute and compaction must not reset it. Each instance has
/// its own never-reused `usageScopeId` (a fresh UUID v4 by default), so a
/// restarted process starts a new scope instead of re-entering the old one
/// from zero. Operations are keyed by operation id alone, across session
/// ids. The ledger stores ids and counters only, never transcripts.
///
/// # Cost and time
///
/// The reference re-sums every stored operation on every update. This
/// ledger keeps, per model, the exact counter sums (as `u128`), the number
/// of operations without a cost, and its contributions sorted in the
/// reference's summation order (operation ids that are array indices
/// first, ascending, then the others in first-seen order), each with the
/// left-to-right prefix sum of the costs up to it. Changing one
/// contribution re-folds only the prefixes from it to the end, so the
/// total cost is the same left-to-right sum the reference computes, bit
/// for bit (never "subtract the old cost, add the new one", which rounds
/// differently). Updates normally concern a model's latest operation, so
/// that re-fold is one addition; only a correction to an older operation
/// walks the model's later operations. An update therefore costs
/// O(models in the update + models of the operation), with one binary
/// search per touched model, plus O(all models) to write the output, which
/// lists every model seen; it does not grow with the history (the bench
/// `usage` measures the same time per update at 1,000 and 100,000
/// operations).
///
/// Deviations from the reference, for inputs it only accepts by accident:
/// counters are `u64` (sums saturate at `u64::MAX` instead of losing
/// precision), and a cost sum that overflows `f64` is written as absent
/// rather than `null`.
///
/// # Example
///
/// ```
/// use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator};
/// use indexmap::IndexMap;
///
/// let mut acc = SessionUsageAccumulator::new();
/// let rows = |input: u64| IndexMap::from([("m".to_owned(), ModelUsage::new(input, 5u64, 0u64))]);
/// // A native cumulative snapshot of turn 1, then a larger one of the same turn.
/// let first = acc.update("s1", "turn-1", &rows(100)).unwrap();
/// let second = acc.update("s1", "turn-1", &rows(150)).unwrap();
/// assert_eq!(second.model_usage.as_ref().unwrap()["m"].input_tokens.get(), 150);
/// assert_eq!(second.delta.as_ref().unwrap().usage.input_tokens.get(), 50);
/// // The same snapshot again adds nothing: no update.
/// assert!(acc.update("s1", "turn-1", &rows(150)).is_none());
/// assert_eq!(first.usage_scope_id(), second.usage_scope_id());
/// ```
#[derive(Debug, Clone)]
pub struct SessionUsageAccumulator {
    scope_id: String,
    namespace: Namespace,
    /// Operations in insertion order.
    ops: Vec<Operation>,
    op_index: HashMap<String, usize>,
    models: Vec<ModelLedger>,
    model_index: HashMap<String, usize>,
    /// Models in output order.
    model_order: BTreeMap<JsOrder, usize>,
}

impl Default for SessionUsageAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-model usage rows keyed by model id: any map (`IndexMap`,
/// `HashMap`, `BTreeMap`). Costs sum in the map's iteration order, so an
/// insertion-ordered map (`IndexMap`, as JSON parses with `preserve_order`)
/// reproduces the reference's floating-point sums bit for bit.
pub trait ModelRows {
    /// Each model id with its row, in the map's order.
    fn model_rows(&self) -> impl Iterator<Item = (&str, &ModelUsage)>;
}

impl<S: std::hash::BuildHasher> ModelRows for IndexMap<String, ModelUsage, S> {
    fn model_rows(&self) -> impl Iterator<Item = (&str, &ModelUsage)> {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl<S: std::hash::BuildHasher> ModelRows for HashMap<String, ModelUsage, S> {
    fn model_rows(&self) -> impl Iterator<Item = (&str, &ModelUsage)> {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl ModelRows for BTreeMap<String, ModelUsage> {
    fn model_rows(&self) -> impl Iterator<Item = (&str, &ModelUsage)> {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// One model's change planned by [`SessionUsageAccumulator::update`].
struct Change<'a> {
    name: &'a str,
    /// (model, row index in the operation) when the operation had the model.
    existing: Option<(usize, usize)>,
    merged: Row,
}

impl SessionUsageAccumulator {
    /// A ledger with a fresh random (UUID v4) scope id, writing `_meta.lody`.
    pub fn new() -> Self {
        Self::unchecked(uuid::Uuid::new_v4().to_string())
    }

    /// A ledger with the given scope id (for example a native turn or SDK
    /// result id). The id must be unique in the ACP session and never reused
    /// by a later lifetime; ids longer than [`MAX_USAGE_SCOPE_ID_LENGTH`]
    /// UTF-16 code units (the JavaScript `length`, so an accepted id also
    /// passes a JavaScript consumer's check) are rejected.
    pub fn with_scope_id(id: impl Into<String>) -> Result<Self, ScopeIdTooLong> {
        let id = id.into();
        scope_id_fits(&id).map_err(|length| ScopeIdTooLong { length })?;
        Ok(Self::unchecked(id))
    }

    fn unchecked(scope_id: String) -> Self {
        Self {
            scope_id,
            namespace: Namespace::Lody,
            ops: Vec::new(),
            op_index: HashMap::new(),
            models: Vec::new(),
            model_index: HashMap::new(),
            model_order: BTreeMap::new(),
        }
    }

    /// Writes the scope id under `_meta.<namespace>` (default
    /// [`Namespace::Lody`], what clients read today).
    #[must_use]
    pub fn with_namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
        self
    }

    /// This ledger's scope id.
    pub fn usage_scope_id(&self) -> &str {
        &self.scope_id
    }

    /// Merges a snapshot of operation `operation_id` and returns the update
    /// to send, or `None` when nothing changed (a repeated or lower snapshot,
    /// or empty `rows` for a new operation); state is then untouched.
    ///
    /// Per model of `rows`, each counter and the cost of the stored row
    /// only grow (a row without cost keeps the stored one); `contextWindow`
    /// and unknown keys are dropped. Models of the operation absent from
    /// `rows` keep their rows. A [`ModelUsage`] holds no negative counter or
    /// cost (where the reference clamps them to 0, its wire type refuses
    /// them).
    ///
    /// The update holds: `usage`, the sum over every model of this operation
    /// (cost only if all are known); `modelUsage`, per-model totals over all
    /// operations (cost only if known for every operation of the model);
    /// `delta`, per-model totals minus those of the previous emitted update,
    /// for every model seen (zero rows for unchanged ones), with a cost only
    /// when the total is known and the previous one was known or absent; and
    /// `_meta.<ns>.usageScopeId`. All of it is an owned copy.
    pub fn update(
        &mut self,
        session_id: &str,
        operation_id: &str,
        rows: &impl ModelRows,
    ) -> Option<SessionUsageUpdate> {
        let op = self.op_index.get(operation_id).copied();

        // 1–3: merge without touching state; stop when nothing changed.
        let mut changes = Vec::new();
        for (name, usage) in rows.model_rows() {
            let existing = op.and_then(|o| {
                let m = *self.model_index.get(name)?;
                let ledger = &self.models[m];
                let key = self.ops[o].key;
                let pos = ledger
                    .contributions
                    .binary_search_by_key(&key, |c| c.key)
                    .ok()?;
                Some((m, ledger.contributions[pos].slot))
            });
            let start = match (op, existing) {
                (Some(o), Some((_, slot))) => self.ops[o].rows[slot].row,
                _ => Row::ZERO,
            };
            let merged = start.merged_with(usage);
            if existing.is_none() || merged != start {
                changes.push(Change {
                    name,
                    existing,
                    merged,
                });
            }
        }
        if changes.is_empty() {
            return None;
        }

        // 4: store the operation (a new id goes last).
        let o = match op {
            Some(o) => o,
            None => {
                let o = self.ops.len();
                let key =
                    array_index(operation_id).map_or(JsOrder::Named(o as u64, 0), JsOrder::Index);
                self.ops.push(Operation {
                    key,
                    rows: Vec::new(),
                });
                self.op_index.insert(operation_id.to_owned(), o);
                o
            }
        };

        // 5–6: update the touched models' running totals.
        for change in changes {
            match change.existing {
                Some((m, slot)) => self.replace_row(o, m, slot, change.merged),
                None => self.add_row(o, change.name, change.merged),
            }
        }

        // 6–7: totals and deltas for every model, in output order.
        let mut model_usage = IndexMap::with_capacity(self.models.len());
        let mut delta_rows = Vec::with_capacity(self.models.len());
        for &m in self.model_order.values() {
            let ledger = &mut self.models[m];
            let total = ledger.total();
            let old = ledger.emitted.replace(total);
            let mut delta = Row::ZERO;
            let old_counters = old.map_or([0; COUNTERS], |r| r.counters);
            for ((d, t), o) in delta
                .counters
                .iter_mut()
                .zip(total.counters)
                .zip(old_counters)
            {
                *d = t.saturating_sub(o);
            }
            if let Some(t) = total.cost
                && old.is_none_or(|r| r.cost.is_some())
            {
                delta.cost = Some(t - old.and_then(|r| r.cost).unwrap_or(0.0));
            }
            model_usage.insert(ledger.name.clone(), total.to_usage());
            delta_rows.push((ledger.name.clone(), delta));
        }

        // 8: the current operation's sum, in its JavaScript key order.
        let mut op_rows: Vec<(JsOrder, &Row)> = self.ops[o]
            .rows
            .iter()
            .enumerate()
            .map(|(slot, r)| {
                let key = match self.models[r.model].order {
                    JsOrder::Index(n) => JsOrder::Index(n),
                    JsOrder::Named(..) => JsOrder::Named(slot as u64, 0),
                };
                (key, &r.row)
            })
            .collect();
        op_rows.sort_by_key(|(k, _)| *k);
        let usage = sum_rows(op_rows.into_iter().map(|(_, r)| r)).to_usage();

        let delta_usage = sum_rows(delta_rows.iter().map(|(_, r)| r)).to_usage();
        let delta_map: IndexMap<String, ModelUsage> = delta_rows
            .into_iter()
            .map(|(name, r)| (name, r.to_usage()))
            .collect();

        let mut update = SessionUsageUpdate::new(session_id, usage)
            .model_usage(model_usage)
            .delta(UsageDelta::new(delta_usage, delta_map));
        update.set_usage_scope_id(self.namespace, self.scope_id.clone());
        Some(update)
    }

    /// Replaces the merged row of model `m` (row `slot` of operation `o`).
    fn replace_row(&mut self, o: usize, m: usize, slot: usize, merged: Row) {
        let key = self.ops[o].key;
        let old = std::mem::replace(&mut self.ops[o].rows[slot].row, merged);
        let ledger = &mut self.models[m];
        ledger.sums.replace(&old.counters, &merged.counters);
        #[expect(
            clippy::expect_used,
            reason = "a row replaced is one added before, with its contribution"
        )]
        let pos = ledger
            .contributions
            .binary_search_by_key(&key, |c| c.key)
            .expect("the operation is among the model's contributions");
        if old.cost != merged.cost {
            if old.cost.is_none() {
                ledger.unknown_costs -= 1;
            }
            ledger.contributions[pos].cost = merged.cost;
            ledger.refold(pos);
        }
    }

    /// Adds model `name` (new to operation `o`) with its merged row.
    fn add_row(&mut self, o: usize, name: &str, merged: Row) {
        let slot = self.ops[o].rows.len();
        let key = self.ops[o].key;
        // The model's place in output order if this operation is its first.
        let order_here = match array_index(name) {
            Some(n) => JsOrder::Index(n),
            None => JsOrder::Named(o as u64, slot as u64),
        };
        let m = match self.model_index.get(name) {
            Some(&m) => {
                let ledger = &mut self.models[m];
                if order_here < ledger.order {
                    self.model_order.remove(&ledger.order);
                    ledger.order = order_here;
                    self.model_order.insert(order_here, m);
                }
                m
            }
            None => {
                let m = self.models.len();
                self.models.push(ModelLedger {
                    name: name.to_owned(),
                    order: order_here,
                    contributions: Vec::new(),
                    unknown_costs: 0,
                    sums: WideCounters::default(),
                    emitted: None,
                });
                self.model_index.insert(name.to_owned(), m);
                self.model_order.insert(order_here, m);
                m
            }
        };
        self.ops[o].rows.push(OpRow {
            model: m,
            row: merged,
        });
        let ledger = &mut self.models[m];
        ledger.sums.add(&merged.counters);
        if merged.cost.is_none() {
            ledger.unknown_costs += 1;
        }
        // Where it goes (a new operation's key is not there yet).
        let (Ok(pos) | Err(pos)) = ledger.contributions.binary_search_by_key(&key, |c| c.key);
        ledger.contributions.insert(
            pos,
            Contribution {
                key,
                slot,
                cost: merged.cost,
                prefix: 0.0,
            },
        );
        ledger.refold(pos);
    }
}
