"""Recorded-time versions of knowledge sections, transcript chunks and session messages (`as_of` in every domain
that keeps them).

Owned by the knowledge, transcripts and sessions projectors (readmodels/unit_versions.py): an event that changes
a unit's lifecycle (its status; a section's version, place, title or tags; a chunk's
version and line and turn ranges; a message's sent mark) closes the unit's
open version (valid_to = the event's position) and opens one from that position. A read as of position p takes,
per unit, the version with valid_from <= p < valid_to (valid_to NULL: still current). A store migrated from
before 0029 has no versions of its older units until those projections are rebuilt (`engramlog rebuild`).

Revision ID: 0029
Revises: 0028
"""

from alembic import op

revision = "0029"
down_revision = "0028"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE knowledge_section_versions (
        tenant      text    NOT NULL,
        section_id  uuid    NOT NULL,
        valid_from  bigint  NOT NULL,  -- the log position from which this state holds
        valid_to    bigint,            -- the position of the event that ended it; NULL: current
        status      text    NOT NULL,
        version     integer NOT NULL,
        ordinal     integer NOT NULL,
        title       text,
        tags        text[]  NOT NULL DEFAULT '{}',
        PRIMARY KEY (tenant, section_id, valid_from)
    );
    CREATE INDEX knowledge_section_versions_open ON knowledge_section_versions (tenant, section_id)
        WHERE valid_to IS NULL;

    CREATE TABLE transcript_chunk_versions (
        tenant      text    NOT NULL,
        chunk_id    uuid    NOT NULL,
        valid_from  bigint  NOT NULL,
        valid_to    bigint,
        status      text    NOT NULL,
        version     integer NOT NULL,
        first_line  integer NOT NULL,
        last_line   integer NOT NULL,
        first_turn  integer NOT NULL,
        last_turn   integer NOT NULL,
        PRIMARY KEY (tenant, chunk_id, valid_from)
    );
    CREATE INDEX transcript_chunk_versions_open ON transcript_chunk_versions (tenant, chunk_id)
        WHERE valid_to IS NULL;

    CREATE TABLE session_message_versions (
        tenant       text    NOT NULL,
        message_uid  uuid    NOT NULL,
        valid_from   bigint  NOT NULL,
        valid_to     bigint,
        status       text    NOT NULL,
        sent         boolean NOT NULL,
        PRIMARY KEY (tenant, message_uid, valid_from)
    );
    CREATE INDEX session_message_versions_open ON session_message_versions (tenant, message_uid)
        WHERE valid_to IS NULL;
    """)


def downgrade() -> None:
    op.execute("DROP TABLE session_message_versions, transcript_chunk_versions, knowledge_section_versions")
