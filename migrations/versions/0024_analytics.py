"""The log as data for analysts (docs/analytics.md): the `analytics` schema's five views, the hit-log read model
they need (recall_hits, owned by projections/hits.py: RecallServed's results are sealed content, so SQL cannot
read them from the log), and the analyst roles.

Who sees what. `engramlog_analyst` is a NOLOGIN template role: USAGE on schema analytics and SELECT on its five
views, nothing else (no base table). `engramlog analyst create --tenant T` makes a LOGIN role that is a member of it
and records (role, tenant) in analyst_roles; every view keeps the rows of the tenant of `current_user` only, read
from that table inside the view (a view reads its tables with its owner's rights, so the analyst needs none), and
a role not in it (the template itself, after SET ROLE) sees no row. A session setting would not do: any role can
SET a custom setting. The views are security_barrier, so a function an analyst writes cannot see filtered rows.

Privacy (rule 5): the views expose metadata only (types, positions, times, actors, ids, statuses, scores, the
plain part of a decision's payload), never sealed content, and stream names only as an opaque key (a document's
stream names its path, a session's its id). Memories the tenant's policy in force excludes (the latest
PrivacyPolicySet in the log, as recall reads it, so it holds from the next query) are left out of every view that
names them, as are recalls whose scope the policy excludes: agent, project and session come from the plain
MemoryRecorded payload; tags from the memories read model, and while a policy excludes tags a memory that read
model does not hold yet is left out too.

Revision ID: 0024
Revises: 0023
"""

from alembic import op

revision = "0024"
down_revision = "0023"

VIEWS = ("events", "memory_history", "recalls", "hits", "decisions")

# The tenant of the role asking; NULL (no row anywhere) for a role that is not an analyst's.
_TENANT = "(SELECT a.tenant FROM public.analyst_roles a WHERE a.role_name = current_user)"
# Inside the SECURITY DEFINER functions current_user is their owner: the login role is the session's.
_SESSION_TENANT = "(SELECT a.tenant FROM public.analyst_roles a WHERE a.role_name = session_user)"


