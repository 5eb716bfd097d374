"""Governance: the classified memory type (one of the seven) beside the producer's kind.

`memories.kind` stays what the producer wrote (observation, fact, message, or already a type); the write
path's classifier puts one of principle · correction · decision · guideline · pitfall · process · model in
`memory_type` (from the MemoryAdmitted event), so every memory has a type and no producer field is rewritten.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.execute("""
    ALTER TABLE memories ADD COLUMN memory_type text;
    """)


def downgrade() -> None:
    op.execute("""
    ALTER TABLE memories DROP COLUMN memory_type;
    """)
