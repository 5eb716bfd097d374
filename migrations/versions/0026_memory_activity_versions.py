"""memory_activity_versions: each memory_activity row's states with the log positions they held between (as_of).

Owned by the activity projector (projections/activity_versions.py): every event that changes a memory's activity
row (a recall that served it, a reinforcement, a counted verdict, a status decision's inputs, a merge's fold) closes
its open version (valid_to = the event's position) and opens one from that position holding the row as it then
stood. A recall as of position p reads, per memory, the version with valid_from <= p < valid_to (valid_to NULL:
still current), so its ACT-R activation and feedback signal are the store's at p without replaying the log. No text:
ids and counts only. Rows written before this migration get their history from `engramlog projections rebuild
activity`.

Revision ID: 0026
Revises: 0025
"""

from alembic import op

revision = "0026"
down_revision = "0025"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE memory_activity_versions (
        tenant              text        NOT NULL,
        memory_id           uuid        NOT NULL,
        valid_from          bigint      NOT NULL,  -- the log position from which this state holds
        valid_to            bigint,                -- the position of the event that ended it; NULL: current
        access_count        integer     NOT NULL,
        last_access_at      timestamptz,
        used_count          integer     NOT NULL,
        not_useful_count    integer     NOT NULL,
        status_ref_count    integer,
        last_reactivated_at timestamptz,
        PRIMARY KEY (tenant, memory_id, valid_from)
    );
    CREATE INDEX memory_activity_versions_open ON memory_activity_versions (tenant, memory_id) WHERE valid_to IS NULL;
    """)


def downgrade() -> None:
    op.execute("DROP TABLE memory_activity_versions")
