//! Usage: the Core ledger of each scope, the standard context occupancy,
//! the turn usage of prompt results, and claude's rate-limit rows that
//! ride on `usage_update`.

use serde_json::Value;

use super::str_at;
use super::*;
use crate::connection::sequence::SequenceRule;
use crate::rate_limits::RateLimitsSnapshot;
use crate::usage::{ModelUsage, SessionUsageUpdate, keep_max, sum_model_usage};

impl ConnectionState {
    /// A Core (or legacy) usage update: each scope's cumulative
    /// `modelUsage` is kept per model (a fall keeps the higher value and is
    /// recorded); the session's `totals` sum the scopes per model and its
    /// `total` sums the models. An update without `modelUsage` is
    /// unattributed: its `usage` is kept apart, never added.
    pub(super) fn usage_update(
        &mut self,
        method: &str,
        u: &SessionUsageUpdate,
        params: &Value,
        dialect: Dialect,
        out: &mut Changes,
    ) {
        let sid = u.session_id.to_string();
        let mut incomplete = false;
        let _ = params;
        for f in std::mem::take(&mut self.now.sequence) {
            // Each of these rules leaves the update folded: a fall keeps
            // the higher value, a re-entered scope and a delta that does not
            // add up change nothing the state adds (the delta is kept apart).
            let message = match f.rule {
                SequenceRule::UsageTotalDecreased => {
                    incomplete = true;
                    format!(
                        "{}; the higher value is kept and the scope marked incomplete",
                        f.message
                    )
                }
                SequenceRule::UsageScopeReentered => {
                    incomplete = true;
                    format!("{}; the scope is marked incomplete", f.message)
                }
                _ => f.message,
            };
            self.record(
                out,
                Record::new(&f.pointer, f.rule.id(), message)
                    .method(method)
                    .session(&sid)
                    .folded(),
            );
        }
        let scope_id = u.usage_scope_id().map(str::to_owned);
        let key = scope_id
            .as_ref()
            .map_or("session".to_owned(), |id| format!("scope:{id}"));
        let cap = self.limits.scopes_per_session;
        let models_cap = self.limits.sequence.models_per_scope;
        let s = self.session_mut(&sid);
        let scope = s
            .usage
            .scopes
            .entry(key.clone())
            .or_insert_with(|| ScopeUsage {
                usage_scope_id: scope_id,
                usage: u.usage.clone(),
                model_usage: IndexMap::new(),
                highest_cost_usd: IndexMap::new(),
                delta: None,
                updates: 0,
                unattributed_updates: 0,
                incomplete: false,
                dialect,
            });
        scope.updates += 1;
        scope.usage = u.usage.clone();
        scope.delta = u.delta.clone();
        match &u.model_usage {
            Some(rows) => {
                for (model, row) in rows {
                    let mut kept = match scope.model_usage.get(model) {
                        Some(old) => keep_max(old, row),
                        None if scope.model_usage.len() < models_cap => row.clone(),
                        None => continue,
                    };
                    // A scope row holds the counters and the cost alone:
                    // `contextWindow` (informational) and unknown keys go.
                    kept.context_window = None;
                    kept.extra.clear();
                    if let Some(c) = kept.cost_usd.map(|c| c.get()) {
                        let high = scope.highest_cost_usd.entry(model.clone()).or_insert(c);
                        *high = high.max(c);
                    }
                    scope.model_usage.insert(model.clone(), kept);
                }
            }
            None => {
                scope.unattributed_updates += 1;
                incomplete = true;
                s.usage.unattributed = Some(u.usage.clone());
            }
        }
        scope.incomplete |= incomplete;
        cap_map(&mut s.usage.scopes, cap);
        s.usage.recount();
        out.add(|| Change::Usage {
            session_id: sid,
            scope: key,
        });
    }

