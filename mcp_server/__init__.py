"""Engramlog's MCP server (named so as not to shadow the `mcp` library): the tools (tools.py) on the SDK's async
client, served over stdio by `engramlog mcp` (stdio.py) and as streamable HTTP at /mcp on the API (http.py)."""
