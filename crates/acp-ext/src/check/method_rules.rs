//! Extension methods and standard calls: shapes, advertisement and options, steering, results.

use super::*;
use acp_extension_core::methods::ContractMethod;
use acp_extension_core::wire::WireEnum;

impl Checker {
    /// The rules of a request or notification. Params are read only by
    /// the rules that need them (a typed event's tree is never built).
    pub(super) fn on_call(
        &mut self,
        dir: Direction,
        method: &str,
        call: &Call<'_>,
        out: &mut Vec<Finding>,
    ) {
        // The state's own rule: a standard call it cannot fold (the
        // params are built only for a method it has rules for).
        if acp_extension_core::state::call_has_rules(method) {
            for v in acp_extension_core::state::call_violations(method, call.params.tree()) {
                out.push(Finding::of(
                    &rules::SHAPE,
                    v.pointer.as_str(),
                    format!("`{method}`: `{}` {}", v.pointer, v.rule),
                ));
            }
        }
        match method {
            "initialize" => {
                self.agent = None;
                let (key, caps) = capabilities_of(call.params.tree(), Side::Client);
                if let Some(adv) = &self.client {
                    advertisement_findings(adv, &format!("/params/{key}"), out);
                }
                self.client_form_elicitation = caps
                    .and_then(|c| c.get("elicitation"))
                    .and_then(|e| e.get("form"))
                    .is_some_and(Value::is_object);
                self.client_reads = Some(namespace_rules::Reader::of(caps.unwrap_or(&NULL)));
                self.agent_reads = None;
                self.written = Default::default();
            }
            "session/update" => self.session_update(call.params.tree(), out),
            "elicitation/create" if dir != Direction::ClientToAgent => {
                self.answer_notes(call.params.tree(), out)
            }
            _ if method.starts_with("_acp_ext:") => {
                if acp_extension_core::state::is_legacy_method(method) {
                    out.push(Finding::of(
                        &rules::LEGACY_METHOD,
                        "/method",
                        format!("`{method}` is the legacy 0.0.5 API, which the contract forbids adapters to emit"),
                    ));
                } else {
                    out.push(Finding::of(
                        &rules::UNKNOWN_METHOD,
                        "/method",
                        format!("`{method}` is not a method of the contract"),
                    ));
                }
            }
            _ => {
                if let Some((_, path)) = split_method(method)
                    && method_kind(method).is_some()
                {
                    self.extension(method, path, call, out);
                }
            }
        }
    }

    pub(super) fn session_update(&mut self, params: &Value, out: &mut Vec<Finding>) {
        // The state's own rule: an update it cannot place.
        let update = match acp_extension_core::state::session_update_parts(params) {
            Ok((_, update)) => update,
            Err(v) => {
                out.push(Finding::of(
                    &rules::SHAPE,
                    v.pointer.as_str(),
                    format!("`session/update`: `{}` {}; the update names no session it can be placed in", v.pointer, v.rule),
                ));
                return;
            }
        };
        // The standard shapes the state folds, by the state's own rule.
        for v in acp_extension_core::state::standard_update_violations(update) {
            out.push(Finding::of(
                &rules::SHAPE,
                v.pointer.as_str(),
                format!(
                    "`{}`: `{}` {}",
                    str_at(update, "sessionUpdate").unwrap_or(""),
                    v.pointer,
                    v.rule
                ),
            ));
        }
        // What the state adjusts of claude's rate limit, by its own rule.
        if str_at(update, "sessionUpdate") == Some("usage_update")
            && let Some(info) = update.get("_meta").and_then(|m| m.get("_claude/rateLimit"))
        {
            for v in acp_extension_core::standard::claude_rate_limit_adjustments(info) {
                let rule = match v.rule.id() {
                    "utilization-clamped" => &rules::UTILIZATION_CLAMPED,
                    _ => &rules::EPOCH_MILLISECONDS,
                };
                out.push(Finding::of(
                    rule,
                    format!("/params/update/_meta/_claude~1rateLimit{}", v.pointer),
                    v.rule.to_string(),
                ));
            }
        }
        if let Some(tag) = str_at(update, "sessionUpdate")
            && !acp_extension_core::state::is_known_session_update(tag)
        {
            out.push(Finding::of(
                &rules::UNKNOWN_SESSION_UPDATE,
                "/params/update/sessionUpdate",
                format!("`{tag}` is not a session update of ACP (v1 or v2) or of a dialect the consumer state reads"),
            ));
        }
        match str_at(update, "sessionUpdate") {
            Some("session_info_update")
                if update.get("title").is_some_and(Value::is_string)
                    && matches!(
                        self.support(Side::Agent, Feature::SessionTitle),
                        Support::Present(_)
                    ) =>
            {
                let tagged = update
                    .get("_meta")
                    .and_then(Value::as_object)
                    .and_then(|m| namespace::read_key(m, "titleSource"))
                    .is_some();
                if !tagged {
                    out.push(Finding::of(
                        &rules::TITLE_WITHOUT_SOURCE,
                        "/params/update/title",
                        "a title without `_meta.<ns>.titleSource` from an agent that advertised `sessionTitle`; version 1 requires tagged titles",
                    ));
                }
            }
            _ => {}
        }
    }

