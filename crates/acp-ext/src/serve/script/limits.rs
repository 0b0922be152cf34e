//! `/limits`: a rate-limit update.

use super::*;
use acp_extension_core::methods::ContractMethod;

impl Turn {
    pub(super) fn limits(&mut self) -> Step {
        if !self.shared.has(Feature::RateLimits) {
            self.final_answer("Rate limits are not enabled on this agent (see --only).");
            return Ok(());
        }
        let snapshot = {
            let inner = self.shared.lock();
            ext::rate_limits(&inner)
        };
        let used: Vec<f64> = snapshot
            .rate_limits
            .iter()
            .flat_map(|l| l.windows.iter().map(|w| f64::from(w.used_percent)))
            .collect();
        self.shared
            .send(ContractMethod::RateLimitsUpdate.path(), |ext| {
                ext.rate_limits_update(snapshot)
            });
        self.final_answer(&format!(
            "Rate limits: 5-hour window {}% used, weekly window {}% used.",
            used.first().copied().unwrap_or_default(),
            used.get(1).copied().unwrap_or_default()
        ));
        Ok(())
    }
}
