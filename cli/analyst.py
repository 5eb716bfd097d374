"""`engramlog analyst create --tenant T` / `list` / `drop ROLE`: analysts' read-only database roles
(services/analysts.py, docs/analytics.md). `create` prints the role's connection string once: the password is kept
nowhere else."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import calls
from cli.output import console, fail

analyst_app = typer.Typer(help="Analysts' read-only roles on the analytics views.", no_args_is_help=True)


@analyst_app.command("create")
def analyst_create(tenant: Annotated[str, typer.Option(help="the one tenant the role sees")],
                   name: Annotated[str | None, typer.Option(help="role name (default: engramlog_analyst_<tenant>_…)")]
                   = None) -> None:
    """Create a LOGIN role that reads the tenant's rows of the analytics views and nothing else; print its DSN."""
    from domain.errors import DomainError
    from services.analysts import create_analyst

    try:
        analyst = create_analyst(calls.engine(), tenant, name)
    except DomainError as exc:
        fail(str(exc))
    print(analyst.dsn)


@analyst_app.command("list")
def analyst_list() -> None:
    """The analysts' roles and their tenants."""
    from services.analysts import LIST

    with calls.engine().connect() as conn:
        for r in conn.execute(LIST):
            console.print(f"{r.role_name}\t{r.tenant}\t{r.created_at.isoformat(timespec='seconds')}")


@analyst_app.command("drop")
def analyst_drop(role: str) -> None:
    """Drop an analyst's role."""
    from domain.errors import DomainError
    from services.analysts import drop_analyst

    try:
        tenant = drop_analyst(calls.engine(), role)
    except DomainError as exc:
        fail(str(exc))
    console.print(f"dropped {role} (tenant {tenant})")


def register(app: typer.Typer) -> None:
    app.add_typer(analyst_app, name="analyst")
