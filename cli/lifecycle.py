"""The lifecycle jobs run once, now or with a pinned clock (registered by cli/main.py); they write the
database directly, as the scheduler's runs do:

    engramlog lifecycle decay [--clock ISO] [--tenant T] [--json]                   the decay sweep
    engramlog lifecycle consolidate [--agent-id A] [--clock ISO] [--tenant T] [--json]   the "sleep" cycle
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from cli import calls
from cli.output import console, iso_time

lifecycle_app = typer.Typer(help="Run the lifecycle jobs once (the scheduler runs them periodically).",
                            no_args_is_help=True)
Clock = Annotated[str | None, typer.Option("--clock", help="ISO 8601 time the job decides with (default: now)")]
AnyTenant = Annotated[str | None, typer.Option(help="Only this tenant (default: every tenant)")]
JsonOpt = Annotated[bool, typer.Option("--json")]


def _clock(value: str | None) -> datetime:
    clock = iso_time(value, "--clock")
    if clock is None:
        return datetime.now(UTC)
    return clock if clock.tzinfo else clock.replace(tzinfo=UTC)


@lifecycle_app.command("decay")
def lifecycle_decay(clock: Clock = None, tenant: AnyTenant = None, as_json: JsonOpt = False) -> None:
    """Darwinian decay sweep: active → dormant → archived, reactivation, staging TTL; appended as events."""
    from workers.lifecycle import decay_sweep

    report = decay_sweep(calls.engine(), _clock(clock), tenant)
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
    console.print(f"{len(report.transitions)} transition(s) of memories — {counts}")
    for unit, sweep in report.units.items():  # knowledge sections, session messages, transcript chunks, code symbols
        part = sweep.as_dict()
        kinds = ", ".join(f"{k}: {v}" for k, v in part["by_transition"].items()) or "nothing to change"
        console.print(f"{unit} ({part['domain']}): {part['examined']} examined, {part['transitions']} "
                      f"transition(s) — {kinds}")


@lifecycle_app.command("consolidate")
def lifecycle_consolidate(agent_id: Annotated[str | None, typer.Option("--agent-id", help="Only this agent")] = None,
                          clock: Clock = None, tenant: AnyTenant = None, as_json: JsonOpt = False) -> None:
    """Consolidation: cluster, strengthen, bridge, forget, merge near-duplicates, cap; prints the report."""
    from workers.consolidation import consolidate

    result = consolidate(calls.engine(), _clock(clock), tenant, agent_id)
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
    for r in result.runs:  # the knowledge gaps deep recall registered, still live at the run's clock
        spots = r.report.get("blind_spots") or {"live": 0, "top": []}
        if spots["live"]:
            top = "; ".join(f"{s['question']!r} ({s['priority']:.2f})" for s in spots["top"][:3])
            console.print(f"{r.tenant}: {spots['live']} live blind spot(s), top: {top}", markup=False)
    console.print(f"{len(result.runs)} tenant run(s); report stored as ConsolidationCompleted "
                  f"(run ids: {', '.join(str(r.run_id) for r in result.runs[:5]) or 'none'})")


def register(app: typer.Typer) -> None:
    app.add_typer(lifecycle_app, name="lifecycle")
