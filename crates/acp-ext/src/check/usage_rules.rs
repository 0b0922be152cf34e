//! Usage accounting: cumulative totals, deltas and scopes.

use super::*;

impl Checker {
    pub(super) fn usage(&mut self, params: &Value, out: &mut Vec<Finding>) {
        let Some(sid) = str_at(params, "sessionId") else {
            return;
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
                out.push(Finding::of(
                    &rules::USAGE_SCOPE_REENTERED,
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
            return;
        };
        let Some(model_usage) = params.get("modelUsage").and_then(Value::as_object) else {
            return;
        };
        // Totals never decrease.
        for (model, row) in model_usage {
            let (Some(prev), Some(cur)) = (u.models.get(model), totals_of(row)) else {
                continue;
            };
            let at = child("/params/modelUsage", model);
            if let Some(i) = (0..COUNTERS.len()).find(|&i| cur.counters[i] < prev.counters[i]) {
                out.push(Finding::of(
                    &rules::USAGE_TOTAL_DECREASED,
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
                out.push(Finding::of(
                    &rules::USAGE_TOTAL_DECREASED,
                    child(&at, "costUSD"),
                    format!("cumulative `costUSD` of {model:?} fell from {p} to {c} within one usage scope"),
                ));
            }
        }
        // The delta is the change since the previous update of the scope.
        let judge = u.has_previous || u.baseline_zero;
        if judge
            && let Some(delta) = params
                .get("delta")
                .and_then(|d| d.get("modelUsage"))
                .and_then(Value::as_object)
        {
            let zero = Totals {
                counters: [0.0; 6],
                cost: Some(0.0),
            };
            for (model, row) in model_usage {
                let Some(cur) = totals_of(row) else { continue };
                let prev = u.models.get(model).copied().unwrap_or(zero);
                let at = child("/params/delta/modelUsage", model);
                let d = delta.get(model).and_then(totals_of);
                let dd = d.unwrap_or(Totals::default());
                let mismatch = (0..COUNTERS.len()).find(|&i| {
                    (dd.counters[i] - (cur.counters[i] - prev.counters[i])).abs() > 1e-6
                });
                if let Some(i) = mismatch {
                    let path = if d.is_some() {
                        child(&at, COUNTERS[i])
                    } else {
                        "/params/delta/modelUsage".to_owned()
                    };
                    out.push(Finding::of(
                        &rules::USAGE_DELTA_MISMATCH,
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
                        out.push(Finding::of(
                            &rules::USAGE_DELTA_MISMATCH,
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
                    out.push(Finding::of(
                        &rules::USAGE_DELTA_MISMATCH,
                        child(&child("/params/delta/modelUsage", model), COUNTERS[i]),
                        format!(
                            "delta `{}` of {model:?} is {}, but `modelUsage` does not report that model",
                            COUNTERS[i], d.counters[i]
                        ),
                    ));
                }
            }
        }
        for (model, row) in model_usage {
            if let Some(t) = totals_of(row)
                && (u.models.contains_key(model) || u.models.len() < limits.models_per_scope)
            {
                u.models.insert(model.clone(), t);
            }
        }
        u.has_previous = true;
    }
}

pub(super) fn totals_of(row: &Value) -> Option<Totals> {
    let obj = row.as_object()?;
    let mut t = Totals::default();
    for (i, name) in COUNTERS.iter().enumerate() {
        t.counters[i] = obj.get(*name).and_then(Value::as_f64).unwrap_or(0.0);
    }
    t.cost = obj.get("costUSD").and_then(Value::as_f64);
    Some(t)
}

pub(super) fn cost_differs(a: f64, b: f64) -> bool {
    (a - b).abs() > 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// The key of a session's unscoped usage updates.
pub(super) fn unscoped_key(sid: &str) -> u64 {
    id_hash(&format!("\0unscoped\0{sid}"))
}
