"""`shortcut` says whether the smart shortcut fired (deep_shortcut_hits results of relevance >= deep_shortcut_score),
in the answer and in its DeepRecallServed alike: with no model configured and the condition unmet, the quick
recall's results are the answer with shortcut false, stopped "final" and a reason naming the missing model; a
cached answer carries the flag it was stored with."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from eventstore.read import event_at
from projections.runner import catch_up
from projections.sessions import SessionsProjector
from tests.deep_recall_support import ROOT, point_route_at

FACTS = ["We decided to roll the walrus deploy back to v41 on March 12.",
         "In April we moved the walrus service to the new cluster."]


@pytest.fixture
def deep(models, monkeypatch):
    return point_route_at(models, monkeypatch)


def seed(client: TestClient, engine) -> None:
    for i, content in enumerate(FACTS):
        assert client.post(f"/v1/sessions/s{i}/messages", json={"role": "user", "content": content}).status_code == 201
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)


def ask(client: TestClient, question: str) -> dict[str, Any]:
    r = client.post("/v1/deep_recall", json={"question": question})
    assert r.status_code == 200, r.text
    return r.json()


def audit(engine, tenant: str, recall_id: str) -> dict[str, Any]:
    with engine.connect() as conn:
        # Its reason and results are sealed content (eventstore/codec.py): read the event through the log.
        position = conn.execute(text("SELECT position FROM events WHERE tenant = :t AND type = 'DeepRecallServed'"
                                     " AND stream_id = :s"), {"t": tenant, "s": f"recall-{recall_id}"}).scalar_one()
        event = event_at(conn, position)
        assert event is not None
        return event.data


def blind_spots(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'BlindSpotRegistered'"),
                            {"t": tenant}).scalar_one()


def test_no_model_and_the_condition_unmet_answers_the_quick_results_not_as_the_shortcut(
        client, engine, tenant, deep) -> None:
    seed(client, engine)
    deep(llm_model="", deep_shortcut_hits=1000)
    body = ask(client, "walrus cluster")
    assert body["shortcut"] is False and body["stopped"] == "final" and body["iterations"] == 0
    assert "no model configured" in body["reason"] and "1000" in body["reason"]
    assert body["results"] and "walrus" in body["answer"]
    served = audit(engine, tenant, body["recall_id"])
    assert served["shortcut"] is False and served["stopped"] == "final" and served["reason"] == body["reason"]
    assert served["shortcut_results"] == body["results"]
    record = client.get(f"/v1/recalls/{body['recall_id']}").json()  # the record shows what was answered
    assert len(record["results"]) == len(body["results"])
    assert blind_spots(engine, tenant) == 0  # it answered something


def test_no_model_and_no_results(client, engine, tenant, deep) -> None:
    deep(llm_model="")
    body = ask(client, "what did we decide about the quokka migration?")
    assert (body["shortcut"], body["stopped"], body["results"], body["answer"]) == (False, "final", [], None)
    assert "no model configured" in body["reason"]
    assert audit(engine, tenant, body["recall_id"])["shortcut"] is False
    assert blind_spots(engine, tenant) == 1


def test_no_model_and_the_condition_met_is_the_shortcut(client, engine, tenant, deep) -> None:
    seed(client, engine)
    deep(llm_model="", deep_shortcut_hits=1, deep_shortcut_score=0.0001)
    body = ask(client, "walrus cluster")
    assert body["shortcut"] is True and body["reason"].startswith(f"{len(body['results'])} results of relevance >=")
    assert audit(engine, tenant, body["recall_id"])["shortcut"] is True


def test_a_cached_answer_keeps_its_flag(client, engine, tenant, models, deep) -> None:
    seed(client, engine)
    models.script(ROOT, "FINAL: the walrus moved in April")
    first = ask(client, "where is the walrus service?")
    again = ask(client, "where is the walrus service?")
    assert (first["cached"], again["cached"]) == (False, True)
    assert first["shortcut"] is again["shortcut"] is False and again["results"] == first["results"] == []
    served = audit(engine, tenant, again["recall_id"])
    assert served["cached"] is True and served["shortcut"] is False
