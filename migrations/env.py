"""Alembic environment: plain-SQL migrations against DATABASE_URL (or the running stack's database)."""

from alembic import context

from infra.db import engine_for
from infra.settings import get_settings

url = context.config.get_main_option("sqlalchemy.url") or get_settings().stack.database_url
with engine_for(url, statement_timeout_s=0).connect() as connection:  # DDL may take long
    context.configure(connection=connection, target_metadata=None, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()
