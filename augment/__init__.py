"""What an arm adds at generation: retrieval (bm25s) and tools (an MCP server and the tool loop)."""
