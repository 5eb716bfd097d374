"""min_position on the read routes is bounded like recall's: a position the read models have not applied is a 503
after ENGRAMLOG_MIN_POSITION_WAIT_S, one beyond the log's head a 422 at once, and a read waits only for its own
tenant's events in its own domain's read models (another tenant's backlog never holds it).

No worker runs in this module: a fresh write stays unprojected until the test projects it itself.
"""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from projections.registry import PROJECTORS
from projections.runner import catch_up
from tests.log_support import opened_events


@pytest.fixture
def two(app, monkeypatch):
    """Clients of two fresh tenants, with a short read-your-writes wait and no waiter slot free: a read that is
    caught up answers without taking one, any other is refused (503) at once."""
    import api.context
    import api.read_your_writes
    from infra.settings import get_settings, replace

    tag = uuid.uuid4().hex[:8]
    keys = {f"key-a-{tag}": f"tenant-a-{tag}", f"key-b-{tag}": f"tenant-b-{tag}"}
    settings = replace(get_settings(), api_keys=keys, min_position_wait_s=0.3)
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: settings)
    clients = [TestClient(app, headers={"Authorization": f"Bearer {key}"}) for key in keys]
    yield clients
    for c in clients:
        c.close()


def test_unapplied_is_503_after_the_wait_then_200_once_projected(two, engine) -> None:
    a, _ = two
    at = a.post("/v1/sessions/s-1/messages", json={"role": "user", "content": "the red tent"})
    assert at.status_code == 201, at.text
    position = at.json()["position"]
    late = a.get("/v1/sessions/s-1/messages", params={"min_position": position})
    assert late.status_code == 503 and "sessions" in late.text and "have not reached" in late.text, late.text
    assert "error" in late.json()
    catch_up(engine, PROJECTORS["sessions"], 1000, max_seconds=60)
    page = a.get("/v1/sessions/s-1/messages", params={"min_position": position})
    assert page.status_code == 200 and [m["content"] for m in page.json()["messages"]] == ["the red tent"]


@pytest.mark.parametrize("path", ["/v1/memories/00000000-0000-0000-0000-000000000001", "/v1/knowledge",
                                  "/v1/sessions", "/v1/transcripts", "/v1/code/repo/files",
                                  "/v1/knowledge-sections?path=a.md&heading_path=A",
                                  "/v1/recalls/00000000-0000-0000-0000-000000000002", "/v1/blind_spots"])
def test_beyond_the_head_and_negative_are_422(two, path) -> None:
    a, _ = two
    beyond = a.get(path, params={"min_position": 2**62})
    assert beyond.status_code == 422 and "min_position" in beyond.text, beyond.text
    negative = a.get(path, params={"min_position": -1})
    assert negative.status_code == 422 and "min_position" in negative.text, negative.text


def test_deep_recall_beyond_the_head_and_negative_are_422_nothing_written(two, engine) -> None:

    a, _ = two
    question = f"where is the {uuid.uuid4().hex[:8]} tent?"
    for position in (2**62, -1):
        refused = a.post("/v1/deep_recall", json={"question": question, "min_position": position})
        assert refused.status_code == 422 and "min_position" in refused.text, refused.text
    with engine.connect() as conn:
        served = [e for e in opened_events(conn, "type = 'DeepRecallServed'") if e.data.get("question") == question]
    assert served == []


def test_deep_recall_waits_for_its_read_models(two, engine) -> None:
    """A memory not projected yet: the deep recall at its position is a 503 after the wait, before any search
    (nothing served); once projected, its quick recall finds the memory."""
    from api.read_your_writes import read_models_of

    a, _ = two
    tag = uuid.uuid4().hex[:8]
    at = a.post("/v1/memories", json={"content": f"the {tag} tent is in the loft", "must_keep": True})
    assert at.status_code == 201, at.text
    ask = {"question": f"where is the {tag} tent?", "min_position": at.json()["position"]}
    late = a.post("/v1/deep_recall", json=ask)
    assert late.status_code == 503 and "have not reached" in late.text and "memories" in late.text, late.text
    for name in read_models_of():
        catch_up(engine, PROJECTORS[name], 1000, max_seconds=60)
    found = a.post("/v1/deep_recall", json=ask)
    assert found.status_code == 200, found.text
    assert at.json()["memory_id"] in [r.get("memory_id") for r in found.json()["results"]], found.json()


def test_another_tenants_backlog_does_not_hold_a_read(two, app, monkeypatch) -> None:
    """A's session message is unprojected; B then writes a memory (a later position). B's sessions read at its
    own position waits for nothing: none of B's events there is unapplied (no waiter slot needed), while A's read
    at its own position still is refused."""
    import api.read_your_writes
    from infra.settings import replace

    a, b = two
    settings = replace(api.read_your_writes.get_settings(), max_position_waiters=0)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: settings)
    first = a.post(f"/v1/sessions/s-{uuid.uuid4().hex[:6]}/messages", json={"role": "user", "content": "mine"})
    assert first.status_code == 201, first.text
    later = b.post("/v1/memories", json={"content": "B's canoe is blue", "must_keep": True})
    assert later.status_code == 201 and later.json()["position"] > first.json()["position"], later.text
    own = b.get("/v1/sessions", params={"min_position": later.json()["position"]})
    assert own.status_code == 200 and own.json()["sessions"] == [], own.text
    held = a.get("/v1/sessions", params={"min_position": first.json()["position"]})
    assert held.status_code == 503 and "already waiting" in held.text, held.text


def test_every_read_route_of_the_domains_takes_min_position(app) -> None:
    """A read route added to a domain later without `reads(...)` fails here."""
    domains = ("/v1/memories", "/v1/knowledge", "/v1/sessions", "/v1/transcripts", "/v1/code", "/v1/recalls",
               "/v1/blind_spots")
    schema = app.openapi()
    gets = [(path, op) for path, ops in schema["paths"].items() for method, op in ops.items()
            if method == "get" and path.startswith(domains)]
    assert len(gets) >= 17, [p for p, _ in gets]
    missing = [path for path, op in gets if "min_position" not in [p["name"] for p in op.get("parameters", [])]]
    assert missing == []
    for path in ("/v1/recall", "/v1/recall/multi", "/v1/deep_recall"):
        ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert "min_position" in schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
