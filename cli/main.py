"""The `engramlog` command line: run the stack, write and recall, query the log, operate projections."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli import analyze, code, dead_letters, knowledge, mcp, sessions, transcripts

app = typer.Typer(help="Engramlog: event-sourced long-term memory for LLM agents.", no_args_is_help=True)
events_app = typer.Typer(help="Query, follow and export the event log.", no_args_is_help=True)
projections_app = typer.Typer(help="Status, rebuild and verify of the read models.", no_args_is_help=True)
eval_app = typer.Typer(help="Recall-quality evaluation.", no_args_is_help=True)
app.add_typer(events_app, name="events")
app.add_typer(projections_app, name="projections")
app.add_typer(eval_app, name="eval")
console = Console()
err = Console(stderr=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Stack data dir [env ENGRAMLOG_DATA_DIR; .engramlog]")]
Tenant = Annotated[str, typer.Option(help="Tenant to read (operators' commands read the database directly)")]


@app.callback()
def main(data_dir: DataDir = None) -> None:
    if data_dir is not None:
        os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    from infra.logging import configure_logging

    configure_logging(os.environ.get("ENGRAMLOG_LOG_LEVEL", "warning"))


def _settings():  # type: ignore[no-untyped-def]
    from infra.settings import get_settings
    from stack.state import stack_state_problem

    settings = get_settings()
    problem = stack_state_problem(settings.data_dir)  # it names the API our key is sent to: trusted only if live
    if problem:
        fail(problem)
    return settings


def _engine():  # type: ignore[no-untyped-def]
    from infra.db import get_engine

    s = _settings()
    if not s.database_url:
        fail(f"no database: no stack is running on {s.data_dir} and DATABASE_URL is not set")
    return get_engine()


def _client():  # type: ignore[no-untyped-def]
    from engramlog_client import Engramlog  # the SDK (sdk/python)

    api_key = os.environ.get("ENGRAMLOG_API_KEY")
    return Engramlog(_settings().api_url(), api_key=api_key)


def refusal(exc: Exception) -> str:
    """What to say of an SDK error: the server's refusal, or (status 0: no answer at all) that the API is not
    reachable where the CLI looked for it."""
    if getattr(exc, "status", None) == 0:
        return f"cannot reach the API at {_settings().api_url()}: {exc}"
    return str(exc)


def fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err)


@app.command()
def up(data_dir: DataDir = None,
       port: Annotated[int | None, typer.Option(help="API port [env ENGRAMLOG_PORT; 8000]")] = None,
       workers: Annotated[int, typer.Option(help="Dramatiq worker processes")] = 1) -> None:
    """Run PostgreSQL, Redis, migrations, workers and the API in the foreground until Ctrl-C."""
    if data_dir is not None:
        os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    if port is not None:
        os.environ["ENGRAMLOG_PORT"] = str(port)
    from infra.logging import configure_logging
    from infra.settings import Settings
    from stack.up import StackError, run_foreground

    settings = Settings()  # not resolved from a state file: this process is the stack
    configure_logging(settings.log_level)
    try:
        run_foreground(settings, workers)
    except StackError as exc:
        fail(str(exc))


@app.command()
def migrate() -> None:
    """Run the database migrations against DATABASE_URL (or the running stack's database)."""
    from migrations.runner import upgrade_to_head

    s = _settings()
    if not s.database_url:
        fail("set DATABASE_URL (or start the stack with `engramlog up`)")
    upgrade_to_head(s.database_url)
    console.print("migrations: at head")


@app.command()
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
    from engramlog_client import EngramlogError

    try:
        meta = json.loads(metadata) if metadata else {}
    except json.JSONDecodeError as exc:
        fail(f"--metadata is not valid JSON: {exc}")
    try:
        with _client() as c:
            written = c.remember(content, kind=kind, agent_id=agent_id, project=project, session_id=session_id,
                                 tags=tag or [], metadata=meta, idempotency_key=idempotency_key,
                                 must_keep=must_keep or None)
            out = written.model_dump(mode="json", exclude_none=True)
            if wait:
                out["recallable"] = c.wait_recallable(written.position, wait_timeout)
    except EngramlogError as exc:
        fail(refusal(exc))
    except Exception as exc:
        fail(f"cannot reach the API at {_settings().api_url()}: {exc}")
    console.print_json(data=out)


@app.command()
def recall(query: str, k: int = 10, agent_id: str | None = None, project: str | None = None,
           session_id: str | None = None, min_position: int | None = None,
           as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Recall memories for a query through the API."""
    from engramlog_client import EngramlogError

    try:
        with _client() as c:
            out = c.recall(query, k=k, agent_id=agent_id, project=project, session_id=session_id,
                           min_position=min_position).model_dump(mode="json")
    except EngramlogError as exc:
        fail(refusal(exc))
    except Exception as exc:
        fail(f"cannot reach the API at {_settings().api_url()}: {exc}")
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


def _filter(tenant: str, stream: str | None, type_: list[str] | None, after: int | None, before: int | None,
            since: str | None, until: str | None):  # type: ignore[no-untyped-def]
    from datetime import datetime

    from eventstore.query import EventFilter

    def when(v: str | None) -> datetime | None:
        try:
            return datetime.fromisoformat(v) if v else None
        except ValueError:
            fail(f"{v!r} is not an ISO 8601 time")
            return None

    return EventFilter(tenant, stream, tuple(type_ or ()), after, before, when(since), when(until))


def _event_dict(e: Any) -> dict[str, Any]:
    return {"position": e.position, "event_id": str(e.event_id), "tenant": e.tenant, "stream_id": e.stream_id,
            "stream_version": e.stream_version, "type": e.type, "schema_version": e.schema_version,
            "data": e.data, "metadata": e.metadata, "occurred_at": e.occurred_at.isoformat(),
            "recorded_at": e.recorded_at.isoformat()}


TypeOpt = Annotated[list[str] | None, typer.Option("--type", help="repeatable")]


@events_app.command("query")
def events_query(tenant: Tenant = "default", stream: str | None = None, type_: TypeOpt = None,
                 after: int | None = None, before: int | None = None, since: str | None = None,
                 until: str | None = None, limit: int = 50,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Events matching the filters, ascending by position."""
    from eventstore.query import query_events

    with _engine().connect() as conn:
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
    from dataclasses import replace

    from eventstore.query import query_events, safe_head
    from eventstore.read import Checkpoint

    engine = _engine()
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
                f = replace(f, after_cursor=Checkpoint(events[-1].tx_id, events[-1].position))
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        pass


@events_app.command("export")
def events_export(fmt: Annotated[str, typer.Option("--format", help="jsonl or csv")] = "jsonl",
                  output: Annotated[Path | None, typer.Option(help="default: stdout")] = None,
                  tenant: Tenant = "default", stream: str | None = None, type_: TypeOpt = None,
                  after: int | None = None, before: int | None = None, since: str | None = None,
                  until: str | None = None) -> None:
    """Export events as JSON lines or CSV, paging through the log."""
    from eventstore.query import query_events

    if fmt not in ("jsonl", "csv"):
        fail("--format must be jsonl or csv")
    f = _filter(tenant, stream, type_, after, before, since, until)
    out = output.open("w", newline="") if output else sys.stdout
    writer = None
    written = 0
    engine = _engine()
    with _progress() as progress:
        task = progress.add_task("exporting", total=None)
        while True:
            with engine.connect() as conn:
                page = query_events(conn, f, 1000)
            for e in page:
                row = _event_dict(e)
                if fmt == "jsonl":
                    out.write(json.dumps(row) + "\n")
                else:
                    if writer is None:
                        writer = csv.DictWriter(out, fieldnames=list(row))
                        writer.writeheader()
                    writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
            written += len(page)
            progress.update(task, advance=len(page))
            if len(page) < 1000:
                break
            from dataclasses import replace

            from eventstore.read import Checkpoint

            f = replace(f, after_cursor=Checkpoint(page[-1].tx_id, page[-1].position))  # log order: see query.py
    if output:
        out.close()
    err.print(f"exported {written} events")


def _names(name: str | None, all_: bool) -> list[str]:
    from projections.registry import PROJECTORS

    if all_:
        return list(PROJECTORS)
    if not name:
        fail("name a projection or pass --all")
    if name not in PROJECTORS:
        fail(f"unknown projection {name!r}; known: {', '.join(PROJECTORS)}")
    return [name]  # type: ignore[list-item]


@projections_app.command("status")
def projections_status() -> None:
    """Position, head and lag of each projection."""
    from projections.registry import PROJECTORS
    from projections.runner import status

    table = Table()
    for col in ("projection", "position", "head", "lag (events)", "lag (s)", "updated", "parked"):
        table.add_column(col)
    with _engine().connect() as conn:
        for p in PROJECTORS.values():
            s = status(conn, p)
            table.add_row(s.name, str(s.position), str(s.head), str(s.lag_events), f"{s.lag_seconds:.1f}",
                          s.updated_at or "never", str(s.parked) + (f" (+{s.failing} failing)" if s.failing else ""))
    console.print(table)


@projections_app.command("rebuild")
def projections_rebuild(name: Annotated[str | None, typer.Argument()] = None,
                        all_: Annotated[bool, typer.Option("--all")] = False) -> None:
    """Rebuild from position 0 into fresh tables, then swap them in atomically."""
    from projections.rebuild import ProjectionBusy, rebuild
    from projections.registry import PROJECTORS

    engine = _engine()
    for n in _names(name, all_):
        with _progress() as progress:
            task = progress.add_task(f"rebuild {n}", total=None)
            try:
                checkpoint = rebuild(engine, PROJECTORS[n], _settings().projection_batch_size,
                                     lambda done, total, t=task: progress.update(t, completed=done, total=total))
            except ProjectionBusy as exc:
                fail(str(exc))
        console.print(f"{n}: rebuilt to position {checkpoint.position}")


@projections_app.command("verify")
def projections_verify(name: Annotated[str | None, typer.Argument()] = None,
                       all_: Annotated[bool, typer.Option("--all")] = False) -> None:
    """Rebuild into scratch tables and compare them with the live ones, row for row."""
    from projections.rebuild import ProjectionBusy, verify
    from projections.registry import PROJECTORS

    engine = _engine()
    identical = True
    for n in _names(name, all_):
        with _progress() as progress:
            task = progress.add_task(f"verify {n}", total=None)
            try:
                report = verify(engine, PROJECTORS[n], _settings().projection_batch_size,
                                lambda done, total, t=task: progress.update(t, completed=done, total=total))
            except ProjectionBusy as exc:
                fail(str(exc))
        for t in report.tables:
            verdict = "[green]identical[/green]" if t.identical else "[red]DIFFERENT[/red]"
            console.print(f"{n}.{t.table}: {verdict} (live {t.live_rows} rows, rebuilt {t.rebuilt_rows}, "
                          f"live only {t.only_live}, rebuilt only {t.only_rebuilt}) at position {report.position}")
            for sample in t.samples:
                console.print(f"    {sample}")
        identical &= report.identical
    if not identical:
        raise typer.Exit(1)


@eval_app.command("locomo")
def eval_locomo(data: Annotated[Path, typer.Option(help="LoCoMo JSON")] = Path("../shared/eval/locomo/locomo_dev.json"),
                convs: Annotated[list[str] | None, typer.Option("--convs", help="sample ids; repeatable")] = None,
                k: int = 10,
                output: Annotated[Path | None, typer.Option(help="results JSON (bench/results/)")] = None,
                attribution: Annotated[bool, typer.Option(
                    "--attribution", help="per question, the funnel stage where the gold evidence was lost")] = False,
                gate: Annotated[bool, typer.Option(
                    "--gate", help="ingest without must_keep: the salience gate decides what is kept")] = False,
                multi: Annotated[bool, typer.Option(
                    "--multi", help="ask through POST /v1/recall/multi (the memories domain on the seam)")] = False,
                ) -> None:
    """Ingest LoCoMo conversations through the API and score recall against the gold evidence."""
    from bench.locomo import run_locomo

    if not data.exists():
        fail(f"no such file: {data}")
    api_key = os.environ.get("ENGRAMLOG_API_KEY")
    run_locomo(_settings().api_url(), data, convs or [], k=k, output=output, api_key=api_key, console=console,
               attribution=attribution, gate=gate, multi=multi)


# --- lifecycle: the decay sweep and the consolidation ("sleep") cycle, run once, now or with a pinned clock ---
lifecycle_app = typer.Typer(help="Run the lifecycle jobs once (the scheduler runs them periodically).",
                            no_args_is_help=True)
app.add_typer(lifecycle_app, name="lifecycle")
Clock = Annotated[str | None, typer.Option("--clock", help="ISO 8601 time the job decides with (default: now)")]
AnyTenant = Annotated[str | None, typer.Option(help="Only this tenant (default: every tenant)")]


def _clock(value: str | None):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    if value is None:
        return datetime.now(UTC)
    try:
        clock = datetime.fromisoformat(value)
    except ValueError:
        fail(f"--clock {value!r} is not an ISO 8601 time")
    return clock if clock.tzinfo else clock.replace(tzinfo=UTC)


@lifecycle_app.command("decay")
def lifecycle_decay(clock: Clock = None, tenant: AnyTenant = None,
                    as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Darwinian decay sweep: active → dormant → archived, reactivation, staging TTL; appended as events."""
    from workers.lifecycle import decay_sweep

    report = decay_sweep(_engine(), _clock(clock), tenant)
    if as_json:
        console.print_json(data={**report.as_dict(), "details": [
            {"tenant": t, "memory_id": str(m), "from": tr.from_status, "to": tr.to_status, "reason": tr.reason}
            for t, m, tr in report.transitions]})
        return
    table = Table(title=f"decay sweep at {report.clock.isoformat()} ({report.examined} candidates)")
    for col in ("tenant", "memory", "from", "to", "reason"):
        table.add_column(col)
    for t, m, tr in report.transitions[:200]:
        table.add_row(t, str(m), tr.from_status, tr.to_status, tr.reason)
    console.print(table)
    counts = ", ".join(f"{k}: {v}" for k, v in report.counts().items()) or "nothing to change"
    console.print(f"{len(report.transitions)} transition(s) — {counts}")


@lifecycle_app.command("consolidate")
def lifecycle_consolidate(agent_id: Annotated[str | None, typer.Option("--agent-id", help="Only this agent")] = None,
                          clock: Clock = None, tenant: AnyTenant = None,
                          as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Consolidation: cluster, strengthen, bridge, forget, merge near-duplicates, cap; prints the report."""
    from workers.consolidation import consolidate

    result = consolidate(_engine(), _clock(clock), tenant, agent_id)
    if as_json:
        console.print_json(data={"clock": result.clock.isoformat(), "totals": result.totals(), "runs": [
            {"tenant": r.tenant, "run_id": str(r.run_id), "position": r.position, "report": r.report}
            for r in result.runs]})
        return
    phases = ("merged", "strengthened", "bridged", "unlinked", "forgotten", "transferred", "capped")
    table = Table(title=f"consolidation at {result.clock.isoformat()}")
    for col in ("tenant", "scopes", "memories", "clusters", *phases):
        table.add_column(col, justify="right" if col != "tenant" else "left")
    for r in result.runs:
        rep = r.report
        table.add_row(r.tenant, str(rep["scopes"]), str(rep["memories"]), str(rep["clusters"]),
                      *(str(rep["changes"][p]) for p in phases))
    console.print(table)
    console.print(f"{len(result.runs)} tenant run(s); report stored as ConsolidationCompleted "
                  f"(run ids: {', '.join(str(r.run_id) for r in result.runs[:5]) or 'none'})")

dead_letters.register(app, projections_app)  # projections dead-letters …, ingest dead-letters …
knowledge.register(app)  # knowledge put …, knowledge sync …
sessions.register(app)  # sessions list | show | append | resume
code.register(app)  # code index …
transcripts.register(app)  # transcripts put …, transcripts sync …
analyze.register(app)  # analyze keyword-gaps
mcp.register(app)  # mcp (the MCP server over stdio)

if __name__ == "__main__":
    app()
