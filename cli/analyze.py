"""Analyst commands over the hit-log (registered by cli/main.py); they read the database directly:

    engramlog analyze keyword-gaps [--tenant T] [--since ISO] [--json]   SwarmAI's open question 1, per domain
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from cli import calls
from cli.output import console, iso_time

analyze_app = typer.Typer(help="Analyses of the hit-log.", no_args_is_help=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


@analyze_app.command("keyword-gaps")
def keyword_gaps_command(
        tenant: Annotated[str, typer.Option(help="Tenant to read")] = "default",
        since: Annotated[str | None, typer.Option(help="only recalls served since (ISO 8601)")] = None,
        as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Per domain: the share of recalls where the keyword leg missed a result the vector leg found and that was
    then used (feedback "used" or a drill), and the share of vector-only results marked not useful, next to
    SwarmAI's gate (semantic everywhere only if >= 20% keyword false negatives with < 10% hybrid false
    positives). Figures only: the decision is the reader's."""
    from recall.analysis import HYBRID_FALSE_POSITIVE_GATE, KEYWORD_FALSE_NEGATIVE_GATE, keyword_gaps

    since_at = iso_time(since or None, "--since")
    with calls.engine().connect() as conn:
        rows = keyword_gaps(conn, tenant, since_at)
    if as_json:
        console.print_json(json.dumps([r.as_dict() for r in rows]))
        return
    table = Table(title=f"keyword gaps, tenant {tenant!r}" + (f", since {since}" if since else ""))
    for col in ("domain", "recalls", "no legs", "results", "vector-only", "vector-only used",
                "keyword false negatives", "(of recalls with a use)", "vector-only not useful",
                "hybrid false positives"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.domain, str(r.recalls), str(r.recalls_without_legs), str(r.results), str(r.vector_only),
                      str(r.vector_only_used),
                      f"{_pct(r.keyword_false_negatives)} ({r.recalls_keyword_missed_used}/{r.recalls})",
                      f"{_pct(r.keyword_false_negatives_among_used)} "
                      f"({r.recalls_keyword_missed_used}/{r.recalls_with_use})",
                      str(r.vector_only_not_useful) if r.not_useful_signal else "n/a (no signal)",
                      _pct(r.hybrid_false_positives))
    console.print(table)
    console.print(f"SwarmAI's gate: build semantic everywhere only if keyword false negatives >= "
                  f"{100 * KEYWORD_FALSE_NEGATIVE_GATE:.0f}% with hybrid false positives < "
                  f"{100 * HYBRID_FALSE_POSITIVE_GATE:.0f}%. (n/a: no recalls, or no not-useful signal in that "
                  "domain: only memories take feedback.)")


def register(app: typer.Typer) -> None:
    app.add_typer(analyze_app, name="analyze")
