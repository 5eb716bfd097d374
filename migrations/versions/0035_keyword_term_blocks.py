"""Memories' BM25 postings packed per term (keyword_term_blocks, readmodels/term_blocks.py), kept by the keyword
projector beside keyword_postings in the same transaction.

A whole-tenant keyword leg at 1M memories read up to 50k postings a query, a row each: 27.5 ms p50 in SQL, where
the same postings read as a few packed rows and scored in numpy take about 5 ms (docs/recall.md, session 26).
Stored uncompressed (EXTERNAL): ids are random bytes, and a read should not pay for a decompression. Filled from
the postings already projected, so a store upgraded in place holds what a rebuild of `keyword` would.

Revision ID: 0035
Revises: 0034
"""

from alembic import op

from readmodels.term_blocks import packed_from_postings

revision = "0035"
down_revision = "0034"


def upgrade() -> None:
    op.execute(f"""
    CREATE TABLE keyword_term_blocks (
        tenant text NOT NULL,
        term text NOT NULL,
        bucket int NOT NULL,
        postings bytea NOT NULL,
        PRIMARY KEY (tenant, term, bucket)
    );
    ALTER TABLE keyword_term_blocks ALTER COLUMN postings SET STORAGE EXTERNAL;
    INSERT INTO keyword_term_blocks (tenant, term, bucket, postings)
    {packed_from_postings()};
    """)


def downgrade() -> None:
    op.execute("DROP TABLE keyword_term_blocks")
