//! randomized vs. reference

use super::*;

/// A literal, quadratic port of the TypeScript reference: JavaScript
/// objects as insertion-ordered vectors iterated in JavaScript order, f64
/// counters, and every total re-summed from all operations on each update.
mod reference {
    use serde_json::{Map, Value, json};

    pub type Obj<V> = Vec<(String, V)>;

    fn array_index(k: &str) -> Option<u64> {
        let canonical = k == "0" || (!k.starts_with('0') && !k.is_empty() && k.len() <= 10);
        if !canonical || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        k.parse::<u64>().ok().filter(|&n| n <= 4_294_967_294)
    }

    /// `Object.entries` order.
    pub fn entries<V>(o: &Obj<V>) -> Vec<&(String, V)> {
        let mut ints: Vec<(u64, &(String, V))> = o
            .iter()
            .filter_map(|e| array_index(&e.0).map(|n| (n, e)))
            .collect();
        ints.sort_by_key(|(n, _)| *n);
        let mut out: Vec<&(String, V)> = ints.into_iter().map(|(_, e)| e).collect();
        out.extend(o.iter().filter(|e| array_index(&e.0).is_none()));
        out
    }

    fn get<'a, V>(o: &'a Obj<V>, k: &str) -> Option<&'a V> {
        o.iter().find(|e| e.0 == k).map(|e| &e.1)
    }

    fn set<V>(o: &mut Obj<V>, k: &str, v: V) {
        match o.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 = v,
            None => o.push((k.to_owned(), v)),
        }
    }

    #[derive(Clone, Debug, Default)]
    pub struct U {
        pub c: [Option<f64>; 6],
        pub cost: Option<f64>,
    }

    fn empty() -> U {
        U {
            c: [Some(0.0), Some(0.0), Some(0.0), None, None, None],
            cost: None,
        }
    }

    pub fn sum(rows: &Obj<U>) -> U {
        let mut r = empty();
        let values = entries(rows);
        for (_, row) in &values {
            for k in 0..6 {
                r.c[k] = Some(r.c[k].unwrap_or(0.0) + row.c[k].unwrap_or(0.0));
            }
        }
        if !values.is_empty() && values.iter().all(|(_, row)| row.cost.is_some()) {
            r.cost = Some(values.iter().fold(0.0, |s, (_, row)| s + row.cost.unwrap()));
        }
        r
    }

    fn num(n: f64) -> Value {
        if n.fract() == 0.0 && n.abs() < 9e15 {
            json!(n as i64)
        } else {
            json!(n)
        }
    }

    const KEYS: [&str; 6] = [
        "inputTokens",
        "outputTokens",
        "cacheReadInputTokens",
        "cacheCreationInputTokens",
        "reasoningOutputTokens",
        "webSearchRequests",
    ];

    pub fn u_json(u: &U) -> Value {
        let mut m = Map::new();
        for (k, v) in KEYS.iter().zip(u.c) {
            if let Some(v) = v {
                m.insert((*k).to_owned(), num(v));
            }
        }
        if let Some(c) = u.cost {
            m.insert("costUSD".to_owned(), num(c));
        }
        Value::Object(m)
    }

    pub fn obj_json(o: &Obj<U>) -> Value {
        Value::Object(
            entries(o)
                .into_iter()
                .map(|(k, u)| (k.clone(), u_json(u)))
                .collect(),
        )
    }

    #[derive(Default)]
    pub struct Acc {
        pub scope: String,
        operations: Vec<(String, Obj<U>)>,
        totals: Obj<U>,
    }

    impl Acc {
        pub fn update(&mut self, session_id: &str, op: &str, rows: &Obj<U>) -> Value {
            let previous = self
                .operations
                .iter()
                .find(|e| e.0 == op)
                .map(|e| e.1.clone())
                .unwrap_or_default();
            let mut merged = previous.clone();
            for (model, row) in entries(rows) {
                let mut next = get(&merged, model).cloned().unwrap_or_else(empty);
                for k in 0..6 {
                    next.c[k] = Some(next.c[k].unwrap_or(0.0).max(row.c[k].unwrap_or(0.0)));
                }
                if let Some(c) = row.cost {
                    let a = next.cost.unwrap_or(0.0);
                    next.cost = Some(if c > a { c } else { a });
                }
                set(&mut merged, model, next);
            }
            // `JSON.stringify(previous) === JSON.stringify(merged)`: key order counts.
            let stringify = |o: &Obj<U>| serde_json::to_string(&obj_json(o)).unwrap();
            if stringify(&previous) == stringify(&merged) {
                return Value::Null;
            }
            set(&mut self.operations, op, merged.clone());
            let mut grouped: Obj<Obj<U>> = Vec::new();
            for (id, models) in &self.operations {
                for (model, row) in entries(models) {
                    if get(&grouped, model).is_none() {
                        grouped.push((model.clone(), Vec::new()));
                    }
                    let g = grouped.iter_mut().find(|e| &e.0 == model).unwrap();
                    set(&mut g.1, id, row.clone());
                }
            }
            let mut next: Obj<U> = Vec::new();
            let mut delta: Obj<U> = Vec::new();
            for (model, contributions) in entries(&grouped) {
                let total = sum(contributions);
                let old = get(&self.totals, model);
                let mut d = empty();
                for k in 0..6 {
                    d.c[k] =
                        Some(total.c[k].unwrap_or(0.0) - old.and_then(|o| o.c[k]).unwrap_or(0.0));
                }
                if let Some(t) = total.cost
                    && old.is_none_or(|o| o.cost.is_some())
                {
                    d.cost = Some(t - old.and_then(|o| o.cost).unwrap_or(0.0));
                }
                next.push((model.clone(), total));
                delta.push((model.clone(), d));
            }
            self.totals = next.clone();
            json!({
                "sessionId": session_id,
                "usage": u_json(&sum(&merged)),
                "modelUsage": obj_json(&next),
                "delta": {"usage": u_json(&sum(&delta)), "modelUsage": obj_json(&delta)},
                "_meta": {"lody": {"usageScopeId": self.scope}},
            })
        }
    }
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const OP_IDS: [&str; 12] = [
    "turn-a",
    "7",
    "turn-b",
    "0",
    "01",
    "12",
    "x",
    "4294967295",
    "3",
    "turn-c",
    "4294967294",
    "y",
];
const MODELS: [&str; 8] = ["m", "10", "claude", "2", "01", "0", "gpt", "x/y~z"];

