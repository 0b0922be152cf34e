//! Ending a subagent run early (cancelled by the client, by a closed
//! session, by a cancelled turn): the one path every caller shares, below
//! the script, the extension methods and the session methods.

use acp_extension_core::capabilities::Feature;
use acp_extension_core::meta::fields;
use acp_extension_core::namespace::Namespace;
use acp_extension_core::session::{TaskKind, TaskMeta, TaskStatus};
use acp_extension_core::subagent_emitter::SnapshotPatch;
use acp_extension_core::subagent_events::{SubagentReason, SubagentReasonCode, SubagentState};
use agent_client_protocol::v1::schema::{
    Meta, SessionUpdate, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};

use super::state::{Live, Shared};
use super::wire::MetaBuilder;
use crate::time;

pub(crate) const SUBAGENT_TOOL: &str = "Task";

/// `_meta.<ns>` of a tool call: its canonical tool name and, when `tasks`
/// is advertised, its task.
pub(crate) fn tool_meta(
    shared: &Shared,
    ns: Namespace,
    tool: &str,
    task: Option<TaskMeta>,
) -> Meta {
    let mut b = MetaBuilder::new(ns).with::<fields::ToolName>(tool.to_owned());
    if let Some(task) = task.filter(|_| shared.has(Feature::Tasks)) {
        b = b.with::<fields::Task>(task);
    }
    b.build()
}

/// Cancels one live subagent run: `cancelled` snapshot, task `killed`,
/// its tool call `failed`. Returns whether it was live.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cancel_run(
    shared: &Shared,
    ns: Namespace,
    events_on: bool,
    session_id: &str,
    live: &mut Live,
    task_id: &str,
    reason: &str,
) -> bool {
    if !live.runs.live(task_id) {
        return false;
    }
    let Some(record) = live.runs.get(task_id).cloned() else {
        return false;
    };
    let events = live.runs.finish(
        task_id,
        SubagentState::Cancelled,
        SnapshotPatch::new()
            .reason(SubagentReason::new(SubagentReasonCode::Cancelled).message(reason)),
    );
    if events_on {
        for e in events {
            shared.subagent_event(e);
        }
    }
    fail_call(
        shared,
        ns,
        session_id,
        task_id,
        &record.tool_call_id,
        reason,
    );
    true
}

/// Sends a subagent's root tool call its terminal `failed` update (task
/// `failed`, with `reason`).
pub(crate) fn fail_call(
    shared: &Shared,
    ns: Namespace,
    session_id: &str,
    task_id: &str,
    call_id: &str,
    reason: &str,
) {
    let task = TaskMeta::new(task_id, TaskKind::Subagent, TaskStatus::Failed)
        .error(reason)
        .ended_at_epoch_seconds(time::now());
    shared.update(
        session_id,
        SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(
                call_id.to_owned(),
                ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
            )
            .meta(tool_meta(shared, ns, SUBAGENT_TOOL, Some(task))),
        ),
    );
}
