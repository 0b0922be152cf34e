//! MCP Apps (SEP-1865) hosted over ACP.
//!
//! The agent owns the MCP connection. When a called tool declares a UI
//! resource, the agent tags the ACP `tool_call` with
//! `_meta.<ns>.mcpApp` ([`McpAppToolCallMeta`]); the client's app view then
//! loads the app and makes every resource read and tool call back through
//! the agent (`_lody/mcp_apps/load`, `…/resource/read`, `…/tool/call`),
//! scoped to the originating tool call. The agent must reject tools on other
//! servers and tools whose `_meta.ui.visibility` excludes `"app"`.
//!
//! ```
//! use acp_extension_core::mcp_apps::{McpAppDisplayMode, McpAppLoadResponse};
//!
//! let load: McpAppLoadResponse = serde_json::from_str(r#"{
//!   "app": {"version": 1, "server": "charts", "tool": "plot",
//!           "resourceUri": "ui://charts/plot", "preferredDisplayMode": "inline"},
//!   "toolInput": {"series": [1, 2, 3]},
//!   "toolResult": null
//! }"#)?;
//! assert_eq!(load.app.preferred_display_mode, Some(McpAppDisplayMode::Inline));
//! assert!(load.tool_result.is_none()); // the call has not completed yet
//! # Ok::<_, serde_json::Error>(())
//! ```

use serde_json::Value;

use crate::wire::{Map, Version1};

crate::wire_enum! {
    /// How the client should show an MCP app.
    pub enum McpAppDisplayMode {
        /// Inside the transcript.
        Inline = "inline",
        /// Taking the whole view.
        Fullscreen = "fullscreen",
    }
}

crate::wire_struct! {
    /// `_meta.<ns>.mcpApp` on an ACP `tool_call` whose tool declares a UI
    /// resource.
    ///
    /// ```
    /// use acp_extension_core::mcp_apps::McpAppToolCallMeta;
    /// use acp_extension_core::violation::check;
    ///
    /// let v = serde_json::json!({"version": 1});
    /// let problems = check::<McpAppToolCallMeta>(&v);
    /// assert!(problems.iter().all(|p| p.rule.id() == "required"), "{problems:?}");
    /// ```
    pub struct McpAppToolCallMeta {
        lit {
            /// Always `1`.
            version: Version1 = "version",
        }
        req {
            /// The MCP server that owns the tool.
            server: String = "server",
            /// The MCP tool that was called.
            tool: String = "tool",
            /// The `ui://` resource holding the app's
            /// `text/html;profile=mcp-app` document.
            resource_uri: String = "resourceUri",
        }
        opt {
            /// Display name of the app.
            app_name: String = "appName",
            /// How the app prefers to be shown.
            preferred_display_mode: McpAppDisplayMode = "preferredDisplayMode",
        }
    }
}

crate::wire_struct! {
    /// An MCP `tools/call` result, forwarded verbatim (content items are not
    /// interpreted). Also the result of `_lody/mcp_apps/tool/call`.
    pub struct McpCallToolResult {
        req {
            /// MCP content items.
            content: Vec<Value> = "content",
        }
        opt {
            /// Structured result.
            structured_content: Map = "structuredContent",
            /// Whether the tool reported an error.
            is_error: bool = "isError",
            /// MCP metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// One MCP resource content item (text or blob).
    pub struct McpResourceContents {
        req {
            /// The resource URI.
            uri: String = "uri",
        }
        opt {
            /// Its MIME type.
            mime_type: String = "mimeType",
            /// Text contents.
            text: String = "text",
            /// Binary contents, base64.
            blob: String = "blob",
            /// MCP metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/mcp_apps/load`.
    pub struct McpAppLoadRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The tool call that carries the app.
            tool_call_id: String = "toolCallId",
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/mcp_apps/load`.
    pub struct McpAppLoadResponse {
        req {
            /// The app, as tagged on the tool call.
            app: McpAppToolCallMeta = "app",
            /// The arguments of the originating tool call.
            tool_input: Map = "toolInput",
            /// Its result; `None` (`null`) until the call completes.
            tool_result: Option<McpCallToolResult> = "toolResult",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/mcp_apps/resource/read`: the app view reads an MCP
    /// resource through the agent.
    pub struct McpAppResourceReadRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The tool call that carries the app.
            tool_call_id: String = "toolCallId",
            /// The resource to read.
            uri: String = "uri",
        }
    }
}

crate::wire_struct! {
    /// Result of `_lody/mcp_apps/resource/read`.
    pub struct McpAppResourceReadResponse {
        req {
            /// The resource's contents.
            contents: Vec<McpResourceContents> = "contents",
        }
    }
}

crate::wire_struct! {
    /// Params of `_lody/mcp_apps/tool/call`: the app view calls an MCP tool
    /// through the agent. The result is an [`McpCallToolResult`].
    pub struct McpAppToolCallRequest {
        req {
            /// The session.
            session_id: String = "sessionId",
            /// The tool call that carries the app.
            tool_call_id: String = "toolCallId",
            /// The tool to call (on the app's own server only).
            name: String = "name",
        }
        opt {
            /// The tool's arguments.
            arguments: Map = "arguments",
        }
    }
}
