"""Decay by reference for session messages, transcript chunks and code symbols (workers/reference_decay.py).

- session_messages: status, ref_count, last_referenced_at, status_ref_count, and sent_at (when the log recorded
  it sent, by its append or its SessionMessageSent: what its idle time counts from; created_at is the client's
  and may be years old).
- transcript_chunks: status_ref_count (status, ref_count and last_referenced_at are there already).
- code_symbols: status, status_ref_count, created_at (when its qualified name came into its file; carried, like
  its reference count, across re-puts).
- last_reactivated_at on all four decaying tables (knowledge_sections too): the clock of the unit's last decision
  back to active. A reactivation counts as a reference (domain/decay.py, as for memories), so a reactivated unit
  is not idle: without it a second sweep with the same clock sent it back to dormant or archived at once.

The sessions projector now also counts references from the hit-log, the code projector carries created_at and
status, and the knowledge projector keeps reactivation clocks: values of the log's past that no SQL default can
give. So these three read models are emptied and their checkpoints reset here: their projectors replay the log
from 0 on their next run, and the rows are what a rebuild gives (architecture rule 1). Transcripts need no replay
(no chunk status decision exists before this revision).

Revision ID: 0020
Revises: 0019
"""

from alembic import op

revision = "0020"
down_revision = "0019"


def upgrade() -> None:
    op.execute("""
    TRUNCATE sessions, session_messages, session_postings, session_terms, session_stats,
             code_files, code_symbols, code_calls, code_postings, code_terms, code_stats,
             knowledge_documents, knowledge_sections, knowledge_postings, knowledge_terms, knowledge_stats;
    DELETE FROM projection_checkpoints WHERE name IN ('sessions', 'code', 'knowledge');

    ALTER TABLE knowledge_sections ADD COLUMN last_reactivated_at timestamptz;

    ALTER TABLE session_messages
        ADD COLUMN sent_at             timestamptz,  -- recorded_at of the event that made it sent (NULL: pending)
        ADD COLUMN status              text        NOT NULL DEFAULT 'active',  -- active | dormant | archived
        ADD COLUMN ref_count           integer     NOT NULL DEFAULT 0,
        ADD COLUMN last_referenced_at  timestamptz,
        ADD COLUMN status_ref_count    integer,  -- the ref_count its last status decision saw
        ADD COLUMN last_reactivated_at timestamptz;

    ALTER TABLE transcript_chunks ADD COLUMN status_ref_count integer, ADD COLUMN last_reactivated_at timestamptz;

    ALTER TABLE code_symbols
        ADD COLUMN created_at        timestamptz NOT NULL,
        ADD COLUMN status            text        NOT NULL DEFAULT 'active',  -- active | dormant | archived
        ADD COLUMN status_ref_count  integer,
        ADD COLUMN last_reactivated_at timestamptz;
    """)


def downgrade() -> None:
    op.execute("""
    ALTER TABLE code_symbols DROP COLUMN last_reactivated_at, DROP COLUMN status_ref_count, DROP COLUMN status,
        DROP COLUMN created_at;
    ALTER TABLE transcript_chunks DROP COLUMN last_reactivated_at, DROP COLUMN status_ref_count;
    ALTER TABLE session_messages DROP COLUMN last_reactivated_at, DROP COLUMN status_ref_count,
        DROP COLUMN last_referenced_at, DROP COLUMN ref_count, DROP COLUMN status, DROP COLUMN sent_at;
    ALTER TABLE knowledge_sections DROP COLUMN last_reactivated_at;
    """)
