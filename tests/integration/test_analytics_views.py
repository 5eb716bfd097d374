"""The analytics views (migrations 0024 and 0027, docs/analytics.md) through an analyst's own login role: the role
sees its tenant's rows and no other's, reads no base table, sees no memory (nor a recall scoped to what), document,
session, transcript or code file event the tenant's privacy policy excludes, and no content; a role that is not an
analyst's (the template) sees nothing."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import psycopg
import pytest
from funnel_support import ask, project, remember_all

from projections.rebuild import rebuild
from projections.registry import PROJECTORS
from services.analysts import create_analyst, drop_analyst
from services.privacy import set_privacy_policy
from services.remember import MemoryInput, remember
from tests.log_support import opened_events

VIEWS = ("events", "memory_history", "recalls", "hits", "decisions")
META = {"actor": "test", "source": "test"}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "analytics.md"


def _head(engine) -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT max(position) FROM events").scalar_one()


def _rows(dsn: str, sql: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def analysts(engine):
    made: list[str] = []

    def make(tenant: str):
        a = create_analyst(engine, tenant)
        made.append(a.role)
        return a

    yield make
    for role in made:
        drop_analyst(engine, role)


def test_an_analyst_sees_its_tenant_only_and_nothing_excluded(engine, tenant, analysts):
    other = "other-" + tenant
    mine = remember_all(engine, tenant, ["Lisbon trams are yellow and climb steep hills",
                                         "Porto has a double-deck iron bridge over the Douro"])
    secret = remember_all(engine, tenant, ["The salary review for Bob is in March"], agent_id="hr-bot")
    remember(engine, tenant, [MemoryInput("Alice's medical leave starts in June", tags=["private"],
                                          must_keep=True)], META)
    theirs = remember_all(engine, other, ["Another tenant keeps a note about Lisbon trams"])
    served = ask(engine, tenant, "Lisbon trams")
    hidden_recall = ask(engine, tenant, "salary review", agent_id="hr-bot")
    ask(engine, other, "Lisbon trams")
    project(engine, set_privacy_policy(engine, tenant, {"exclude_agents": ["hr-bot"], "exclude_tags": ["private"]},
                                       META))

    a = analysts(tenant)
    assert a.dsn.startswith("postgresql://") and a.role in a.dsn
    ids = {str(r.memory_id) for r in mine}
    seen = {str(r[0]) for r in _rows(a.dsn, "SELECT memory_id FROM analytics.memory_history")}
    assert seen == ids  # its own memories, not the excluded ones (by agent, by tag), not the other tenant's
    events = _rows(a.dsn, "SELECT memory_id, recall_id, type, actor FROM analytics.events")
    named = {str(m) for m, *_ in events if m}
    assert named == ids
    recall_ids = {str(r) for _, r, *_ in events if r}
    assert str(served.recall_id) in recall_ids and str(hidden_recall.recall_id) not in recall_ids
    assert {"MemoryRecorded", "MemoryAdmitted", "RecallServed", "PrivacyPolicySet"} <= {t for _, _, t, _ in events}
    recalls = _rows(a.dsn, "SELECT recall_id, k, hits FROM analytics.recalls")
    assert {str(r[0]) for r in recalls} == {str(served.recall_id)}
    hits = _rows(a.dsn, "SELECT recall_id, rank, domain, memory_id, score FROM analytics.hits ORDER BY rank")
    assert hits and {str(h[0]) for h in hits} == {str(served.recall_id)}
    assert {str(h[3]) for h in hits} <= ids
    assert recalls[0][2] == len(hits)
    decisions = _rows(a.dsn, "SELECT memory_id, actor, details FROM analytics.decisions")
    assert {str(d[0]) for d in decisions} == ids and all(d[1].startswith("system:") for d in decisions)
    assert all("_sealed" not in d[2] and "reason" not in d[2] for d in decisions)  # the sealed part never shows
    for view in VIEWS:  # no content anywhere: no view has a text column holding a memory's words
        text_dump = " ".join(str(r) for r in _rows(a.dsn, f"SELECT * FROM analytics.{view}"))
        assert "Lisbon" not in text_dump and "salary" not in text_dump and "medical" not in text_dump
        assert str(secret[0].memory_id) not in text_dump
        assert str(theirs[0].memory_id) not in text_dump

    # no base table, and no way into another tenant's rows
    for table in ("events", "memories", "subject_keys", "analyst_roles", "recall_hits", "analytics_policy"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            _rows(a.dsn, f"SELECT 1 FROM public.{table} LIMIT 1")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the views' helpers: only through the views
        _rows(a.dsn, "SELECT * FROM analytics_private.recall_hits()")
    with psycopg.connect(a.dsn) as conn:
        conn.execute("SET engramlog.tenant = 'whatever'")
        assert conn.execute("SELECT count(*) FROM analytics.events").fetchone()[0] == len(events)
        conn.execute("SET ROLE engramlog_analyst")  # the template: bound to no tenant, it sees nothing
        assert all(conn.execute(f"SELECT count(*) FROM analytics.{v}").fetchone()[0] == 0 for v in VIEWS)

    for query in re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.DOTALL):  # the documented examples run
        _rows(a.dsn, query)

    # the read models the views read can still be rebuilt (and forgotten from), and the views follow
    for name in ("memories", "hits"):
        rebuild(engine, PROJECTORS[name])
    assert _rows(a.dsn, "SELECT recall_id, rank, domain, memory_id, score FROM analytics.hits ORDER BY rank") == hits
    assert {str(r[0]) for r in _rows(a.dsn, "SELECT memory_id FROM analytics.memory_history")} == ids

    b = analysts(other)
    their_memories = {str(r[0]) for r in _rows(b.dsn, "SELECT memory_id FROM analytics.memory_history")}
    assert their_memories == {str(theirs[0].memory_id)}


def test_an_analyst_role_needs_a_tenant_and_a_sound_name(engine):
    from domain.errors import InvalidPayload

    with pytest.raises(InvalidPayload):
        create_analyst(engine, " ")
    with pytest.raises(InvalidPayload):
        create_analyst(engine, "t", name="Robert'); DROP TABLE events; --")


def test_an_analyst_sees_no_event_of_an_excluded_document_session_transcript_or_code_file(engine, tenant, analysts):
    """The export's rule (recall/event_privacy.py) decides a document's, session's, transcript's and code file's
    events for analytics.events too (migration 0027): excluded ones are left out, and shown again once the policy
    no longer excludes them; while the projector has not decided them under the policy in force, none shows."""
    from projections.subject_visibility import SUBJECT_TYPES
    from services.code import FileInput, write_files
    from services.knowledge import DocumentInput, put_documents
    from services.sessions import append_messages
    from services.transcripts import put_transcript

    migration = importlib.import_module("migrations.versions.0027_analytics_subject_privacy")
    assert tuple(t.type_name() for t in SUBJECT_TYPES) == migration.SUBJECT_TYPES

    put_documents(engine, tenant, [DocumentInput("hr/salaries.md", "# Pay\n\n## Bands\n\nBands are reviewed.\n"),
                                   DocumentInput("ops/keys.md", "# Keys\n\n## Rotation\n\nRotate yearly.\n")], META)
    for session in ("s-secret", "s-open"):
        append_messages(engine, tenant, session, [{"message_id": "m-1", "role": "user", "content": "hello"}], META)
    for transcript in ("tr-secret", "tr-open"):
        put_transcript(engine, tenant, transcript, "[10:00] USER: hello\n[10:01] ASSISTANT: hi\n", META)
    write_files(engine, tenant, "acme", [FileInput("vault/secret.py", "def key():\n    return 1\n"),
                                         FileInput("app/main.py", "def main():\n    return 2\n")], META)
    with engine.connect() as conn:
        events = opened_events(conn, "tenant = :t", {"t": tenant})

    def secret(d: dict) -> bool:
        return (str(d.get("path", "")).startswith(("hr/", "vault/")) or d.get("session_id") == "s-secret"
                or d.get("transcript_id") == "tr-secret")

    hidden = {e.position for e in events if secret(e.data)}
    kinds = {e.type for e in events if e.position in hidden}
    assert {"DocumentPut", "SessionMessagesAppended", "TranscriptChunksPut", "CodeFilePut"} <= kinds, kinds
    everything = {e.position for e in events}
    policy = {"exclude_paths": ["hr/**", "acme/vault/**"], "exclude_sessions": ["s-secret", "tr-secret"]}
    at = set_privacy_policy(engine, tenant, policy, META)

    a = analysts(tenant)
    shown = {r[0] for r in _rows(a.dsn, "SELECT position FROM analytics.events")}
    assert shown == {at}  # not decided under the policy in force yet: no subject event shows (fails closed)
    project(engine, at)
    shown = {r[0] for r in _rows(a.dsn, "SELECT position FROM analytics.events")}
    assert shown == (everything - hidden) | {at}
    rebuild(engine, PROJECTORS["privacy"])  # a rebuild decides the same
    assert {r[0] for r in _rows(a.dsn, "SELECT position FROM analytics.events")} == shown

    lifted = set_privacy_policy(engine, tenant, {}, META)
    project(engine, lifted)
    shown = {r[0] for r in _rows(a.dsn, "SELECT position FROM analytics.events")}
    assert shown == everything | {at, lifted}


def test_a_non_memory_hit_is_named_only_when_served_under_the_policy_in_force(engine, tenant, analysts):
    """analytics.hits (migration 0028): a knowledge result's key (its handle's sha256, which a guessed path would
    confirm) shows for a recall served after the tenant's latest policy, whose gate it passed; an earlier recall's
    is counted with item_key NULL, whatever the policy says."""
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.multi import MultiRequest, recall_multi
    from recall.scope import Scope
    from services.knowledge import DocumentInput, put_documents

    put_documents(engine, tenant, [DocumentInput("ops/rollback.md", "# Deploys\n\n## Rollback\n\nRevert the tag.\n")],
                  META)
    settings = get_settings()

    def knowledge_recall() -> str:
        answer = recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                              MultiRequest(Scope(tenant), "how do I roll back a deploy", ("knowledge",), 3), META)
        assert answer.buckets[0].results
        return str(answer.recall_id)

    project(engine, _head(engine))
    before = knowledge_recall()
    project(engine, _head(engine))
    a = analysts(tenant)

    def keys(recall_id: str) -> list:
        return [r[0] for r in _rows(a.dsn, f"SELECT item_key FROM analytics.hits WHERE recall_id = '{recall_id}'"
                                           " AND domain = 'knowledge'")]

    assert keys(before) and all(keys(before))  # no policy yet: named
    set_privacy_policy(engine, tenant, {"exclude_paths": ["hr/**"]}, META)
    project(engine, _head(engine))
    after = knowledge_recall()
    project(engine, _head(engine))
    assert keys(before) and not any(keys(before))  # counted, no longer named
    assert keys(after) and all(keys(after))