def upgrade() -> None:
    op.execute("""
    CREATE SCHEMA IF NOT EXISTS analytics;

    -- Owned by the hits projector: one row per result of each recall (every domain), its drill and feedback.
    CREATE TABLE recall_hits (
        tenant       text             NOT NULL,
        recall_id    uuid             NOT NULL,
        rank         integer          NOT NULL,
        domain       text             NOT NULL,
        memory_id    uuid,
        item_key     text             NOT NULL,
        score        double precision NOT NULL,
        relevance    double precision,
        layer        text             NOT NULL,
        recorded_at  timestamptz      NOT NULL,
        position     bigint           NOT NULL,
        drilled_at   timestamptz,
        verdict      text,
        PRIMARY KEY (tenant, recall_id, rank)
    );
    CREATE INDEX recall_hits_memory ON recall_hits (tenant, memory_id);
    CREATE INDEX recall_hits_item ON recall_hits (tenant, recall_id, item_key);

    CREATE TABLE analyst_roles (
        role_name   text        PRIMARY KEY,
        tenant      text        NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE INDEX analyst_roles_tenant ON analyst_roles (tenant);
    """)
    # The read models the views need (memories' tags, recall_hits) are read through functions: a view naming a
    # read-model table directly would stop its rebuild and a forget (projections/rebuild.py swaps tables in), and a
    # plpgsql body is not a dependency. SECURITY DEFINER (an analyst has no right on the tables), each answering
    # the rows of the session user's tenant only, in a schema analysts cannot name (they call them only through the
    # views, which store them by oid).
    op.execute(f"""
    CREATE SCHEMA analytics_private;
    REVOKE ALL ON SCHEMA analytics_private FROM PUBLIC;

    CREATE FUNCTION analytics_private.memory_tags() RETURNS TABLE (tenant text, memory_id uuid, tags text[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        RETURN QUERY SELECT m.tenant, m.memory_id, m.tags FROM public.memories m
                     WHERE m.tenant = {_SESSION_TENANT};
    END $$;

    CREATE FUNCTION analytics_private.recall_hits() RETURNS TABLE (
        tenant text, recall_id uuid, rank integer, domain text, memory_id uuid, item_key text,
        score double precision, relevance double precision, layer text, recorded_at timestamptz, "position" bigint,
        drilled_at timestamptz, verdict text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        RETURN QUERY SELECT h.tenant, h.recall_id, h.rank, h.domain, h.memory_id, h.item_key, h.score, h.relevance,
                            h.layer, h.recorded_at, h.position, h.drilled_at, h.verdict
                     FROM public.recall_hits h WHERE h.tenant = {_SESSION_TENANT};
    END $$;
    REVOKE ALL ON FUNCTION analytics_private.memory_tags(), analytics_private.recall_hits() FROM PUBLIC;
    """)
    # The policy in force per tenant, from the log, and the memories and recalls it hides: helper views granted to
    # no analyst (the views read them with their owner's rights).
    op.execute("""
    CREATE VIEW public.analytics_policy AS
    SELECT DISTINCT ON (e.tenant) e.tenant, e.data AS policy
    FROM events e WHERE e.stream_id = 'policy-privacy' AND e.type = 'PrivacyPolicySet'
    ORDER BY e.tenant, e.stream_version DESC;

    CREATE VIEW public.analytics_hidden_memories AS
    SELECT r.tenant, (r.data->>'memory_id')::uuid AS memory_id
    FROM events r
    JOIN public.analytics_policy p ON p.tenant = r.tenant
    LEFT JOIN analytics_private.memory_tags() m ON m.tenant = r.tenant AND m.memory_id = (r.data->>'memory_id')::uuid
    WHERE r.type = 'MemoryRecorded' AND r.stream_version = 1 AND (
           r.data->>'agent_id' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_agents'))
        OR r.data->>'project' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_projects'))
        OR r.data->>'session_id' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_sessions'))
        OR (jsonb_array_length(coalesce(p.policy->'exclude_tags', '[]')) > 0
            AND (m.memory_id IS NULL
                 OR m.tags && ARRAY(SELECT jsonb_array_elements_text(p.policy->'exclude_tags')))));

    CREATE VIEW public.analytics_hidden_recalls AS
    SELECT r.tenant, (r.data->>'recall_id')::uuid AS recall_id
    FROM events r JOIN public.analytics_policy p ON p.tenant = r.tenant
    WHERE r.type = 'RecallServed' AND (
           r.data->'scope'->>'agent_id' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_agents'))
        OR r.data->'scope'->>'project' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_projects'))
        OR r.data->'scope'->>'session_id' IN (SELECT jsonb_array_elements_text(p.policy->'exclude_sessions')));
    """)
    op.execute(f"""
    CREATE VIEW analytics.events WITH (security_barrier) AS
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
                      WHERE h.tenant = e.tenant AND 'recall-' || h.recall_id = e.stream_id);

    CREATE VIEW analytics.memory_history WITH (security_barrier) AS
    SELECT e.position, (e.data->>'memory_id')::uuid AS memory_id, e.type AS change,
           coalesce(e.data->>'to_status', e.data->>'disposition') AS status,
           e.data->>'from_status' AS from_status,
           (e.data->>'superseded_by')::uuid AS superseded_by, e.data->>'trigger' AS trigger,
           (e.data->>'salience')::double precision AS salience,
           coalesce((e.data->>'similarity')::double precision, (e.data->>'confidence')::double precision)
               AS similarity_or_confidence,
           e.metadata->>'actor' AS actor, e.recorded_at
    FROM events e
    WHERE e.tenant = {_TENANT}
      AND e.type IN ('MemoryRecorded', 'MemoryAdmitted', 'MemoryStatusChanged', 'MemorySuperseded',
                     'MemoryReinforced', 'MemoriesMerged')
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_memories h
                      WHERE h.tenant = e.tenant AND h.memory_id IN ((e.data->>'memory_id')::uuid,
                                                                    (e.data->>'superseded_by')::uuid));

    CREATE VIEW analytics.recalls WITH (security_barrier) AS
    SELECT e.position, (e.data->>'recall_id')::uuid AS recall_id, (e.data->>'k')::integer AS k,
           (e.data->>'latency_ms')::double precision AS latency_ms,
           ARRAY(SELECT jsonb_array_elements_text(coalesce(e.data->'domains', '["memories"]'))) AS domains,
           e.data->'scope'->>'agent_id' AS agent_id, e.data->'scope'->>'project' AS project,
           e.data->'scope'->>'session_id' AS session_id,
           (SELECT count(*) FROM analytics_private.recall_hits() h WHERE h.tenant = e.tenant
                AND h.recall_id = (e.data->>'recall_id')::uuid) AS hits,
           e.metadata->>'actor' AS actor, e.recorded_at
    FROM events e
    WHERE e.tenant = {_TENANT} AND e.type = 'RecallServed'
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_recalls h
                      WHERE h.tenant = e.tenant AND h.recall_id = (e.data->>'recall_id')::uuid);

    CREATE VIEW analytics.hits WITH (security_barrier) AS
    SELECT h.recall_id, h.rank, h.domain, h.memory_id, h.item_key, h.score, h.relevance, h.layer,
           h.drilled_at, h.verdict, h.recorded_at, h.position
    FROM analytics_private.recall_hits() h
    WHERE h.tenant = {_TENANT}
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_memories m
                      WHERE m.tenant = h.tenant AND m.memory_id = h.memory_id)
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_recalls r
                      WHERE r.tenant = h.tenant AND r.recall_id = h.recall_id);

    CREATE VIEW analytics.decisions WITH (security_barrier) AS
    SELECT e.position, e.event_id, e.type, (e.data->>'memory_id')::uuid AS memory_id,
           e.metadata->>'actor' AS actor, e.metadata->>'causation_id' AS causation_id,
           e.data - '_sealed' AS details, e.recorded_at
    FROM events e
    WHERE e.tenant = {_TENANT} AND e.metadata->>'actor' LIKE 'system:%'
      AND e.stream_id LIKE 'memory-%'
      AND NOT EXISTS (SELECT 1 FROM public.analytics_hidden_memories h
                      WHERE h.tenant = e.tenant AND 'memory-' || h.memory_id = e.stream_id);
    """)
    views = ", ".join(f"analytics.{v}" for v in VIEWS)
    op.execute(f"""
    DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engramlog_analyst') THEN
            CREATE ROLE engramlog_analyst NOLOGIN;
        END IF;
    END $$;
    REVOKE ALL ON SCHEMA analytics FROM PUBLIC;
    GRANT USAGE ON SCHEMA analytics TO engramlog_analyst;
    GRANT SELECT ON {views} TO engramlog_analyst;
    GRANT EXECUTE ON FUNCTION analytics_private.memory_tags(), analytics_private.recall_hits() TO engramlog_analyst;
    """)


def downgrade() -> None:
    op.execute("""
    DROP SCHEMA analytics CASCADE;
    DROP VIEW public.analytics_hidden_recalls;
    DROP VIEW public.analytics_hidden_memories;
    DROP VIEW public.analytics_policy;
    DROP SCHEMA analytics_private CASCADE;
    DROP TABLE analyst_roles;
    DROP TABLE recall_hits;
    """)
