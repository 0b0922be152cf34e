//! TODO mcp_apps
