"""The knowledge library's read models: documents, their `##` sections (each version of a section a row, keyed by
its content), BM25 postings over sections, and the sections' vectors (filled lazily from the hit-log by the
embedding worker; empty until then).

Revision ID: 0013
Revises: 0012
"""

from pathlib import Path

from alembic import op

from infra.settings import get_settings

revision = "0013"
# 0012 is being written in parallel: revise the newest of 0011-0012 present, so the chain has one head meanwhile.
down_revision = max(p.name[:4] for p in Path(__file__).parent.glob("001[1-2]_*.py"))


def upgrade() -> None:
    dim = get_settings().embedding.embedding_dim
    op.execute(f"""
    CREATE TABLE knowledge_documents (
        tenant        text        NOT NULL,
        document_id   text        NOT NULL,  -- its stream: doc-<uuid5 of (project, path)>
        project       text,
        path          text        NOT NULL,
        version       integer     NOT NULL,  -- the stream version of its latest DocumentPut
        content_hash  text        NOT NULL,
        title         text,
        tags          text[]      NOT NULL DEFAULT '{{}}',
        metadata      jsonb       NOT NULL DEFAULT '{{}}'::jsonb,
        status        text        NOT NULL,  -- active | retired
        sections      integer     NOT NULL,
        updated_at    timestamptz NOT NULL,
        position      bigint      NOT NULL,
        PRIMARY KEY (tenant, document_id)
    );
    CREATE INDEX knowledge_documents_path ON knowledge_documents (tenant, project, path);

    CREATE TABLE knowledge_sections (
        tenant              text        NOT NULL,
        section_id          uuid        NOT NULL,  -- uuid5 of (tenant, project, path, heading_path, content_hash)
        document_id         text        NOT NULL,
        project             text,
        path                text        NOT NULL,
        heading_path        text        NOT NULL,
        ordinal             integer     NOT NULL,
        content_hash        text        NOT NULL,
        first_version       integer     NOT NULL,  -- the document version that brought this text
        version             integer     NOT NULL,  -- the latest document version holding it
        text                text        NOT NULL,  -- the exact slice
        length              integer     NOT NULL,  -- in terms (BM25)
        title               text,
        tags                text[]      NOT NULL DEFAULT '{{}}',
        status              text        NOT NULL,  -- active | dormant | archived | replaced | retired
        ref_count           integer     NOT NULL DEFAULT 0,
        last_referenced_at  timestamptz,
        status_ref_count    integer,     -- the ref_count its last status decision saw (reactivation: more since)
        created_at          timestamptz NOT NULL,
        status_changed_at   timestamptz NOT NULL,
        PRIMARY KEY (tenant, section_id)
    );
    CREATE INDEX knowledge_sections_document ON knowledge_sections (tenant, document_id, status);
    CREATE INDEX knowledge_sections_heading ON knowledge_sections (tenant, document_id, heading_path);
    CREATE INDEX knowledge_sections_status ON knowledge_sections (tenant, status, project);

    CREATE TABLE knowledge_postings (
        tenant      text    NOT NULL,
        term        text    NOT NULL,
        section_id  uuid    NOT NULL,
        tf          integer NOT NULL,
        length      integer NOT NULL,
        PRIMARY KEY (tenant, term, section_id)
    );
    CREATE TABLE knowledge_terms (
        tenant  text    NOT NULL,
        term    text    NOT NULL,
        df      integer NOT NULL,
        PRIMARY KEY (tenant, term)
    );
    CREATE TABLE knowledge_stats (
        tenant        text   PRIMARY KEY,
        n_docs        bigint NOT NULL,
        total_length  bigint NOT NULL
    );

    CREATE TABLE knowledge_section_vectors (
        tenant      text NOT NULL,
        section_id  uuid NOT NULL,
        model       text NOT NULL,
        embedding   vector({dim}) NOT NULL,
        PRIMARY KEY (tenant, section_id, model)
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE knowledge_section_vectors; DROP TABLE knowledge_stats; DROP TABLE knowledge_terms;
    DROP TABLE knowledge_postings; DROP TABLE knowledge_sections; DROP TABLE knowledge_documents;
    """)
