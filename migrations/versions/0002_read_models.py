"""Read models: memories, keyword (BM25 postings), vectors (pgvector), and the embedding cache.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

from infra.settings import get_settings

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    dim = get_settings().embedding.embedding_dim
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(f"""
    CREATE TABLE memories (
        tenant        text        NOT NULL,
        memory_id     uuid        NOT NULL,
        content       text        NOT NULL,
        content_hash  text        NOT NULL,
        kind          text        NOT NULL,
        agent_id      text,
        project       text,
        session_id    text,
        tags          text[]      NOT NULL DEFAULT '{{}}',
        metadata      jsonb       NOT NULL DEFAULT '{{}}'::jsonb,
        occurred_at   timestamptz NOT NULL,
        recorded_at   timestamptz NOT NULL,
        status        text        NOT NULL,
        position      bigint      NOT NULL,
        PRIMARY KEY (tenant, memory_id)
    );
    CREATE INDEX memories_scope ON memories (tenant, agent_id, project, session_id);

    -- Okapi BM25: postings with term frequency and document length, document frequency per term,
    -- corpus size and total length per tenant. Scores are computed in SQL at query time.
    CREATE TABLE keyword_docs (
        tenant      text    NOT NULL,
        memory_id   uuid    NOT NULL,
        length      integer NOT NULL,
        agent_id    text,
        project     text,
        session_id  text,
        kind        text    NOT NULL,
        PRIMARY KEY (tenant, memory_id)
    );
    CREATE INDEX keyword_docs_scope ON keyword_docs (tenant, agent_id);
    CREATE TABLE keyword_postings (
        tenant      text    NOT NULL,
        term        text    NOT NULL,
        memory_id   uuid    NOT NULL,
        tf          integer NOT NULL,
        length      integer NOT NULL,
        PRIMARY KEY (tenant, term, memory_id)
    );
    CREATE TABLE keyword_terms (
        tenant  text    NOT NULL,
        term    text    NOT NULL,
        df      integer NOT NULL,
        PRIMARY KEY (tenant, term)
    );
    CREATE TABLE keyword_stats (
        tenant        text   PRIMARY KEY,
        n_docs        bigint NOT NULL,
        total_length  bigint NOT NULL
    );

    CREATE TABLE memory_vectors (
        tenant      text NOT NULL,
        memory_id   uuid NOT NULL,
        agent_id    text,
        project     text,
        session_id  text,
        kind        text NOT NULL,
        model       text NOT NULL,
        embedding   vector({dim}) NOT NULL,
        PRIMARY KEY (tenant, memory_id)
    );
    CREATE INDEX memory_vectors_scope ON memory_vectors (tenant, agent_id, project, session_id);
    CREATE INDEX memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops)
        WITH (m = 16, ef_construction = 64);

    -- Not a read model: a cache so no text is embedded twice by the same model.
    CREATE TABLE embedding_cache (
        model         text NOT NULL,
        content_hash  text NOT NULL,
        embedding     vector({dim}) NOT NULL,
        PRIMARY KEY (model, content_hash)
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE embedding_cache; DROP TABLE memory_vectors; DROP TABLE keyword_stats;
    DROP TABLE keyword_terms; DROP TABLE keyword_postings; DROP TABLE keyword_docs; DROP TABLE memories;
    """)
