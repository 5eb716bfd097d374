"""The memories' vector scope index leads with the model: the scope's size is counted in the index alone.

recall/vector.py counts a scope's vectors of the configured model (up to exact_scan_max_rows + 1) to choose an exact
scan or iterative HNSW. The scope index (tenant, agent_id, project, session_id) did not hold the model, so for a
whole tenant the planner counted with a sequential scan of the vectors' heap (five 384-d rows a page): at 100k
memories 19.5 ms of the vector leg's 22.7, against an HNSW search of 1.3 ms. With (tenant, model, agent_id, project,
session_id) the count is an index-only scan (2.7 ms there), and a scoped search (one agent) still finds its rows
through the same index, since every vector query names its model. Measured on bench/recall.py's 100k store, in
process, 60 queries: the vector leg p50 22.7 -> 5.0 ms for the whole tenant, 4.5 -> 3.8 ms for one agent.

Revision ID: 0032
Revises: 0031
"""

from alembic import op

revision = "0032"
down_revision = "0031"


def _scope(columns: str) -> None:
    op.execute("DROP INDEX memory_vectors_scope")
    op.execute(f"CREATE INDEX memory_vectors_scope ON memory_vectors ({columns})")


def upgrade() -> None:
    _scope("tenant, model, agent_id, project, session_id")


def downgrade() -> None:
    _scope("tenant, agent_id, project, session_id")
