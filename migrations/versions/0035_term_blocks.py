"""Memories' BM25 postings packed per term (keyword_term_blocks; readmodels/term_blocks.py), kept by the postings
writer beside the postings in the same transaction. Named here, not taken from PACKED_DOMAINS: a domain packed later
gets its table from a migration of its own.

A whole-tenant keyword leg at 1M memories read up to 50k postings a query, a row each: 27.5 ms p50 in SQL, where
the same postings read as a few packed rows and scored in numpy take about 5 ms (docs/recall.md, session 26).
A row (BLOCK = 256 records of 24 bytes on average, 6 KB) is kept in its heap page, uncompressed: STORAGE MAIN with
toast_tuple_target at a page's size. Out of line (TOAST), each write of a term's bucket cost its chunks' inserts
and deletes (1,024 records a row: 3.2 of a single write's 7.6 ms at 1M memories); ids are random bytes, so
compression gains nothing and a read should not pay for it. A longer row (a very long term) is still moved out of
line, as a last resort. Filled from the postings already projected, so a store upgraded in place holds what a
rebuild would.

Revision ID: 0035
Revises: 0034
"""

from alembic import op

from readmodels.memories import MEMORY_POSTINGS
from readmodels.term_blocks import packed_from_postings

revision = "0035"
down_revision = "0034"


def upgrade() -> None:
    names = MEMORY_POSTINGS
    op.execute(f"""
    CREATE TABLE {names.blocks} (
        tenant text NOT NULL,
        term text NOT NULL,
        bucket int NOT NULL,
        postings bytea NOT NULL,
        PRIMARY KEY (tenant, term, bucket)
    ) WITH (toast_tuple_target = 8160);
    ALTER TABLE {names.blocks} ALTER COLUMN postings SET STORAGE MAIN;
    INSERT INTO {names.blocks} (tenant, term, bucket, postings)
    {packed_from_postings(names)};
    """)


def downgrade() -> None:
    op.execute(f"DROP TABLE {MEMORY_POSTINGS.blocks}")
