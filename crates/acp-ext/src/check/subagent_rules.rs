//! Subagent runs: first event, terminal states, run ids against native ids
//! (the rules themselves are [`acp_extension_core::sequence`]'s).

use super::*;

impl Checker {
    pub(super) fn subagent_event(&mut self, params: &Value, out: &mut Vec<Finding>) {
        let verdict = self.seq.subagent_event(params);
        out.extend(verdict.findings.into_iter().map(Finding::from));
    }

    pub(super) fn note_native(&mut self, sid: &str, id: &str, at: &str, out: &mut Vec<Finding>) {
        out.extend(self.seq.native_id(sid, id, at).map(Finding::from));
    }
}