    /// A standard `usage_update`: context occupancy, and the cumulative
    /// cost when given (a later update without one keeps it). claude's
    /// `_meta["_claude/rateLimit"]` becomes a rate-limit row.
    pub(super) fn standard_usage_update(
        &mut self,
        method: &str,
        sid: &str,
        update: &Value,
        out: &mut Changes,
    ) {
        // What breaks `standard_update_violations` was recorded before:
        // without `used` and `size` nothing is folded, a bad cost is left
        // out.
        let (Some(used), Some(size)) = (
            update.get("used").and_then(Value::as_u64),
            update.get("size").and_then(Value::as_u64),
        ) else {
            return;
        };
        let cost = update
            .get("cost")
            .filter(|c| {
                c.get("amount")
                    .and_then(Value::as_f64)
                    .is_some_and(|a| a.is_finite() && a >= 0.0)
                    && c.get("currency").is_some_and(Value::is_string)
            })
            .cloned();
        let s = self.session_mut(sid);
        let cost = cost.or_else(|| s.usage.context.as_ref().and_then(|c| c.cost.clone()));
        s.usage.context = Some(ContextUsage { used, size, cost });
        out.add(|| Change::Context {
            session_id: sid.to_owned(),
        });
        if let Some(info) = update.get("_meta").and_then(|m| m.get("_claude/rateLimit")) {
            self.claude_rate_limit(method, info, out);
        }
    }

    /// claude's `_claude/rateLimit` (the SDK's `rate_limit_info`), mapped
    /// by [`crate::standard::claude_rate_limits`]: one row `claude:<type>`
    /// per rate-limit type of the event and of its `unifiedWindows`. A
    /// status without `utilization` (claude below its warning threshold)
    /// makes no row.
    fn claude_rate_limit(&mut self, method: &str, info: &Value, out: &mut Changes) {
        let Some(mapped) = crate::standard::claude_rate_limits(info) else {
            return;
        };
        match serde_json::from_value::<RateLimitsSnapshot>(mapped) {
            Ok(snapshot) => {
                let adjusted = crate::standard::claude_rate_limit_adjustments(info);
                let at = "/params/update/_meta/_claude~1rateLimit";
                self.violations(out, method, None, at, &adjusted, true);
                self.upsert_rate_limits(snapshot, Dialect::Standard, out)
            }
            Err(e) => self.record(
                out,
                Record::new(
                    "/params/update/_meta/_claude~1rateLimit",
                    "shape",
                    format!("`_claude/rateLimit` maps to no rate-limit row: {e}"),
                )
                .method(method),
            ),
        }
    }

    /// The usage a prompt result reported for its turn (`usage`, and
    /// `_meta.quota`), or a v2 `state_update` that ends a turn.
    pub(super) fn turn_usage(
        &mut self,
        method: &str,
        sid: &str,
        at: &str,
        carrier: &Value,
        out: &mut Changes,
    ) {
        let usage = carrier.get("usage").filter(|u| !u.is_null());
        let quota = match carrier
            .get("_meta")
            .and_then(|m| m.get("quota"))
            .filter(|q| !q.is_null())
        {
            Some(q) if !q.is_object() => {
                self.record(
                    out,
                    Record::new(
                        format!("{at}/_meta/quota"),
                        "type",
                        format!(
                            "`_meta.quota` must be an object, found {}; ignored",
                            crate::wire::json_type(q)
                        ),
                    )
                    .method(method)
                    .session(sid)
                    .folded_if(usage.is_some()),
                );
                None
            }
            q => q,
        };
        if usage.is_none() && quota.is_none() {
            return;
        }
        let mut bad = Vec::new();
        let usage = usage.map(|u| counters(u, &format!("{at}/usage"), false, &mut bad));
        let (quota, quota_models) = match quota {
            Some(q) => {
                let token_count = q
                    .get("token_count")
                    .filter(|t| !t.is_null())
                    .map(|t| counters(t, &format!("{at}/_meta/quota/token_count"), true, &mut bad));
                let mut models = IndexMap::new();
                for (i, row) in q
                    .get("model_usage")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let Some(model) = row.get("model").and_then(Value::as_str) else {
                        bad.push((
                            format!("{at}/_meta/quota/model_usage/{i}/model"),
                            "required",
                            "a quota row without a string `model`".to_owned(),
                        ));
                        continue;
                    };
                    let c = row.get("token_count").map_or_else(IndexMap::new, |t| {
                        counters(
                            t,
                            &format!("{at}/_meta/quota/model_usage/{i}/token_count"),
                            true,
                            &mut bad,
                        )
                    });
                    models.insert(model.to_owned(), c);
                }
                (token_count, models)
            }
            None => (None, IndexMap::new()),
        };
        for (pointer, rule, message) in bad {
            self.record(
                out,
                Record::new(&pointer, rule, message)
                    .method(method)
                    .session(sid)
                    .folded(),
            );
        }
        let stop_reason = str_at(carrier, "stopReason").map(str::to_owned);
        let cap = self.limits.turn_usage_per_session;
        let s = self.session_mut(sid);
        let t = &mut s.usage.turn_totals;
        // Each count is of the turns that reported what it sums: a turn
        // with `usage: null` and a quota adds to the quota's only.
        if usage.is_some() {
            t.turns += 1;
        }
        if quota.is_some() || !quota_models.is_empty() {
            t.quota_turns += 1;
        }
        add_counters(&mut t.usage, usage.iter().flatten());
        add_counters(&mut t.quota, quota.iter().flatten());
        for (model, c) in &quota_models {
            add_counters(t.quota_models.entry(model.clone()).or_default(), c);
        }
        s.usage.turns.push(TurnUsage {
            stop_reason,
            usage,
            quota,
            quota_models,
        });
        if s.usage.turns.len() > cap {
            let extra = s.usage.turns.len() - cap;
            s.usage.turns.drain(..extra);
        }
        out.add(|| Change::TurnUsage {
            session_id: sid.to_owned(),
        });
    }

    /// The agent's `agentInfo.name` (v2 `info.name`), when its initialize
    /// was seen.
    pub(super) fn agent_name(&self) -> Option<&str> {
        self.negotiation
            .agent
            .info
            .as_ref()
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
    }
}

