"""Analysts' database roles (docs/analytics.md, migration 0024): a LOGIN role per analyst, a member of the template
role `engramlog_analyst` (USAGE on schema analytics, SELECT on its five views, nothing else), bound to one tenant
by its row in analyst_roles, which every analytics view filters by (current_user's tenant)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from psycopg import sql
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from domain.errors import InvalidPayload, NotFound

TEMPLATE = "engramlog_analyst"
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_RECORD = text("INSERT INTO analyst_roles (role_name, tenant) VALUES (:name, :tenant)")
_FORGET = text("DELETE FROM analyst_roles WHERE role_name = :name RETURNING tenant")
LIST = text("SELECT role_name, tenant, created_at FROM analyst_roles ORDER BY tenant, role_name")


@dataclass(frozen=True)
class Analyst:
    role: str
    tenant: str
    password: str
    dsn: str


def default_name(tenant: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", tenant.lower()).strip("_")[:40] or "tenant"
    return f"{TEMPLATE}_{slug}_{secrets.token_hex(3)}"


def analyst_dsn(database_url: str, role: str, password: str) -> str:
    """The database URL with the analyst's credentials, as libpq (psql, DuckDB's postgres extension) reads it."""
    url = make_url(database_url).set(drivername="postgresql", username=role, password=password)
    return url.render_as_string(hide_password=False)


def create_analyst(engine: Engine, tenant: str, name: str | None = None) -> Analyst:
    """A LOGIN role with a fresh password that sees `tenant`'s rows of the analytics views only."""
    if not tenant.strip():
        raise InvalidPayload("an analyst reads one tenant: give --tenant")
    role = name or default_name(tenant)
    if not _NAME.fullmatch(role):
        raise InvalidPayload("a role name is lower-case letters, digits and _, at most 63, not starting with a digit")
    password = secrets.token_urlsafe(24)
    with engine.begin() as conn:
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
            sql.Identifier(role), sql.Literal(password), sql.Identifier(TEMPLATE)))
        conn.execute(_RECORD, {"name": role, "tenant": tenant})
    return Analyst(role, tenant, password, analyst_dsn(engine.url.render_as_string(hide_password=False), role,
                                                       password))


def drop_analyst(engine: Engine, role: str) -> str:
    """Drop an analyst's role; answers its tenant."""
    with engine.begin() as conn:
        row = conn.execute(_FORGET, {"name": role}).first()
        if row is None:
            raise NotFound(f"no analyst role {role!r}")
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    return str(row.tenant)
