//! Rate limits: trial.
use crate::wire::*;
crate::wire_struct! {
    /// A window.
    pub struct RateLimitWindow {
        req {
            /// Normalized percentage.
            used_percent: FiniteF64 = "usedPercent",
            /// Duration.
            window_duration_seconds: Option<NonNegF64> = "windowDurationSeconds",
        }
        opt {
            /// Label.
            label: String = "label",
        }
        nullable {
            /// Meta.
            meta: Map = "_meta",
        }
    }
}
