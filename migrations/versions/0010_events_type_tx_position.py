"""The projectors' gap-safe read by event type: (type, tx_id, position).

A projector reads the next events of its types in (tx_id, position) order below the oldest running transaction
(eventstore/read.py). Walking `events_tx_position` and filtering by type costs as many rows as the log holds
past the checkpoint when the projector's types are rare (nothing to apply: every poll walked the rest of the
log). One ordered index range per type, merged, costs the batch alone, however long the log.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.execute("CREATE INDEX events_type_tx_position ON events (type, tx_id, position)")


def downgrade() -> None:
    op.execute("DROP INDEX events_type_tx_position")
