"""Recall-quality evaluation (registered by cli/main.py):

    engramlog eval locomo [--data FILE] [--convs ID]... [--k N] [--attribution] [--gate] [--multi] [--folds]
                                                                               bench/locomo.py, bench/locomo_folds.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli import calls
from cli.output import console, fail

eval_app = typer.Typer(help="Recall-quality evaluation.", no_args_is_help=True)


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
                folds: Annotated[bool, typer.Option(
                    "--folds", help="out of fold: each pair of conversations held out in turn, the abstention "
                                    "floors chosen on the other six; mean and spread beside the full split")] = False,
                ) -> None:
    """Ingest LoCoMo conversations through the API and score recall against the gold evidence."""
    from bench.locomo import run_locomo

    if not data.exists():
        fail(f"no such file: {data}")
    api_key = os.environ.get("ENGRAMLOG_API_KEY")
    run_locomo(calls.settings().api_url(), data, convs or [], k=k, output=output, api_key=api_key, console=console,
               attribution=attribution, gate=gate, multi=multi, folds=folds)


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
