"""Memory core: governance state on memories, supersede history, activity (ACT-R inputs), association edges.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.execute("""
    ALTER TABLE memories
        ADD COLUMN salience          real,
        ADD COLUMN route             text,
        ADD COLUMN confidence        real NOT NULL DEFAULT 0.5,
        ADD COLUMN reinforced_count  integer NOT NULL DEFAULT 0,
        ADD COLUMN supersedes        uuid,
        ADD COLUMN superseded_by     uuid,
        ADD COLUMN merged_into       uuid,
        ADD COLUMN status_changed_at timestamptz;
    CREATE INDEX memories_status ON memories (tenant, status);

    -- Owned by the memories projector: each supersede, old -> new, when, why, by whom.
    CREATE TABLE memory_history (
        tenant         text        NOT NULL,
        memory_id      uuid        NOT NULL,
        superseded_by  uuid        NOT NULL,
        reason         text        NOT NULL,
        trigger        text        NOT NULL,
        actor          text,
        at             timestamptz NOT NULL,
        position       bigint      NOT NULL,
        PRIMARY KEY (tenant, memory_id, superseded_by)
    );
    CREATE INDEX memory_history_new ON memory_history (tenant, superseded_by);

    -- Owned by the activity projector: the inputs of ACT-R activation and Darwinian decay.
    CREATE TABLE memory_activity (
        tenant            text        NOT NULL,
        memory_id         uuid        NOT NULL,
        access_count      integer     NOT NULL DEFAULT 0,
        last_access_at    timestamptz,
        used_count        integer     NOT NULL DEFAULT 0,
        not_useful_count  integer     NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, memory_id)
    );

    -- Owned by the edges projector: associations between memories (weights decay at query time).
    CREATE TABLE memory_edges (
        tenant      text        NOT NULL,
        source_id   uuid        NOT NULL,
        target_id   uuid        NOT NULL,
        kind        text        NOT NULL,
        weight      double precision NOT NULL,
        updated_at  timestamptz NOT NULL,
        PRIMARY KEY (tenant, source_id, target_id, kind)
    );
    CREATE INDEX memory_edges_target ON memory_edges (tenant, target_id);
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE memory_edges; DROP TABLE memory_activity; DROP TABLE memory_history;
    DROP INDEX memories_status;
    ALTER TABLE memories DROP COLUMN salience, DROP COLUMN route, DROP COLUMN confidence,
        DROP COLUMN reinforced_count, DROP COLUMN supersedes, DROP COLUMN superseded_by, DROP COLUMN merged_into,
        DROP COLUMN status_changed_at;
    """)
