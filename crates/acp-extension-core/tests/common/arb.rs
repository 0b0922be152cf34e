//! Schema-driven `proptest` generators: JSON values that conform to a
//! payload kind's JSON Schema, with a record of every optional key so that
//! targeted properties can mutate one key at a time.
//!
//! Supported keywords are the ones this crate's schemas use: `$ref` into
//! `$defs`, `allOf`, `oneOf`, `anyOf`, `type`, `const`, `enum`,
//! `properties`, `required`, `additionalProperties`, `items`, `minimum`,
//! `maximum` and `minLength`. Combinators are flattened into alternatives
//! (each a conjunction of plain keywords), so `oneOf` branches that share
//! keys with their parent (a union's tag, `text` or `blob`) merge cleanly.
//!
//! Numbers are what a JavaScript peer keeps distinct: integers within
//! ±(2^53 − 1), written as JSON integers, and non-integral finite floats.
//! Unknown keys start with `zz` so they never collide with a contract key,
//! and contain `~` or `/` now and then so pointers are escaped.

use std::collections::HashMap;
use std::sync::Arc;

use acp_extension_core::validate::child;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Largest integer a JavaScript number holds exactly.
const SAFE: i64 = 9_007_199_254_740_991;

/// An optional key of a generated object.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// JSON pointer of the object that may hold the key.
    pub object: String,
    /// The key.
    pub key: String,
    /// Whether the schema allows `null` (`opt|null`) or not (`opt`).
    pub nullable: bool,
    /// Whether the object is a contract type (a named definition or the
    /// root of a typed kind) rather than a sketch of an ACP object around
    /// contract sections.
    pub owned: bool,
}

impl Site {
    /// The pointer of the key itself.
    pub fn pointer(&self) -> String {
        child(&self.object, &self.key)
    }
}

/// A generated value and the optional keys of every object in it
/// (present or not), outside unknown keys.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The JSON value.
    pub value: Value,
    /// Every optional key of a schema-described object in `value`.
    pub sites: Vec<Site>,
}

impl Generated {
    fn leaf(value: Value) -> Self {
        Self {
            value,
            sites: Vec::new(),
        }
    }

    /// Moves the sites below `segment` (an unescaped key or an index).
    fn under(mut self, segment: &str) -> Self {
        let prefix = child("", segment);
        for s in &mut self.sites {
            s.object = format!("{prefix}{}", s.object);
        }
        self
    }
}

/// Builds strategies from schemas sharing one `$defs` table.
pub struct SchemaGen {
    defs: Map<String, Value>,
    aliases: HashMap<String, String>,
    json: BoxedStrategy<Value>,
}

impl SchemaGen {
    /// A generator over these definitions (the union of every kind's `$defs`).
    pub fn new(defs: Map<String, Value>) -> Self {
        Self {
            defs,
            aliases: HashMap::new(),
            json: any_json(),
        }
    }

    /// Generates definition `to` wherever `#/$defs/from` is referenced
    /// (for a schema that only sketches a type described elsewhere).
    pub fn alias(mut self, from: &str, to: &str) -> Self {
        self.aliases.insert(from.to_owned(), to.to_owned());
        self
    }

    /// Values conforming to `schema`; `owned` when the root is a contract
    /// type.
    pub fn strategy(&self, schema: &Value, owned: bool) -> BoxedStrategy<Generated> {
        let mut alts = self.alternatives(schema);
        if owned {
            alts.iter_mut().for_each(own);
        }
        let strategies: Vec<BoxedStrategy<Generated>> =
            alts.iter().map(|flat| self.flat_strategy(flat)).collect();
        one_of(strategies)
    }

