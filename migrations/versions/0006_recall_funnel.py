"""Recall funnel: a tenant's timeline of memories, for coreference and the graph walk's temporal neighbours.

Coreference reads the `coref_recent` most recent recallable memories of a scope, newest first; the graph walk
reads the memories just before and after a memory within a time window. This index serves both by walking a
tenant's timeline (occurred_at, then log position) instead of sorting every row of the scope.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.execute("CREATE INDEX memories_timeline ON memories (tenant, occurred_at, position)")


def downgrade() -> None:
    op.execute("DROP INDEX memories_timeline")
