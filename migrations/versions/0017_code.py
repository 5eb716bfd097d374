"""Code intelligence's read models: a repository's files (their content, from the log), their symbols, the call
edges between them (resolved to a symbol where one is unambiguous), and BM25 postings over symbols.

Revision ID: 0017
Revises: 0016
"""

from pathlib import Path

from alembic import op

revision = "0017"
# 0015 and 0016 are being written in parallel: revise the newest of 0014-0016 present, so the chain has one head.
down_revision = max(p.name[:4] for p in Path(__file__).parent.glob("001[4-6]_*.py"))


def upgrade() -> None:
    op.execute("""
    CREATE TABLE code_files (
        tenant            text        NOT NULL,
        repo              text        NOT NULL,
        path              text        NOT NULL,
        language          text        NOT NULL,
        module            text        NOT NULL,
        content           text        NOT NULL,  -- the file as put: symbols' sources are exact slices of it
        content_hash      text        NOT NULL,
        version           integer     NOT NULL,  -- the stream version of its CodeFilePut
        symbols           integer     NOT NULL,
        calls             integer     NOT NULL,
        parse_errors      integer     NOT NULL,  -- tree-sitter error and missing nodes (0: parsed cleanly)
        first_error_line  integer,
        updated_at        timestamptz NOT NULL,
        position          bigint      NOT NULL,
        PRIMARY KEY (tenant, repo, path)
    );

    CREATE TABLE code_symbols (
        tenant              text        NOT NULL,
        symbol_id           uuid        NOT NULL,  -- uuid5 of (tenant, repo, path, file content_hash, ordinal)
        repo                text        NOT NULL,
        path                text        NOT NULL,
        ordinal             integer     NOT NULL,  -- its place among the file's symbols
        qualified_name      text        NOT NULL,
        name                text        NOT NULL,
        kind                text        NOT NULL,
        parent              text,
        signature           text        NOT NULL,
        doc                 text        NOT NULL,
        start_line          integer     NOT NULL,
        end_line            integer     NOT NULL,
        content_hash        text        NOT NULL,  -- the file's
        length              integer     NOT NULL,  -- in terms (BM25)
        ref_count           integer     NOT NULL DEFAULT 0,
        last_referenced_at  timestamptz,
        PRIMARY KEY (tenant, symbol_id)
    );
    CREATE INDEX code_symbols_file ON code_symbols (tenant, repo, path, ordinal);
    CREATE INDEX code_symbols_name ON code_symbols (tenant, repo, name);
    CREATE INDEX code_symbols_qualified ON code_symbols (tenant, repo, qualified_name);

    CREATE TABLE code_calls (
        tenant          text    NOT NULL,
        repo            text    NOT NULL,
        path            text    NOT NULL,
        ordinal         integer NOT NULL,  -- its place among the file's calls
        caller          text    NOT NULL,  -- the enclosing symbol's qualified name (the module's for top level)
        caller_class    text,
        callee          text    NOT NULL,  -- the called name as written
        qualifier       text,
        line            integer NOT NULL,
        import_target   text,
        target_name     text    NOT NULL,  -- the symbol name looked for (an import alias names its target's)
        resolved_name   text,              -- the called symbol's qualified name, where it is unambiguous
        resolved_path   text,
        candidates      integer NOT NULL DEFAULT 0,
        how             text    NOT NULL DEFAULT 'pending',
        PRIMARY KEY (tenant, repo, path, ordinal)
    );
    CREATE INDEX code_calls_target ON code_calls (tenant, repo, target_name);
    CREATE INDEX code_calls_resolved ON code_calls (tenant, repo, resolved_name);
    CREATE INDEX code_calls_caller ON code_calls (tenant, repo, caller);

    CREATE TABLE code_postings (
        tenant     text    NOT NULL,
        symbol_id  uuid    NOT NULL,
        term       text    NOT NULL,
        tf         integer NOT NULL,
        length     integer NOT NULL,
        PRIMARY KEY (tenant, symbol_id, term)
    );
    CREATE INDEX code_postings_term ON code_postings (tenant, term, symbol_id);
    CREATE TABLE code_terms (
        tenant  text    NOT NULL,
        term    text    NOT NULL,
        df      integer NOT NULL,
        PRIMARY KEY (tenant, term)
    );
    CREATE TABLE code_stats (
        tenant        text   PRIMARY KEY,
        n_docs        bigint NOT NULL,
        total_length  bigint NOT NULL
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE code_stats; DROP TABLE code_terms; DROP TABLE code_postings; DROP TABLE code_calls;
    DROP TABLE code_symbols; DROP TABLE code_files;
    """)
