"""Projection checkpoints per (projection, partition): N worker processes share a projection's work.

A projection's events are split into partitions by a hash of their tenant (`engramlog_partition(tenant, n)`, the
one definition, in SQL so that reads filter by it); a tenant's events stay in one partition, in order. Each row is
one partition's place in the log; `partitions` says how many the projection's rows split it into (all rows of one
projection agree). The existing checkpoints carry over as partition 0 of 1, so an upgrade replays nothing: the
runner (projections/partitions.py) splits a projection whose rows are all at one checkpoint into the configured
number of partitions at that same checkpoint, which is exact, since every event at or below it is applied for every
tenant.

Revision ID: 0022
Revises: 0021
"""

from alembic import op

revision = "0022"
down_revision = "0021"


def upgrade() -> None:
    op.execute("""
    CREATE FUNCTION engramlog_partition(tenant text, partitions int) RETURNS int
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT (hashtext(tenant) & 2147483647) % partitions $$;

    ALTER TABLE projection_checkpoints
        ADD COLUMN partition  int NOT NULL DEFAULT 0,
        ADD COLUMN partitions int NOT NULL DEFAULT 1,
        ADD CONSTRAINT projection_checkpoints_partition_range CHECK (partition >= 0 AND partition < partitions);
    ALTER TABLE projection_checkpoints DROP CONSTRAINT projection_checkpoints_pkey;
    ALTER TABLE projection_checkpoints ADD PRIMARY KEY (name, partition);
    """)


def downgrade() -> None:
    # One row per projection again: exact only where its partitions are at one checkpoint (else rebuild it).
    op.execute("""
    DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM projection_checkpoints GROUP BY name
                 HAVING count(DISTINCT (tx_id::text, position)) > 1) THEN
        RAISE EXCEPTION 'projection partitions are at different checkpoints: stop the workers after they catch up';
      END IF;
    END $$;
    DELETE FROM projection_checkpoints WHERE partition > 0;
    ALTER TABLE projection_checkpoints DROP CONSTRAINT projection_checkpoints_pkey;
    ALTER TABLE projection_checkpoints DROP CONSTRAINT projection_checkpoints_partition_range;
    ALTER TABLE projection_checkpoints DROP COLUMN partition, DROP COLUMN partitions;
    ALTER TABLE projection_checkpoints ADD PRIMARY KEY (name);
    DROP FUNCTION engramlog_partition(text, int);
    """)
