//! `/tool` (a permission request) and `/app` (an MCP app tool call).

use super::*;

impl Turn {
    pub(super) async fn tool(&mut self) -> Step {
        let call = self.with(|_, c| c.call())?;
        let title = "Generate an image";
        let name_meta = || self.tool_meta(tool_names::IMAGE_GENERATION, None);
        self.say("commentary", "Calling the image generation tool.");
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), title)
                .kind(ToolKind::Other)
                .status(ToolCallStatus::Pending)
                .raw_input(json!({"prompt": self.text}))
                .meta(name_meta()),
        ));
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(
                call.clone(),
                ToolCallUpdateFields::new()
                    .title(title.to_owned())
                    .status(ToolCallStatus::Pending),
            )
            .meta(name_meta()),
            vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
            ],
        );
        self.set_waiting(true);
        let sent = self.cx.send_request(request);
        let outcome = tokio::select! {
            r = sent.block_task() => Some(r),
            _ = interrupted(self.cancel.clone(), self.request_cancel.clone()) => None,
        };
        self.set_waiting(false);
        let failed = |why: &str| {
            SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(vec![ToolCallContent::from(why.to_owned())]),
                )
                .meta(name_meta()),
            )
        };
        let allowed = match outcome {
            None => {
                self.send(failed("Cancelled."));
                return Err(Stop::Cancelled);
            }
            Some(Ok(response)) => match response.outcome {
                RequestPermissionOutcome::Selected(s) => &*s.option_id.0 == "allow",
                RequestPermissionOutcome::Cancelled => {
                    self.send(failed("Cancelled."));
                    return Err(Stop::Cancelled);
                }
                _ => false,
            },
            // The request failed (the client closed the connection, or
            // answered an error): nobody decided, so nothing ran and the
            // turn ends cancelled rather than with a made-up denial.
            Some(Err(e)) => {
                self.send(failed(&format!(
                    "The permission request failed: {}",
                    e.message
                )));
                return Err(Stop::Cancelled);
            }
        };
        if allowed {
            self.send(SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                )
                .meta(name_meta()),
            ));
            self.send(SessionUpdate::ToolCallUpdate(
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(vec![ToolCallContent::from(
                            "Generated image (synthetic).".to_owned(),
                        )])
                        .raw_output(json!({"ok": true})),
                )
                .meta(name_meta()),
            ));
            self.final_answer("The tool ran: permission was granted.");
        } else {
            self.send(failed("Permission denied."));
            self.final_answer("The tool did not run: permission was denied.");
        }
        Ok(())
    }

    /// `/app`: a tool call of the `demo` MCP server's `chart` tool, which
    /// declares a UI resource; tagged with `_meta.<ns>.mcpApp` and served
    /// through `_<ns>/mcp_apps/*` only when `mcpApps` is negotiated.
    pub(super) fn app(&mut self) -> Step {
        let call = self.with(|_, c| c.call())?;
        let Value::Object(input) = json!({"series": [1, 2, 3]}) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        let mut tool_call = ToolCall::new(call.clone(), "Draw a chart")
            .kind(ToolKind::Other)
            .status(ToolCallStatus::InProgress)
            .raw_input(Value::Object(input.clone()));
        let key = (self.session_id.clone(), call.clone());
        if self.mcp_apps {
            let app = McpAppToolCallMeta::new(APP_SERVER, APP_TOOL, APP_RESOURCE)
                .app_name("Chart")
                .preferred_display_mode(McpAppDisplayMode::Inline);
            tool_call = tool_call.meta(self.mb().with::<fields::McpApp>(app.clone()).build());
            // Known before the client sees the tool call, so it can load at once.
            self.shared.lock().apps.insert(
                key.clone(),
                AppCall {
                    app,
                    input,
                    result: None,
                },
            );
        }
        self.send(SessionUpdate::ToolCall(tool_call));
        let text = "Chart drawn: 3 points.";
        let result = McpCallToolResult::new(vec![json!({"type": "text", "text": text})]);
        if let Some(app) = self.shared.lock().apps.get_mut(&key) {
            app.result = Some(result.clone());
        }
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call,
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .content(vec![ToolCallContent::from(text.to_owned())])
                .raw_output(serde_json::to_value(result).unwrap_or_default()),
        )));
        self.final_answer(if self.mcp_apps {
            "The chart app is ready."
        } else {
            "Chart drawn (the client did not advertise mcpApps, so there is no app)."
        });
        Ok(())
    }
}
