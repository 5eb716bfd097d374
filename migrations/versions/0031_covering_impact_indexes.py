"""Postings in impact order carry their tf and length: index-only walks and reads (recall/keyword.py).

Migration 0021's (tenant, term, (length + 10) / tf, id) indexes gain INCLUDE (tf, length), the two columns the BM25
statement reads of a posting besides its id. Each term's walk and the read of every posting of the query's terms
are then index-only scans (once vacuum has marked the pages all-visible; postings are only inserted and deleted,
never updated), not a heap fetch per posting. Measured at 100k session messages (bench/sessions_recall.py corpus,
in process, 60 queries, this migration run on that store, then VACUUM ANALYZE): the default BM25 p50 / p95
12.0-13.5 / 34-35 -> 10.0-10.2 / 26 ms, the read of every posting 42 / 125 -> 25 / 87 ms; the same answers. Upgrade
and downgrade took 3 s each over its 3.2M postings.

Revision ID: 0031
Revises: 0030
"""

from alembic import op

revision = "0031"
down_revision = "0030"
_POSTINGS = (("keyword_postings", "memory_id"), ("knowledge_postings", "section_id"),
             ("session_postings", "message_uid"), ("transcript_postings", "chunk_id"), ("code_postings", "symbol_id"))


def _impact(include: str) -> None:
    for table, key in _POSTINGS:
        op.execute(f"DROP INDEX {table}_impact")
        op.execute(f"CREATE INDEX {table}_impact ON {table} (tenant, term, ((length + 10)::float8 / tf), {key})"
                   f"{include}")


def upgrade() -> None:
    _impact(" INCLUDE (tf, length)")


def downgrade() -> None:
    _impact("")
