"""`embedding_cache` keyed by tenant too: a shared cache let one tenant time its writes to learn whether another
had written a text (a hit is faster than the model). The old rows name no tenant, so they are dropped; the next
projection or rebuild embeds each text once per tenant again.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"


def upgrade() -> None:
    op.execute("""
    TRUNCATE embedding_cache;
    ALTER TABLE embedding_cache ADD COLUMN tenant text NOT NULL;
    ALTER TABLE embedding_cache DROP CONSTRAINT embedding_cache_pkey;
    ALTER TABLE embedding_cache ADD PRIMARY KEY (tenant, model, content_hash);
    """)


def downgrade() -> None:
    op.execute("""
    TRUNCATE embedding_cache;
    ALTER TABLE embedding_cache DROP CONSTRAINT embedding_cache_pkey;
    ALTER TABLE embedding_cache DROP COLUMN tenant;
    ALTER TABLE embedding_cache ADD PRIMARY KEY (model, content_hash);
    """)
