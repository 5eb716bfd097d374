"""HNSW indexes on the item domains' vector tables (knowledge sections, transcript chunks).

Their vector leg was an exact scan of every embedded item of the tenant (eager knowledge search at 110k sections:
409 ms). recall/vector.py nearest_vectors already answers a scope of more than ENGRAMLOG_EXACT_SCAN_MAX_ROWS
vectors with an iterative HNSW scan (filters are applied after the index: `hnsw.iterative_scan = relaxed_order`
keeps walking the graph until enough rows pass, and a short answer is redone exactly); these indexes give it a
graph to walk. Smaller scopes stay exact (a btree read of the scope's rows is both exact and faster there).
Same parameters as memory_vectors_hnsw (m 16, ef_construction 64).

Revision ID: 0021
Revises: 0020
"""

from alembic import op

revision = "0021"
down_revision = "0020"


def upgrade() -> None:
    op.execute("""
    CREATE INDEX knowledge_section_vectors_hnsw ON knowledge_section_vectors
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    CREATE INDEX transcript_chunk_vectors_hnsw ON transcript_chunk_vectors
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    """)


def downgrade() -> None:
    op.execute("DROP INDEX transcript_chunk_vectors_hnsw; DROP INDEX knowledge_section_vectors_hnsw;")
