"""`keyword_postings` by memory: (tenant, memory_id).

Re-indexing a memory whose content changed (MemoryReinforced, MemoriesMerged; projections/keyword.py) reads and
deletes its postings by memory. The primary key (tenant, term, memory_id) only serves that through a skip scan,
one descent per distinct term of the tenant: ~77 ms a reinforced memory at 100k memories of the benchmark's
~1,000-word vocabulary, and growing with the vocabulary, which grows with the log. This index makes it a few
index pages per memory, however large the log.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"


def upgrade() -> None:
    op.execute("CREATE INDEX keyword_postings_by_memory ON keyword_postings (tenant, memory_id)")


def downgrade() -> None:
    op.execute("DROP INDEX keyword_postings_by_memory")
