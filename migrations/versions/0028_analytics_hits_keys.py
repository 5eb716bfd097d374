"""analytics.hits shows a non-memory result's key (the sha256 of its handle, docs/analytics.md) only for a recall
served after the tenant's latest privacy policy: that recall's results passed the policy's gate, while an earlier
recall's may name a document, session, transcript or code file the policy now excludes, and a handle's hash can be
confirmed by hashing a guessed path. Those rows keep their rank, domain and scores (counted, never named) with
item_key NULL. Memory results are named by id and left out by analytics_hidden_memories as before (0024).

Revision ID: 0028
Revises: 0027
"""

from alembic import op

revision = "0028"
down_revision = "0027"

_TENANT = "(SELECT a.tenant FROM public.analyst_roles a WHERE a.role_name = current_user)"
_POLICY = (f"coalesce((SELECT max(p.position) FROM public.events p WHERE p.tenant = {_TENANT}"
           " AND p.stream_id = 'policy-privacy' AND p.type = 'PrivacyPolicySet'), 0)")


def _hits(item_key: str) -> str:
    return f"""
    CREATE OR REPLACE VIEW analytics.hits WITH (security_barrier) AS
    SELECT h.recall_id, h.rank, h.domain, h.memory_id, {item_key} AS item_key, h.score, h.relevance, h.layer,
           h.drilled_at, h.verdict, h.recorded_at, h.position
    FROM analytics_private.recall_hits() h
    WHERE h.tenant = {_TENANT}
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_memories m
                      WHERE m.tenant = h.tenant AND m.memory_id = h.memory_id)
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_recalls r
                      WHERE r.tenant = h.tenant AND r.recall_id = h.recall_id);
    """


def upgrade() -> None:
    op.execute(_hits(f"CASE WHEN h.memory_id IS NOT NULL OR h.position > {_POLICY} THEN h.item_key END"))


def downgrade() -> None:
    op.execute(_hits("h.item_key"))
