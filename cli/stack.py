"""Running the service (registered by cli/main.py):

    engramlog up [--data-dir DIR] [--port N] [--workers N] [--api-processes N]
                                                             PostgreSQL, Redis, migrations, workers and the API
    engramlog migrate                                        the database migrations, against DATABASE_URL
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli import calls
from cli.output import console, fail

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Stack data dir [env ENGRAMLOG_DATA_DIR; .engramlog]")]


def up(data_dir: DataDir = None,
       port: Annotated[int | None, typer.Option(help="API port [env ENGRAMLOG_PORT; 8000]")] = None,
       workers: Annotated[int | None, typer.Option(
           min=1, help="Worker processes sharing the projections [env ENGRAMLOG_WORKERS; 1]")] = None,
       api_processes: Annotated[int | None, typer.Option(
           min=1, help="API processes (uvicorn workers) [env ENGRAMLOG_API_PROCESSES; 1]")] = None) -> None:
    """Run PostgreSQL, Redis, migrations, workers and the API in the foreground until Ctrl-C."""
    if data_dir is not None:
        os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    if port is not None:
        os.environ["ENGRAMLOG_PORT"] = str(port)
    if workers is not None:
        os.environ["ENGRAMLOG_WORKERS"] = str(workers)
    if api_processes is not None:
        os.environ["ENGRAMLOG_API_PROCESSES"] = str(api_processes)
    from infra.logging import configure_logging
    from infra.settings import Settings
    from stack.up import StackError, run_foreground

    settings = Settings()  # not resolved from a state file: this process is the stack
    configure_logging(settings.stack.log_level)
    try:
        run_foreground(settings, settings.workers.workers)
    except StackError as exc:
        fail(str(exc))


def migrate() -> None:
    """Run the database migrations against DATABASE_URL (or the running stack's database)."""
    from migrations.runner import upgrade_to_head

    s = calls.settings()
    if not s.stack.database_url:
        fail("set DATABASE_URL (or start the stack with `engramlog up`)")
    upgrade_to_head(s.stack.database_url)
    console.print("migrations: at head")


def register(app: typer.Typer) -> None:
    app.command()(up)
    app.command()(migrate)
