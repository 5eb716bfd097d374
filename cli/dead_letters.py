"""Dead-letter commands (registered by cli/main.py):

    engramlog projections dead-letters [--projection NAME] [--resolved]
    engramlog projections dead-letters retry POSITION|--all [--projection NAME]
    engramlog projections dead-letters skip POSITION [--projection NAME]
    engramlog ingest dead-letters [--resolved]
    engramlog ingest dead-letters retry ID|--all
    engramlog ingest dead-letters skip ID

They read and write the database directly (operators' commands), like `projections rebuild`.
"""

from __future__ import annotations

import getpass
from typing import Annotated

import typer
from rich.table import Table

from cli import calls
from cli.output import console, fail

projection_letters = typer.Typer(help="Events a projector could not apply: list, retry or skip them.",
                                 invoke_without_command=True)
ingest_app = typer.Typer(help="The producer ingest queue.", no_args_is_help=True)
ingest_letters = typer.Typer(help="Queued messages that could not be appended: list, retry or skip them.",
                             invoke_without_command=True)
ingest_app.add_typer(ingest_letters, name="dead-letters")

ProjectionOpt = Annotated[str | None, typer.Option("--projection", help="Only this projection")]
Resolved = Annotated[bool, typer.Option("--resolved", help="Also retried and skipped ones")]
AllOpt = Annotated[bool, typer.Option("--all", help="Every parked one")]


def _operator() -> str:
    return f"cli:{getpass.getuser()}"


@projection_letters.callback()
def projection_list(ctx: typer.Context, projection: ProjectionOpt = None, resolved: Resolved = False) -> None:
    """List failing and parked events (the projector moved past parked ones)."""
    if ctx.invoked_subcommand is not None:
        return
    from projections.dead_letters import OPEN, dead_letters

    statuses = ("failing", "parked", "retried", "skipped") if resolved else OPEN
    with calls.engine().connect() as conn:
        rows = dead_letters(conn, projection, statuses=statuses)
    table = Table(title=f"{len(rows)} projection dead letter(s)")
    for col in ("projection", "position", "tenant", "type", "status", "attempts", "last failed", "error"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.projection, str(r.position), r.tenant, r.event_type, r.status, str(r.attempts),
                      r.last_failed_at.isoformat(timespec="seconds"), r.error)
    console.print(table)


def _projection_targets(position: int | None, all_: bool, projection: str | None) -> list[tuple[str, int]]:
    from projections.dead_letters import dead_letters
    from projections.registry import PROJECTORS

    if projection is not None and projection not in PROJECTORS:
        fail(f"unknown projection {projection!r}; known: {', '.join(PROJECTORS)}")
    if position is None and not all_:
        fail("name a POSITION or pass --all")
    with calls.engine().connect() as conn:
        parked = dead_letters(conn, projection, statuses=("parked",), limit=100_000)
    targets = [(r.projection, r.position) for r in parked if all_ or r.position == position]
    if not targets:
        fail(f"no parked event at position {position}" if position is not None else "no parked events")
    return targets


@projection_letters.command("retry")
def projection_retry(position: Annotated[int | None, typer.Argument()] = None, all_: AllOpt = False,
                     projection: ProjectionOpt = None) -> None:
    """Apply parked events now (each under its projection's lock); one that fails again stays parked."""
    from projections.dead_letters import retry
    from projections.registry import PROJECTORS

    engine, failed = calls.engine(), 0
    for name, pos in _projection_targets(position, all_, projection):
        done = retry(engine, PROJECTORS[name], pos, _operator())
        failed += done.outcome == "failed"
        console.print(f"{name} @ {pos}: {done.outcome}" + (f" ({done.error})" if done.error else ""))
    if failed:
        raise typer.Exit(1)


@projection_letters.command("skip")
def projection_skip(position: int, projection: ProjectionOpt = None) -> None:
    """Close a parked event without applying it."""
    from projections.dead_letters import skip
    from projections.registry import PROJECTORS

    engine = calls.engine()
    for name, pos in _projection_targets(position, False, projection):
        console.print(f"{name} @ {pos}: {skip(engine, PROJECTORS[name], pos, _operator()).outcome}")


@ingest_letters.callback()
def ingest_list(ctx: typer.Context, resolved: Resolved = False) -> None:
    """List queued messages that could not be appended, with why."""
    if ctx.invoked_subcommand is not None:
        return
    from workers.ingest_dead_letters import dead_letters

    statuses = ("parked", "retried", "skipped") if resolved else ("parked",)
    with calls.engine().connect() as conn:
        rows = dead_letters(conn, statuses=statuses)
    table = Table(title=f"{len(rows)} ingest dead letter(s)")
    for col in ("id", "tenant", "events", "status", "created", "reason"):
        table.add_column(col)
    for r in rows:
        table.add_row(str(r.id), r.tenant, str(r.events()), r.status, r.created_at.isoformat(timespec="seconds"),
                      r.reason)
    console.print(table)


@ingest_letters.command("retry")
def ingest_retry(dead_letter_id: Annotated[int | None, typer.Argument(metavar="ID")] = None,
                 all_: AllOpt = False) -> None:
    """Append parked messages now (their idempotency keys make a repeat safe); one refused again stays parked."""
    from workers.ingest_dead_letters import dead_letters, retry

    if dead_letter_id is None and not all_:
        fail("name an ID or pass --all")
    engine = calls.engine()
    if all_:
        with engine.connect() as conn:
            ids = [r.id for r in dead_letters(conn, limit=100_000)]
    else:
        ids = [dead_letter_id] if dead_letter_id is not None else []  # not None: refused above
    failed = 0
    for i in ids:
        done = retry(engine, i, _operator())
        failed += done.outcome in ("failed", "not_parked")
        console.print(f"{i}: {done.outcome}" + (f" ({done.reason})" if done.reason else "")
                      + (f" at positions {done.positions}" if done.positions else ""))
    if failed:
        raise typer.Exit(1)


@ingest_letters.command("skip")
def ingest_skip(dead_letter_id: Annotated[int, typer.Argument(metavar="ID")]) -> None:
    """Close a parked message without appending it."""
    from workers.ingest_dead_letters import skip

    done = skip(calls.engine(), dead_letter_id, _operator())
    console.print(f"{dead_letter_id}: {done.outcome}")
    if done.outcome == "not_parked":
        raise typer.Exit(1)


def register(app: typer.Typer, projections_app: typer.Typer) -> None:
    projections_app.add_typer(projection_letters, name="dead-letters")
    app.add_typer(ingest_app, name="ingest")
