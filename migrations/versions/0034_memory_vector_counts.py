"""How many vectors each tenant holds per model (memory_vector_counts), kept by the vectors projector beside
memory_vectors, in the same transaction.

The vector leg picks an exact scan or HNSW by the scope's size (recall/vector.py), counted up to
exact_scan_max_rows + 1. For a whole tenant past that limit the count read 20,001 index entries only to learn it
was past it: 3.2 ms of the memories' 35 ms in process at 30k memories (bench/recall_multi.py at ten times its sizes),
and the same at 1M. A whole tenant with no policy filter now reads its size here, one row. Filled from the vectors
already projected, so a store upgraded in place answers as a rebuild of `vectors` would.

Revision ID: 0034
Revises: 0033
"""

from alembic import op

revision = "0034"
down_revision = "0033"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE memory_vector_counts (
        tenant text NOT NULL,
        model text NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (tenant, model)
    );
    INSERT INTO memory_vector_counts (tenant, model, n)
    SELECT tenant, model, count(*) FROM memory_vectors GROUP BY tenant, model;
    """)


def downgrade() -> None:
    op.execute("DROP TABLE memory_vector_counts")
