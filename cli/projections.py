"""Operators' commands over the read models (registered by cli/main.py); they read the database directly:

    engramlog projections status                  position, head and lag of each projection
    engramlog projections rebuild NAME|--all      rebuild from position 0, then swap in atomically
    engramlog projections verify NAME|--all       rebuild into scratch tables and compare row for row (exit 1: not)
(`projections dead-letters …`: cli/dead_letters.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli import calls
from cli.output import console, err, fail, progress

if TYPE_CHECKING:
    from sqlalchemy import Engine

projections_app = typer.Typer(help="Status, rebuild and verify of the read models.", no_args_is_help=True)

NameArg = Annotated[str | None, typer.Argument()]
AllOpt = Annotated[bool, typer.Option("--all")]


def _names(name: str | None, all_: bool) -> list[str]:
    from projections.registry import PROJECTORS

    if all_:
        return list(PROJECTORS)
    if not name:
        fail("name a projection or pass --all")
    if name not in PROJECTORS:
        fail(f"unknown projection {name!r}; known: {', '.join(PROJECTORS)}")
    return [name]


@projections_app.command("status")
def projections_status() -> None:
    """Position, head and lag of each projection."""
    from projections.registry import PROJECTORS
    from projections.runner import status

    table = Table()
    for col in ("projection", "position", "head", "lag (events)", "lag (s)", "updated", "parked"):
        table.add_column(col)
    with calls.engine().connect() as conn:
        for p in PROJECTORS.values():
            s = status(conn, p)
            table.add_row(s.name, str(s.position), str(s.head), str(s.lag_events), f"{s.lag_seconds:.1f}",
                          s.updated_at or "never", str(s.parked) + (f" (+{s.failing} failing)" if s.failing else ""))
    console.print(table)


def _run(job: Callable[..., Any], verb: str, name: str, engine: Engine) -> Any:
    """One rebuild or verify of the projection `name` with a progress bar; one already running it: stop."""
    from projections.rebuild import ProjectionBusy
    from projections.registry import PROJECTORS

    with progress(err) as bar:
        task = bar.add_task(f"{verb} {name}", total=None)
        try:
            return job(engine, PROJECTORS[name], calls.settings().projections.projection_batch_size,
                       lambda done, total: bar.update(task, completed=done, total=total))
        except ProjectionBusy as exc:
            fail(str(exc))


@projections_app.command("rebuild")
def projections_rebuild(name: NameArg = None, all_: AllOpt = False) -> None:
    """Rebuild from position 0 into fresh tables, then swap them in atomically."""
    from projections.rebuild import rebuild

    engine = calls.engine()
    for n in _names(name, all_):
        checkpoint = _run(rebuild, "rebuild", n, engine)
        console.print(f"{n}: rebuilt to position {checkpoint.position}")


@projections_app.command("verify")
def projections_verify(name: NameArg = None, all_: AllOpt = False) -> None:
    """Rebuild into scratch tables and compare them with the live ones, row for row."""
    from projections.rebuild import verify

    engine = calls.engine()
    identical = True
    for n in _names(name, all_):
        report = _run(verify, "verify", n, engine)
        for t in report.tables:
            verdict = "[green]identical[/green]" if t.identical else "[red]DIFFERENT[/red]"
            console.print(f"{n}.{t.table}: {verdict} (live {t.live_rows} rows, rebuilt {t.rebuilt_rows}, "
                          f"live only {t.only_live}, rebuilt only {t.only_rebuilt}) at position {report.position}")
            for sample in t.samples:
                console.print(f"    {sample}")
        identical &= report.identical
    if not identical:
        raise typer.Exit(1)


def register(app: typer.Typer) -> typer.Typer:
    """Adds `projections`; answers its Typer, for the commands other modules hang under it (dead-letters)."""
    app.add_typer(projections_app, name="projections")
    return projections_app
