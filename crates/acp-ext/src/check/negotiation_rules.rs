//! What each peer advertised, and the rules that need it.

use super::*;

impl Checker {
    pub(super) fn support(&self, side: Side, feature: Feature) -> Support<'_> {
        let adv = match side {
            Side::Agent => self.agent.as_ref(),
            _ => self.client.as_ref(),
        };
        match adv {
            None => Support::Unknown,
            Some(a) => match a.get(feature).and_then(|f| f.options()) {
                Some(o) => Support::Present(o),
                None => Support::Missing,
            },
        }
    }

    /// Reports `feature` unless each peer that must advertise it did (as
    /// far as known); returns the agent's options when the agent advertised
    /// it.
    pub(super) fn need(
        &self,
        feature: Feature,
        what: &str,
        at: &str,
        out: &mut Vec<Finding>,
    ) -> Option<&FeatureOptions> {
        let rule = if feature == Feature::SubagentEvents {
            &rules::SUBAGENT_EVENTS_NOT_NEGOTIATED
        } else {
            &rules::NOT_ADVERTISED
        };
        let sides: &[Side] = match feature.side() {
            FeatureSide::AgentOnly => &[Side::Agent],
            FeatureSide::ClientOnly => &[Side::Client],
            _ => &[Side::Agent, Side::Client],
        };
        let mut agent_options = None;
        for &side in sides {
            match self.support(side, feature) {
                Support::Unknown => {}
                Support::Missing => {
                    let both = if sides.len() > 1 {
                        " (both peers must)"
                    } else {
                        ""
                    };
                    out.push(Finding::of(
                        rule,
                        at,
                        format!(
                            "{what} is used, but the {side} did not advertise `{feature}` in initialize{both}"
                        ),
                    ));
                }
                Support::Present(o) => {
                    if side == Side::Agent {
                        agent_options = Some(o);
                    }
                }
            }
        }
        agent_options
    }
}

/// The capabilities object of `side` in an initialize message and its key.
pub(super) fn capabilities_of(message: &Value, side: Side) -> (&'static str, Option<&Value>) {
    let key = side.capabilities_key();
    match message.get(key) {
        Some(c) => (key, Some(c)),
        None => ("capabilities", message.get("capabilities")),
    }
}

pub(super) fn advertisement_findings(adv: &Advertisement, prefix: &str, out: &mut Vec<Finding>) {
    for p in &adv.problems {
        let rule = match p.kind {
            ProblemKind::UnknownKey => &rules::UNKNOWN_META_KEY,
            ProblemKind::WrongSide => &rules::WRONG_SIDE_CAPABILITY,
            // Reported by `shape` already.
            _ => continue,
        };
        out.push(Finding::of(
            rule,
            format!("{prefix}{}", p.pointer),
            p.message.clone(),
        ));
    }
}