    fn deref(&self, reference: &str) -> Value {
        let name = reference
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("unsupported $ref {reference}"));
        let name = self.aliases.get(name).map_or(name, String::as_str);
        self.defs
            .get(name)
            .unwrap_or_else(|| panic!("no definition {name}"))
            .clone()
    }

    /// Whether `schema` admits `null` among its alternatives.
    pub fn admits_null(&self, schema: &Value) -> bool {
        self.alternatives(schema)
            .iter()
            .any(|alt| alt.get("type") == Some(&Value::from("null")))
    }

    /// `schema` as alternatives, each a conjunction of plain keywords.
    fn alternatives(&self, schema: &Value) -> Vec<Map<String, Value>> {
        let Some(obj) = schema.as_object() else {
            // `true` or a non-schema: anything.
            return vec![Map::new()];
        };
        let mut base = Map::new();
        for (k, v) in obj {
            if !matches!(k.as_str(), "$ref" | "allOf" | "oneOf" | "anyOf") {
                base.insert(k.clone(), v.clone());
            }
        }
        let mut alts = vec![base];
        if let Some(Value::String(r)) = obj.get("$ref") {
            let mut def = self.alternatives(&self.deref(r));
            def.iter_mut().for_each(own);
            alts = product(&alts, &def);
        }
        if let Some(Value::Array(parts)) = obj.get("allOf") {
            for part in parts {
                alts = product(&alts, &self.alternatives(part));
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(options)) = obj.get(key) {
                let union: Vec<Map<String, Value>> =
                    options.iter().flat_map(|o| self.alternatives(o)).collect();
                alts = product(&alts, &union);
            }
        }
        alts
    }

    fn flat_strategy(&self, flat: &Map<String, Value>) -> BoxedStrategy<Generated> {
        if let Some(c) = flat.get("const") {
            return Just(Generated::leaf(c.clone())).boxed();
        }
        if let Some(Value::Array(items)) = flat.get("enum") {
            return proptest::sample::select(items.clone())
                .prop_map(Generated::leaf)
                .boxed();
        }
        let types: Vec<&str> = match flat.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if flat.contains_key("properties") || flat.contains_key("required") => {
                vec!["object"]
            }
            _ => return self.json.clone().prop_map(Generated::leaf).boxed(),
        };
        one_of(types.into_iter().map(|t| self.typed(t, flat)).collect())
    }

    fn typed(&self, t: &str, flat: &Map<String, Value>) -> BoxedStrategy<Generated> {
        let int = |k: &str| flat.get(k).and_then(Value::as_i64);
        match t {
            "null" => Just(Generated::leaf(Value::Null)).boxed(),
            "boolean" => any::<bool>()
                .prop_map(|b| Generated::leaf(b.into()))
                .boxed(),
            "string" => {
                let min = flat.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                string(min).prop_map(|s| Generated::leaf(s.into())).boxed()
            }
            "integer" => integer(
                int("minimum").unwrap_or(-SAFE),
                int("maximum").unwrap_or(SAFE),
            )
            .prop_map(|n| Generated::leaf(n.into()))
            .boxed(),
            "number" => {
                let min = flat.get("minimum").and_then(Value::as_f64);
                let max = flat.get("maximum").and_then(Value::as_f64);
                number(min)
                    .prop_map(move |v| match (max, v.as_f64()) {
                        // Fold values above the maximum back into range.
                        (Some(m), Some(x)) if x > m => Value::from((x % m.max(1.0)).floor() as i64),
                        _ => v,
                    })
                    .prop_map(Generated::leaf)
                    .boxed()
            }
            "array" => {
                let items = flat.get("items").cloned().unwrap_or(Value::Bool(true));
                proptest::collection::vec(self.strategy(&items, false), 0..3)
                    .prop_map(|items| {
                        let mut sites = Vec::new();
                        let mut values = Vec::new();
                        for (i, g) in items.into_iter().enumerate() {
                            let g = g.under(&i.to_string());
                            sites.extend(g.sites);
                            values.push(g.value);
                        }
                        Generated {
                            value: Value::Array(values),
                            sites,
                        }
                    })
                    .boxed()
            }
            "object" => self.object(flat),
            other => panic!("unsupported type {other}"),
        }
    }

    fn object(&self, flat: &Map<String, Value>) -> BoxedStrategy<Generated> {
        let empty = Map::new();
        let props = flat
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = flat
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let owned = flat.get(OWNED) == Some(&Value::Bool(true));
        let mut own_sites = Vec::new();
        let mut fields: Vec<BoxedStrategy<Option<(String, Generated)>>> = Vec::new();
        for (key, schema) in props {
            let k = key.clone();
            let value = self
                .strategy(schema, false)
                .prop_map(move |g| (k.clone(), g));
            if required.contains(&key.as_str()) {
                fields.push(value.prop_map(Some).boxed());
            } else {
                own_sites.push(Site {
                    object: String::new(),
                    key: key.clone(),
                    nullable: self.admits_null(schema),
                    owned,
                });
                fields.push(proptest::option::weighted(0.7, value).boxed());
            }
        }
        // Keys a union branch requires without describing them are
        // described by another branch; nothing to add here.
        let extra: BoxedStrategy<Vec<(String, Generated)>> = match flat.get("additionalProperties")
        {
            Some(Value::Bool(false)) => Just(Vec::new()).boxed(),
            None | Some(Value::Bool(true)) => proptest::collection::vec(
                (unknown_key(), self.json.clone().prop_map(Generated::leaf)),
                0..3,
            )
            .boxed(),
            Some(schema) => {
                proptest::collection::vec((map_key(), self.strategy(schema, false)), 0..3).boxed()
            }
        };
        let own_sites = Arc::new(own_sites);
        (fields, extra)
            .prop_map(move |(fields, extra)| {
                let mut obj = Map::new();
                let mut sites: Vec<Site> = own_sites.as_ref().clone();
                for (k, g) in fields.into_iter().flatten().chain(extra) {
                    if obj.contains_key(&k) {
                        continue;
                    }
                    let g = g.under(&k);
                    sites.extend(g.sites);
                    obj.insert(k, g.value);
                }
                Generated {
                    value: Value::Object(obj),
                    sites,
                }
            })
            .boxed()
    }
}

