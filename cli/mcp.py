"""`engramlog mcp`: the MCP server over stdio for an MCP host (Claude Desktop, an IDE, an agent framework). It
speaks HTTP to the API (--api-url, or the running stack's) with ENGRAMLOG_API_KEY; nothing else of the server
is loaded (the tools are the SDK's calls: mcp_server/tools.py)."""

from __future__ import annotations

import os
from typing import Annotated

import typer


def mcp(api_url: Annotated[str | None, typer.Option(envvar="ENGRAMLOG_API_URL",
                                                    help="The API [default: the running stack's]")] = None,
        timeout: Annotated[float, typer.Option(help="Seconds per API call")] = 60.0) -> None:
    """Serve the Engramlog MCP tools over stdio (remember, recall, recall_multi, deep_recall, get_section,
    supersede, feedback, history, sessions_append, resume_context)."""
    from mcp_server.stdio import run_stdio

    if api_url is None:
        from cli import calls

        api_url = calls.settings().api_url()
    run_stdio(api_url, os.environ.get("ENGRAMLOG_API_KEY"), timeout)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
