//! The extension features `serve` implements and their advertisement.

use acp_extension_core::capabilities::{
    AgentExtensionCapabilities, ConfigPolicy, Feature, GoalAction, GoalCapability,
    RateLimitsCapability, Side, SteeringCapability, SteeringTransport, SubagentCapability,
    TaskCapability, UpstreamTurn, VersionOneCapability,
};
use acp_extension_core::wire::True;

/// Every feature `serve` implements, in advertisement order: all of the
/// contract's agent-side features (`mcpApps` included).
fn implemented() -> impl Iterator<Item = Feature> {
    Feature::ALL
        .into_iter()
        .filter(|f| f.side().allows(Side::Agent))
}

/// A capability key `serve` implements.
fn implemented_key(key: &str) -> Option<Feature> {
    implemented().find(|f| f.key() == key)
}

/// A `--only` entry that is no feature `serve` implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFeature(pub String);

impl std::fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown or unimplemented feature {:?}; serve implements: {}",
            self.0,
            implemented()
                .map(Feature::key)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl std::error::Error for UnknownFeature {}

/// Parses one `--only` entry: the capability key of a feature `serve`
/// implements (every agent-side feature of the contract).
pub fn parse_feature(key: &str) -> Result<String, UnknownFeature> {
    let key = key.trim();
    implemented_key(key)
        .map(|f| f.key().to_owned())
        .ok_or_else(|| UnknownFeature(key.to_owned()))
}

/// Parses a `--only` list (`usage,steering`; spaces and empty items ignored).
pub fn parse_features(list: &str) -> Result<Vec<String>, UnknownFeature> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some(known) = implemented_key(item) else {
            return Err(UnknownFeature(item.to_owned()));
        };
        if !out.iter().any(|f: &String| f == known.key()) {
            out.push(known.key().to_owned());
        }
    }
    Ok(out)
}

/// The set of features this agent advertises.
#[derive(Debug, Clone)]
pub(crate) struct Advertised(Vec<Feature>);

impl Advertised {
    pub(crate) fn new(only: Option<&[String]>) -> Result<Self, UnknownFeature> {
        match only {
            None => Ok(Self(implemented().collect())),
            Some(list) => {
                for item in list {
                    if implemented_key(item).is_none() {
                        return Err(UnknownFeature(item.clone()));
                    }
                }
                // Keep the advertisement order stable.
                Ok(Self(
                    implemented()
                        .filter(|f| list.iter().any(|k| k == f.key()))
                        .collect(),
                ))
            }
        }
    }

    /// Whether `feature` is advertised.
    pub(crate) fn has(&self, feature: Feature) -> bool {
        self.0.contains(&feature)
    }

    /// The extension capability object (the value of `_meta.<ns>`).
    pub(crate) fn capabilities(&self) -> AgentExtensionCapabilities {
        let mut caps = AgentExtensionCapabilities::new();
        let v1 = VersionOneCapability::new;
        for f in &self.0 {
            caps = match f {
                Feature::SubagentEvents => caps.subagent_events(v1()),
                Feature::SessionTitle => caps.session_title(v1()),
                Feature::Usage => caps.usage(v1()),
                Feature::RateLimits => caps.rate_limits(RateLimitsCapability::new().query(True)),
                Feature::ForkAtTurn => caps.fork_at_turn(v1()),
                Feature::Steering => caps.steering(SteeringCapability::new(
                    SteeringTransport::Request,
                    UpstreamTurn::Same,
                    ConfigPolicy::Active,
                )),
                Feature::Tasks => {
                    caps.tasks(TaskCapability::new().background(True).scheduled(True))
                }
                Feature::Subagents => caps.subagents(
                    SubagentCapability::new(True)
                        .list(True)
                        .cancel(True)
                        .output(True),
                ),
                Feature::Goal => caps.goal(
                    GoalCapability::new(vec![
                        GoalAction::Set,
                        GoalAction::Pause,
                        GoalAction::Resume,
                        GoalAction::Clear,
                    ])
                    .control_actions(vec![GoalAction::Pause, GoalAction::Clear])
                    .prompt_actions(vec![
                        GoalAction::Set,
                        GoalAction::Pause,
                        GoalAction::Resume,
                        GoalAction::Clear,
                    ]),
                ),
                Feature::Compaction => caps.compaction(v1()),
                Feature::SessionHistory => caps.session_history(v1()),
                Feature::WorktreeProject => caps.worktree_project(v1()),
                Feature::SessionActivity => caps.session_activity(v1()),
                Feature::SessionConfig => caps.session_config(v1()),
                Feature::McpApps => caps.mcp_apps(v1()),
                _ => caps,
            };
        }
        caps
    }
}
