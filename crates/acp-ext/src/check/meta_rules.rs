//! `_meta.<ns>` fields on standard messages and the time and percentage rules inside contract payloads.

use super::*;
use acp_extension_core::wire::WireEnum;

impl Checker {
    /// Rules that look at every `_meta.<ns>` section and at the contract
    /// payload (`ext`: `value` is an extension method's params or result).
    pub(super) fn common(
        &mut self,
        dir: Direction,
        value: &Value,
        at: &str,
        ext: bool,
        out: &mut Vec<Finding>,
    ) {
        // The epoch rules come from the library (the state records the
        // same): a payload's first, a `_meta` section's after its fields.
        if ext {
            epoch_rules(value, at, true, out);
        }
        let sections = acp_extension_core::meta::sections(value, at);
        for section in sections {
            if section.capabilities {
                continue;
            }
            let ns = section.namespace;
            let at = section.pointer.clone();
            self.namespace_use(dir, ns, &at, &|| format!("`_meta.{ns}`"), out);
            for key in section.fields.keys() {
                if acp_extension_core::meta::meta_field_info(key).is_none() {
                    out.push(Finding::of(
                        &rules::UNKNOWN_META_KEY,
                        child(&section.pointer, key),
                        format!(
                            "`_meta.{}.{key}` is not defined by the contract",
                            section.namespace.key()
                        ),
                    ));
                }
            }
            if ext {
                continue;
            }
            self.meta_fields(&section, out);
        }
        if !ext {
            epoch_rules(value, at, false, out);
        }
    }

    pub(super) fn meta_fields(
        &mut self,
        section: &acp_extension_core::meta::Section<'_>,
        out: &mut Vec<Finding>,
    ) {
        for (key, value) in section.fields {
            let at = child(&section.pointer, key);
            let what = format!("`_meta.{}.{key}`", section.namespace.key());
            match key.as_str() {
                "forkAtTurn" => {
                    self.need(Feature::ForkAtTurn, &what, &at, out);
                }
                "steer" => {
                    if let Some(FeatureOptions::Steering(c)) =
                        self.need(Feature::Steering, &what, &at, out)
                        && c.transport != SteeringTransport::Prompt
                    {
                        out.push(Finding::of(
                            &rules::FLAG_NOT_ADVERTISED,
                            &at,
                            format!(
                                "{what} is sent, but the agent's steering transport is `{}`",
                                c.transport.as_str()
                            ),
                        ));
                    }
                }
                "goal" => {
                    self.need(Feature::Goal, &what, &at, out);
                }
                "goalControl" => {
                    if let Some(FeatureOptions::Goal(c)) = self.need(Feature::Goal, &what, &at, out)
                        && let Some(action) = str_at(value, "action")
                    {
                        let listed = c
                            .prompt_actions
                            .as_ref()
                            .is_some_and(|a| a.iter().any(|x| x.as_str() == action));
                        if !listed {
                            out.push(Finding::of(
                                &rules::GOAL_ACTION_NOT_ADVERTISED,
                                child(&at, "action"),
                                format!("goal action `{action}` is sent in prompt metadata, but the agent's `goal.promptActions` does not list it"),
                            ));
                        }
                    }
                }
                "worktreeProject" => {
                    self.need(Feature::WorktreeProject, &what, &at, out);
                }
                "sessionConfig" => {
                    self.need(Feature::SessionConfig, &what, &at, out);
                }
                "usageScopeId" => {
                    self.need(Feature::Usage, &what, &at, out);
                }
                "mcpApp" => {
                    self.need(Feature::McpApps, &what, &at, out);
                }
                "titleSource" => {
                    self.need(Feature::SessionTitle, &what, &at, out);
                }
                "activity" if str_at(value, "kind") == Some("context_compaction") => {
                    self.need(Feature::Compaction, &what, &at, out);
                }
                "task" => {
                    self.task(value, &what, &at, out);
                }
                _ => {}
            }
        }
    }

    pub(super) fn task(&self, value: &Value, what: &str, at: &str, out: &mut Vec<Finding>) {
        let flag = match str_at(value, "kind") {
            Some("background") => "background",
            Some("scheduled") => "scheduled",
            _ => {
                // Subagent tasks: either task or subagent support will do.
                let tasks = self.support(Side::Agent, Feature::Tasks);
                let subagents = self.support(Side::Agent, Feature::Subagents);
                if matches!(tasks, Support::Missing) && matches!(subagents, Support::Missing) {
                    out.push(Finding::of(
                        &rules::NOT_ADVERTISED,
                        at,
                        format!("{what} is used, but the agent advertised neither `tasks` nor `subagents` in initialize"),
                    ));
                }
                return;
            }
        };
        if let Some(FeatureOptions::Tasks(c)) = self.need(Feature::Tasks, what, at, out) {
            let set = if flag == "background" {
                c.background.is_some()
            } else {
                c.scheduled.is_some()
            };
            if !set {
                out.push(Finding::of(
                    &rules::FLAG_NOT_ADVERTISED,
                    child(at, "kind"),
                    format!(
                        "a {flag} task is reported, but the agent's `tasks` lacks `{flag}: true`"
                    ),
                ));
            }
        }
    }

    pub(super) fn answer_notes(&self, params: &Value, out: &mut Vec<Finding>) {
        let Some(client) = self.client.as_ref() else {
            return;
        };
        let notes = matches!(
            client.get(Feature::Elicitation).and_then(|f| f.options()),
            Some(FeatureOptions::Elicitation(e)) if e.answer_notes.is_some()
        );
        if notes && self.client_form_elicitation {
            return;
        }
        let Some(props) = params
            .get("requestedSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        else {
            return;
        };
        for (key, prop) in props {
            let Some(meta) = prop.get("_meta").and_then(Value::as_object) else {
                continue;
            };
            if let Some((ns, e)) = namespace::read_key(meta, "elicitation")
                && e.get("noteFor").is_some()
            {
                let missing = if notes {
                    "standard form elicitation (`clientCapabilities.elicitation.form`)"
                } else {
                    "`elicitation: {version: 1, answerNotes: true}`"
                };
                out.push(Finding::of(
                    &rules::ANSWER_NOTES_NOT_ADVERTISED,
                    format!(
                        "{}/_meta/{}/elicitation/noteFor",
                        child("/params/requestedSchema/properties", key),
                        ns.key()
                    ),
                    format!(
                        "a note property is sent, but the client did not advertise {missing}; keep the legacy custom-answer flow"
                    ),
                ));
            }
        }
    }
}

/// The library's epoch rules ([`acp_extension_core::meta::epoch_findings`])
/// as findings.
fn epoch_rules(value: &Value, at: &str, ext: bool, out: &mut Vec<Finding>) {
    use acp_extension_core::meta::{EpochRule, epoch_findings};
    for f in epoch_findings(value, at, ext) {
        let rule = match f.rule {
            EpochRule::Milliseconds => &rules::EPOCH_MILLISECONDS,
            EpochRule::Fractional => &rules::EPOCH_FRACTIONAL,
            _ => &rules::EPOCH_ZERO,
        };
        out.push(Finding::of(rule, f.pointer, f.message));
    }
}
