//! The two spellings of the contract's namespace: `ua` (newer) and `lody`.
//!
//! Readers accept both everywhere (`_meta.ua` / `_meta.lody`, `_ua/…` /
//! `_lody/…`); when both carry the same key, `ua` wins. Writers use one
//! namespace per connection, for every feature:
//! [`crate::negotiation::write_namespace`] gives it from what the reading
//! peer advertised (`ua` only to a peer that advertised `_meta.ua` and not
//! `_meta.lody`; [`Namespace::Lody`], which every deployed client reads,
//! otherwise), and [`crate::producer::AgentExtensions`] applies it.
//!
//! ```
//! use acp_extension_core::namespace::{self, Namespace};
//! use serde_json::json;
//!
//! let meta = json!({"lody": {"turnId": "old"}, "ua": {"turnId": "new"}});
//! let (ns, v) = namespace::read_key(meta.as_object().unwrap(), "turnId").unwrap();
//! assert_eq!((ns, v), (Namespace::Ua, &json!("new")));
//! assert_eq!(Namespace::Lody.method("session/steer"), "_lody/session/steer");
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::Map;

/// One spelling of the contract namespace.
///
/// # Example
///
/// ```
/// use acp_extension_core::Namespace;
///
/// assert_eq!(Namespace::Ua.method("session/steer"), "_ua/session/steer");
/// assert_eq!("lody".parse::<Namespace>().unwrap().key(), "lody");
/// assert!("acp".parse::<Namespace>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Namespace {
    /// `ua`: `_meta.ua.<feature>` and `_ua/<path>` (the seed's primary spelling).
    Ua,
    /// `lody`: `_meta.lody.<feature>` and `_lody/<path>` (what clients read today).
    #[default]
    Lody,
}

impl Namespace {
    /// Both namespaces in reading precedence: `ua` first.
    pub const ALL: [Namespace; 2] = [Namespace::Ua, Namespace::Lody];

    /// The `_meta` key: `"ua"` or `"lody"`.
    pub fn key(self) -> &'static str {
        match self {
            Namespace::Ua => "ua",
            Namespace::Lody => "lody",
        }
    }

    /// The method prefix: `"_ua/"` or `"_lody/"`.
    pub fn prefix(self) -> &'static str {
        match self {
            Namespace::Ua => "_ua/",
            Namespace::Lody => "_lody/",
        }
    }

    /// The wire method for a namespace-relative `path` such as `session/steer`.
    pub fn method(self, path: &str) -> String {
        format!("{}{path}", self.prefix())
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Error for a namespace name other than `ua` or `lody`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown namespace {0:?}: expected \"ua\" or \"lody\"")]
pub struct UnknownNamespace(pub String);

impl FromStr for Namespace {
    type Err = UnknownNamespace;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ua" => Ok(Namespace::Ua),
            "lody" => Ok(Namespace::Lody),
            other => Err(UnknownNamespace(other.to_owned())),
        }
    }
}

/// Which namespaces a writer uses: one, or both at once (capability
/// advertisement during the migration from `lody` to `ua`).
///
/// # Example
///
/// ```
/// use acp_extension_core::namespace::NamespaceSet;
/// use acp_extension_core::Namespace;
///
/// assert!(NamespaceSet::Both.contains(Namespace::Lody));
/// assert_eq!(NamespaceSet::Ua.namespaces(), [Namespace::Ua]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum NamespaceSet {
    /// Only `ua`.
    Ua,
    /// Only `lody`.
    #[default]
    Lody,
    /// Both spellings, with the same content.
    Both,
}

impl NamespaceSet {
    /// The namespaces in this set, `ua` first.
    pub fn namespaces(self) -> &'static [Namespace] {
        match self {
            NamespaceSet::Ua => &[Namespace::Ua],
            NamespaceSet::Lody => &[Namespace::Lody],
            NamespaceSet::Both => &Namespace::ALL,
        }
    }

    /// Whether `ns` is in the set.
    pub fn contains(self, ns: Namespace) -> bool {
        self.namespaces().contains(&ns)
    }
}

impl From<Namespace> for NamespaceSet {
    fn from(ns: Namespace) -> Self {
        match ns {
            Namespace::Ua => NamespaceSet::Ua,
            Namespace::Lody => NamespaceSet::Lody,
        }
    }
}

