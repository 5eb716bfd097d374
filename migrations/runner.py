"""Run the Alembic migrations programmatically (used by `engramlog migrate` and `engramlog up`)."""

from pathlib import Path

from alembic import command
from alembic.config import Config

ROOT = Path(__file__).resolve().parent


def upgrade_to_head(database_url: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(ROOT))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    command.upgrade(config, "head")
