//! A run's output folded: text appended within its caps, whole messages,
//! plans, and tool calls kept as they came.

use serde_json::{Map, Value, json};

use super::*;
use crate::subagent_events::{OutputUpdate, SubagentContentBlock, SubagentOutput};
use crate::wire::MaybeUndefined;

/// Progress folded sparse and absolute, key by key as
/// [`SubagentProgress::merge_into`](crate::subagent_events::SubagentProgress::merge_into)
/// folds a Core event's: a key replaces, `null` clears (the other keys keep
/// their order).
pub(super) fn fold_progress(run: &mut RunState, progress: Map<String, Value>) {
    for (k, v) in progress {
        crate::wire::merge_entry(&mut run.progress, &k, Ok(v));
    }
}

/// Folds one output update into a run: text appends (a new message on a
/// new line), tool calls merge by id, a plan replaces; a non-text message
/// chunk marks the run incomplete.
pub(super) fn fold_output(run: &mut RunState, update: &Value, limits: &StateLimits) {
    run.output_events += 1;
    match str_at(update, "sessionUpdate") {
        Some("agent_message_chunk") => {
            let content = update.get("content");
            match content.and_then(|c| str_at(c, "type")) {
                Some("text") => {
                    let text = content.and_then(|c| str_at(c, "text")).unwrap_or("");
                    append_text(run, text, str_at(update, "messageId"), limits);
                }
                _ => run.output_incomplete = true,
            }
        }
        Some("agent_thought_chunk") => {}
        Some("tool_call") | Some("tool_call_update") => fold_tool_call(run, Some(update), limits),
        Some("plan") => {
            run.message_ended = true;
            run.plan = Some(update.clone());
        }
        // ACP v2.
        Some("agent_message") => upsert_message(run, update, limits),
        Some("tool_call_content_chunk") => append_tool_content(run, update, limits),
        Some("plan_update") => match update.get("plan").filter(|p| p.is_object()) {
            Some(plan) => {
                run.message_ended = true;
                run.plan = Some(plan.clone());
            }
            None => run.output_incomplete = true,
        },
        Some("plan_removed") => run.plan = None,
        _ => {}
    }
}

/// [`fold_output`] of a typed update (a Core event's); a tool call is
/// kept as it came, from `source`.
pub(super) fn fold_typed_output(
    run: &mut RunState,
    update: &SubagentOutput,
    source: EventSource<'_>,
    limits: &StateLimits,
) {
    run.output_events += 1;
    match &update.0 {
        OutputUpdate::AgentMessageChunk(chunk) => match &chunk.content {
            SubagentContentBlock::Text(t) => {
                let id = match &chunk.message_id {
                    MaybeUndefined::Value(id) => Some(id.as_str()),
                    _ => None,
                };
                append_text(run, &t.text, id, limits);
            }
            _ => run.output_incomplete = true,
        },
        OutputUpdate::AgentThoughtChunk(_) => {}
        OutputUpdate::ToolCall(_) | OutputUpdate::ToolCallUpdate(_) => match source {
            EventSource::Tree(params) => fold_tool_call(run, params.get("update"), limits),
            EventSource::Line(line) => match line.update_text() {
                Some(text) => fold_tool_call_text(run, text, limits),
                None => fold_tool_call(run, line.to_value().pointer("/params/update"), limits),
            },
        },
        OutputUpdate::Plan(_) => {
            run.message_ended = true;
            run.plan = serde_json::to_value(update).ok();
        }
    }
}

/// Appends a text chunk: a new message (another message id, or after a
/// tool call or plan) starts on a new line.
pub(super) fn append_text(
    run: &mut RunState,
    text: &str,
    message_id: Option<&str>,
    limits: &StateLimits,
) {
    if text.is_empty() {
        return;
    }
    let other_message =
        message_id.is_some() && run.message_id.is_some() && run.message_id.as_deref() != message_id;
    if (run.message_ended || other_message)
        && !run.text.is_empty()
        && !run.text.ends_with('\n')
        && !text.starts_with('\n')
    {
        run.text.push('\n');
    }
    if run.message_ended || other_message {
        run.message_len = 0;
    }
    run.message_ended = false;
    if other_message || (message_id.is_some() && run.message_id.is_none()) {
        run.message_id = message_id.map(str::to_owned);
    }
    run.text.push_str(text);
    run.message_len += text.len();
    cap_text(&mut run.text, limits.text_per_run);
}

