//! Plan mode: a boolean ACP session config option with id `plan_mode`.
//!
//! It is set through standard `session/set_config_option` with boolean
//! values: there is no separate method and no capability flag. Advertise it
//! only for sessions that support independent planning. It changes neither
//! sandbox nor approval policy and promises no read-only enforcement;
//! providers own translation, durable state, plan review and pending-switch
//! behaviour.
//!
//! ```
//! use acp_extension_core::plan_mode::plan_mode_config_option;
//!
//! let option = plan_mode_config_option(true);
//! assert_eq!(
//!     serde_json::to_string(&option)?,
//!     r#"{"id":"plan_mode","name":"Plan","description":"Plan before implementing; permissions are controlled separately.","type":"boolean","currentValue":true}"#,
//! );
//! # Ok::<_, serde_json::Error>(())
//! ```

use agent_client_protocol::v1::schema::{SessionConfigOption, SetSessionConfigOptionRequest};

/// The config option id of plan mode.
pub const PLAN_MODE_CONFIG_ID: &str = "plan_mode";

/// The display name of the plan mode option.
pub const PLAN_MODE_NAME: &str = "Plan";

/// The description of the plan mode option.
pub const PLAN_MODE_DESCRIPTION: &str =
    "Plan before implementing; permissions are controlled separately.";

/// The plan mode option for `configOptions`, with its current value.
///
/// Serializes to exactly `id`, `name`, `description`, `type: "boolean"`,
/// `currentValue`, in that order.
pub fn plan_mode_config_option(current: bool) -> SessionConfigOption {
    SessionConfigOption::boolean(PLAN_MODE_CONFIG_ID, PLAN_MODE_NAME, current)
        .description(PLAN_MODE_DESCRIPTION)
}

/// The requested plan mode, if `request` sets the plan mode option to a
/// boolean; `None` for other options and for non-boolean values.
///
/// ```
/// use acp_extension_core::plan_mode::plan_mode_value;
/// use agent_client_protocol::v1::schema::SetSessionConfigOptionRequest;
///
/// let req: SetSessionConfigOptionRequest = serde_json::from_str(
///     r#"{"sessionId":"s1","configId":"plan_mode","type":"boolean","value":true}"#,
/// )?;
/// assert_eq!(plan_mode_value(&req), Some(true));
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn plan_mode_value(request: &SetSessionConfigOptionRequest) -> Option<bool> {
    if &*request.config_id.0 == PLAN_MODE_CONFIG_ID {
        request.value.as_bool()
    } else {
        None
    }
}
