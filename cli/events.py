"""The event log for analysts (registered by cli/main.py); these read the database directly:

    engramlog events query [filters] [--limit N] [--json]   events matching the filters, ascending by position
    engramlog events tail [--type T] [--from-position N]    follow the log as JSON lines
    engramlog events export [filters] [--format jsonl|csv|parquet] [--output FILE]   (parquet: --output needed)
    engramlog export ...                                     the same; `engramlog import log FILE` restores one
"""

from __future__ import annotations

import csv
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli import calls
from cli.output import console, err, fail, iso_time, progress

if TYPE_CHECKING:
    from eventstore.query import EventFilter

events_app = typer.Typer(help="Query, follow and export the event log.", no_args_is_help=True)

Tenant = Annotated[str, typer.Option(help="Tenant to read (operators' commands read the database directly)")]
TypeOpt = Annotated[list[str] | None, typer.Option("--type", help="repeatable")]
EXPORT_PAGE = 1000


def _filter(tenant: str, stream: str | None, type_: list[str] | None, after: int | None, before: int | None,
            since: str | None, until: str | None) -> EventFilter:
    from eventstore.query import EventFilter

    return EventFilter(tenant, stream, tuple(type_ or ()), after, before, iso_time(since or None),
                       iso_time(until or None))


def _event_dict(e: Any) -> dict[str, Any]:
    return {"position": e.position, "event_id": str(e.event_id), "tenant": e.tenant, "stream_id": e.stream_id,
            "stream_version": e.stream_version, "type": e.type, "schema_version": e.schema_version,
            "data": e.data, "metadata": e.metadata, "occurred_at": e.occurred_at.isoformat(),
            "recorded_at": e.recorded_at.isoformat()}


def _after(f: EventFilter, last: Any) -> EventFilter:
    """The filter for the page after the event `last` (log order: transaction id, position; see query.py)."""
    from eventstore.read import Checkpoint

    return replace(f, after_cursor=Checkpoint(last.tx_id, last.position))


@events_app.command("query")
def events_query(tenant: Tenant = "default", stream: str | None = None, type_: TypeOpt = None,
                 after: int | None = None, before: int | None = None, since: str | None = None,
                 until: str | None = None, limit: int = 50,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Events matching the filters, ascending by position."""
    from eventstore.query import query_events

    with calls.engine().connect() as conn:
        events = query_events(conn, _filter(tenant, stream, type_, after, before, since, until), limit)
    if as_json:
        for e in events:
            print(json.dumps(_event_dict(e)))
        return
    table = Table()
    for col in ("position", "recorded_at", "type", "stream", "data"):
        table.add_column(col)
    for e in events:
        table.add_row(str(e.position), e.recorded_at.isoformat(timespec="seconds"), e.type, e.stream_id,
                      json.dumps(e.data)[:80])
    console.print(table)


@events_app.command("tail")
def events_tail(tenant: Tenant = "default", type_: TypeOpt = None,
                from_position: Annotated[int | None, typer.Option(help="default: the head")] = None,
                interval: float = 1.0) -> None:
    """Follow the log: print new events as JSON lines until Ctrl-C. Events come in log order (transaction id,
    position), each once its transaction and every older one have ended, so one that commits late is printed
    too, never skipped."""
    from eventstore.query import query_events, safe_head

    engine = calls.engine()
    f = _filter(tenant, None, type_, from_position, None, None, None)
    if from_position is None:
        with engine.connect() as conn:
            f = replace(f, after_cursor=safe_head(conn))
    try:
        while True:
            with engine.connect() as conn:
                events = query_events(conn, f, 500)
            for e in events:
                print(json.dumps(_event_dict(e)), flush=True)
            if events:
                f = _after(f, events[-1])
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        pass


@events_app.command("export")
def events_export(fmt: Annotated[str, typer.Option("--format", help="jsonl, csv or parquet")] = "jsonl",
                  output: Annotated[Path | None, typer.Option(help="default: stdout")] = None,
                  tenant: Tenant = "default", stream: str | None = None, type_: TypeOpt = None,
                  after: int | None = None, before: int | None = None, since: str | None = None,
                  until: str | None = None) -> None:
    """Export events as JSON lines, CSV or Parquet (cli/parquet_export.py), paging through the log."""
    from eventstore.query import count_events, query_events

    if fmt not in ("jsonl", "csv", "parquet"):
        fail("--format must be jsonl, csv or parquet")
    if fmt == "parquet" and output is None:
        fail("--format parquet writes a file: give --output FILE")
    f = _filter(tenant, stream, type_, after, before, since, until)
    if fmt == "parquet":
        from cli.parquet_export import ParquetEvents

        assert output is not None
        parquet: ParquetEvents | None = ParquetEvents(output)
        out: Any = None
    else:
        parquet = None
        out = output.open("w", newline="") if output else sys.stdout
    writer = None
    written = 0
    engine = calls.engine()
    with engine.connect() as conn:
        total = count_events(conn, f)  # the bar's total: events committed since are exported too, past it
    with progress(err) as bar:
        task = bar.add_task("exporting", total=total)
        while True:
            with engine.connect() as conn:
                page = query_events(conn, f, EXPORT_PAGE)
            if parquet is not None:
                parquet.write(page)
            for e in page if parquet is None else ():
                row = _event_dict(e)
                if fmt == "jsonl":
                    out.write(json.dumps(row) + "\n")
                else:
                    if writer is None:
                        writer = csv.DictWriter(out, fieldnames=list(row))
                        writer.writeheader()
                    writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
            written += len(page)
            bar.update(task, advance=len(page))
            if len(page) < EXPORT_PAGE:
                break
            f = _after(f, page[-1])
    if parquet is not None:
        parquet.close()
    elif output:
        out.close()
    err.print(f"exported {written} events")


def register(app: typer.Typer) -> None:
    app.add_typer(events_app, name="events")
    app.command("export", help="Export the event log (as `engramlog events export`).")(events_export)
