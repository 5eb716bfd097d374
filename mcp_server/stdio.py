"""`engramlog mcp`: the tools over stdio, speaking HTTP to the configured API with ENGRAMLOG_API_KEY. One client
for the process, so read-your-writes holds across the tool calls of the session (remember, then recall)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from engramlog_client import AsyncEngramlog
from mcp.server.mcpserver import Context

from mcp_server.tools import build_server


def run_stdio(api_url: str, api_key: str | None, timeout: float = 60.0) -> None:
    client: AsyncEngramlog | None = None

    @asynccontextmanager
    async def client_for(ctx: Context) -> AsyncIterator[AsyncEngramlog]:
        nonlocal client
        if client is None:  # made on first use, inside the server's event loop
            client = AsyncEngramlog(api_url, api_key=api_key, timeout=timeout)
        yield client

    build_server(client_for).run("stdio")
