//! How the contract's own methods change the state: its requests and
//! notifications, subagent events among them.

use serde_json::Value;

use super::runs::EventSource;
use super::*;
use crate::capabilities::Feature;
use crate::connection::{EventLine, SiftedOutput};
use crate::methods::{
    ContractMethod, ExtensionNotification, ExtensionRequest, contract_method, method_kind,
};
use crate::subagent_events::SubagentEvent;

/// What the connection read of a call's JSON tree as a subagent event
/// ([`crate::connection::Params::event`]), so that the state reads it no
/// second time.
#[derive(Debug, Clone, Copy)]
pub(super) enum TreeEvent<'a> {
    /// Not read (another call, or params the state changed first).
    Unread,
    /// A valid event.
    Valid(&'a SubagentEvent),
    /// An event that breaks the contract.
    Invalid,
}

impl ConnectionState {
    pub(super) fn extension_call(
        &mut self,
        method: &str,
        params: &Value,
        read: TreeEvent<'_>,
        out: &mut Changes,
    ) {
        let sid = str_at(params, "sessionId");
        if method_kind(method) == Some(crate::methods::MethodKind::Request) {
            match ExtensionRequest::parse(method, params) {
                Ok(Some((_, ExtensionRequest::SessionSteer(r)))) => {
                    let (sid, steer_id) = (r.session_id.clone(), r.steer_id.clone());
                    self.steer(&sid, &steer_id, "request", SteerStatus::Pending, out);
                }
                // Goal control, queries: read; the state changes through
                // the agent's updates and the answers.
                Ok(_) => out.ignore(IgnoredKind::Call, || Change::Seen {
                    method: Some(method.to_owned()),
                }),
                Err(e) => {
                    let sid = sid.map(str::to_owned);
                    self.violations(out, method, sid.as_deref(), "/params", &e.violations, false)
                }
            }
            return;
        }
        let parsed = match read {
            TreeEvent::Valid(event) => {
                return self.core_event(method, event, EventSource::Tree(params), out);
            }
            TreeEvent::Invalid => match crate::methods::subagent_event_violations(method, params) {
                Some(e) => Err(e),
                None => ExtensionNotification::parse(method, params),
            },
            TreeEvent::Unread => ExtensionNotification::parse(method, params),
        };
        match parsed {
            Ok(Some((_, n))) => self.extension_notification(method, n, params, out),
            Ok(None) => out.ignore(IgnoredKind::Call, || Change::Seen {
                method: Some(method.to_owned()),
            }),
            Err(e) => {
                let sid = sid.map(str::to_owned);
                if let Some(sid) = sid.as_deref()
                    && contract_method(method) == Some(ContractMethod::SessionUsageUpdate)
                    && let Some(stripped) = legacy::without_bad_scope(params, &e.violations)
                    && let Ok(Some((_, n))) = ExtensionNotification::parse(method, &stripped)
                {
                    // An invalid scope id falls back to unscoped (the Lody
                    // client's rule), reported.
                    self.record(
                        out,
                        Record::new(
                            "/params/_meta",
                            "scope-id-fallback",
                            "invalid `usageScopeId`; the update is folded as unscoped".to_owned(),
                        )
                        .method(method)
                        .session(sid)
                        .folded(),
                    );
                    self.extension_notification(method, n, &stripped, out);
                    return;
                }
                self.violations(out, method, sid.as_deref(), "/params", &e.violations, false);
                // An output event that cannot be read still means the live
                // run it names has output the state does not hold.
                if contract_method(method) == Some(ContractMethod::SubagentEvent)
                    && str_at(params, "type") == Some("output")
                    && let (Some(sid), Some(run_id)) = (sid, str_at(params, "runId"))
                    && let Some(run) = self.run_mut(&sid, run_id)
                    && run.is_live()
                    && !run.output_incomplete
                {
                    run.output_incomplete = true;
                    out.add(|| Change::SubagentRun {
                        session_id: sid,
                        run_id: run_id.to_owned(),
                    });
                }
            }
        }
    }

    /// A valid `subagents/event` (read from its JSON tree or straight
    /// into its type): folded when the agent advertised subagent events.
    pub(super) fn core_event(
        &mut self,
        method: &str,
        event: &SubagentEvent,
        source: EventSource<'_>,
        out: &mut Changes,
    ) {
        if !self.refuses_core_events(method, event.session_id.as_str(), out) {
            self.subagent_event(method, event, source, out);
        }
    }

    /// [`Self::core_event`] of a text chunk or a tool call read from its
    /// line, unbuilt.
    pub(super) fn core_sifted_output(
        &mut self,
        method: &str,
        line: &EventLine,
        output: SiftedOutput<'_>,
        out: &mut Changes,
    ) {
        let (sid, facts) = (line.session_id(), line.facts());
        if !self.refuses_core_events(method, sid, out) {
            self.subagent_sifted_output(sid, facts.run_id.unwrap_or(""), output, out);
        }
    }

    /// Records and drops a Core subagent event from an agent that did not
    /// advertise `subagentEvents`: whether it did.
    fn refuses_core_events(&mut self, method: &str, sid: &str, out: &mut Changes) -> bool {
        if !self.agent_lacks(Feature::SubagentEvents) {
            return false;
        }
        self.record(
            out,
            Record::new(
                "/method",
                "not-negotiated",
                "a subagent event from an agent that did not advertise `subagentEvents`; dropped"
                    .to_owned(),
            )
            .method(method)
            .session(sid),
        );
        true
    }

    pub(super) fn extension_notification(
        &mut self,
        method: &str,
        n: ExtensionNotification,
        params: &Value,
        out: &mut Changes,
    ) {
        match n {
            ExtensionNotification::SubagentEvent(event) => {
                self.core_event(method, &event, EventSource::Tree(params), out)
            }
            ExtensionNotification::SessionUsageUpdate(u) => {
                self.usage_update(method, &u, params, Dialect::Extension, out)
            }
            ExtensionNotification::RateLimitsUpdate(snapshot) => {
                self.upsert_rate_limits(snapshot, Dialect::Extension, out)
            }
            ExtensionNotification::SessionSteerApplied(a) => {
                let (sid, steer_id) = (a.session_id.clone(), a.steer_id.clone());
                let transport = self
                    .session(&sid)
                    .and_then(|s| s.steers.get(&steer_id))
                    .map_or("request".to_owned(), |s| s.transport.clone());
                self.steer(&sid, &steer_id, &transport, SteerStatus::Applied, out);
            }
            ExtensionNotification::SessionActivityUpdate(a) => {
                let sid = a.session_id.clone();
                let s = self.session_mut(&sid);
                s.activity.state = Some(a.state);
                s.activity.background_task_count = Some(a.background_task_count.get());
                out.add(|| Change::Activity { session_id: sid });
            }
        }
    }

    // -----------------------------------------------------------------
    // session/update
}
