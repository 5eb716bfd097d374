"""Writing and recalling memories through the API (registered by cli/main.py):

    engramlog remember TEXT [--agent-id A] [--project P] [--tag T] [--metadata JSON] [--no-wait]
    engramlog recall QUERY [--k N] [--agent-id A] [--project P] [--min-position N]
                     [--since T] [--until T] [--as-of POSITION|T] [--json]
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Annotated

import typer
from rich.table import Table

from cli import calls
from cli.output import console, fail


def remember(content: str, agent_id: str | None = None, project: str | None = None,
             session_id: str | None = None, kind: str = "observation",
             tag: Annotated[list[str] | None, typer.Option(help="repeatable")] = None,
             metadata: Annotated[str | None, typer.Option(help="a JSON object")] = None,
             idempotency_key: str | None = None,
             must_keep: Annotated[bool, typer.Option(help="bypass the salience gate")] = False,
             wait: Annotated[bool, typer.Option(help="return once the memory is recallable")] = True,
             wait_timeout: Annotated[float, typer.Option(help="seconds to wait for it")] = 30.0) -> None:
    """Record one memory through the API (governed: salience gate, reinforce, supersede). Returns once it is
    recallable (so a `recall` right after finds it) unless --no-wait."""
    try:
        meta = json.loads(metadata) if metadata else {}
    except json.JSONDecodeError as exc:
        fail(f"--metadata is not valid JSON: {exc}")
    with calls.api() as c:
        written = c.remember(content, kind=kind, agent_id=agent_id, project=project, session_id=session_id,
                             tags=tag or [], metadata=meta, idempotency_key=idempotency_key,
                             must_keep=must_keep or None)
        out = written.model_dump(mode="json", exclude_none=True)
        if wait:
            out["recallable"] = c.wait_recallable(written.position, wait_timeout)
    console.print_json(data=out)


def _time(option: str, value: str | None) -> date | datetime | None:
    """A --since / --until / --as-of value: a date alone (YYYY-MM-DD) or an ISO timestamp (a missing zone is the
    server's to refuse, with its reason)."""
    if value is None:
        return None
    try:
        return date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value!r} is not a date (YYYY-MM-DD) or an ISO timestamp (2025-05-01T12:00:00Z)")


def _as_of(value: str | None) -> int | datetime | None:
    """--as-of: a log position (digits) or a timestamp."""
    if value is not None and value.isdigit():
        return int(value)
    at = _time("--as-of", value)
    if at is not None and not isinstance(at, datetime):
        fail("--as-of takes a log position or a timestamp with a time (2025-05-01T00:00:00Z), not a date alone")
    return at


def recall(query: str, k: int = 10, agent_id: str | None = None, project: str | None = None,
           session_id: str | None = None, min_position: int | None = None,
           since: Annotated[str | None, typer.Option(help="valid time from: a timestamp with a zone, or a date")]
           = None,
           until: Annotated[str | None, typer.Option(help="valid time to (inclusive; a date: that whole day)")] = None,
           as_of: Annotated[str | None, typer.Option(help="recorded time: a log position or a timestamp")] = None,
           as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Recall memories for a query through the API: --since/--until filter by when things happened, --as-of
    answers what the store held at a log position or time."""
    with calls.api() as c:
        out = c.recall(query, k=k, agent_id=agent_id, project=project, session_id=session_id,
                       min_position=min_position, since=_time("--since", since), until=_time("--until", until),
                       as_of=_as_of(as_of)).model_dump(mode="json")
    if as_json:
        console.print_json(data=out)
        return
    table = Table(title=f"recall {out['recall_id']} ({out['latency_ms']:.1f} ms)")
    for col in ("#", "score", "content", "legs"):
        table.add_column(col)
    for i, r in enumerate(out["results"], 1):
        table.add_row(str(i), f"{r['score']:.3f}", r["content"][:100], ",".join(r["explanation"]["legs"]))
    console.print(table)
    if out.get("abstained"):
        console.print(f"abstained: {out['abstained']['reason']}")


def register(app: typer.Typer) -> None:
    app.command()(remember)
    app.command()(recall)
