"""The `memory_entities` read model (projections/entities.py): the entities each memory talks about, for the
graph walk's entity edges. Looked up by memory (the walk's frontier) and by entity (who else talks about it).

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE memory_entities (
        tenant      text NOT NULL,
        memory_id   uuid NOT NULL,
        entity      text NOT NULL,
        agent_id    text,
        PRIMARY KEY (tenant, memory_id, entity)
    );
    CREATE INDEX memory_entities_by_entity ON memory_entities (tenant, entity, agent_id);
    """)


def downgrade() -> None:
    op.execute("DROP TABLE memory_entities")
