"""Session-message commands (registered by cli/main.py), through the API:

    engramlog sessions list [--agent-id A] [--project P] [--limit N]     newest first
    engramlog sessions show ID [--after-seq N] [--limit N] [--unsent]    a session's messages in order
    engramlog sessions append ID --role R TEXT [--agent-id A] [--pending] [--checkpoint] [--tool-name T]
    engramlog sessions resume ID [--budget-tokens N]                     the resume context's text, as the API builds it
"""

from __future__ import annotations

import sys
import urllib.parse
from typing import Annotated

import typer
from rich.table import Column, Table

from cli import calls
from cli.output import console, err

sessions_app = typer.Typer(help="Session messages: list, show, append, resume.", no_args_is_help=True)


def _minute(at: str | None) -> str:
    """An ISO time to the minute in UTC as the API gives it ('2026-12-01 16:06'), so the table fits a terminal."""
    return (at or "")[:16].replace("T", " ")


def _session(session_id: str) -> str:
    return f"/v1/sessions/{urllib.parse.quote(session_id, safe='')}"


@sessions_app.command("list")
def list_(agent_id: Annotated[str | None, typer.Option("--agent-id")] = None,
          project: Annotated[str | None, typer.Option()] = None,
          limit: Annotated[int, typer.Option(min=1, max=1000)] = 50) -> None:
    """Sessions, newest first, with their message counts and date ranges."""
    params = {k: v for k, v in {"agent_id": agent_id, "project": project, "limit": limit}.items() if v is not None}
    out = calls.call("GET", "/v1/sessions", params=params)
    table = Table("session", "agent", "project", "messages", "sent", Column("first", no_wrap=True),
                  Column("last", no_wrap=True))
    for s in out["sessions"]:
        table.add_row(s["session_id"], s["agent_id"] or "", s["project"] or "", str(s["messages"]),
                      str(s["sent_messages"]), _minute(s["first_at"]), _minute(s["last_at"]))
    console.print(table)


@sessions_app.command("show")
def show(session_id: str, after_seq: Annotated[int, typer.Option("--after-seq", min=0)] = 0,
         limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
         unsent: Annotated[bool, typer.Option("--unsent", help="pending messages too")] = False) -> None:
    """A session's messages in order."""
    out = calls.call("GET", f"{_session(session_id)}/messages",
                params={"after_seq": after_seq, "limit": limit, "include_unsent": unsent})
    for m in out["messages"]:
        flags = "" if m["sent"] else " (pending)"
        tool = f" · {m['tool_name']}" if m["tool_name"] else ""
        console.print(f"[bold]#{m['seq']} {m['role']}{tool}{flags}[/bold] {m['created_at']}", highlight=False)
        console.print(m["content"], markup=False, highlight=False)
    if out["next_after_seq"] is not None:
        err.print(f"more: --after-seq {out['next_after_seq']}")


@sessions_app.command("append")
def append(session_id: str, content: Annotated[str, typer.Argument(help="the text ('-': stdin)")],
           role: Annotated[str, typer.Option(help="user | assistant | system | tool")] = "user",
           agent_id: Annotated[str | None, typer.Option("--agent-id")] = None,
           project: Annotated[str | None, typer.Option()] = None,
           tool_name: Annotated[str | None, typer.Option("--tool-name")] = None,
           message_id: Annotated[str | None, typer.Option("--message-id")] = None,
           pending: Annotated[bool, typer.Option("--pending", help="not sent yet (mark it sent later)")] = False,
           checkpoint: Annotated[bool, typer.Option("--checkpoint")] = False) -> None:
    """Append one message to a session."""
    text = sys.stdin.read() if content == "-" else content
    body = {"role": role, "content": text, "agent_id": agent_id, "project": project, "tool_name": tool_name,
            "message_id": message_id, "sent": not pending, "checkpoint": checkpoint}
    out = calls.call("POST", f"{_session(session_id)}/messages", json={k: v for k, v in body.items() if v is not None})
    console.print(f"{out['message_ids'][0]} position {out['position']}", highlight=False)


@sessions_app.command("resume")
def resume(session_id: str, budget_tokens: Annotated[int | None, typer.Option("--budget-tokens")] = None) -> None:
    """Print the session's resume context (deterministic: built from the log, no recall, no model)."""
    params = {"format": "text", **({"budget_tokens": budget_tokens} if budget_tokens is not None else {})}
    sys.stdout.write(calls.call("GET", f"{_session(session_id)}/resume", params=params) or "")  # text/plain: as text


def register(app: typer.Typer) -> None:
    app.add_typer(sessions_app, name="sessions")


__all__ = ["register"]
