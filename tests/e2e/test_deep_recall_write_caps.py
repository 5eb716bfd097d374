"""What model-written code may write per deep recall is capped: store() calls and bytes stored (beyond either,
store() raises in the sandbox with the setting's name, nothing more is written, and the loop goes on), and the
audit event's size (over ENGRAMLOG_DEEP_AUDIT_BYTES it is cut to fit, saying what was cut; the answer is whole)."""

from __future__ import annotations

import json

from domain.events import DeepRecallServed, DeepRecallStored, recall_stream
from eventstore.stream import read_stream
from tests.deep_recall_support import ROOT, code, last_user, point_route_at

FLOOD = code("refused = None",
             "for i in range(10000):",
             "    try:",
             "        store('k%d' % i, 'x' * 1000)",
             "    except Exception as exc:",
             "        refused = (i, str(exc))",
             "        break",
             "print(refused)")


def _stored(engine, tenant: str) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = :type"),
                            {"t": tenant, "type": DeepRecallStored.type_name()}).scalar_one()


def _ask(client, models, question: str):
    r = client.post("/v1/deep_recall", json={"question": question})
    assert r.status_code == 200, r.text
    return r.json(), last_user(models.of(ROOT)[-1]["messages"])


def test_store_calls_are_capped_per_deep_recall(client, engine, tenant, models, monkeypatch) -> None:
    point_route_at(models, monkeypatch, deep_store_calls=5)
    models.script(ROOT, FLOOD, "FINAL: kept five")
    body, feedback = _ask(client, models, "keep many things")
    assert body["stopped"] == "final" and body["answer"] == "kept five"
    assert "(5, 'store() refused: a deep recall may store at most 5 times (ENGRAMLOG_DEEP_STORE_CALLS)" in feedback
    assert _stored(engine, tenant) == 5


def test_bytes_stored_are_capped_per_deep_recall(client, engine, tenant, models, monkeypatch) -> None:
    point_route_at(models, monkeypatch, deep_store_bytes=3000)
    models.script(ROOT, FLOOD, "FINAL: kept two")
    body, feedback = _ask(client, models, "keep big things")
    assert body["answer"] == "kept two"
    assert "(2, 'store() refused: a deep recall may store at most 3000 bytes (ENGRAMLOG_DEEP_STORE_BYTES)" in feedback
    assert _stored(engine, tenant) == 2


def test_an_audit_over_its_cap_is_cut_to_fit_and_says_so(client, engine, tenant, models, monkeypatch) -> None:
    limit = 30_000
    point_route_at(models, monkeypatch, deep_audit_bytes=limit)
    many_calls = code("for i in range(300):", "    list_sessions()", "print('x' * 5000)")
    models.script(ROOT, *[many_calls] * 6, "FINAL: " + "the answer " * 5000)
    body, _ = _ask(client, models, "audit a lot")
    assert body["stopped"] == "final" and body["answer"] == ("the answer " * 5000).strip()  # whole in the answer
    with engine.connect() as conn:
        [event] = read_stream(conn, tenant, recall_stream(body["recall_id"]))
    audit = event.payload()
    assert isinstance(audit, DeepRecallServed)
    size = len(json.dumps(event.data, ensure_ascii=False, default=str).encode())
    assert size <= limit + 2000, size  # the cap, plus the few fields added after the cut (tokens, latency)
    assert audit.audit_cut and "ENGRAMLOG_DEEP_AUDIT_BYTES (30000)" in audit.audit_cut
    assert "live call" in audit.audit_cut
    assert audit.question == "audit a lot" and audit.stopped == "final"

    models.script(ROOT, "FINAL: small")
    small, _ = _ask(client, models, "audit a little")
    with engine.connect() as conn:
        [event] = read_stream(conn, tenant, recall_stream(small["recall_id"]))
    assert event.payload().audit_cut is None  # type: ignore[union-attr]
