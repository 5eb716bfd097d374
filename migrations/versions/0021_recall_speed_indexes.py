"""Recall speed at size: HNSW indexes on the item domains' vector tables, postings in impact order.

1. HNSW on knowledge_section_vectors and transcript_chunk_vectors.

Their vector leg was an exact scan of every embedded item of the tenant (eager knowledge search at 110k sections:
409 ms). recall/vector.py nearest_vectors already answers a scope of more than ENGRAMLOG_EXACT_SCAN_MAX_ROWS
vectors with an iterative HNSW scan (filters are applied after the index: `hnsw.iterative_scan = relaxed_order`
keeps walking the graph until enough rows pass, and a short answer is redone exactly); these indexes give it a
graph to walk. Smaller scopes stay exact (a btree read of the scope's rows is both exact and faster there).
Same parameters as memory_vectors_hnsw (m 16, ef_construction 64).

2. Every postings table indexed by (tenant, term, (length + 10) / tf, id): recall/keyword.py walks each query
term's postings in that order and stops at its PER_TERM best, so a term most documents hold no longer costs all
its postings. The (tenant, term) indexes of keyword_postings and transcript_postings are prefixes of the new ones
and go (one index fewer to write per posting).

Revision ID: 0021
Revises: 0020
"""

from alembic import op

revision = "0021"
down_revision = "0020"
_POSTINGS = (("keyword_postings", "memory_id"), ("knowledge_postings", "section_id"),
             ("session_postings", "message_uid"), ("transcript_postings", "chunk_id"), ("code_postings", "symbol_id"))


def upgrade() -> None:
    op.execute("""
    CREATE INDEX knowledge_section_vectors_hnsw ON knowledge_section_vectors
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    CREATE INDEX transcript_chunk_vectors_hnsw ON transcript_chunk_vectors
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    """)
    for table, key in _POSTINGS:
        op.execute(f"CREATE INDEX {table}_impact ON {table} (tenant, term, ((length + 10)::float8 / tf), {key})")
    op.execute("DROP INDEX keyword_postings_by_term; DROP INDEX transcript_postings_term;")


def downgrade() -> None:
    op.execute("""
    CREATE INDEX keyword_postings_by_term ON keyword_postings (tenant, term);
    CREATE INDEX transcript_postings_term ON transcript_postings (tenant, term);
    """)
    for table, _ in _POSTINGS:
        op.execute(f"DROP INDEX {table}_impact")
    op.execute("DROP INDEX transcript_chunk_vectors_hnsw; DROP INDEX knowledge_section_vectors_hnsw;")
