"""memory_versions: each memory's states with the log positions they held between (recorded time, `as_of`).

Owned by the memories projector (projections/memory_versions.py): every event that changes a memory's row closes
its open version (valid_to = the event's position) and opens one from that position holding the row as it then
stood. A read `as_of` position p takes, per memory, the version with valid_from <= p < valid_to (valid_to NULL:
still current), so recall and GET /v1/memories/{id} answer what the store held at p without replaying the log.

Revision ID: 0025
Revises: 0024
"""

from alembic import op

revision = "0025"
down_revision = "0024"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE memory_versions (
        tenant            text        NOT NULL,
        memory_id         uuid        NOT NULL,
        valid_from        bigint      NOT NULL,  -- the log position from which this state holds
        valid_to          bigint,                -- the position of the event that ended it; NULL: current
        content           text        NOT NULL,
        content_hash      text        NOT NULL,
        kind              text        NOT NULL,
        agent_id          text,
        project           text,
        session_id        text,
        tags              text[]      NOT NULL DEFAULT '{}',
        metadata          jsonb       NOT NULL DEFAULT '{}'::jsonb,
        occurred_at       timestamptz NOT NULL,
        recorded_at       timestamptz NOT NULL,
        status            text        NOT NULL,
        position          bigint      NOT NULL,
        memory_type       text,
        salience          real,
        route             text,
        confidence        real        NOT NULL,
        reinforced_count  integer     NOT NULL,
        supersedes        uuid,
        superseded_by     uuid,
        merged_into       uuid,
        status_changed_at timestamptz,
        PRIMARY KEY (tenant, memory_id, valid_from)
    );
    CREATE INDEX memory_versions_open ON memory_versions (tenant, memory_id) WHERE valid_to IS NULL;
    """)


def downgrade() -> None:
    op.execute("DROP TABLE memory_versions")
