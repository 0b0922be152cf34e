//! Provider rate limits: the result of `_lody/rate_limits/get` and the
//! params of the `_lody/rate_limits/update` notification.
//!
//! A snapshot lists every limit the provider reports; each limit carries the
//! complete current list of its windows, which replaces the previous list.
//! Windows are concurrent constraints: never merge or deduplicate windows
//! that share a duration, utilization or reset time (an all-model weekly
//! quota and a model sub-cap stay separate meters and are not additive).
//!
//! ```
//! use acp_extension_core::rate_limits::RateLimitsSnapshot;
//!
//! let snap: RateLimitsSnapshot = serde_json::from_str(r#"{
//!   "rateLimits": [{
//!     "limitId": "weekly",
//!     "scope": {"providerId": "anthropic"},
//!     "windows": [{"usedPercent": 42, "windowDurationSeconds": 604800, "resetsAtEpochSeconds": null}]
//!   }],
//!   "fetchedAtEpochSeconds": 1710000000.5
//! }"#)?;
//! let window = &snap.rate_limits[0].windows[0];
//! assert_eq!(window.used_percent.get(), 42.0);
//! assert!(window.resets_at_epoch_seconds.is_none());
//! # Ok::<_, serde_json::Error>(())
//! ```

use crate::wire::{EpochSeconds, FiniteF64, NonNegF64, Percent};

crate::wire_struct! {
    /// One usage window of a [`RateLimit`].
    pub struct RateLimitWindow {
        req {
            /// Used share of the window, as a normalized percentage (producers
            /// send 0..=100; only finiteness is enforced, so a provider that
            /// overshoots is still read).
            used_percent: Percent = "usedPercent",
            /// Window length in seconds; `None` (`null`) when unknown.
            window_duration_seconds: Option<NonNegF64> = "windowDurationSeconds",
            /// When the window resets, Unix epoch seconds; `None` (`null`)
            /// when unknown.
            resets_at_epoch_seconds: Option<EpochSeconds> = "resetsAtEpochSeconds",
        }
        opt {
            /// Provider-supplied display label (such as `"Fable"`). Display
            /// only: never a routing or model-selection key. Absent means an
            /// unlabeled window.
            label: String = "label",
        }
    }
}

crate::wire_struct! {
    /// A prepaid or metered wallet of a [`RateLimit`].
    ///
    /// Amounts are cents as finite numbers of any sign: balances can go
    /// negative (overdrawn), so they are not constrained to `>= 0`.
    pub struct RateLimitWallet {
        req {
            /// Current balance, in cents.
            balance_cents: FiniteF64 = "balanceCents",
            /// Total credited, in cents.
            total_cents: FiniteF64 = "totalCents",
            /// Whether a monthly charge limit applies.
            monthly_charge_limit_enabled: bool = "monthlyChargeLimitEnabled",
            /// The monthly charge limit, in cents.
            monthly_charge_limit_cents: FiniteF64 = "monthlyChargeLimitCents",
            /// Charged this month, in cents.
            monthly_used_cents: FiniteF64 = "monthlyUsedCents",
            /// Currency code of the amounts (such as `"USD"`).
            currency: String = "currency",
        }
    }
}

crate::wire_struct! {
    /// What a [`RateLimit`] applies to.
    pub struct RateLimitScope {
        req {
            /// The provider.
            provider_id: String = "providerId",
        }
        opt {
            /// The account, when the limit is per account.
            account_id: String = "accountId",
            /// The model, when the limit is per model.
            model_id: String = "modelId",
        }
    }
}

crate::wire_struct! {
    /// One provider limit with its windows and, optionally, a wallet.
    ///
    /// A snapshot's `windows` is the complete current list: it replaces the
    /// previous one.
    ///
    /// ```
    /// use acp_extension_core::rate_limits::{RateLimit, RateLimitScope, RateLimitWindow};
    /// use acp_extension_core::wire::{EpochSeconds, Percent};
    ///
    /// let week = RateLimitWindow::new(Percent::new(42.0).unwrap(), None, Some(EpochSeconds::from_secs(1_710_600_000)))
    ///     .label("Weekly");
    /// let limit = RateLimit::new("weekly", RateLimitScope::new("anthropic"), vec![week]);
    /// let wire = serde_json::to_value(&limit)?;
    /// assert_eq!(wire["windows"][0]["usedPercent"], 42);
    /// assert!(Percent::new(150.0).is_err()); // a percentage is 0..100
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct RateLimit {
        req {
            /// Stable id of the limit.
            limit_id: String = "limitId",
            /// What it applies to.
            scope: RateLimitScope = "scope",
            /// The complete current list of windows; replaces the previous list.
            windows: Vec<RateLimitWindow> = "windows",
        }
        nullable {
            /// Display name of the limit.
            limit_name: String = "limitName",
            /// Display name of the plan.
            plan_name: String = "planName",
            /// The wallet, for metered plans.
            wallet: RateLimitWallet = "wallet",
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/rate_limits/get` and params of
    /// `_lody/rate_limits/update`.
    pub struct RateLimitsSnapshot {
        req {
            /// Every limit the provider reports.
            rate_limits: Vec<RateLimit> = "rateLimits",
        }
        opt {
            /// When the snapshot was fetched, Unix epoch seconds.
            fetched_at_epoch_seconds: EpochSeconds = "fetchedAtEpochSeconds",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/rate_limits/get`. All keys are optional filters; the
    /// call is not bound to a session.
    pub struct RateLimitsGetRequest {
        opt {
            /// Only limits relevant to this session.
            session_id: String = "sessionId",
            /// Only limits of this account.
            account_id: String = "accountId",
            /// Only limits of this model.
            model_id: String = "modelId",
        }
    }
}
