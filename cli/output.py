"""What every command prints through: stdout and stderr consoles, the one way a command stops with an error (and
reading an option's time, which stops with one), and its progress bar."""

from __future__ import annotations

from datetime import datetime
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
err = Console(stderr=True)


def fail(message: str) -> NoReturn:
    """Say why on stderr and stop with exit code 2. The message is printed as it is: a server's reason may hold
    brackets (`[timestamp] ROLE: text`) that rich would otherwise read as markup."""
    err.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def iso_time(value: str | None, option: str | None = None) -> datetime | None:
    """An ISO 8601 time given on the command line (None: not given); not one: stop, naming the option."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        fail(f"{option + ' ' if option else ''}{value!r} is not an ISO 8601 time")


def progress(on: Console) -> Progress:
    """A bar with the task's name, done of total and the time taken."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=on)
