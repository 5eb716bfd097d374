"""Privacy policies: each tenant's policy in force (the latest PrivacyPolicySet on its policy-privacy stream),
projected by projections/privacy.py.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE privacy_policies (
        tenant      text        PRIMARY KEY,
        policy      jsonb       NOT NULL,
        position    bigint      NOT NULL,
        updated_at  timestamptz NOT NULL
    );
    """)


def downgrade() -> None:
    op.execute("DROP TABLE privacy_policies")