    pub(super) fn extension(
        &mut self,
        method: &str,
        path: &str,
        call: &Call<'_>,
        out: &mut Vec<Finding>,
    ) {
        let what = format!("`{method}`");
        let at = "/method";
        // The feature each method needs: the library's one map.
        let Some(feature) = acp_extension_core::methods::method_info(path).map(|m| m.feature)
        else {
            return;
        };
        let needs = if feature == Feature::SubagentEvents {
            "subagent events"
        } else {
            &what
        };
        let options = self.need(feature, needs, at, out).cloned();
        let Some(contract) = acp_extension_core::methods::contract_method(method) else {
            return;
        };
        match contract {
            ContractMethod::RateLimitsGet => {
                if let Some(FeatureOptions::RateLimits(c)) = &options
                    && c.query.is_none()
                {
                    out.push(Finding::of(
                        &rules::FLAG_NOT_ADVERTISED,
                        at,
                        format!("{what} is sent, but the agent's `rateLimits` lacks `query: true`"),
                    ));
                }
            }
            ContractMethod::SessionSteer => {
                if let Some(FeatureOptions::Steering(c)) = &options
                    && c.transport != SteeringTransport::Request
                {
                    out.push(Finding::of(
                        &rules::FLAG_NOT_ADVERTISED,
                        at,
                        format!(
                            "{what} is sent, but the agent's steering transport is `{}`",
                            c.transport.as_str()
                        ),
                    ));
                }
            }
            ContractMethod::SessionGoal => {
                if let Some(FeatureOptions::Goal(c)) = &options
                    && let Some(action) = str_at(call.params.tree(), "action")
                {
                    let listed = c
                        .control_actions
                        .as_ref()
                        .is_some_and(|a| a.iter().any(|x| x.as_str() == action));
                    if !listed {
                        out.push(Finding::of(
                            &rules::GOAL_ACTION_NOT_ADVERTISED,
                            "/params/action",
                            format!(
                                "goal action `{action}` is sent on {what}, but the agent's `goal.controlActions` does not list it"
                            ),
                        ));
                    }
                }
            }
            ContractMethod::SubagentsList
            | ContractMethod::SubagentsCancel
            | ContractMethod::SubagentsOutput => {
                if let Some(FeatureOptions::Subagents(c)) = &options {
                    let (flag, set) = match contract {
                        ContractMethod::SubagentsList => ("list", c.list.is_some()),
                        ContractMethod::SubagentsCancel => ("cancel", c.cancel.is_some()),
                        _ => ("output", c.output.is_some()),
                    };
                    if !set {
                        out.push(Finding::of(
                            &rules::FLAG_NOT_ADVERTISED,
                            at,
                            format!(
                                "{what} is sent, but the agent's `subagents` lacks `{flag}: true`"
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_result(
        &mut self,
        method: Option<&str>,
        result: &Value,
        out: &mut Vec<Finding>,
    ) {
        // The state's own rule: a result it cannot read.
        if let Some(m) = method
            && let Some(v) = acp_extension_core::state::result_violation(m, result)
        {
            out.push(Finding::of(
                &rules::SHAPE,
                v.pointer.as_str(),
                format!(
                    "the `{m}` result{}",
                    acp_extension_core::state::result_words(&v)
                ),
            ));
            return;
        }
        if method == Some("initialize") {
            let (key, caps) = capabilities_of(result, Side::Agent);
            if let Some(adv) = &self.agent {
                advertisement_findings(adv, &format!("/result/{key}"), out);
            }
            self.agent_reads = Some(namespace_rules::Reader::of(caps.unwrap_or(&NULL)));
        }
    }
}
