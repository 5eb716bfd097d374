"""Session messages' read models: the messages in session order, one summary row per session, and BM25 postings
over sent messages (projections/sessions.py).

Revision ID: 0016
Revises: 0015 (or 0014 while 0015 is being written)
"""

from pathlib import Path

from alembic import op

revision = "0016"
# 0015 is being written in parallel: revise the newest of 0014-0015 present, so the chain has one head meanwhile.
down_revision = max(p.name[:4] for p in Path(__file__).parent.glob("001[4-5]_*.py"))


def upgrade() -> None:
    op.execute("""
    CREATE TABLE session_messages (
        tenant          text        NOT NULL,
        session_id      text        NOT NULL,
        seq             integer     NOT NULL,  -- order within the session (projections/sessions.py)
        message_id      text        NOT NULL,
        message_uid     uuid        NOT NULL,  -- uuid5 of (tenant, session_id, message_id): the BM25 document id
        role            text        NOT NULL,  -- user | assistant | system | tool
        content         text        NOT NULL,  -- the message's text (string content, or its text parts)
        tool_name       text,
        name            text,
        tool_call_id    text,
        tool_calls      jsonb,
        created_at      timestamptz NOT NULL,
        sent            boolean     NOT NULL,
        checkpoint      boolean     NOT NULL,
        agent_id        text,
        project         text,
        metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
        length          integer     NOT NULL,  -- terms (BM25)
        distinct_terms  integer     NOT NULL,  -- richness
        position        bigint      NOT NULL,  -- of its SessionMessagesAppended
        PRIMARY KEY (tenant, session_id, seq)
    );
    CREATE UNIQUE INDEX session_messages_id ON session_messages (tenant, session_id, message_id);
    CREATE UNIQUE INDEX session_messages_uid ON session_messages (tenant, message_uid);

    CREATE TABLE sessions (
        tenant          text        NOT NULL,
        session_id      text        NOT NULL,
        agent_id        text,
        project         text,
        messages        integer     NOT NULL,
        sent_messages   integer     NOT NULL,
        first_at        timestamptz NOT NULL,  -- the earliest created_at of its messages
        last_at         timestamptz NOT NULL,  -- the latest
        last_position   bigint      NOT NULL,
        PRIMARY KEY (tenant, session_id)
    );
    CREATE INDEX sessions_newest ON sessions (tenant, last_at DESC, session_id);

    CREATE TABLE session_postings (
        tenant       text    NOT NULL,
        term         text    NOT NULL,
        message_uid  uuid    NOT NULL,
        tf           integer NOT NULL,
        length       integer NOT NULL,
        PRIMARY KEY (tenant, term, message_uid)
    );
    CREATE TABLE session_terms (
        tenant  text    NOT NULL,
        term    text    NOT NULL,
        df      integer NOT NULL,
        PRIMARY KEY (tenant, term)
    );
    CREATE TABLE session_stats (
        tenant        text   PRIMARY KEY,
        n_docs        bigint NOT NULL,
        total_length  bigint NOT NULL
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE session_stats; DROP TABLE session_terms; DROP TABLE session_postings; DROP TABLE sessions;
    DROP TABLE session_messages;
    """)
