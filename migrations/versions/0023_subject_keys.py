"""Crypto-shredding (docs/forget.md): one AES-256-GCM data key per (tenant, stream) whose events carry content.
eventstore/codec.py seals an event's content fields with its stream's key at append and opens them on read;
POST /v1/forget deletes the keys, so what the log (and every backup of it) holds of the subject is unreadable.

key_id names the key inside each sealed payload: a stream forgotten and then written again gets a new key, and
its old events stay unreadable. The table holds keys only (no content); the unique (tenant, stream_id) is the
key in force, and the only index a forget or an append needs.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE subject_keys (
        key_id      uuid        PRIMARY KEY,
        tenant      text        NOT NULL,
        stream_id   text        NOT NULL,
        key         bytea       NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant, stream_id)
    );
    """)


def downgrade() -> None:
    op.execute("DROP TABLE subject_keys")
