"""POST /v1/forget on the real stack (docs/forget.md): an entity named in memories, a session, a transcript and a
document is forgotten with no residue. After it, no recall (the exact words, a paraphrase, the name, a deep recall
with the scripted model) returns its content; no table's text (every text, json and array column, scanned with
SQL), no log payload, no export, no recall record holds its plaintext; its own embedding finds no near copy; the
read models are what a rebuild gives (verify, every projection), and what did not name the entity is all there."""

from __future__ import annotations

import json
import uuid

import pytest
from funnel_support import project
from privacy_support import all_events
from sqlalchemy import text

from tests.deep_recall_support import ROOT, code, point_route_at

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

NAME = "Zorvex Quill"  # no other test may write this name: the residue scan reads every table, all tenants


def _ok(r):
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.json()


def _head(client) -> int:
    return client.get("/v1/events", params={"limit": 1000}).json()["events"][-1]["position"]


def _served(answer) -> str:
    """What an answer serves, without what it echoes of the request (the query, the model's code, the audit)."""
    echoes = {"query", "question", "iterations", "explanation", "code", "terms", "sub_calls"}

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in echoes}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return json.dumps(strip(answer))


def _tables_holding(engine, needles: list[str]) -> list[str]:
    """Every table (and column) of the public schema whose text, json or array values contain a needle."""
    with engine.connect() as conn:
        cols = conn.execute(text("""
            SELECT c.table_name, c.column_name FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
              AND (c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'bytea'))""")).all()
        found = []
        for table, column in cols:
            for needle in needles:
                hit = conn.execute(text(f'SELECT EXISTS (SELECT 1 FROM "{table}" WHERE "{column}"::text ILIKE :n)'),
                                   {"n": f"%{needle}%"}).scalar_one()
                if hit:
                    found.append(f"{table}.{column} holds {needle!r}")
        return found


def _near_copies(engine, tenant: str, fact: str) -> list[str]:
    """Vectors of the tenant within cosine 0.9 of the fact's own embedding, in every vector table and the cache."""
    from infra.embedding import get_embedder, to_pgvector
    from infra.settings import get_settings

    literal = to_pgvector(get_embedder(get_settings().embedding.embedding_model).encode([fact])[0])
    found = []
    with engine.connect() as conn:
        for table in ("memory_vectors", "knowledge_section_vectors", "transcript_chunk_vectors", "embedding_cache"):
            n = conn.execute(text(f"SELECT count(*) FROM {table} WHERE tenant = :t"
                                  " AND 1 - (embedding <=> CAST(:v AS vector)) > 0.9"), {"t": tenant, "v": literal})
            count = n.scalar_one()
            if count:
                found.append(f"{table}: {count}")
    return found


