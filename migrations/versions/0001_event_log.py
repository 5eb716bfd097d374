"""The event log: append-only events table, immutability trigger, projection checkpoints.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE events (
        position         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_id         uuid        NOT NULL UNIQUE,
        tenant           text        NOT NULL,
        stream_id        text        NOT NULL,
        stream_version   bigint      NOT NULL,
        type             text        NOT NULL,
        schema_version   integer     NOT NULL,
        data             jsonb       NOT NULL,
        metadata         jsonb       NOT NULL DEFAULT '{}'::jsonb,
        occurred_at      timestamptz NOT NULL,
        recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
        tx_id            xid8        NOT NULL DEFAULT pg_current_xact_id(),
        idempotency_key  text,
        CONSTRAINT events_stream_version UNIQUE (tenant, stream_id, stream_version)
    );
    -- Gap-safe reads walk (tx_id, position) below the oldest running transaction.
    CREATE INDEX events_tx_position ON events (tx_id, position);
    CREATE UNIQUE INDEX events_idempotency ON events (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX events_tenant_type ON events (tenant, type, position);
    CREATE INDEX events_tenant_position ON events (tenant, position);
    CREATE INDEX events_tenant_recorded ON events (tenant, recorded_at);

    CREATE FUNCTION events_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'events is append-only: % is not allowed', TG_OP USING ERRCODE = 'raise_exception';
    END $$;
    CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION events_reject_change();
    CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change();

    CREATE TABLE projection_checkpoints (
        name        text PRIMARY KEY,
        tx_id       xid8        NOT NULL DEFAULT '0'::xid8,
        position    bigint      NOT NULL DEFAULT 0,
        updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE projection_checkpoints;
    DROP TRIGGER events_no_truncate ON events;
    DROP TRIGGER events_no_update_delete ON events;
    DROP TABLE events;
    DROP FUNCTION events_reject_change();
    """)
