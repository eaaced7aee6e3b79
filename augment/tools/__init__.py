"""The tools of the +tools arms: the orbital-mechanics tools, their MCP server, client and session."""
