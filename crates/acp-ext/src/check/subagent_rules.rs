//! Subagent runs: first event, terminal states, run ids against native ids.

use super::*;

impl Checker {
    pub(super) fn subagent_event(&mut self, params: &Value, out: &mut Vec<Finding>) {
        let (Some(sid), Some(run)) = (str_at(params, "sessionId"), str_at(params, "runId")) else {
            return;
        };
        if sid.is_empty() || run.is_empty() {
            return;
        }
        let kind = str_at(params, "type");
        let limits = self.limits;
        let s = self.sessions.get_or_create(sid, limits.sessions);
        // The event's own native ids.
        let own = [
            params
                .get("snapshot")
                .and_then(|x| str_at(x, "parentToolCallId")),
            str_at(params, "nativeTurnId"),
        ];
        for id in own.into_iter().flatten() {
            s.native_ids
                .insert(id_hash(id), limits.native_ids_per_session);
        }
        let h = id_hash(run);
        if s.native_ids.contains(h) {
            out.push(Finding::of(
                &rules::SUBAGENT_RUN_ID_NATIVE,
                "/params/runId",
                format!("run id {run:?} equals a native id seen in session {sid:?}; run ids are opaque and never reuse native ids"),
            ));
        }
        let state = params.get("snapshot").and_then(|x| str_at(x, "state"));
        let terminal = kind == Some("snapshot") && is_terminal_state(state);
        let kind_name = kind.unwrap_or("untyped");
        match s.runs.get_mut(h) {
            None => {
                if kind != Some("snapshot") {
                    out.push(Finding::of(
                        &rules::SUBAGENT_FIRST_NOT_SNAPSHOT,
                        "/params/type",
                        format!("the first event of run {run:?} has type `{kind_name}`; a run starts with a snapshot"),
                    ));
                }
                s.runs.insert(h, Run { terminal }, limits.runs_per_session);
            }
            Some(r) if r.terminal => {
                out.push(Finding::of(
                    &rules::SUBAGENT_AFTER_TERMINAL,
                    "/params/type",
                    format!("`{kind_name}` event for run {run:?} after its terminal snapshot; a new execution needs a new run id"),
                ));
            }
            Some(r) => {
                if kind == Some("snapshot") {
                    r.terminal = terminal;
                }
            }
        }
    }

    pub(super) fn note_native(&mut self, sid: &str, id: &str, at: &str, out: &mut Vec<Finding>) {
        let cap = self.limits.native_ids_per_session;
        let s = self.sessions.get_or_create(sid, self.limits.sessions);
        let h = id_hash(id);
        if s.runs.contains(h) && !s.native_ids.contains(h) {
            out.push(Finding::of(
                &rules::SUBAGENT_RUN_ID_NATIVE,
                at,
                format!("native id {id:?} equals the run id of a subagent run in this session; run ids never reuse native ids"),
            ));
        }
        s.native_ids.insert(h, cap);
    }
}

pub(super) fn is_terminal_state(state: Option<&str>) -> bool {
    matches!(
        state,
        Some("completed" | "failed" | "cancelled" | "unknown")
    )
}
