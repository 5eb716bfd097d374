"""`embedding_calibration`: where an embedding model puts different facts and paraphrases (domain/novelty.py),
measured once per model and kept with its name, so the governor's novelty is calibrated to the model it uses.
Not a read model: a measurement of the model, like `embedding_cache`; every decision records the values it used.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.execute("""
    CREATE TABLE embedding_calibration (
        model              text PRIMARY KEY,
        pairs_hash         text NOT NULL,
        unrelated_cosine   double precision NOT NULL,
        paraphrase_cosine  double precision NOT NULL,
        pairs              integer NOT NULL,
        measured_at        timestamptz NOT NULL DEFAULT now()
    )
    """)


def downgrade() -> None:
    op.execute("DROP TABLE embedding_calibration")