impl UsageState {
    /// Recomputes the figures derived from the scopes.
    fn recount(&mut self) {
        let mut per_model: IndexMap<String, IndexMap<String, ModelUsage>> = IndexMap::new();
        let mut at_least: Option<f64> = None;
        for (key, scope) in &self.scopes {
            for (model, row) in &scope.model_usage {
                per_model
                    .entry(model.clone())
                    .or_default()
                    .insert(key.clone(), row.clone());
            }
            for c in scope.highest_cost_usd.values() {
                *at_least.get_or_insert(0.0) += c;
            }
        }
        self.totals = per_model
            .into_iter()
            .map(|(model, rows)| (model, sum_model_usage(&rows)))
            .collect();
        self.total = (!self.totals.is_empty()).then(|| sum_model_usage(&self.totals));
        self.cost_usd_at_least = at_least;
    }
}

/// The counters of a token-count object in one spelling: camelCase
/// (gemini's snake_case keys converted); in a quota, claude's
/// `cachedWriteTokens` is read as codex's `cacheWriteInputTokens` (ACP's
/// own `usage` keeps its `cachedWriteTokens`). A value that is not a
/// non-negative integer is left out and reported.
fn counters(
    v: &Value,
    at: &str,
    quota: bool,
    bad: &mut Vec<(String, &'static str, String)>,
) -> IndexMap<String, u64> {
    let mut out = IndexMap::new();
    let Some(o) = v.as_object() else {
        bad.push((
            at.to_owned(),
            "type-object",
            "token counts must be an object".to_owned(),
        ));
        return out;
    };
    for (k, n) in o {
        if n.is_null() {
            continue;
        }
        let Some(n) = n.as_u64() else {
            bad.push((
                crate::violation::child(at, k),
                "non-negative-integer",
                format!("`{k}` must be a non-negative integer; left out"),
            ));
            continue;
        };
        *out.entry(counter_name(k, quota)).or_insert(0) += n;
    }
    out
}

fn counter_name(key: &str, quota: bool) -> String {
    let camel = if key.contains('_') {
        let mut s = String::with_capacity(key.len());
        let mut up = false;
        for c in key.chars() {
            if c == '_' {
                up = true;
            } else if up {
                s.extend(c.to_uppercase());
                up = false;
            } else {
                s.push(c);
            }
        }
        s
    } else {
        key.to_owned()
    };
    match camel.as_str() {
        "cachedWriteTokens" if quota => "cacheWriteInputTokens".to_owned(),
        _ => camel,
    }
}

fn add_counters<'a>(
    into: &mut IndexMap<String, u64>,
    from: impl IntoIterator<Item = (&'a String, &'a u64)>,
) {
    for (k, n) in from {
        let e = into.entry(k.clone()).or_insert(0);
        *e = e.saturating_add(*n);
    }
}