def test_forgetting_an_entity_leaves_no_residue(client, tenant, engine, models, monkeypatch):
    m = uuid.uuid4().hex[:8]
    secret = f"heliotrope{m}"  # a word only the forgotten texts hold
    facts = [f"{NAME} keeps the {secret} ledger in the Vantaa archive basement",
             f"{NAME} signs every {secret} invoice with a green fountain pen"]
    kept = f"The harbour ferry to Suomenlinna leaves at nine, token {m}"
    for fact in (*facts, kept):
        _ok(client.post("/v1/memories", json={"content": fact, "agent_id": "a1"}))
    _ok(client.post("/v1/sessions/chat-zq/messages", json={"messages": [
        {"role": "user", "content": f"Can you remind {NAME} about the {secret} audit?"},
        {"role": "assistant", "content": "Sure, she will get it on Monday."}]}))
    _ok(client.put("/v1/transcripts/call-zq", content=(
        f"[2026-02-01T09:00:00Z] USER: {NAME} said the {secret} figures are off\n"
        "[2026-02-01T09:01:00Z] ASSISTANT: I will check them\n").encode()))
    _ok(client.put("/v1/knowledge/people/zq.md", json={
        "content": f"# People\n\n## {NAME}\nHead of the {secret} archive since 2019.\n"}))
    _ok(client.put("/v1/knowledge/ops/ferry.md", json={"content": f"# Ferry\n\n## Times\nLeaves at nine {m}.\n"}))
    project(engine, _head(client))

    before = _ok(client.post("/v1/recall/multi", json={"query": f"{secret} ledger archive", "k": 20}))
    assert secret in json.dumps(before)
    point_route_at(models, monkeypatch)
    models.script(ROOT, code(f"hits = search('{secret} ledger', max_results=10)", "store('seen', hits)",
                             "print(hits)"), f"FINAL: the {secret} ledger is in Vantaa")
    deep = _ok(client.post("/v1/deep_recall", json={"question": "where is the ledger kept?"}))
    assert secret in json.dumps(deep)
    project(engine, _head(client))
    holding = _tables_holding(engine, [secret])
    assert "memories.content" in " ".join(holding)  # the read models hold it before the forget...
    assert not any(h.startswith("events.") for h in holding)  # ...the log only sealed (eventstore/codec.py)

    # A dry run says what goes, and erases nothing.
    plan = _ok(client.post("/v1/forget", json={"entity": NAME, "dry_run": True}))
    assert plan["dry_run"] and plan["forget_id"] is None
    assert plan["streams"] == {"memories": 2, "sessions": 1, "transcripts": 1, "documents": 1}, plan
    assert plan["dependent_streams"] >= 2 and plan["sealed_events"] > 0 and plan["unsealed_events"] == 0
    assert secret not in json.dumps(plan) and NAME not in json.dumps(plan)
    assert secret in json.dumps(_ok(client.post("/v1/recall/multi", json={"query": f"{secret} ledger", "k": 20})))

    receipt = _ok(client.post("/v1/forget", json={"entity": NAME, "reason": "erasure request #17"}))
    # (one key more: the recall just above named it too)
    assert receipt["forget_id"] and receipt["keys"] >= plan["keys"] and receipt["projections"], receipt
    assert receipt["stream_ids"] == plan["stream_ids"]

    # No table, no log payload holds the plaintext or the name (scanned before any new question names it).
    assert _tables_holding(engine, [secret, NAME, "Vantaa archive", "fountain pen"]) == []
    exported = json.dumps(all_events(client))
    assert secret not in exported and NAME not in exported and "SubjectForgotten" in exported
    assert _near_copies(engine, tenant, facts[0]) == [] and _near_copies(engine, tenant, facts[1]) == []
    # The recall records that served it are gone with it.
    for recall_id in (before["recall_id"], deep["recall_id"]):
        assert client.get(f"/v1/recalls/{recall_id}").status_code == 404

    # No recall returns it: the exact words, a paraphrase, the name, each domain, a deep recall.
    project(engine, _head(client))
    for query in (f"{secret} ledger", "where does she keep the accounting book", NAME, "green fountain pen invoice"):
        for route in ("/v1/recall", "/v1/recall/multi"):
            answer = _served(_ok(client.post(route, json={"query": query, "k": 20})))
            assert secret not in answer and "fountain" not in answer and "Vantaa" not in answer, (route, query)
    models.script(ROOT, code(f"print(search('{secret} ledger Vantaa', max_results=10))",
                             f"print(search('{NAME}', max_results=10))"), "FINAL: nothing found")
    again = _served(_ok(client.post("/v1/deep_recall", json={"question": "where is the ledger kept?"})))
    assert secret not in again and "Vantaa" not in again
    # (the new searches' own words are new content: sealed in the log, and in no read model's text)
    assert _tables_holding(engine, ["Vantaa archive", "fountain pen", "figures are off", "since 2019"]) == []

    # What did not name the entity is all there; the read models are what a rebuild gives.
    ferry = _ok(client.post("/v1/recall/multi", json={"query": "harbour ferry Suomenlinna", "k": 5}))
    assert kept in json.dumps(ferry)
    assert _ok(client.get("/v1/knowledge/ops/ferry.md"))
    assert client.get("/v1/knowledge/people/zq.md").status_code == 404
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    project(engine, _head(client))
    for projector in PROJECTORS.values():
        report = verify(engine, projector)
        assert report.identical, (projector.name, [t for t in report.tables if not t.identical])


