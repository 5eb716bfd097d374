"""Writing and recalling memories through the API (registered by cli/main.py):

    engramlog remember TEXT [--agent-id A] [--project P] [--tag T] [--metadata JSON] [--no-wait]
    engramlog recall QUERY [--k N] [--agent-id A] [--project P] [--min-position N]
                     [--since T] [--until T] [--as-of POSITION|T] [--include-history] [--json]
    engramlog history MEMORY_ID [--json]                     the supersede chain through a memory
    engramlog supersede MEMORY_ID TEXT --reason WHY [--json] replace a memory with what holds
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
           include_history: Annotated[bool, typer.Option(help="superseded memories too (the status column says "
                                                              "which)")] = False,
           as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Recall memories for a query through the API: --since/--until filter by when things happened, --as-of
    answers what the store held at a log position or time, --include-history shows what was superseded too."""
    with calls.api() as c:
        out = c.recall(query, k=k, agent_id=agent_id, project=project, session_id=session_id,
                       min_position=min_position, since=_time("--since", since), until=_time("--until", until),
                       as_of=_as_of(as_of), include_history=include_history).model_dump(mode="json")
    if as_json:
        console.print_json(data=out)
        return
    table = Table(title=f"recall {out['recall_id']} ({out['latency_ms']:.1f} ms)")
    columns = ("#", "score", "content", "legs", *(("status", "memory") if include_history else ()))
    for col in columns:
        table.add_column(col, overflow="fold" if col == "memory" else "ellipsis")  # an id whole, to pass on
    for i, r in enumerate(out["results"], 1):
        history = (r["explanation"].get("status", ""), r["memory_id"]) if include_history else ()
        table.add_row(str(i), f"{r['score']:.3f}", r["content"][:100], ",".join(r["explanation"]["legs"]), *history)
    console.print(table)
    if out.get("abstained"):
        console.print(f"abstained: {out['abstained']['reason']}")


def history(memory_id: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The supersede chain through a memory: each version, oldest first, and each supersede (when, why, by whom:
    the governor's update names the old and new values)."""
    with calls.api() as c:
        out = c.history(memory_id).model_dump(mode="json")
    if as_json:
        console.print_json(data=out)
        return
    versions = Table(title=f"history of {out['memory_id']} (current: {out['current']})")
    for col in ("position", "status", "memory", "content"):
        versions.add_column(col, overflow="fold" if col == "memory" else "ellipsis")
    for m in out["chain"]:
        versions.add_row(str(m["position"]), m["status"], m["memory_id"], m["content"][:100])
    console.print(versions)
    steps = Table(title="supersedes")
    for col in ("at", "trigger", "by", "reason"):
        steps.add_column(col)
    for t in out["transitions"]:
        steps.add_row(t["at"][:19].replace("T", " "), t["trigger"], t["actor"] or "", t["reason"])
    console.print(steps)


def supersede(memory_id: str, content: str,
              reason: Annotated[str, typer.Option(help="why the old memory no longer holds")],
              as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Replace a memory with what holds (its scope, kind and tags kept): recall answers the new one, and the old
    stays in its history. A supersede the governor got wrong is undone the same way, or by writing the older fact
    again with --must-keep."""
    with calls.api() as c:
        out = c.supersede(memory_id, content, reason).model_dump(mode="json")
    if as_json:
        console.print_json(data=out)
    else:
        console.print(f"{out['memory_id']} supersedes {out['supersedes']} (position {out['position']})")


def register(app: typer.Typer) -> None:
    app.command()(remember)
    app.command()(recall)
    app.command()(history)
    app.command()(supersede)
