"""Recall feedback counts once per (recall, memory): a retry is answered without writing, a changed verdict is
refused with 409, and a log that does hold a repeat (written before the rule, or by hand) still applies it once,
in every projector (confidence, used counts, Hebbian edges) and identically on rebuild."""

from __future__ import annotations

import math
import uuid

import pytest
from fastapi.testclient import TestClient
from lifecycle_support import feedback, record, rows, served, sync, verify_tenant
from sqlalchemy import Engine, text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


def confidences(engine: Engine, tenant: str) -> dict[uuid.UUID, float]:
    with engine.connect() as conn:
        return {r.memory_id: r.confidence for r in conn.execute(
            text("SELECT memory_id, confidence FROM memories WHERE tenant = :t"), {"t": tenant})}


def activity(engine: Engine, tenant: str) -> dict[uuid.UUID, tuple[int, int]]:
    with engine.connect() as conn:
        return {r.memory_id: (r.used_count, r.not_useful_count) for r in conn.execute(
            text("SELECT memory_id, used_count, not_useful_count FROM memory_activity WHERE tenant = :t"),
            {"t": tenant})}


def hebbian(engine: Engine, tenant: str) -> dict[tuple[uuid.UUID, uuid.UUID], float]:
    return {(r[1], r[2]): r[4] for r in rows(engine, "memory_edges", tenant, "source_id, target_id")
            if r[3] == "hebbian"}


def feedback_events(engine: Engine, tenant: str) -> list[list[dict]]:
    with engine.connect() as conn:
        return [r.data["items"] for r in conn.execute(text(
            "SELECT data FROM events WHERE tenant = :t AND type = 'RecallFeedbackGiven' ORDER BY position"),
            {"t": tenant})]


def assert_rebuild_identical(engine: Engine, tenant: str) -> None:
    assert verify_tenant(engine, "memories", tenant) == {"memories": 0, "memory_history": 0, "memory_versions": 0}
    assert verify_tenant(engine, "activity", tenant) == {"memory_activity": 0,
                                                         "memory_activity_versions": 0}
    assert verify_tenant(engine, "edges", tenant) == {"memory_edges": 0}


def test_a_retry_is_answered_and_a_changed_verdict_refused(engine, tenant) -> None:
    from domain.errors import FeedbackAlreadyGiven
    from services.feedback import give_feedback

    a, b, c, d = record(engine, tenant, [f"feedback once memory {i}" for i in range(4)])
    recall = served(engine, tenant, [a, b, c, d])
    meta = {"actor": "test", "source": "test"}
    first = give_feedback(engine, tenant, recall, [{"memory_id": str(a), "verdict": "used"},
                                                   {"memory_id": str(b), "verdict": "used"},
                                                   {"memory_id": str(c), "verdict": "not_useful"}], meta)
    # The same request again (a client retrying after a lost response): the same answer, nothing written.
    again = give_feedback(engine, tenant, recall, [{"memory_id": str(b), "verdict": "used"},
                                                   {"memory_id": str(a), "verdict": "used"}], meta)
    assert again == first
    # Another verdict for a memory already judged: 409, nothing of the request written.
    with pytest.raises(FeedbackAlreadyGiven) as refused:
        give_feedback(engine, tenant, recall, [{"memory_id": str(d), "verdict": "used"},
                                               {"memory_id": str(a), "verdict": "not_useful"}], meta)
    assert refused.value.status_code == 409 and str(a) in str(refused.value)
    # A memory not judged yet can still be: only it is appended (the repeated one is already counted).
    later = give_feedback(engine, tenant, recall, [{"memory_id": str(a), "verdict": "used"},
                                                   {"memory_id": str(d), "verdict": "used"}], meta)
    assert later > first
    assert feedback_events(engine, tenant) == [
        [{"memory_id": str(a), "verdict": "used"}, {"memory_id": str(b), "verdict": "used"},
         {"memory_id": str(c), "verdict": "not_useful"}],
        [{"memory_id": str(d), "verdict": "used"}]]

    sync(engine)
    conf = confidences(engine, tenant)
    assert (conf[a], conf[b], conf[c], conf[d]) == pytest.approx((0.55, 0.55, 0.45, 0.55))
    assert activity(engine, tenant) == {a: (1, 0), b: (1, 0), c: (0, 1), d: (1, 0)}
    # One pair used together in one feedback: a–b once; d was judged in another feedback event: no edge.
    assert hebbian(engine, tenant) == {tuple(sorted((a, b), key=str)): pytest.approx(math.log(2))}
    assert_rebuild_identical(engine, tenant)


def test_a_repeat_in_the_log_is_applied_once_everywhere(engine, tenant) -> None:
    """Written straight into the log (as before the rule): the projectors decide from the log, first verdict wins."""
    a, b, c = record(engine, tenant, [f"logged repeat memory {i}" for i in range(3)])
    recall = served(engine, tenant, [a, b, c])
    feedback(engine, tenant, recall, used=[a, b])
    sync(engine)  # the first one applied in an earlier batch ...
    feedback(engine, tenant, recall, used=[a, b])  # ... then the same again
    feedback(engine, tenant, recall, used=[c], not_useful=[a])  # a changed verdict, and a memory judged first
    other = served(engine, tenant, [a, b])  # another recall: its feedback counts on its own
    feedback(engine, tenant, other, used=[a, b])
    feedback(engine, tenant, other, used=[a, b])  # ... once, even inside one projection batch
    sync(engine)

    conf = confidences(engine, tenant)
    assert conf[a] == pytest.approx(0.5 + 0.05 + 0.1 * (1 - 0.55))  # used, once per recall: 0.55 → 0.595
    assert conf[b] == pytest.approx(0.595) and conf[c] == pytest.approx(0.55)
    assert activity(engine, tenant) == {a: (2, 0), b: (2, 0), c: (1, 0)}
    [(pair, weight)] = hebbian(engine, tenant).items()
    assert pair == tuple(sorted((a, b), key=str)) and weight == pytest.approx(math.log(3), abs=1e-4)  # two recalls
    assert_rebuild_identical(engine, tenant)


def test_http_feedback_twice(app, engine, tenant, monkeypatch) -> None:
    import api.context
    from infra.settings import get_settings, replace

    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    a, b = record(engine, tenant, ["http feedback memory a", "http feedback memory b"])
    recall = served(engine, tenant, [a, b])
    url = f"/v1/recalls/{recall}/feedback"
    body = {"items": [{"memory_id": str(a), "verdict": "used"}, {"memory_id": str(b), "verdict": "used"}]}
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
        first = client.post(url, json=body)
        assert first.status_code == 201, first.text
        retried = client.post(url, json=body)
        assert retried.status_code == 201 and retried.json()["position"] == first.json()["position"]
        flipped = client.post(url, json={"items": [{"memory_id": str(b), "verdict": "not_useful"}]})
        assert flipped.status_code == 409, flipped.text
        assert flipped.json()["error"] == "FeedbackAlreadyGiven" and "once per recall and memory" in \
            flipped.json()["detail"]
    assert len(feedback_events(engine, tenant)) == 1
    sync(engine)
    conf = confidences(engine, tenant)
    assert (conf[a], conf[b]) == pytest.approx((0.55, 0.55))
    assert hebbian(engine, tenant) == {tuple(sorted((a, b), key=str)): pytest.approx(math.log(2))}