def test_forget_refuses_bad_input_and_unknown_subjects(client):
    for body in ({}, {"entity": "A", "memory_id": str(uuid.uuid4())}, {"entity": "   "}, {"memory_id": "nope"},
                 {"session_id": "a\x00b"}, {"entity": "x", "dry_run": "maybe"}, {"entity": "x", "extra": 1},
                 {"repo": ""}):
        r = client.post("/v1/forget", json=body)
        assert r.status_code == 422, (body, r.status_code, r.text)
    r = client.post("/v1/forget", json={"memory_id": str(uuid.uuid4())})
    assert r.status_code == 404, r.text
    r = client.post("/v1/forget", json={"entity": "Nobody Atall", "dry_run": True})
    assert r.status_code == 404, r.text


def test_forgetting_a_memory_by_id_forgets_only_it(client, engine):
    m = uuid.uuid4().hex[:8]
    gone = _ok(client.post("/v1/memories", json={"content": f"the vault code is quartz{m}"}))
    stays = _ok(client.post("/v1/memories", json={"content": f"the lobby opens at eight {m}"}))
    project(engine, _head(client))
    receipt = _ok(client.post("/v1/forget", json={"memory_id": gone["memory_id"]}))
    assert receipt["streams"] == {"memories": 1} and receipt["keys"] >= 1
    assert client.get(f"/v1/memories/{gone['memory_id']}").status_code == 404
    assert _ok(client.get(f"/v1/memories/{stays['memory_id']}"))["content"] == f"the lobby opens at eight {m}"
    assert f"quartz{m}" not in json.dumps(_ok(client.post("/v1/recall", json={"query": "vault code quartz"})))
    assert _tables_holding(engine, [f"quartz{m}"]) == []
    # Forgotten is forgotten: a second forget of it finds nothing to erase.
    assert client.post("/v1/forget", json={"memory_id": gone["memory_id"]}).status_code in (200, 404)


def test_each_kind_of_subject_forgets_its_streams(client, tenant, engine):
    m = uuid.uuid4().hex[:8]
    _ok(client.post("/v1/memories", json={"content": f"agent note cobalt{m}", "agent_id": f"agent-{m}"}))
    _ok(client.post(f"/v1/sessions/sess-{m}/messages", json={"messages": [
        {"role": "user", "content": f"session note amber{m}"}]}))
    _ok(client.put(f"/v1/transcripts/tr-{m}", content=f"[2026-02-01T09:00:00Z] USER: transcript jade{m}\n".encode()))
    _ok(client.put(f"/v1/knowledge/docs/{m}.md", json={"content": f"# Doc\n\n## Part\ndocument onyx{m}\n"}))
    _ok(client.post(f"/v1/code/repo-{m}/files", json={"files": [
        {"path": "main.py", "content": f"def garnet_{m}():\n    return 'code garnet{m}'\n"}]}))
    project(engine, _head(client))
    checks = {  # subject -> (the streams kind it names, a table that held it, the marker)
        ("agent_id", f"agent-{m}"): ("memories", "memories", f"cobalt{m}"),
        ("session_id", f"sess-{m}"): ("sessions", "session_messages", f"amber{m}"),
        ("transcript_id", f"tr-{m}"): ("transcripts", "transcript_chunks", f"jade{m}"),
        ("path", f"docs/{m}.md"): ("documents", "knowledge_sections", f"onyx{m}"),
        ("repo", f"repo-{m}"): ("code", "code_files", f"garnet{m}"),
    }
    for (kind, value), (streams, table, marker) in checks.items():
        assert any(table in h for h in _tables_holding(engine, [marker])), (kind, marker)
        plan = _ok(client.post("/v1/forget", json={kind: value, "dry_run": True}))
        assert plan["streams"].get(streams) == 1, (kind, plan)
        receipt = _ok(client.post("/v1/forget", json={kind: value}))
        assert receipt["keys"] >= 1 and receipt["sealed_events"] >= 1, (kind, receipt)
        assert _tables_holding(engine, [marker]) == [], kind
    assert client.get(f"/v1/knowledge/docs/{m}.md").status_code == 404
