"""The governed write path over HTTP, with a real worker projecting: reinforce, supersede, the salience gate,
must-keep, staging, recall feedback, and a replay that reproduces every decision.

Every test has a tenant of its own (an API key mapped to the `tenant` fixture).
"""

from __future__ import annotations

import time
import uuid

import pytest
from conftest import WorkerProcess, wait_until
from fastapi.testclient import TestClient
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

ZERO_SIGNALS = {"surprise": 0, "decision": 0, "causal": 0, "effort": 0, "correction": False}


@pytest.fixture(scope="module")
def module_worker(engine):
    w = WorkerProcess().start()
    try:
        from services.remember import MemoryInput, remember

        [done] = remember(engine, f"warm-{uuid.uuid4().hex[:8]}", [MemoryInput(content="warming up", must_keep=True)],
                          {"source": "test"})
        wait_projected(engine, done.position, timeout=120)
        yield w
    finally:
        w.stop()


@pytest.fixture
def client(app, tenant, monkeypatch, module_worker):
    import api.context
    from infra.settings import get_settings, replace

    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        c.actor = f"api-key:{api.context.key_id(key)}"  # type: ignore[attr-defined]
        yield c


@pytest.fixture
def governance_settings(monkeypatch):
    """Change governance knobs for the writes of one test (the API runs in this process)."""
    import services.append_events
    from infra.settings import get_settings, replace

    def set_knobs(**changes: object) -> None:
        changed = replace(get_settings(), **changes)
        monkeypatch.setattr(services.append_events, "get_settings", lambda: changed)

    return set_knobs


def wait_projected(engine, position: int, timeout: float = 60) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def reached() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, position) for p in PROJECTORS.values())

    assert wait_until(reached, timeout=timeout, interval=0.05), f"projections did not reach {position}"


