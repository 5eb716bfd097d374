"""`keyword_postings` keyed by memory: primary key (tenant, memory_id, term), and (tenant, term) for recall.

The primary key was (tenant, term, memory_id). Memory ids are random, so every posting of a new memory went to a
random leaf within its term's range: a batch touched one page of that index per posting, anywhere in it, and the
index grew past shared_buffers (~110 MB at 300k memories, ~8 postings each): the projection slowed with the log.
Re-indexing a memory whose content changed (MemoryReinforced, MemoriesMerged; projections/keyword.py) read and
deleted its postings by memory, which that key served only by a skip scan, one descent per distinct term of the
tenant (~77 ms a reinforcement at 100k memories, and the vocabulary grows with the log).

Keyed by (tenant, memory_id, term), a memory's postings are adjacent: one leaf per memory, and its re-index a
single range. Recall reads postings by term through (tenant, term), where new entries go to the end of each
term's range (equal keys are kept in heap order, and the heap is appended to) and equal keys are deduplicated
(~16 MB at 300k memories). The rows are the same.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"


def upgrade() -> None:
    op.execute("""
    ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey,
                                 ADD PRIMARY KEY (tenant, memory_id, term);
    CREATE INDEX keyword_postings_by_term ON keyword_postings (tenant, term);
    """)


def downgrade() -> None:
    op.execute("""
    DROP INDEX keyword_postings_by_term;
    ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey,
                                 ADD PRIMARY KEY (tenant, term, memory_id);
    """)
