//! TODO subagent_events
