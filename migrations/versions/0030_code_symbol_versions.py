"""Recorded-time versions of code symbols (`as_of` in the code domain), and the texts of the files they were parsed
from.

Owned by the code projector (projections/code.py, readmodels/unit_versions.py CODE_SYMBOL_VERSIONS). Since this
migration a re-put no longer deletes a file's previous symbols and their postings: they stay with status
'replaced' (a removed file's: 'removed'), so a search as of an earlier position finds them; every current read
leaves those two statuses out. code_symbol_versions holds each symbol's status over [valid_from, valid_to) log
positions; code_file_texts each text a file was put with (by content hash), so a symbol as of a position answers
the exact slice of the file it was parsed from. A store migrated from before 0030 has neither for its older
symbols until the code projection is rebuilt (`engramlog rebuild code`).

Revision ID: 0030
Revises: 0029
"""

from alembic import op

revision = "0030"
down_revision = "0029"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE code_symbol_versions (
        tenant      text    NOT NULL,
        symbol_id   uuid    NOT NULL,
        valid_from  bigint  NOT NULL,  -- the log position from which this state holds
        valid_to    bigint,            -- the position of the event that ended it; NULL: current
        status      text    NOT NULL,  -- active | dormant | archived | replaced | removed
        PRIMARY KEY (tenant, symbol_id, valid_from)
    );
    CREATE INDEX code_symbol_versions_open ON code_symbol_versions (tenant, symbol_id) WHERE valid_to IS NULL;

    CREATE TABLE code_file_texts (
        tenant        text NOT NULL,
        repo          text NOT NULL,
        path          text NOT NULL,
        content_hash  text NOT NULL,
        content       text NOT NULL,
        PRIMARY KEY (tenant, repo, path, content_hash)
    );
    """)


def downgrade() -> None:
    # Before 0030 a dropped symbol was deleted with its postings: take the kept ones out and recount the statistics.
    op.execute("""
    DROP TABLE code_file_texts, code_symbol_versions;
    DELETE FROM code_postings p USING code_symbols s
    WHERE s.tenant = p.tenant AND s.symbol_id = p.symbol_id AND s.status IN ('replaced', 'removed');
    DELETE FROM code_symbols WHERE status IN ('replaced', 'removed');
    DELETE FROM code_terms;
    INSERT INTO code_terms (tenant, term, df) SELECT tenant, term, count(*) FROM code_postings GROUP BY tenant, term;
    DELETE FROM code_stats;
    INSERT INTO code_stats (tenant, n_docs, total_length)
    SELECT tenant, count(*), sum(length) FROM code_symbols GROUP BY tenant;
    """)
