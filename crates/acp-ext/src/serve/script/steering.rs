//! `/slow`: a long turn that takes steers; applying a steer.

use super::*;
use acp_extension_core::methods::ContractMethod;
use agent_client_protocol::v1::schema::SessionId;

impl Turn {
    pub(super) async fn slow(&mut self, secs: f64) -> Step {
        self.say("commentary", &format!("Working for {secs} seconds."));
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
        let stop = interrupted(self.cancel.clone(), self.request_cancel.clone());
        tokio::pin!(stop);
        let mut applied = Vec::new();
        self.check()?;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                Some(steer) = self.steer_rx.recv() => {
                    self.apply_steer(&steer, true);
                    applied.push(steer.text);
                }
                _ = &mut stop => return Err(Stop::Cancelled),
            }
        }
        if applied.is_empty() {
            self.final_answer(&format!("Finished after {secs} seconds."));
        } else {
            self.final_answer(&format!(
                "Finished after {secs} seconds, steered by: {}",
                applied.join("; ")
            ));
        }
        Ok(())
    }

    pub(super) fn apply_steer(&self, steer: &Steer, announce: bool) {
        let sid = SessionId::new(self.session_id.as_str());
        if !steer.standard {
            self.shared
                .send(ContractMethod::SessionSteerApplied.path(), |ext| {
                    ext.steer_applied(&sid, steer.steer_id.clone())
                });
        }
        if announce {
            self.say("commentary", &format!("Steering applied: {}", steer.text));
        }
    }
}
