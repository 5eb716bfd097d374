"""Deep recall: the session-persistent store (the latest DeepRecallStored value per scope and key) and the blind
spots (BlindSpotRegistered knowledge gaps, live until expires_at), projected by projections/deep_recall.py.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

revision = "0019"
down_revision = "0018"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE deep_recall_store (
        tenant      text        NOT NULL,
        scope_key   text        NOT NULL,
        key         text        NOT NULL,
        value       jsonb,
        agent_id    text,
        session_id  text,
        project     text,
        recall_id   uuid        NOT NULL,
        position    bigint      NOT NULL,
        updated_at  timestamptz NOT NULL,
        PRIMARY KEY (tenant, scope_key, key)
    );
    CREATE TABLE blind_spots (
        tenant        text             NOT NULL,
        gap_id        uuid             NOT NULL,
        scope_key     text             NOT NULL,
        agent_id      text,
        session_id    text,
        project       text,
        question      text             NOT NULL,
        kind          text             NOT NULL,
        priority      double precision NOT NULL,
        registered_at timestamptz      NOT NULL,
        expires_at    timestamptz      NOT NULL,
        recall_id     uuid             NOT NULL,
        reason        text             NOT NULL,
        position      bigint           NOT NULL,
        PRIMARY KEY (tenant, gap_id)
    );
    CREATE INDEX blind_spots_scope ON blind_spots (tenant, scope_key, expires_at);
    """)


def downgrade() -> None:
    op.execute("DROP TABLE blind_spots; DROP TABLE deep_recall_store")