/// Marks a flattened schema as a contract type (not a JSON Schema keyword).
const OWNED: &str = "x-contract-type";

fn own(flat: &mut Map<String, Value>) {
    flat.insert(OWNED.into(), Value::Bool(true));
}

/// The conjunction of every pair of alternatives.
fn product(a: &[Map<String, Value>], b: &[Map<String, Value>]) -> Vec<Map<String, Value>> {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| merge(x, y)))
        .collect()
}

/// Both sets of keywords at once.
fn merge(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = a.clone();
    for (k, v) in b {
        match (k.as_str(), out.get_mut(k)) {
            (_, None) => {
                out.insert(k.clone(), v.clone());
            }
            ("properties", Some(Value::Object(mine))) => {
                for (pk, pv) in v.as_object().into_iter().flatten() {
                    let merged = match mine.get(pk) {
                        Some(existing) => serde_json::json!({ "allOf": [existing, pv] }),
                        None => pv.clone(),
                    };
                    mine.insert(pk.clone(), merged);
                }
            }
            ("required", Some(Value::Array(mine))) => {
                for r in v.as_array().into_iter().flatten() {
                    if !mine.contains(r) {
                        mine.push(r.clone());
                    }
                }
            }
            ("title" | "description" | "$schema" | "$defs", Some(_)) => {}
            (_, Some(existing)) => {
                assert_eq!(existing, v, "conflicting `{k}` in a conjunction of schemas")
            }
        }
    }
    out
}

fn one_of(mut strategies: Vec<BoxedStrategy<Generated>>) -> BoxedStrategy<Generated> {
    match strategies.len() {
        0 => panic!("a schema without alternatives"),
        1 => strategies.pop().expect("one strategy"),
        _ => proptest::strategy::Union::new(strategies).boxed(),
    }
}

/// Any string of at least `min` characters, control characters and
/// non-BMP characters included.
fn string(min: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(proptest::char::range('a', 'z'), min.max(1)..8),
        1 => proptest::collection::vec(any::<char>(), min..6),
    ]
    .prop_map(String::from_iter)
}

/// A key the contract does not define.
fn unknown_key() -> impl Strategy<Value = String> {
    let c = prop_oneof![4 => proptest::char::range('a', 'z'), 1 => Just('~'), 1 => Just('/')];
    proptest::collection::vec(c, 0..5).prop_map(|cs| format!("zz{}", String::from_iter(cs)))
}

/// A key of a map the contract types as `{string: T}`.
fn map_key() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..5).prop_map(String::from_iter)
}

/// Integers in `[min, max]`, clamped to the safe range, with the bounds
/// and small values favoured.
fn integer(min: i64, max: i64) -> impl Strategy<Value = i64> {
    let (min, max) = (min.max(-SAFE), max.min(SAFE));
    let small = (min.max(-3))..=(max.min(100));
    prop_oneof![
        3 => small,
        1 => min..=max,
        1 => Just(min),
        1 => Just(max),
    ]
}

/// A finite number `>= min` as JSON keeps it: integers as integers,
/// fractions as floats.
fn number(min: Option<f64>) -> impl Strategy<Value = Value> {
    let lo = min.unwrap_or(-(SAFE as f64));
    let fraction = move |f: f64| (f.fract() != 0.0 && f >= lo).then(|| Value::from(f));
    prop_oneof![
        2 => integer(lo.ceil() as i64, SAFE).prop_map(Value::from),
        1 => (lo.max(-1e15)..1e15).prop_filter_map("non-integral", fraction),
        1 => (0.0..1.0f64).prop_filter_map("non-integral", fraction),
        1 => proptest::num::f64::SUBNORMAL.prop_filter_map("non-integral", fraction),
    ]
}

/// Any JSON value (what an unknown key may hold), up to two levels deep.
/// Built by hand: `prop_recursive` rebuilds its layers for every value.
pub fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        integer(-SAFE, SAFE).prop_map(Value::from),
        number(None),
        string(0).prop_map(Value::from),
    ]
    .boxed();
    let nest = |inner: BoxedStrategy<Value>| {
        prop_oneof![
            3 => leaf.clone(),
            1 => proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            1 => proptest::collection::vec((map_key(), inner), 0..3)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
        .boxed()
    };
    nest(nest(leaf.clone()))
}
