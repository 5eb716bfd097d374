"""Dead letters: events a projector could not apply (parked, so the projector moves past them), and queued producer
messages the ingest actor could not append. Both wait for an operator to retry or skip them
(`engramlog projections dead-letters`, `engramlog ingest dead-letters`, the operator routes).

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.execute("""
    -- One row per (projection, event) that failed: 'failing' while the projector still retries it (attempts so
    -- far), 'parked' once it moved past it, then 'retried' (applied by an operator) or 'skipped'.
    CREATE TABLE projection_dead_letters (
        projection       text        NOT NULL,
        position         bigint      NOT NULL,
        tenant           text        NOT NULL,
        tx_id            xid8        NOT NULL,
        event_id         uuid        NOT NULL,
        event_type       text        NOT NULL,
        error            text        NOT NULL,
        attempts         integer     NOT NULL,
        status           text        NOT NULL,
        first_failed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
        last_failed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
        resolved_at      timestamptz,
        resolved_by      text,
        PRIMARY KEY (projection, position)
    );
    CREATE INDEX projection_dead_letters_open ON projection_dead_letters (tenant, projection)
        WHERE status IN ('failing', 'parked');

    -- A queued producer message that cannot be appended, kept whole (ASCII JSON, so any text it carried is
    -- kept) with the reason: 'parked', then 'retried' (appended by an operator, at `positions`) or 'skipped'.
    CREATE TABLE ingest_dead_letters (
        id           bigserial   PRIMARY KEY,
        message_id   text        NOT NULL UNIQUE,
        tenant       text        NOT NULL,
        message      text        NOT NULL,
        reason       text        NOT NULL,
        error        text        NOT NULL,
        status       text        NOT NULL DEFAULT 'parked',
        positions    bigint[],
        created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
        resolved_at  timestamptz,
        resolved_by  text
    );
    CREATE INDEX ingest_dead_letters_open ON ingest_dead_letters (tenant) WHERE status = 'parked';
    """)


def downgrade() -> None:
    op.execute("DROP TABLE ingest_dead_letters; DROP TABLE projection_dead_letters")