def write(client, content: str, **fields) -> dict:
    r = client.post("/v1/memories", json={"content": content, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def memory(client, memory_id: str) -> dict:
    r = client.get(f"/v1/memories/{memory_id}")
    assert r.status_code == 200, r.text
    return r.json()


def stream(client, memory_id: str) -> list[dict]:
    r = client.get("/v1/events", params={"stream_id": f"memory-{memory_id}"})
    assert r.status_code == 200, r.text
    return r.json()["events"]


def recalled(client, query: str, position: int, **fields) -> list[str]:
    r = client.post("/v1/recall", json={"query": query, "k": 10, "min_position": position, **fields})
    assert r.status_code == 200, r.text
    return [x["memory_id"] for x in r.json()["results"]]


def statuses(engine, tenant: str) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id::text, status FROM memories WHERE tenant = :t"), {"t": tenant})
        return dict(rows.all())


# ---------------------------------------------------------------------------------------------- reinforce


def test_a_duplicate_reinforces_instead_of_adding(client, engine, tenant):
    scope = {"agent_id": "ops", "project": "infra"}
    first = write(client, "The staging database runs PostgreSQL 16 on port 5433", **scope)
    assert first["disposition"] == "active" and first["reinforced"] is None
    wait_projected(engine, first["position"])
    again = write(client, "Staging's database is PostgreSQL 16, listening on port 5433", **scope)
    assert again["disposition"] == "discard" and again["reinforced"] == first["memory_id"], again
    wait_projected(engine, again["position"])

    kept = memory(client, first["memory_id"])
    assert kept["status"] == "active" and kept["reinforced_count"] == 1
    assert kept["confidence"] == pytest.approx(0.55)  # 0.5 + 0.1·(1 − 0.5)
    assert "listening" in kept["content"]  # the merge kept what the repeat added
    observation = memory(client, again["memory_id"])
    assert observation["status"] == "discarded"

    # The observation stays in the log, with the decision and its inputs; the reinforcement is the system's.
    [recorded, admitted] = stream(client, again["memory_id"])
    assert (recorded["type"], admitted["type"]) == ("MemoryRecorded", "MemoryAdmitted")
    assert admitted["data"]["disposition"] == "discard"
    assert admitted["data"]["reason"] == f"reinforced {first['memory_id']}"
    inputs = admitted["data"]["inputs"]
    assert inputs["nearest_id"] == first["memory_id"] and inputs["nearest_cosine"] >= 0.92
    assert inputs["nearest_source"] in ("read_model", "unprojected")
    assert admitted["metadata"]["actor"] == "system:governor"
    assert admitted["metadata"]["causation_id"] == recorded["event_id"]
    assert admitted["metadata"]["requested_by"] == client.actor
    reinforced = [e for e in stream(client, first["memory_id"]) if e["type"] == "MemoryReinforced"]
    assert len(reinforced) == 1
    assert reinforced[0]["data"]["observation_id"] == again["memory_id"]
    assert reinforced[0]["metadata"] == admitted["metadata"]

    # One memory answers, not two.
    hits = recalled(client, "which port does the staging database listen on?", again["position"], **scope)
    assert first["memory_id"] in hits and again["memory_id"] not in hits

    # Another scope is another memory: the same text in another project is added, not merged.
    elsewhere = write(client, "The staging database runs PostgreSQL 16 on port 5433", agent_id="ops", project="web")
    assert elsewhere["disposition"] == "active" and elsewhere["reinforced"] is None


def test_duplicates_reinforce_back_to_back_and_within_a_batch(client, engine, tenant):
    # Written back to back: the second write may come before any projection; the governor still sees the first.
    one = write(client, "The CI pipeline caches pip wheels between runs")
    two = write(client, "Pip wheels are cached by the CI pipeline across runs")
    assert two["reinforced"] == one["memory_id"], two
    batch = client.post("/v1/memories/batch", json={"memories": [
        {"content": "Our office coffee machine is on the third floor"},
        {"content": "The coffee machine in our office is on floor three"},
        {"content": "Our office coffee machine is on the third floor"},
    ]}).json()["memories"]
    assert [m["disposition"] for m in batch] == ["active", "discard", "discard"]
    assert batch[1]["reinforced"] == batch[2]["reinforced"] == batch[0]["memory_id"]
    wait_projected(engine, batch[-1]["position"])
    assert memory(client, batch[0]["memory_id"])["reinforced_count"] == 2
    assert memory(client, one["memory_id"])["reinforced_count"] == 1
    assert sorted(statuses(engine, tenant).values()) == ["active", "active", "discarded", "discarded", "discarded"]


def test_a_reinforced_staging_memory_is_promoted(client, engine, tenant, governance_settings):
    governance_settings(gate_active=0.99)  # everything novel lands in staging
    staged = write(client, "Grace prefers tea over coffee in the afternoon", signals=ZERO_SIGNALS)
    assert staged["disposition"] == "staging", staged
    wait_projected(engine, staged["position"])
    assert memory(client, staged["memory_id"])["status"] == "staging"
    # Staging is recalled only as the safety net (nothing active answers), and marked so.
    r = client.post("/v1/recall", json={"query": "what does Grace drink?", "min_position": staged["position"]}).json()
    assert [x["memory_id"] for x in r["results"]] == [staged["memory_id"]]
    assert r["results"][0]["explanation"]["from_staging"] is True

    governance_settings()  # back to the defaults
    repeat = write(client, "Grace prefers tea over coffee in the afternoon.")
    assert repeat["reinforced"] == staged["memory_id"]
    wait_projected(engine, repeat["position"])
    promoted = memory(client, staged["memory_id"])
    assert promoted["status"] == "active" and promoted["status_changed_at"] is not None
    [change] = [e for e in stream(client, staged["memory_id"]) if e["type"] == "MemoryStatusChanged"]
    assert (change["data"]["from_status"], change["data"]["to_status"], change["data"]["reason"]) == \
        ("staging", "active", "reinforced")
    assert change["metadata"]["actor"] == "system:governor"
    r = client.post("/v1/recall", json={"query": "what does Grace drink?", "min_position": repeat["position"]}).json()
    assert r["results"][0]["memory_id"] == staged["memory_id"] and not r["results"][0]["explanation"]["from_staging"]


# ------------------------------------------------------------------------------------------------- the gate


def test_a_low_novelty_observation_is_not_kept_active_but_logged(client, engine, tenant):
    base = write(client, "The team standup happens every morning at nine in room B")
    wait_projected(engine, base["position"])
    low = write(client, "The team meets for standup in room B each day", signals=ZERO_SIGNALS)
    assert low["disposition"] in ("staging", "discard") and low["reinforced"] is None, low
    assert low["salience"] < 0.4
    wait_projected(engine, low["position"])
    assert memory(client, low["memory_id"])["status"] in ("staging", "discarded")
    # In the log, with every input of the decision ...
    [recorded, admitted] = stream(client, low["memory_id"])
    assert recorded["data"]["content"] == "The team meets for standup in room B each day"
    inputs = admitted["data"]["inputs"]
    assert 0.6 <= inputs["nearest_cosine"] < 0.92 and inputs["nearest_id"] == base["memory_id"]
    evidence = inputs["novelty_evidence"]
    assert inputs["novelty"] == pytest.approx(evidence["value"], abs=1e-6) and evidence["holder"] == base["memory_id"]
    [held] = [n for n in evidence["neighbours"] if n["memory_id"] == base["memory_id"]]
    assert held["new_key_terms"] == [] and set(held["new_terms"]) <= {"meet", "day"}
    assert evidence["calibration"]["model"] == inputs["embedding_model"]
    assert 0 < evidence["calibration"]["unrelated"] < evidence["calibration"]["paraphrase"] < 1
    assert {k: v["source"] for k, v in inputs["signals"].items()} == dict.fromkeys(
        ("surprise", "decision", "causal", "effort"), "producer")
    assert inputs["correction"] == {"value": False, "source": "producer", "evidence": []}
    assert inputs["memory_type"] == "model" and inputs["type_bonus"] == 0.0
    assert admitted["data"]["salience"] == pytest.approx(0.45 * inputs["novelty"], abs=1e-5)
    # ... and not in recall while the active memory answers the query in full (every term of it held).
    hits = recalled(client, "team standup room B every morning", low["position"])
    assert hits[0] == base["memory_id"] and low["memory_id"] not in hits
    # A query term only the staging one holds ("day") makes recall look at staging: then it answers, marked.
    r = client.post("/v1/recall", json={"query": "team standup room B every day", "min_position": low["position"]})
    assert r.json()["explanation"]["staging_fallback"]["reason"] == "query terms only staging holds: day"


def test_heuristic_signals_are_recorded_with_their_evidence(client, engine, tenant):
    w = write(client, "We decided to pin numpy below 2 because the wheels broke on ARM, so that CI stays green")
    assert w["disposition"] == "active" and w["memory_type"] == "pitfall" and w["route"] == "agent"
    wait_projected(engine, w["position"])
    got = memory(client, w["memory_id"])
    assert (got["kind"], got["memory_type"], got["route"]) == ("observation", "pitfall", "agent")
    assert got["salience"] == pytest.approx(w["salience"], abs=1e-6) and got["confidence"] == 0.5
    admitted = stream(client, w["memory_id"])[1]["data"]
    signals = admitted["inputs"]["signals"]
    assert signals["decision"]["source"] == "heuristic" and "strong:decided" in signals["decision"]["evidence"]
    assert signals["causal"]["value"] == pytest.approx(1.0)
    assert admitted["inputs"]["type_rule"].startswith("pitfall:")


def test_gate_knobs_change_the_disposition_and_must_keep_bypasses_them(client, engine, tenant, governance_settings):
    governance_settings(gate_active=0.99, gate_staging=0.98)  # nothing ordinary passes
    gated = write(client, "Lighthouse keepers log every passing ship")
    assert gated["disposition"] == "discard"
    kept = write(client, "Lighthouse keepers log every passing ship", must_keep=True)
    assert kept["disposition"] == "active" and kept["salience"] == 1.0 and kept["reinforced"] is None
    # A must-keep copy is kept too: the gate (reinforce included) is bypassed.
    again = write(client, "Lighthouse keepers log every passing ship", must_keep=True)
    assert again["disposition"] == "active" and again["reinforced"] is None
    admitted = stream(client, kept["memory_id"])[1]
    assert admitted["data"]["reason"] == "must_keep" and admitted["data"]["inputs"]["must_keep"] is True
    wait_projected(engine, again["position"])
    got = statuses(engine, tenant)
    assert (got[gated["memory_id"]], got[kept["memory_id"]], got[again["memory_id"]]) == \
        ("discarded", "active", "active")

    # A paraphrase with a word of its own is "the same concept" by cosine only: the threshold decides.
    governance_settings(reinforce_threshold=0.999)
    a = write(client, "Pip wheels are cached by the CI pipeline across runs", agent_id="k")
    b = write(client, "The CI pipeline caches pip wheels across builds", agent_id="k")
    assert a["reinforced"] is None and b["reinforced"] is None
    assert b["disposition"] != "active"  # not merged, and not novel either: the gate keeps it out of recall

    # A scope over the exact-scan limit is searched through the HNSW index, with the same outcome.
    wait_projected(engine, b["position"])
    governance_settings(exact_scan_max_rows=0)
    c = write(client, "Pip wheels are cached by the CI pipeline across runs.", agent_id="k")
    assert c["reinforced"] == a["memory_id"], c
    assert stream(client, c["memory_id"])[1]["data"]["inputs"]["nearest_source"] == "read_model"


# ------------------------------------------------------------------------------------------------ supersede


def test_explicit_supersede_and_history(client, engine, tenant, app):
    scope = {"agent_id": "planner", "project": "atlas", "session_id": "s1", "tags": ["schedule"]}
    old = write(client, "The release train leaves every second Tuesday", kind="fact", **scope)
    r = client.post(f"/v1/memories/{old['memory_id']}/supersede",
                    json={"content": "The release train leaves every Thursday", "reason": "moved by the PM"})
    assert r.status_code == 201, r.text
    new = r.json()
    assert new["supersedes"] == old["memory_id"] and new["memory_id"] != old["memory_id"]
    wait_projected(engine, new["position"])

    before, after = memory(client, old["memory_id"]), memory(client, new["memory_id"])
    assert before["status"] == "superseded" and before["superseded_by"] == new["memory_id"]
    assert after["status"] == "active" and after["supersedes"] == old["memory_id"]
    # The new memory kept the old one's scope, kind and tags.
    assert (after["agent_id"], after["project"], after["session_id"], after["kind"], after["tags"]) == \
        ("planner", "atlas", "s1", "fact", ["schedule"])
    hits = recalled(client, "when does the release train leave?", new["position"], agent_id="planner")
    assert new["memory_id"] in hits and old["memory_id"] not in hits

    # Again: 409. Unknown: 404. Bad body: 422. Nothing written by any of them.
    events_before = len(client.get("/v1/events", params={"limit": 1000}).json()["events"])
    again = client.post(f"/v1/memories/{old['memory_id']}/supersede", json={"content": "x", "reason": "y"})
    assert again.status_code == 409, again.text
    assert client.post(f"/v1/memories/{uuid.uuid4()}/supersede",
                       json={"content": "x", "reason": "y"}).status_code == 404
    assert client.post(f"/v1/memories/{new['memory_id']}/supersede", json={"content": "x"}).status_code == 422
    assert len(client.get("/v1/events", params={"limit": 1000}).json()["events"]) == events_before
    # Another tenant cannot supersede (nor see) this one: 404.
    with TestClient(app) as anonymous:
        assert anonymous.post(f"/v1/memories/{new['memory_id']}/supersede",
                              json={"content": "x", "reason": "y"}).status_code in (401, 404)

    # A third value: the chain is old → new → newest, from whichever end it is asked.
    newest = client.post(f"/v1/memories/{new['memory_id']}/supersede",
                         json={"content": "The release train leaves every Friday", "reason": "holiday season"}).json()
    wait_projected(engine, newest["position"])
    for asked in (old["memory_id"], new["memory_id"], newest["memory_id"]):
        h = client.get(f"/v1/memories/{asked}/history")
        assert h.status_code == 200, h.text
        body = h.json()
        assert [m["memory_id"] for m in body["chain"]] == [old["memory_id"], new["memory_id"], newest["memory_id"]]
        assert [m["status"] for m in body["chain"]] == ["superseded", "superseded", "active"]
        assert body["current"] == newest["memory_id"]
        steps = body["transitions"]
        assert [(s["from_id"], s["to_id"]) for s in steps] == [(old["memory_id"], new["memory_id"]),
                                                               (new["memory_id"], newest["memory_id"])]
        assert [s["reason"] for s in steps] == ["moved by the PM", "holiday season"]
        assert {s["trigger"] for s in steps} == {"explicit"} and {s["actor"] for s in steps} == {client.actor}
        assert steps[0]["at"] <= steps[1]["at"]
    assert client.get(f"/v1/memories/{uuid.uuid4()}/history").status_code == 404
    lonely = write(client, "A memory nobody corrected, about walruses")
    wait_projected(engine, lonely["position"])
    alone = client.get(f"/v1/memories/{lonely['memory_id']}/history").json()
    assert [m["memory_id"] for m in alone["chain"]] == [lonely["memory_id"]] and alone["transitions"] == []


def test_supersedes_on_a_plain_write(client, engine, tenant):
    old = write(client, "The on-call rotation changes on Mondays")
    new = write(client, "The on-call rotation changes on Wednesdays", supersedes=old["memory_id"],
                reason="team vote")
    assert new["supersedes"] == old["memory_id"] and new["disposition"] == "active"
    # Superseding it a second time from another write: 409, nothing written.
    r = client.post("/v1/memories", json={"content": "changes on Sundays", "supersedes": old["memory_id"]})
    assert r.status_code == 409, r.text
    r = client.post("/v1/memories", json={"content": "x", "supersedes": str(uuid.uuid4())})
    assert r.status_code == 404, r.text


def test_a_correction_signal_supersedes_the_matched_memory(client, engine, tenant):
    scope = {"agent_id": "deployer"}
    old = write(client, "The deploy window is Monday at 10:00", **scope)
    wait_projected(engine, old["position"])
    fix = write(client, "Correction: the deploy window is Friday at 10:00", **scope)
    assert fix["supersedes"] == old["memory_id"] and fix["disposition"] == "active", fix
    wait_projected(engine, fix["position"])
    assert memory(client, old["memory_id"])["status"] == "superseded"
    history = client.get(f"/v1/memories/{fix['memory_id']}/history").json()
    [step] = history["transitions"]
    assert step["trigger"] == "correction_signal" and step["actor"] == "system:governor"
    assert "correction signal" in step["reason"]
    superseded = [e for e in stream(client, old["memory_id"]) if e["type"] == "MemorySuperseded"][0]
    assert superseded["data"]["similarity"] >= 0.6
    assert superseded["metadata"]["causation_id"] == stream(client, fix["memory_id"])[0]["event_id"]
    hits = recalled(client, "when is the deploy window?", fix["position"], **scope)
    assert fix["memory_id"] in hits and old["memory_id"] not in hits

    # The producer's own signal works without any correction phrase; an unrelated correction supersedes nothing.
    base = write(client, "The build cache lives on the NFS share", **scope)
    signalled = write(client, "The build cache lives on local SSD", signals={"correction": True}, **scope)
    assert signalled["supersedes"] == base["memory_id"]
    unrelated = write(client, "Actually, penguins cannot fly", **scope)
    assert unrelated["supersedes"] is None and unrelated["disposition"] == "active"


def test_an_update_wins_and_the_older_values_stay_in_history(client, engine, tenant):
    """The issue's example: three writes of one door code, each with a new value. The newest is active and
    recalled first, the two older are superseded by the governor (evidence in the decision), the chain is in
    history, and include_history still answers the old values. A different fact is no update."""
    scope = {"agent_id": "ops", "project": "porto"}
    codes = ["7-3-7-0", "7-3-20-0", "7-3-12-0"]
    written = []
    for code in codes:
        w = write(client, f"the Porto warehouse door code is {code}", **scope)
        assert w["disposition"] == "active", w
        wait_projected(engine, w["position"])
        written.append(w)
    first, second, third = written
    assert second["supersedes"] == first["memory_id"] and third["supersedes"] == second["memory_id"]
    assert memory(client, first["memory_id"])["status"] == "superseded"
    assert memory(client, second["memory_id"])["status"] == "superseded"
    assert memory(client, third["memory_id"])["status"] == "active"

    admitted = [e for e in stream(client, third["memory_id"]) if e["type"] == "MemoryAdmitted"][0]
    evidence = admitted["data"]["inputs"]["update"]
    assert evidence["memory_id"] == second["memory_id"] and admitted["metadata"]["actor"] == "system:governor"
    assert evidence["old_values"] == ["7-3-20-0"] and evidence["new_values"] == ["7-3-12-0"]
    assert {"porto", "warehous", "door", "code"} <= set(evidence["shared_terms"])
    superseded = [e for e in stream(client, second["memory_id"]) if e["type"] == "MemorySuperseded"][0]
    assert superseded["data"]["trigger"] == "value_update" and superseded["metadata"]["actor"] == "system:governor"
    assert superseded["metadata"]["causation_id"] == stream(client, third["memory_id"])[0]["event_id"]

    history = client.get(f"/v1/memories/{third['memory_id']}/history").json()
    chain = [(s["from_id"], s["to_id"], s["trigger"]) for s in history["transitions"]]
    assert chain == [(first["memory_id"], second["memory_id"], "value_update"),
                     (second["memory_id"], third["memory_id"], "value_update")], history

    hits = recalled(client, "what is the Porto warehouse door code?", third["position"], **scope)
    assert hits[0] == third["memory_id"] and first["memory_id"] not in hits and second["memory_id"] not in hits
    everything = recalled(client, "what is the Porto warehouse door code?", third["position"],
                          include_history=True, **scope)
    assert everything[0] == third["memory_id"]
    assert {first["memory_id"], second["memory_id"]} <= set(everything)

    # A different fact about the same subject is not an update.
    phone = write(client, "Bob's phone is 555-1234", **scope)
    wait_projected(engine, phone["position"])
    badge = write(client, "Bob's badge is 5521", **scope)
    assert badge["supersedes"] is None and badge["disposition"] == "active", badge
    assert memory(client, phone["memory_id"])["status"] == "active"


def test_a_new_word_value_wins_and_a_second_relation_stays(client, engine, tenant):
    """A value that is an ordinary word ("blue", "window seats") updated, or a change reported with a verb ("we
    raised the API timeout to 60 seconds"): the newer is active and recalled first, the older superseded by the
    governor, not merged into it as a repeat. A second object of a relation
    ("allergic to peanuts", then "to shellfish") is no update: the older stays active."""
    scope = {"agent_id": "travel"}
    for old, new, query in (("Alice's favourite colour is blue", "Alice's favourite colour is green",
                             "what is Alice's favourite colour?"),
                            ("Priya prefers window seats on long flights", "Priya prefers aisle seats on long flights",
                             "which seat does Priya prefer?"),
                            ("The API timeout is 30 seconds", "We raised the API timeout to 60 seconds",
                             "what is the API timeout?")):
        before = write(client, old, **scope)
        wait_projected(engine, before["position"])
        after = write(client, new, **scope)
        assert after["disposition"] == "active" and after["supersedes"] == before["memory_id"], after
        wait_projected(engine, after["position"])
        assert memory(client, before["memory_id"])["status"] == "superseded"
        hits = recalled(client, query, after["position"], **scope)
        assert hits[0] == after["memory_id"] and before["memory_id"] not in hits
        superseded = [e for e in stream(client, before["memory_id"]) if e["type"] == "MemorySuperseded"][0]
        assert superseded["data"]["trigger"] == "value_update"

    # A supersede the governor got wrong is undone by writing the older fact again with must_keep: the rules are
    # bypassed, so it is active again beside the newer, and nothing is superseded.
    again = write(client, "Alice's favourite colour is blue", must_keep=True, **scope)
    assert again["disposition"] == "active" and again["supersedes"] is None, again
    wait_projected(engine, again["position"])
    both = recalled(client, "what is Alice's favourite colour?", again["position"], **scope)
    assert again["memory_id"] in both[:2]
    assert sum(memory(client, m)["status"] == "active" for m in both[:2]) == 2

    # Another object of a relation: no update, and not merged into the older or dropped as saying little new.
    for old, new in (("Priya is allergic to peanuts", "Priya is allergic to shellfish"),
                     ("Maria likes cats", "Maria likes dogs")):
        first = write(client, old, **scope)
        wait_projected(engine, first["position"])
        second = write(client, new, **scope)
        assert second["supersedes"] is None and second["disposition"] == "active", second
        assert memory(client, first["memory_id"])["status"] == "active"


# -------------------------------------------------------------------------------------------------- feedback


def test_recall_feedback_is_validated_and_moves_confidence(client, engine, tenant, app):
    a = write(client, "The nightly backup runs at 02:00 UTC to the cold bucket", must_keep=True)
    b = write(client, "Backups older than 30 days are deleted from the cold bucket", must_keep=True)
    r = client.post("/v1/recall", json={"query": "backups in the cold bucket", "min_position": b["position"]})
    assert r.status_code == 200, r.text
    recall_id, hits = r.json()["recall_id"], [x["memory_id"] for x in r.json()["results"]]
    assert a["memory_id"] in hits and b["memory_id"] in hits

    url = f"/v1/recalls/{recall_id}/feedback"
    ok = client.post(url, json={"items": [{"memory_id": a["memory_id"], "verdict": "used"},
                                          {"memory_id": b["memory_id"], "verdict": "not_useful"}]})
    assert ok.status_code == 201, ok.text
    assert ok.json()["items"] == 2
    wait_projected(engine, ok.json()["position"])
    assert memory(client, a["memory_id"])["confidence"] == pytest.approx(0.55)
    assert memory(client, b["memory_id"])["confidence"] == pytest.approx(0.45)
    [given] = client.get("/v1/events", params={"type": "RecallFeedbackGiven"}).json()["events"]
    assert given["stream_id"] == f"recall-{recall_id}" and given["metadata"]["actor"] == client.actor

    before = len(client.get("/v1/events", params={"limit": 1000}).json()["events"])
    not_returned = write(client, "Something the recall never returned about otters", must_keep=True)
    before += 2
    refusals = [
        (client.post(f"/v1/recalls/{uuid.uuid4()}/feedback",
                     json={"items": [{"memory_id": a["memory_id"], "verdict": "used"}]}), 404),
        (client.post(url, json={"items": [{"memory_id": not_returned["memory_id"], "verdict": "used"}]}), 422),
        (client.post(url, json={"items": [{"memory_id": a["memory_id"], "verdict": "used"},
                                          {"memory_id": a["memory_id"], "verdict": "not_useful"}]}), 422),
        (client.post(url, json={"items": [{"memory_id": a["memory_id"], "verdict": "loved"}]}), 422),
        (client.post(url, json={"items": []}), 422),
        # Decisions and feedback are never posted as raw events by a producer.
        (client.post("/v1/events", json={"events": [{"type": "RecallFeedbackGiven", "stream_id": f"recall-{recall_id}",
                                                     "data": {"recall_id": recall_id, "items": [
                                                         {"memory_id": a["memory_id"], "verdict": "used"}]}}]}), 422),
        (client.post("/v1/events", json={"events": [{"type": "MemoryAdmitted", "stream_id": f"memory-{a['memory_id']}",
                                                     "data": {"memory_id": a["memory_id"], "disposition": "discard",
                                                              "salience": 0, "kind": "model", "route": "agent",
                                                              "reason": "forged"}}]}), 422),
    ]
    for response, status in refusals:
        assert response.status_code == status, response.text
    assert "not return" in refusals[1][0].json()["detail"]
    assert len(client.get("/v1/events", params={"limit": 1000}).json()["events"]) == before
    # Another tenant's client does not see this recall.
    import api.context
    from infra.settings import get_settings, replace

    other = replace(get_settings(), api_keys={"other-key": "other-tenant-" + tenant})
    original = api.context.get_settings
    api.context.get_settings = lambda: other  # type: ignore[assignment]
    try:
        with TestClient(app, headers={"Authorization": "Bearer other-key"}) as stranger:
            r = stranger.post(url, json={"items": [{"memory_id": a["memory_id"], "verdict": "used"}]})
            assert r.status_code == 404, r.text
    finally:
        api.context.get_settings = original  # type: ignore[assignment]


# -------------------------------------------------------------------------------------------------- replay


def test_retried_write_answers_the_same_decision(client, engine, tenant):
    body = {"content": "Retried writes answer the same decision", "idempotency_key": "gov-retry-1"}
    first, second = client.post("/v1/memories", json=body), client.post("/v1/memories", json=body)
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one() == 2


def replay_differences(engine, projector, tenant: str) -> dict[str, int]:
    """`projections verify`, restricted to one tenant's rows: replay the log from 0 into scratch tables (as
    verify does, under the projection's lock, up to its checkpoint) and count the rows of `tenant` that differ.
    Other tests may tamper with other tenants' read-model rows on purpose; this test's rows must not differ."""
    from eventstore.read import Checkpoint
    from projections.rebuild import _create_scratch, _replay
    from projections.runner import _LOCK, load_checkpoint, lock_key

    schema = f"verify_{projector.name}"
    with engine.connect() as conn, conn.begin() as tx:
        conn.execute(_LOCK, {"key": lock_key(projector.name)})
        live = load_checkpoint(conn, projector.name)
        _create_scratch(conn, schema, projector)
        _replay(conn, schema, projector, Checkpoint(), 1000, until=live)
        conn.execute(text("SET LOCAL search_path TO public"))
        out = {}
        for table in projector.tables:
            mine = f"SELECT * FROM {{}}.{table} WHERE tenant = :t"
            live_rows, rebuilt = mine.format("public"), mine.format(f'"{schema}"')
            out[table] = conn.execute(text(
                f"SELECT (SELECT count(*) FROM ({live_rows} EXCEPT ALL {rebuilt}) a)"
                f"     + (SELECT count(*) FROM ({rebuilt} EXCEPT ALL {live_rows}) b)"), {"t": tenant}).scalar_one()
        tx.rollback()
    return out


def test_projections_verify_identical_after_governance(client, engine, tenant):
    """Replaying the log from 0 reproduces every read-model row of this tenant: the decisions are in the log."""
    from projections.registry import PROJECTORS

    a = write(client, "Replay check: the cache warms at boot")
    b = write(client, "Replay check: the cache warms at boot time")
    assert b["reinforced"] == a["memory_id"]  # a content change: keyword and vectors re-index
    c = client.post(f"/v1/memories/{a['memory_id']}/supersede",
                    json={"content": "Replay check: the cache warms lazily", "reason": "changed"}).json()
    write(client, "Replay check: the cache warms lazily on first use")
    write(client, "Replay check: an unrelated note about herons", signals=ZERO_SIGNALS)
    r = client.post("/v1/recall", json={"query": "cache warms", "min_position": c["position"]}).json()
    f = client.post(f"/v1/recalls/{r['recall_id']}/feedback",
                    json={"items": [{"memory_id": r["results"][0]["memory_id"], "verdict": "used"}]})
    assert f.status_code == 201, f.text
    with engine.connect() as conn:
        head = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
        kinds = set(conn.execute(text("SELECT DISTINCT type FROM events WHERE tenant = :t"), {"t": tenant}).scalars())
    assert {"MemoryAdmitted", "MemoryReinforced", "MemorySuperseded", "RecallFeedbackGiven"} <= kinds
    wait_projected(engine, head)
    started = time.monotonic()
    for name, projector in PROJECTORS.items():
        differences = replay_differences(engine, projector, tenant)
        assert not any(differences.values()), (name, differences)
    a_route = memory(client, a["memory_id"])["route"]
    print(f"\nreplay of {head} events for {len(PROJECTORS)} projections: {time.monotonic() - started:.1f}s")
    # The check does see a difference in this tenant's rows (then the row is put back as it was).
    tamper = "UPDATE memories SET route = :r WHERE tenant = :t AND memory_id = :m"
    with engine.begin() as conn:
        conn.execute(text(tamper), {"r": "tampered", "t": tenant, "m": a["memory_id"]})
    try:
        assert replay_differences(engine, PROJECTORS["memories"], tenant)["memories"] == 2
    finally:
        with engine.begin() as conn:
            conn.execute(text(tamper), {"r": a_route, "t": tenant, "m": a["memory_id"]})
    assert replay_differences(engine, PROJECTORS["memories"], tenant)["memories"] == 0