#[test]
fn randomized_sequences_match_the_quadratic_reference_exactly() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for seq in 0..150 {
        let scope = format!("scope-{seq}");
        let mut ours = SessionUsageAccumulator::with_scope_id(scope.clone()).unwrap();
        let mut theirs = reference::Acc::default();
        theirs.scope = scope;
        let cost_mode = rng.below(3); // 0: always, 1: sometimes, 2: never
        let n_ops = 1 + rng.below(OP_IDS.len() as u64) as usize;
        let mut current = 0usize;
        for step in 0..(5 + rng.below(45)) {
            // Mostly the latest operation, sometimes a new one or an older one.
            let r = rng.below(100);
            if r < 25 {
                current = (current + 1) % n_ops;
            } else if r < 40 {
                current = rng.below(n_ops as u64) as usize;
            }
            let op = OP_IDS[current];
            let session = if rng.chance(80) { "s1" } else { "s2" };
            let mut input: IndexMap<String, ModelUsage> = IndexMap::new();
            for _ in 0..rng.below(4) {
                let model = MODELS[rng.below(MODELS.len() as u64) as usize];
                let mut u = ModelUsage::new(rng.below(500), rng.below(50), rng.below(300));
                if rng.chance(30) {
                    u = u.cache_creation_input_tokens(rng.below(40));
                }
                if rng.chance(30) {
                    u = u.reasoning_output_tokens(rng.below(40));
                }
                if rng.chance(10) {
                    u = u.web_search_requests(rng.below(3));
                }
                if rng.chance(20) {
                    u = u.context_window(200_000u64);
                }
                let with_cost = match cost_mode {
                    0 => true,
                    1 => rng.chance(60),
                    _ => false,
                };
                if with_cost {
                    // Fractions that round differently in different orders.
                    let c = match rng.below(4) {
                        0 => rng.below(10) as f64 * 0.1,
                        1 => rng.below(1_000_000) as f64 / 997.0,
                        2 => rng.below(5) as f64 * 0.3,
                        _ => 1e-3 * rng.below(7) as f64 + 1e7 * rng.below(2) as f64,
                    };
                    u = u.cost_usd(NonNegF64::new(c).unwrap());
                }
                input.insert(model.to_owned(), u);
            }
            let reference_rows: reference::Obj<reference::U> = input
                .iter()
                .map(|(k, u)| {
                    let v = serde_json::to_value(u).unwrap();
                    let c = |key: &str| v.get(key).map(|n| n.as_f64().unwrap());
                    let row = reference::U {
                        c: [
                            c("inputTokens"),
                            c("outputTokens"),
                            c("cacheReadInputTokens"),
                            c("cacheCreationInputTokens"),
                            c("reasoningOutputTokens"),
                            c("webSearchRequests"),
                        ],
                        cost: c("costUSD"),
                    };
                    (k.clone(), row)
                })
                .collect();
            let expected = theirs.update(session, op, &reference_rows);
            let actual = ours
                .update(session, op, &input)
                .map_or(Value::Null, |u| to_value(&u));
            // Text equality: same keys in the same order and the same f64 bits.
            assert_eq!(
                actual.to_string(),
                expected.to_string(),
                "sequence {seq}, step {step}, op {op}"
            );
        }
    }
}

#[test]
fn sum_model_usage_matches_the_reference_on_random_rows() {
    let mut rng = Rng(42);
    for _ in 0..500 {
        let mut input = IndexMap::new();
        for _ in 0..rng.below(6) {
            let model = MODELS[rng.below(MODELS.len() as u64) as usize];
            let mut u = ModelUsage::new(rng.below(9), rng.below(9), rng.below(9));
            if rng.chance(85) {
                let c = rng.below(1_000_000) as f64 / 997.0;
                u = u.cost_usd(NonNegF64::new(c).unwrap());
            }
            if rng.chance(30) {
                u = u.web_search_requests(1u64);
            }
            input.insert(model.to_owned(), u);
        }
        let reference_rows: reference::Obj<reference::U> = input
            .iter()
            .map(|(k, u)| {
                let mut c = [None; 6];
                c[0] = Some(u.input_tokens.get() as f64);
                c[1] = Some(u.output_tokens.get() as f64);
                c[2] = Some(u.cache_read_input_tokens.get() as f64);
                c[5] = u.web_search_requests.map(|n| n.get() as f64);
                let row = reference::U {
                    c,
                    cost: u.cost_usd.map(NonNegF64::get),
                };
                (k.clone(), row)
            })
            .collect();
        let expected = reference::u_json(&reference::sum(&reference_rows));
        let actual = serde_json::to_value(sum_model_usage(&input)).unwrap();
        assert_eq!(actual.to_string(), expected.to_string());
    }
}
