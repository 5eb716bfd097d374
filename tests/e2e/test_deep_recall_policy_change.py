"""Deep recall after a privacy policy change, from the very next request: the query cache is keyed by the policy's
version (its PrivacyPolicySet position), the bootstrap snapshot is rebuilt under the new policy (not at its TTL),
GET /v1/recalls/{id} of a deep recall served before shows nothing the policy hides now, and GET /v1/blind_spots
of an excluded scope answers as for a scope with none."""

from __future__ import annotations

import json
import uuid

from funnel_support import project
from privacy_support import SECRET_AGENT, privacy_clients, put_policy

from tests.deep_recall_support import ROOT, code, point_route_at


def _ok(r):
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.json()


def _secret_doc(client, engine) -> str:
    marker = f"zebra-{uuid.uuid4().hex[:8]}"
    done = _ok(client.put("/v1/knowledge/hr/pay.md",
                          json={"content": f"# Pay\n\n## Grid\nThe classified salary grid is {marker}.\n"}))
    project(engine, done["position"])
    return marker


def test_the_cache_and_the_snapshot_follow_a_new_policy_at_once(app, tenant, engine, models,
                                                              monkeypatch):
    world = privacy_clients(app, tenant, monkeypatch)
    marker = _secret_doc(world.reader, engine)
    point_route_at(models, monkeypatch)
    question = {"question": "what is the classified salary grid?"}
    # Each deep recall prints the snapshot, a search and what an earlier one kept, then keeps the search's results.
    turns = (code("print(context['knowledge'])", "print(search('classified salary grid', max_results=5))",
                  "print(get('seen'), stored_keys())",
                  "store('seen', [h['content'] for h in search('classified salary grid', max_results=5)])"),
             lambda messages: "FINAL: " + (marker if marker in json.dumps(messages) else "NOT FOUND"))
    models.script(ROOT, *turns)
    first = _ok(world.reader.post("/v1/deep_recall", json=question))
    assert first["cached"] is False and marker in first["answer"], first
    again = _ok(world.reader.post("/v1/deep_recall", json=question))
    assert again["cached"] is True and marker in again["answer"], again  # the cache works, under one policy

    assert put_policy(world.ops, {"exclude_paths": ["hr/**"]}).status_code == 200
    models.reset()
    models.script(ROOT, *turns)
    after = _ok(world.reader.post("/v1/deep_recall", json=question))
    assert after["cached"] is False, after  # not the answer cached under the previous policy
    assert marker not in json.dumps(after)
    # the model saw neither the snapshot's nor a search's excluded text, nor a value kept under the previous policy
    # (the snapshot was rebuilt, the value is withheld)
    assert marker not in json.dumps(models.of(ROOT)), "the model was shown excluded text"

    # the deep recalls served before the policy, read now: nothing the policy hides
    for recall_id in (first["recall_id"], again["recall_id"]):
        for client in (world.reader, world.ops):
            r = client.get(f"/v1/recalls/{recall_id}")
            assert r.status_code == 200 and marker not in r.text and "hr/pay.md" not in r.text, r.text

    # an emptied policy shows them again, and the cache is keyed by the new version (no stale entry either way)
    assert put_policy(world.ops, {}).status_code == 200
    assert marker in world.reader.get(f"/v1/recalls/{first['recall_id']}").text


def test_blind_spots_pass_the_gate(app, tenant, engine, models, monkeypatch):
    world = privacy_clients(app, tenant, monkeypatch)
    point_route_at(models, monkeypatch)
    models.script(ROOT, "FINAL: NOT FOUND")
    _ok(world.reader.post("/v1/deep_recall", json={"question": "who runs the night shift?",
                                                   "agent_id": SECRET_AGENT}))
    spots = _ok(world.reader.get("/v1/blind_spots", params={"agent_id": SECRET_AGENT}))
    position = _ok(world.reader.get("/v1/events", params={"type": "BlindSpotRegistered"}))["events"]
    if not spots["blind_spots"]:  # the read model follows the log: let it catch up
        project(engine, position[-1]["position"])
        spots = _ok(world.reader.get("/v1/blind_spots", params={"agent_id": SECRET_AGENT}))
    assert [s["question"] for s in spots["blind_spots"]] == ["who runs the night shift?"]
    unknown = _ok(world.reader.get("/v1/blind_spots", params={"agent_id": "nobody"}))

    assert put_policy(world.ops, {"exclude_agents": [SECRET_AGENT]}).status_code == 200
    for client in (world.reader, world.ops):
        hidden = client.get("/v1/blind_spots", params={"agent_id": SECRET_AGENT})
        assert hidden.status_code == 200 and hidden.json() == unknown, hidden.text