impl FromStr for NamespaceSet {
    type Err = UnknownNamespace;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "both" => Ok(NamespaceSet::Both),
            other => other.parse::<Namespace>().map(Into::into),
        }
    }
}

/// Splits an extension method into its namespace and path.
///
/// Accepts `_ua/…`, `_lody/…` and the same without the leading underscore
/// (some SDK dispatch paths strip it). Returns `None` for anything else.
///
/// ```
/// use acp_extension_core::namespace::{split_method, Namespace};
/// assert_eq!(split_method("lody/subagents/event"), Some((Namespace::Lody, "subagents/event")));
/// assert_eq!(split_method("_ua/session/steer"), Some((Namespace::Ua, "session/steer")));
/// assert_eq!(split_method("session/prompt"), None);
/// ```
pub fn split_method(method: &str) -> Option<(Namespace, &str)> {
    let m = method.strip_prefix('_').unwrap_or(method);
    for ns in Namespace::ALL {
        if let Some(path) = m
            .strip_prefix(ns.key())
            .and_then(|rest| rest.strip_prefix('/'))
        {
            return Some((ns, path));
        }
    }
    None
}

/// The contract object under `_meta.<ns>` for one namespace, if it is an object.
pub fn section(meta: &Map, ns: Namespace) -> Option<&Map> {
    meta.get(ns.key()).and_then(Value::as_object)
}

/// Reads `_meta.<ns>.<key>` with `ua` taking precedence over `lody`.
pub fn read_key<'a>(meta: &'a Map, key: &str) -> Option<(Namespace, &'a Value)> {
    Namespace::ALL
        .into_iter()
        .find_map(|ns| section(meta, ns).and_then(|m| m.get(key)).map(|v| (ns, v)))
}

/// Writes `_meta.<ns>.<key> = value`, creating (or replacing a non-object)
/// `_meta.<ns>` and keeping every other key.
pub fn write_key(meta: &mut Map, ns: Namespace, key: &str, value: Value) {
    let entry = meta
        .entry(ns.key())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(m) = entry {
        m.insert(key.to_owned(), value);
    }
}

/// Removes `_meta.<ns>.<key>` from both namespaces; returns the value that
/// reading would have produced.
pub(crate) fn remove_key(meta: &mut Map, key: &str) -> Option<Value> {
    let mut found = None;
    for ns in Namespace::ALL {
        if let Some(Value::Object(m)) = meta.get_mut(ns.key())
            && let Some(v) = m.shift_remove(key)
            && found.is_none()
        {
            found = Some(v);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ua_wins_over_lody_for_the_same_key() {
        let meta = json!({"lody": {"a": 1, "b": 2}, "ua": {"a": 3}});
        let meta = meta.as_object().unwrap();
        assert_eq!(read_key(meta, "a"), Some((Namespace::Ua, &json!(3))));
        assert_eq!(read_key(meta, "b"), Some((Namespace::Lody, &json!(2))));
        assert_eq!(read_key(meta, "c"), None);
    }

    #[test]
    fn non_object_sections_are_ignored_and_replaced_on_write() {
        let mut meta = json!({"lody": 5}).as_object().unwrap().clone();
        assert_eq!(read_key(&meta, "a"), None);
        write_key(&mut meta, Namespace::Lody, "a", json!(true));
        assert_eq!(Value::Object(meta), json!({"lody": {"a": true}}));
    }

    #[test]
    fn methods_split_with_or_without_underscore() {
        assert_eq!(split_method("_lody/x/y"), Some((Namespace::Lody, "x/y")));
        assert_eq!(split_method("ua/x"), Some((Namespace::Ua, "x")));
        assert_eq!(split_method("_lodyx/y"), None);
        assert_eq!(split_method("_other/x"), None);
        assert_eq!(split_method(""), None);
    }

    #[test]
    fn namespace_sets_parse() {
        assert_eq!("both".parse::<NamespaceSet>(), Ok(NamespaceSet::Both));
        assert_eq!("ua".parse::<NamespaceSet>(), Ok(NamespaceSet::Ua));
        assert!("x".parse::<NamespaceSet>().is_err());
    }
}
