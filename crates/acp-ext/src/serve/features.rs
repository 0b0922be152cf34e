//! The extension features `serve` implements and their advertisement.

use serde_json::{Value, json};

/// Every agent capability key `serve` implements, in advertisement order.
/// `mcpApps` is not implemented and never advertised.
pub const FEATURES: &[&str] = &[
    "subagentEvents",
    "sessionTitle",
    "usage",
    "rateLimits",
    "forkAtTurn",
    "steering",
    "tasks",
    "subagents",
    "goal",
    "compaction",
    "sessionHistory",
    "worktreeProject",
    "sessionActivity",
    "sessionConfig",
];

/// A `--only` entry that is not one of [`FEATURES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFeature(pub String);

impl std::fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown or unimplemented feature {:?}; serve implements: {}",
            self.0,
            FEATURES.join(", ")
        )
    }
}

impl std::error::Error for UnknownFeature {}

/// Parses a `--only` list (`usage,steering`; spaces and empty items ignored).
pub fn parse_features(list: &str) -> Result<Vec<String>, UnknownFeature> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some(known) = FEATURES.iter().find(|f| **f == item) else {
            return Err(UnknownFeature(item.to_owned()));
        };
        if !out.iter().any(|f: &String| f == known) {
            out.push((*known).to_owned());
        }
    }
    Ok(out)
}

/// The set of features this agent advertises.
#[derive(Debug, Clone)]
pub(crate) struct Advertised(Vec<&'static str>);

impl Advertised {
    pub(crate) fn new(only: Option<&[String]>) -> Result<Self, UnknownFeature> {
        match only {
            None => Ok(Self(FEATURES.to_vec())),
            Some(list) => {
                let mut out = Vec::new();
                for item in list {
                    let Some(known) = FEATURES.iter().find(|f| **f == item.as_str()) else {
                        return Err(UnknownFeature(item.clone()));
                    };
                    out.push(*known);
                }
                // Keep the advertisement order stable.
                Ok(Self(
                    FEATURES.iter().copied().filter(|f| out.contains(f)).collect(),
                ))
            }
        }
    }

    /// Whether `feature` is advertised.
    pub(crate) fn has(&self, feature: &str) -> bool {
        self.0.contains(&feature)
    }

    /// The extension capability object (the value of `_meta.<ns>`).
    pub(crate) fn capabilities(&self) -> Value {
        let mut obj = serde_json::Map::new();
        for f in &self.0 {
            obj.insert((*f).to_owned(), capability(f));
        }
        Value::Object(obj)
    }
}

fn capability(feature: &str) -> Value {
    match feature {
        "rateLimits" => json!({"version": 1, "query": true}),
        "steering" => json!({
            "version": 1,
            "transport": "request",
            "upstreamTurn": "same",
            "configPolicy": "active"
        }),
        "tasks" => json!({"version": 1, "background": true, "scheduled": true}),
        "subagents" => json!({
            "version": 1,
            "lifecycle": true,
            "list": true,
            "cancel": true,
            "output": true
        }),
        "goal" => json!({
            "version": 1,
            "actions": ["set", "pause", "resume", "clear"],
            "controlActions": ["pause", "clear"],
            "promptActions": ["set", "pause", "resume", "clear"]
        }),
        _ => json!({"version": 1}),
    }
}
