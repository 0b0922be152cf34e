//! TODO subagent_emitter
