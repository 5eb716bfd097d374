"""The memories' keyword documents indexed by (tenant, agent_id, memory_id): an agent's documents in the index alone.

recall/keyword.py reads every posting of the query's terms for a scope of one agent whose documents are few (at most
NARROW_SCOPE_MAX and a tenth of the tenant's), keeping the agent's by a hash of its document ids, instead of walking
each term's best postings (a walk passes over ~1 / share of a term's postings to find its best in the scope). With
(tenant, agent_id) alone, that hash read each document's heap page: at 1M memories, one agent's 10k documents were
10k pages, ~11 ms of the 28. With the id in the index the agent's documents are sized and read by an index-only
scan. Measured on bench/recall.py's 1M store, in process, 40 queries, BM25 for 100 candidates, one agent: p50 100 ms
walked, 28.5 ms read with the old index, 14.9 ms with this one.

Revision ID: 0033
Revises: 0032
"""

from alembic import op

revision = "0033"
down_revision = "0032"


def _scope(columns: str) -> None:
    op.execute("DROP INDEX keyword_docs_scope")
    op.execute(f"CREATE INDEX keyword_docs_scope ON keyword_docs ({columns})")


def upgrade() -> None:
    _scope("tenant, agent_id, memory_id")


def downgrade() -> None:
    _scope("tenant, agent_id")
