//! One root session's Core subagent events as the standard dialect says
//! them: `subagent_update`s and the children's own `session/update`s.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ErrorStopReason, IdleStateUpdate, IdleStopReason, RunningStateUpdate,
    SessionCancelCapabilities, SessionId, SessionNotification, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, UnknownStateUpdate,
};

use super::child_session_id;
use crate::subagent_events::{
    SubagentEvent, SubagentEventPayload, SubagentSnapshot, SubagentState,
};
use crate::wire::MaybeUndefined;

/// What was last written of one run.
#[derive(Debug, Clone)]
struct Child {
    session: SessionId,
    /// Where its `subagent_update`s go (the root, or the parent run's
    /// child session).
    parent: SessionId,
    title: Option<String>,
    description: Option<String>,
    cancel: bool,
    state: StateUpdate,
}

/// One root session's subagent runs, written in the standard dialect:
/// each Core [`SubagentEvent`] becomes the standard notifications a
/// client of `subagent_update` reads (see the [module
/// docs](super#what-the-standard-dialect-loses) for the mapping and
/// what it loses).
///
/// ```
/// use acp_extension_core::standard::StandardSubagents;
/// use acp_extension_core::subagent_events::{
///     OutputRead, SubagentEvent, SubagentSnapshot, SubagentState, SubagentSupport,
/// };
/// use acp_extension_core::wire::NonEmptyString;
///
/// let mut runs = StandardSubagents::new("root");
/// let support = SubagentSupport::new(vec![], false, OutputRead::None, true);
/// let snapshot = SubagentSnapshot::new(SubagentState::Running, support)
///     .name("Explorer".to_owned())
///     .parent_run_id(None);
/// let event = SubagentEvent::new(NonEmptyString::new("root")?, NonEmptyString::new("run-1")?, snapshot);
/// let out = runs.event(&event);
/// assert_eq!(serde_json::to_value(&out[0])?, serde_json::json!({
///     "sessionId": "root",
///     "update": {"sessionUpdate": "subagent_update", "sessionId": "root:subagent:run-1",
///         "title": "Explorer", "capabilities": {"cancel": {}}, "state": {"state": "running"}}}));
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct StandardSubagents {
    root: SessionId,
    children: HashMap<String, Child>,
}

impl StandardSubagents {
    /// The runs of root session `root`.
    pub fn new(root: impl Into<SessionId>) -> Self {
        Self {
            root: root.into(),
            children: HashMap::new(),
        }
    }

    /// The child session of run `run_id`, once announced.
    pub fn child_session(&self, run_id: &str) -> Option<&SessionId> {
        self.children.get(run_id).map(|c| &c.session)
    }

    /// The run whose child session is `session_id` (a client cancels a
    /// child with `session/cancel` on its session).
    pub fn run_of(&self, session_id: &str) -> Option<&str> {
        self.children
            .iter()
            .find(|(_, c)| &*c.session.0 == session_id)
            .map(|(run, _)| run.as_str())
    }

    /// The notifications that carry `event` to a standard client, in
    /// order (none for progress, for a change of nothing the dialect
    /// carries, for output of a run not announced, and for an event of
    /// another root session).
    pub fn event(&mut self, event: &SubagentEvent) -> Vec<SessionNotification> {
        if event.session_id.as_str() != &*self.root.0 {
            return Vec::new();
        }
        match &event.payload {
            SubagentEventPayload::Snapshot(s) => self.snapshot(event.run_id.as_str(), s),
            SubagentEventPayload::Output(o) => {
                let Some(child) = self.children.get(event.run_id.as_str()) else {
                    return Vec::new();
                };
                match SessionUpdate::try_from(o.update.clone()) {
                    Ok(update) => vec![SessionNotification::new(child.session.clone(), update)],
                    Err(_) => Vec::new(),
                }
            }
            SubagentEventPayload::Progress(_) => Vec::new(),
            #[allow(unreachable_patterns)]
            _ => Vec::new(),
        }
    }

    fn snapshot(&mut self, run_id: &str, s: &SubagentSnapshot) -> Vec<SessionNotification> {
        let state = state_update(s);
        let cancel = s.support.cancel;
        if let Some(child) = self.children.get_mut(run_id) {
            let mut patch = SubagentUpdate::new(child.session.clone());
            let mut changed = false;
            if s.name != child.title {
                patch = patch.title(s.name.clone());
                child.title.clone_from(&s.name);
                changed = true;
            }
            if s.description != child.description {
                patch = patch.description(s.description.clone());
                child.description.clone_from(&s.description);
                changed = true;
            }
            if cancel != child.cancel {
                patch = patch.capabilities(capabilities(cancel));
                child.cancel = cancel;
                changed = true;
            }
            if state != child.state {
                patch = patch.state(state.clone());
                child.state = state;
                changed = true;
            }
            if !changed {
                return Vec::new();
            }
            let parent = child.parent.clone();
            return vec![SessionNotification::new(
                parent,
                SessionUpdate::SubagentUpdate(patch),
            )];
        }
        // The first snapshot announces the run, on its parent.
        let parent = match &s.parent_run_id {
            MaybeUndefined::Null => self.root.clone(),
            MaybeUndefined::Value(p) => match self.children.get(p) {
                Some(c) => c.session.clone(),
                None => return Vec::new(),
            },
            MaybeUndefined::Undefined => return Vec::new(),
        };
        let session = child_session_id(&self.root.0, run_id);
        let mut update = SubagentUpdate::new(session.clone())
            .capabilities(capabilities(cancel))
            .state(state.clone());
        if let Some(t) = &s.name {
            update = update.title(t.clone());
        }
        if let Some(d) = &s.description {
            update = update.description(d.clone());
        }
        self.children.insert(
            run_id.to_owned(),
            Child {
                session,
                parent: parent.clone(),
                title: s.name.clone(),
                description: s.description.clone(),
                cancel,
                state,
            },
        );
        vec![SessionNotification::new(
            parent,
            SessionUpdate::SubagentUpdate(update),
        )]
    }
}

fn capabilities(cancel: bool) -> SubagentSessionCapabilities {
    SubagentSessionCapabilities::new().cancel(cancel.then(SessionCancelCapabilities::new))
}

/// The standard state of a Core snapshot.
fn state_update(s: &SubagentSnapshot) -> StateUpdate {
    let idle =
        |reason: IdleStopReason| StateUpdate::Idle(IdleStateUpdate::new().stop_reason(reason));
    match s.state {
        SubagentState::Pending | SubagentState::Running => {
            StateUpdate::Running(RunningStateUpdate::new())
        }
        SubagentState::Completed => idle(IdleStopReason::EndTurn),
        SubagentState::Cancelled => idle(IdleStopReason::Cancelled),
        SubagentState::Failed => {
            let message = s.reason.as_ref().map_or_else(
                || "Subagent work failed".to_owned(),
                |r| r.message.clone().unwrap_or_else(|| r.code.to_string()),
            );
            idle(IdleStopReason::Error(ErrorStopReason::new().error(
                agent_client_protocol::v1::schema::Error::new(-32603, message),
            )))
        }
        _ => StateUpdate::Unknown(UnknownStateUpdate::new()),
    }
}
