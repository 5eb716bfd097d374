"""Lifecycle: what the decay sweep needs to tell a reference after a status change from one before it.

memory_activity.status_ref_count: the access count the last status decision saw (its inputs.ref_count); a
dormant or archived memory whose access count has grown past it was referenced again and is reactivated.
memory_activity.last_reactivated_at: the clock of the last reactivation, which counts as a reference.
memory_edges (tenant, kind): consolidation reads a scope's semantic and Hebbian edges by kind.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.execute("""
    ALTER TABLE memory_activity
        ADD COLUMN status_ref_count     integer,
        ADD COLUMN last_reactivated_at  timestamptz;
    CREATE INDEX memory_edges_kind ON memory_edges (tenant, kind);
    """)


def downgrade() -> None:
    op.execute("""
    DROP INDEX memory_edges_kind;
    ALTER TABLE memory_activity DROP COLUMN status_ref_count, DROP COLUMN last_reactivated_at;
    """)
