"""`engramlog import log FILE`: restore an export of the event log (jsonl or parquet, by its suffix) into the store
this CLI reaches (DATABASE_URL or the running stack), re-appending every event (services/import_log.py); the
workers project it as any append. Registered by cli/main.py in the `import` group (cli/imports.py's).

    engramlog import log FILE [--resume]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import calls
from cli.output import err, fail, progress


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    fail(f"{path}:{n}: not a JSON line ({exc.msg})")


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def import_log(file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help=".jsonl or .parquet")],
               resume: Annotated[bool, typer.Option(help="the target tenant may hold events: skip those it has")]
               = False) -> None:
    """Append an `engramlog export` file's events to this store: same ids, streams, versions, times and actors,
    sealed with this store's own keys. A tenant that already holds events is refused unless --resume."""
    from domain.errors import DomainError
    from services.import_log import check_whole, import_events

    if file.suffix == ".parquet":
        from cli.parquet_export import parquet_count, parquet_rows

        def rows() -> Iterator[dict[str, Any]]:
            return parquet_rows(file)

        total = parquet_count(file)
    else:
        def rows() -> Iterator[dict[str, Any]]:
            return _jsonl_rows(file)

        total = _count_lines(file)
    engine = calls.engine()
    with progress(err) as bar:
        checking = bar.add_task("checking", total=total)
        try:  # the whole file first: one that is not a whole export writes nothing, whatever its size
            check_whole(rows(), progress=lambda n: bar.update(checking, advance=n))
            task = bar.add_task("importing", total=total)
            report = import_events(engine, rows(), resume=resume, progress=lambda n: bar.update(task, advance=n))
        except DomainError as exc:
            fail(str(exc))
    err.print(f"imported {report.appended} events" + (f", {report.skipped} already held" if report.skipped else ""))


def register(app: typer.Typer) -> None:
    """`import log` in the `import` group, which cli/imports.py registers first."""
    group = next(g.typer_instance for g in app.registered_groups if g.name == "import" and g.typer_instance)
    group.command("log")(import_log)
