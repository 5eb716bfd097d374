"""Writing and recalling memories through the API (registered by cli/main.py):

    engramlog remember TEXT [--agent-id A] [--project P] [--tag T] [--metadata JSON] [--no-wait]
    engramlog recall QUERY [--k N] [--agent-id A] [--project P] [--min-position N] [--json]
"""

from __future__ import annotations

import json
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


def recall(query: str, k: int = 10, agent_id: str | None = None, project: str | None = None,
           session_id: str | None = None, min_position: int | None = None,
           as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Recall memories for a query through the API."""
    with calls.api() as c:
        out = c.recall(query, k=k, agent_id=agent_id, project=project, session_id=session_id,
                       min_position=min_position).model_dump(mode="json")
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
