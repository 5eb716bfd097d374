"""The privacy gate on the routes that are not recall: PUT/GET /v1/policy/privacy (operator keys only, bad input
refused with nothing written), GET /v1/memories/{id}, the history chain, supersede, and the event export for
non-operator keys; in force at once (no projection run in between), per tenant, and its read model rebuilt row
for row. Recall and recall/multi reuse tests/privacy_support.py (build_privacy_world,
assert_reveals_nothing_excluded)."""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient
from privacy_support import (
    POLICY,
    SECRET_AGENT,
    PrivacyWorld,
    all_events,
    assert_reveals_nothing_excluded,
    build_privacy_world,
    put_policy,
)
from sqlalchemy import text

from domain.events import PRIVACY_STREAM


@pytest.fixture
def world(app, tenant, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace

    other = f"{tenant}-other"
    keys = {w: f"k{w}-{uuid.uuid4().hex}" for w in ("ops", "reader", "other_ops")}
    settings = replace(get_settings(), api_keys={keys["ops"]: tenant, keys["reader"]: tenant,
                                                 keys["other_ops"]: other},
                       operator_keys=(keys["ops"], keys["other_ops"]))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    clients = {w: TestClient(app, headers={"Authorization": f"Bearer {k}"}) for w, k in keys.items()}
    yield build_privacy_world(PrivacyWorld(tenant, clients["ops"], clients["reader"], clients["other_ops"], other))


def _policy_events(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND stream_id = :s"),
                            {"t": tenant, "s": PRIVACY_STREAM}).scalar_one()


def test_only_an_operator_sets_the_policy_and_bad_input_writes_nothing(world, engine):
    refused = put_policy(world.reader, POLICY)
    assert refused.status_code == 403, refused.text
    # The generic append API refuses the event from everyone: the route's operator check is the only way in.
    for client in (world.reader, world.ops):
        r = client.post("/v1/events", json={"events": [{"type": "PrivacyPolicySet", "stream_id": PRIVACY_STREAM,
                                                         "data": {"exclude_agents": []}}]})
        assert r.status_code == 422 and "operator" in r.text, r.text
    bad = [{"exclude_agents": "agent-secret"}, {"exclude_agents": [1]}, {"exclude_tags": ["x"] * 257},
           {"exclude_projects": ["p" * 513]}, {"exclude_sessions": ["a\x00b"]}, {"exclude_agents": [""]},
           {"exclude_paths": ["../etc/**"]}, {"exclude_paths": ["/"]}, {"exclude_paths": ["hr\\salaries"]},
           {"exclude_agents": ["\ud800"]}, {"exclude_everything": ["x"]}]
    for body in bad:  # as JSON text: a lone surrogate travels escaped, as a client may send it
        r = world.ops.put("/v1/policy/privacy", content=json.dumps(body), headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500 and r.json()["detail"], (body, r.status_code, r.text)
    assert _policy_events(engine, world.tenant) == 0
    got = world.reader.get("/v1/policy/privacy")
    assert got.status_code == 200 and got.json()["position"] is None and got.json()["exclude_agents"] == []

    r = put_policy(world.ops, {**POLICY, "exclude_agents": [SECRET_AGENT, SECRET_AGENT]})
    assert r.status_code == 200, r.text
    assert r.json()["exclude_agents"] == [SECRET_AGENT] and r.json()["position"] > 0  # kept once
    got = world.reader.get("/v1/policy/privacy").json()
    assert {k: got[k] for k in POLICY} == POLICY and got["position"] == r.json()["position"]
    assert _policy_events(engine, world.tenant) == 1


def test_excluded_memories_are_unknown_by_id_history_and_supersede(world, engine):
    from funnel_support import project

    project(engine, world.last_position)
    unknown = uuid.uuid4()
    for name, memory_id in world.hidden.items():
        assert world.reader.get(f"/v1/memories/{memory_id}").status_code == 200, name  # there before the policy
    # The PUT's event is not projected below: the policy is in force from its commit alone.
    assert put_policy(world.ops, POLICY).status_code == 200
    for client in (world.reader, world.ops):  # no key reads excluded content by id
        expected = client.get(f"/v1/memories/{unknown}")
        assert expected.status_code == 404
        for name, memory_id in world.hidden.items():
            for route in (f"/v1/memories/{memory_id}", f"/v1/memories/{memory_id}/history"):
                r = client.get(route)
                assert r.status_code == 404, (name, route, r.text)
                assert r.json() == {**expected.json(), "detail": expected.json()["detail"].replace(
                    str(unknown), str(memory_id))}, (name, r.text)
            probe = {"content": "overwrite it", "reason": "probe"}
            r = client.post(f"/v1/memories/{memory_id}/supersede", json=probe)
            # 404 as for an unknown id, also for the superseded ones: a 409 "already superseded" would reveal it
            assert r.status_code == 404, (name, r.text)
            assert r.text == client.post(f"/v1/memories/{unknown}/supersede", json=probe).text.replace(
                str(unknown), str(memory_id))

    for name, memory_id in world.visible.items():
        r = world.reader.get(f"/v1/memories/{memory_id}")
        assert r.status_code == 200, (name, r.text)
        assert_reveals_nothing_excluded(r, world)  # supersedes / superseded_by an excluded one: left empty
    then_secret = world.reader.get(f"/v1/memories/{world.visible['then_secret']}").json()
    assert then_secret["status"] == "superseded" and then_secret["superseded_by"] is None
    assert world.reader.get(f"/v1/memories/{world.visible['corrected']}").json()["supersedes"] is None
    # The chain through a visible memory drops every excluded link, in both directions.
    for name in ("then_secret", "corrected"):
        r = world.reader.get(f"/v1/memories/{world.visible[name]}/history")
        assert r.status_code == 200, r.text
        assert_reveals_nothing_excluded(r, world)
        assert [m["memory_id"] for m in r.json()["chain"]] == [str(world.visible[name])]
        assert r.json()["transitions"] == [] and r.json()["current"] == str(world.visible[name])


def test_event_export_hides_excluded_events_from_non_operators(world):
    assert put_policy(world.ops, POLICY).status_code == 200
    seen = all_events(world.reader)
    assert_reveals_nothing_excluded(seen, world)
    assert {e["data"].get("memory_id") for e in seen if e["type"] == "MemoryRecorded"} == {
        str(i) for i in world.visible.values()}
    # Asked by stream or by type, the same: an excluded memory's own stream reads as empty.
    for memory_id in world.hidden.values():
        assert all_events(world.reader, stream_id=f"memory-{memory_id}") == []
    assert_reveals_nothing_excluded(all_events(world.reader, type=["MemoryRecorded", "MemorySuperseded"]), world)
    # An operator exports everything.
    everything = all_events(world.ops)
    recorded = {e["data"]["memory_id"] for e in everything if e["type"] == "MemoryRecorded"}
    assert {str(i) for i in [*world.hidden.values(), *world.visible.values()]} == recorded
    assert len(everything) > len(seen)


def test_policies_are_per_tenant_and_a_new_policy_applies_at_once(world):
    assert put_policy(world.ops, POLICY).status_code == 200
    other = world.other_ops.get("/v1/policy/privacy").json()
    assert other["position"] is None and other["exclude_agents"] == []
    # The other tenant's memories under the same secret agent and tag stay its own to read.
    theirs = [e for e in all_events(world.other_ops) if e["type"] == "MemoryRecorded"]
    assert len(theirs) == 2
    for e in theirs:
        assert world.other_ops.get(f"/v1/memories/{e['data']['memory_id']}").status_code in (200, 404)
        assert world.reader.get(f"/v1/memories/{e['data']['memory_id']}").status_code == 404
    assert len([e for e in all_events(world.other_ops) if e["type"] == "MemoryRecorded"]) == 2

    # Lifting the agent exclusion shows that memory on the very next request; the others stay hidden.
    assert put_policy(world.ops, {**POLICY, "exclude_agents": []}).status_code == 200
    exported = {e["data"].get("memory_id") for e in all_events(world.reader) if e["type"] == "MemoryRecorded"}
    assert str(world.hidden["by_agent"]) in exported and str(world.hidden["by_tag"]) not in exported
    assert world.reader.get(f"/v1/memories/{world.hidden['by_tag']}/history").status_code == 404
    assert put_policy(world.ops, {}).status_code == 200  # an empty policy excludes nothing
    assert len([e for e in all_events(world.reader) if e["type"] == "MemoryRecorded"]) == len(world.hidden) + len(
        world.visible)


def test_rebuilding_the_privacy_projection_gives_the_same_rows(world, engine):
    from funnel_support import project

    from projections.rebuild import rebuild, verify
    from projections.registry import PROJECTORS

    positions = [put_policy(world.ops, POLICY).json()["position"],
                 put_policy(world.ops, {"exclude_tags": ["tag-secret"]}).json()["position"],
                 put_policy(world.other_ops, {"exclude_paths": ["hr/**"]}).json()["position"]]
    project(engine, max(positions))
    rows = text("SELECT tenant, policy, position, updated_at FROM privacy_policies WHERE tenant = ANY(:t) "
                "ORDER BY tenant")
    tenants = {"t": [world.tenant, world.other_tenant]}
    with engine.connect() as conn:
        live = conn.execute(rows, tenants).all()
    assert [(r.tenant, r.position) for r in live] == [(world.tenant, positions[1]),
                                                       (world.other_tenant, positions[2])]
    assert live[0].policy["exclude_tags"] == ["tag-secret"] and live[0].policy["exclude_agents"] == []
    projector = PROJECTORS["privacy"]
    assert verify(engine, projector, batch_size=2).identical
    rebuild(engine, projector, batch_size=2)
    with engine.connect() as conn:
        assert conn.execute(rows, tenants).all() == live


def test_recall_records_and_recalls_reveal_nothing_excluded(world, engine):
    """A recall served before the policy is shown under the policy in force now; recall and recall/multi asked
    afterwards, through a domain filter (the excluded agent, project, session) too, answer nothing excluded."""
    from funnel_support import project

    project(engine, world.last_position)
    query = {"query": "classified fact zebra", "k": 20, "include_history": True}
    before = world.reader.post("/v1/recall", json=query)
    assert before.status_code == 200, before.text
    served = {r["memory_id"] for r in before.json()["results"]}
    assert served & {str(i) for i in world.hidden.values()}, before.text  # they were recallable before
    scoped = world.reader.post("/v1/recall", json={**query, "agent_id": SECRET_AGENT})
    assert scoped.status_code == 200 and scoped.json()["results"], scoped.text

    assert put_policy(world.ops, POLICY).status_code == 200
    for client in (world.reader, world.ops):
        record = client.get(f"/v1/recalls/{before.json()['recall_id']}")
        assert record.status_code == 200, record.text
        assert_reveals_nothing_excluded(record, world)
        assert record.json()["query"] == query["query"]
        r = client.get(f"/v1/recalls/{scoped.json()['recall_id']}")  # scoped to the excluded agent
        assert r.status_code == 404 and r.json()["detail"] == f"no recall {scoped.json()['recall_id']}", r.text

    filters = [{}, {"agent_id": SECRET_AGENT}, {"project": "proj-secret"}, {"session_id": "sess-secret"}]
    for scope in filters:
        r = world.reader.post("/v1/recall", json={**query, **scope})
        assert r.status_code == 200, (scope, r.text)
        assert_reveals_nothing_excluded(r, world)
        multi = world.reader.post("/v1/recall/multi", json={"query": query["query"], "k": 20, **scope})
        assert multi.status_code == 200, (scope, multi.text)
        assert_reveals_nothing_excluded(multi, world)


def test_documents_at_an_excluded_path_or_tag_leave_the_export_and_the_library(world):
    marker = uuid.uuid4().hex[:8]
    secret_doc = f"# Salaries\n\n## 2026\nclassified payroll {marker} zebra-payroll\n"
    tagged_doc = f"# Plans\n\n## Q3\nclassified plan {marker} zebra-plan\n"
    for path, body in (("hr/salaries.md", {"content": secret_doc}),
                       ("eng/plans.md", {"content": tagged_doc, "tags": ["tag-secret"]}),
                       ("eng/public.md", {"content": f"# Public\n\nharbour {marker}\n"})):
        r = world.reader.put(f"/v1/knowledge/{path}", json=body)
        assert r.status_code in (200, 201), r.text
    world.hidden_texts += [f"classified payroll {marker} zebra-payroll", f"classified plan {marker} zebra-plan"]
    assert put_policy(world.ops, POLICY).status_code == 200

    seen = all_events(world.reader)
    assert_reveals_nothing_excluded(seen, world)
    assert {e["data"]["path"] for e in seen if e["type"] == "DocumentPut"} == {"eng/public.md"}
    assert "hr/salaries.md" not in json.dumps(seen) and "eng/plans.md" not in json.dumps(seen)
    assert {e["data"]["path"] for e in all_events(world.ops) if e["type"] == "DocumentPut"} == {
        "hr/salaries.md", "eng/plans.md", "eng/public.md"}
    for path in ("hr/salaries.md", "eng/plans.md"):
        assert world.reader.get(f"/v1/knowledge/{path}").status_code == 404
    assert world.reader.get("/v1/knowledge/eng/public.md").status_code == 200
