"""A search() the model's code makes inside the deep recall sandbox is a recall of its own: it appends its own
RecallServed (through recall/multi's hit-log path), its results count as references, GET /v1/recalls/{id} explains
it, and the deep recall's audit names its recall id in the live call's record, so an analyst follows from the
deep recall to each search's hit-log."""

from __future__ import annotations

import uuid

from sqlalchemy import text

from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up
from tests.deep_recall_support import ROOT, code, point_route_at

DOC = ("# Zoo\n\n## Walrus pool\nThe walrus pool is cleaned on Mondays.\n\n"
       "## Penguin colony\nThe penguin colony moved to the north enclosure in April.\n")


def _ref_count(engine, tenant: str, heading: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT ref_count FROM knowledge_sections WHERE tenant = :t AND heading_path = :h"
                                 " AND status = 'active'"), {"t": tenant, "h": heading}).scalar_one()


def test_a_sandboxed_search_appends_its_recall_served_and_the_audit_names_it(client, engine, tenant, models,
                                                                            monkeypatch) -> None:
    point_route_at(models, monkeypatch)
    assert client.put("/v1/knowledge/zoo.md", json={"content": DOC}).status_code in (200, 201)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    assert _ref_count(engine, tenant, "Zoo > Penguin colony") == 0

    models.script(ROOT, code("hits = search('penguin colony enclosure', max_results=3)",
                             "print([h['content'][:40] for h in hits])"), "FINAL: the north enclosure")
    r = client.post("/v1/deep_recall", json={"question": "where did the birds go?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stopped"] == "final" and body["shortcut"] is False

    audit = client.get(f"/v1/recalls/{body['recall_id']}").json()["explanation"]["deep_recall"]
    [call] = [c for it in audit["iterations"] for b in it["blocks"] for c in b["live_calls"]]
    assert call["fn"] == "search" and "penguin" in call["result"]
    search_id = call["recall_id"]
    assert search_id in audit["search_recall_ids"] and search_id != body["recall_id"]
    assert audit["shortcut_recall_id"] not in (None, search_id)

    # The search's own hit-log event: one RecallServed on its recall stream, caused by the deep recall.
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT type, metadata, data FROM events WHERE tenant = :t AND stream_id = :s"),
                            {"t": tenant, "s": f"recall-{search_id}"}).all()
    assert [row.type for row in rows] == ["RecallServed"]
    assert rows[0].metadata["causation_id"] == body["recall_id"]
    assert "query" not in rows[0].data  # sealed in the log (eventstore/codec.py); the record opens it
    served = client.get(f"/v1/recalls/{search_id}").json()
    assert served["query"] == "penguin colony enclosure"
    assert [(x["domain"], x["handle"]["heading_path"]) for x in served["results"]][:1] == [
        ("knowledge", "Zoo > Penguin colony")]

    # Its results count as references: only this search returned the penguin section.
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)
    assert _ref_count(engine, tenant, "Zoo > Penguin colony") == 1
    # Every search the deep recall made is a RecallServed the audit names, and no other names it.
    with engine.connect() as conn:
        caused = {uuid.UUID(r.data["recall_id"]) for r in conn.execute(text(
            "SELECT data FROM events WHERE tenant = :t AND type = 'RecallServed'"
            " AND metadata->>'causation_id' = :d"), {"t": tenant, "d": body["recall_id"]})}
    assert caused == {uuid.UUID(i) for i in [*audit["search_recall_ids"], audit["shortcut_recall_id"]]}