/// ACP v2's whole-message `agent_message` (`agent_thought`, like its
/// chunks, is no text of the run's): its text content is the message with
/// that `messageId`, replacing the text streamed or sent for it before
/// (when it is the run's last message), else a new message. Omitted
/// `content` patches only metadata; a block that is not text marks the
/// output incomplete.
pub(super) fn upsert_message(run: &mut RunState, update: &Value, limits: &StateLimits) {
    let blocks = match update.get("content") {
        None => return,
        Some(Value::Array(blocks)) => blocks.as_slice(),
        Some(_) => &[],
    };
    let mut text = String::new();
    for block in blocks {
        match (str_at(block, "type"), str_at(block, "text")) {
            (Some("text"), Some(t)) => text.push_str(t),
            _ => run.output_incomplete = true,
        }
    }
    let id = str_at(update, "messageId");
    if id.is_some() && run.message_id.as_deref() == id && !run.message_ended {
        let keep = run.text.len().saturating_sub(run.message_len);
        run.text.truncate(keep);
        run.text.push_str(&text);
        run.message_len = text.len();
        cap_text(&mut run.text, limits.text_per_run);
    } else {
        run.message_ended = true;
        append_text(run, &text, id, limits);
        run.message_id = id.map(str::to_owned);
    }
}

/// ACP v2's `tool_call_content_chunk`: one content item appended to the
/// run's tool call with that id.
pub(super) fn append_tool_content(run: &mut RunState, update: &Value, limits: &StateLimits) {
    let (Some(id), Some(item)) = (str_at(update, "toolCallId"), update.get("content")) else {
        run.output_incomplete = true;
        return;
    };
    let mut call = run
        .tool_calls
        .get(id)
        .map(CompactObject::value)
        .unwrap_or_else(|| Map::from_iter([("toolCallId".to_owned(), json!(id))]));
    match call.get_mut("content") {
        Some(Value::Array(items)) => items.push(item.clone()),
        _ => {
            call.insert("content".to_owned(), json!([item]));
        }
    }
    run.message_ended = true;
    merge_tool_call(run, id, &call, limits);
}

/// A tool call or its update, as it came (its tree): it ends the message,
/// and merges by id, all its keys but `sessionUpdate`, in their order.
pub(super) fn fold_tool_call(run: &mut RunState, update: Option<&Value>, limits: &StateLimits) {
    run.message_ended = true;
    if let Some(update) = update
        && let (Some(id), Some(from)) = (str_at(update, "toolCallId"), update.as_object())
    {
        merge_tool_call(run, id, from, limits);
    }
}

/// [`fold_tool_call`] of the update's text (as in its line): a call the
/// run does not know yet is kept as that text without `sessionUpdate`,
/// with no JSON tree between, where the text is already what the tree
/// would write ([`plain_without`]); anything else goes through the tree.
/// `update` is JSON a parser accepted: the update in a line read.
pub(super) fn fold_tool_call_text(run: &mut RunState, update: &str, limits: &StateLimits) {
    if let Some((text, id)) = plain_without(update, "sessionUpdate", "toolCallId")
        // One lookup: a call the run does not know is the common case.
        && let indexmap::map::Entry::Vacant(slot) = run.tool_calls.entry(id.to_owned())
        && let Some(call) = CompactObject::from_plain(text)
    {
        run.message_ended = true;
        slot.insert(call);
        cap_map(&mut run.tool_calls, limits.tool_calls_per_run);
        return;
    }
    let tree = serde_json::from_str::<Value>(update).ok();
    fold_tool_call(run, tree.as_ref(), limits);
}

/// Merges a tool call or its update (all keys but `sessionUpdate`) into
/// the run's call with this id.
pub(super) fn merge_tool_call(
    run: &mut RunState,
    id: &str,
    from: &Map<String, Value>,
    limits: &StateLimits,
) {
    let merged = match run.tool_calls.get(id) {
        Some(known) => {
            let mut into = known.value();
            for (k, v) in from {
                if k != "sessionUpdate" {
                    into.insert(k.clone(), v.clone());
                }
            }
            CompactObject::new(&into)
        }
        None => CompactObject::without(from, "sessionUpdate"),
    };
    run.tool_calls.insert(id.to_owned(), merged);
    cap_map(&mut run.tool_calls, limits.tool_calls_per_run);
}
