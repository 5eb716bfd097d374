"""The analytics views leave out the events of a document, session, transcript or code file the tenant's privacy
policy excludes (docs/analytics.md), decided by the event export's own rule (recall/event_privacy.py event_hidden)
through the analytics_subject_events read model (projections/subject_visibility.py, kept by the privacy projector).

analytics.events shows such an event only when that read model decided it visible under the policy the log holds
now (the position of the tenant's latest PrivacyPolicySet, 0 for none): an event not decided yet, or decided under
an older policy while the projector catches up, is left out (fails closed). The read model is read through a
SECURITY DEFINER function in analytics_private, as 0024's memory_tags (a view naming it would block its rebuild).
analytics.decisions reads memory streams only, so it shows no such event.

Revision ID: 0027
Revises: 0026
"""

from alembic import op

revision = "0027"
down_revision = "0026"

_TENANT = "(SELECT a.tenant FROM public.analyst_roles a WHERE a.role_name = current_user)"
_SESSION_TENANT = "(SELECT a.tenant FROM public.analyst_roles a WHERE a.role_name = session_user)"
# projections/subject_visibility.py SUBJECT_TYPES
SUBJECT_TYPES = ("DocumentPut", "DocumentRetired", "SectionStatusChanged", "SessionMessagesAppended",
                 "SessionMessageSent", "SessionMessageStatusChanged", "TranscriptChunksPut",
                 "TranscriptChunkStatusChanged", "CodeFilePut", "CodeFileRemoved", "CodeSymbolStatusChanged")

# analytics.events as 0024 made it
_EVENTS = f"""
    CREATE OR REPLACE VIEW analytics.events WITH (security_barrier) AS
    SELECT e.position, e.event_id, e.type, e.schema_version,
           split_part(e.stream_id, '-', 1) AS stream_kind,
           encode(sha256(convert_to(e.stream_id, 'UTF8')), 'hex') AS stream_key,
           e.stream_version,
           CASE WHEN e.stream_id ~ '^memory-[0-9a-f-]{{36}}$' THEN substr(e.stream_id, 8)::uuid END AS memory_id,
           CASE WHEN e.stream_id ~ '^recall-[0-9a-f-]{{36}}$' THEN substr(e.stream_id, 8)::uuid END AS recall_id,
           e.metadata->>'actor' AS actor, e.metadata->>'correlation_id' AS correlation_id,
           e.metadata->>'causation_id' AS causation_id, e.metadata->>'source' AS source,
           e.occurred_at, e.recorded_at
    FROM events e
    WHERE e.tenant = {_TENANT}
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_memories h
                      WHERE h.tenant = e.tenant AND 'memory-' || h.memory_id = e.stream_id)
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_recalls h
                      WHERE h.tenant = e.tenant AND 'recall-' || h.recall_id = e.stream_id)"""


def upgrade() -> None:
    types = ", ".join(f"'{t}'" for t in SUBJECT_TYPES)
    op.execute(f"""
    CREATE TABLE analytics_subject_events (
        tenant           text    NOT NULL,
        position         bigint  NOT NULL,
        policy_position  bigint  NOT NULL,
        hidden           boolean NOT NULL,
        PRIMARY KEY (tenant, position)
    );

    CREATE FUNCTION analytics_private.visible_subject_events() RETURNS TABLE ("position" bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        RETURN QUERY SELECT s.position FROM public.analytics_subject_events s
                     WHERE s.tenant = {_SESSION_TENANT} AND NOT s.hidden
                       AND s.policy_position = coalesce(
                           (SELECT max(p.position) FROM public.events p WHERE p.tenant = {_SESSION_TENANT}
                              AND p.stream_id = 'policy-privacy' AND p.type = 'PrivacyPolicySet'), 0);
    END $$;
    REVOKE ALL ON FUNCTION analytics_private.visible_subject_events() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION analytics_private.visible_subject_events() TO engramlog_analyst;
    """)
    op.execute(_EVENTS + f"""
      AND (e.type <> ALL (ARRAY[{types}])
           OR e.position IN (SELECT v.position FROM analytics_private.visible_subject_events() v));
    """)


def downgrade() -> None:
    op.execute(_EVENTS + ";")
    op.execute("""
    DROP FUNCTION analytics_private.visible_subject_events();
    DROP TABLE analytics_subject_events;
    """)
