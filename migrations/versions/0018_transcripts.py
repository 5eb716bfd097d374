"""Transcripts' read models: one row per transcript (its current version), its chunks (each (position, content) a
row, so a re-put keeps an unchanged chunk's row, postings and vector), BM25 postings over chunks, and the chunks'
vectors (filled lazily from the hit-log by projections/transcript_vectors.py; empty until then).

Revision ID: 0018
Revises: 0017 (or the newest of 0014-0017 while those are being written)
"""

from pathlib import Path

from alembic import op

from infra.settings import get_settings

revision = "0018"
# 0015-0017 are being written in parallel: revise the newest present, so the chain has one head meanwhile.
down_revision = max(p.name[:4] for p in Path(__file__).parent.glob("001[4-7]_*.py"))


def upgrade() -> None:
    dim = get_settings().embedding.embedding_dim
    op.execute(f"""
    CREATE TABLE transcripts (
        tenant         text        NOT NULL,
        transcript_id  text        NOT NULL,
        version        integer     NOT NULL,  -- the stream version of its latest TranscriptChunksPut
        content_hash   text        NOT NULL,  -- sha256 of the whole text
        format         text        NOT NULL,  -- jsonl | text
        chunks         integer     NOT NULL,
        lines          integer     NOT NULL,
        turns          integer     NOT NULL,
        bytes          bigint      NOT NULL,
        started_at     timestamptz,           -- the first turn's timestamp, when it reads as a time
        ended_at       timestamptz,
        updated_at     timestamptz NOT NULL,
        position       bigint      NOT NULL,
        PRIMARY KEY (tenant, transcript_id)
    );

    CREATE TABLE transcript_chunks (
        tenant              text        NOT NULL,
        chunk_id            uuid        NOT NULL,  -- uuid5 of (tenant, transcript_id, ord, content_hash)
        transcript_id       text        NOT NULL,
        ord                 integer     NOT NULL,  -- 0-based position in the transcript
        content_hash        text        NOT NULL,
        first_version       integer     NOT NULL,  -- the version that brought this chunk at this position
        version             integer     NOT NULL,  -- the version that last placed it (brought, moved it)
        text                text        NOT NULL,  -- the exact slice
        length              integer     NOT NULL,  -- in terms (BM25)
        first_line          integer     NOT NULL,  -- 1-based, inclusive
        last_line           integer     NOT NULL,
        first_turn          integer     NOT NULL,  -- 0-based, inclusive
        last_turn           integer     NOT NULL,
        started_at          timestamptz,
        ended_at            timestamptz,
        status              text        NOT NULL,  -- active | replaced (a later version holds other text there)
        ref_count           integer     NOT NULL DEFAULT 0,
        last_referenced_at  timestamptz,
        created_at          timestamptz NOT NULL,
        PRIMARY KEY (tenant, chunk_id)
    );
    CREATE INDEX transcript_chunks_transcript ON transcript_chunks (tenant, transcript_id, status, ord);
    CREATE INDEX transcript_chunks_status ON transcript_chunks (tenant, status);

    CREATE TABLE transcript_postings (
        tenant    text    NOT NULL,
        chunk_id  uuid    NOT NULL,
        term      text    NOT NULL,
        tf        integer NOT NULL,
        length    integer NOT NULL,
        PRIMARY KEY (tenant, chunk_id, term)
    );
    CREATE INDEX transcript_postings_term ON transcript_postings (tenant, term);
    CREATE TABLE transcript_terms (
        tenant  text    NOT NULL,
        term    text    NOT NULL,
        df      integer NOT NULL,
        PRIMARY KEY (tenant, term)
    );
    CREATE TABLE transcript_stats (
        tenant        text   PRIMARY KEY,
        n_docs        bigint NOT NULL,
        total_length  bigint NOT NULL
    );

    CREATE TABLE transcript_chunk_vectors (
        tenant     text NOT NULL,
        chunk_id   uuid NOT NULL,
        model      text NOT NULL,
        embedding  vector({dim}) NOT NULL,
        PRIMARY KEY (tenant, chunk_id, model)
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE transcript_chunk_vectors; DROP TABLE transcript_stats; DROP TABLE transcript_terms;
    DROP TABLE transcript_postings; DROP TABLE transcript_chunks; DROP TABLE transcripts;
    """)
