# ruff: noqa: F811 (the fixtures imported from test_governance_write_path are used as arguments)
"""The default write path remembers (issue 6): ordinary facts written through the governor are kept and found.

Distinct facts after similar ones are admitted active; repeats and paraphrases reinforce; filler is not kept
active; staging is a safety net recall looks at before it abstains, and a staging memory used after a recall is
promoted (as an event a rebuild replays); read-your-writes from the CLI and the Python client; a large batch is
recallable on its keyword leg before its vectors exist (tests/e2e/test_recall_before_vectors.py).
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_governance_write_path import (  # noqa: F401 (fixtures)
    ZERO_SIGNALS,
    client,
    governance_settings,
    module_worker,
    stream,
    wait_projected,
    write,
)
from typer.testing import CliRunner

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


def recall(client, query: str, position: int, **fields) -> dict:
    r = client.post("/v1/recall", json={"query": query, "k": 5, "min_position": position, **fields})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_readme_example_remembers_both_facts_and_answers_each(client):
    lisbon = write(client, "Alice moved to Lisbon in May", agent_id="assistant")
    peanuts = write(client, "Alice is allergic to peanuts", agent_id="assistant")
    assert lisbon["disposition"] == peanuts["disposition"] == "active", peanuts
    where = recall(client, "where does Alice live?", peanuts["position"], agent_id="assistant")
    # Both memories are about Alice and both legs score them close (cosine 0.63 vs 0.57): the fact is found.
    assert lisbon["memory_id"] in [r["memory_id"] for r in where["results"][:2]]
    allergy = recall(client, "what is Alice allergic to?", peanuts["position"], agent_id="assistant")
    assert allergy["results"][0]["memory_id"] == peanuts["memory_id"]


def test_a_distinct_fact_after_a_similar_one_is_admitted_active(client):
    tickets = {bug: write(client, f"Ticket ZQ-{n} is about the {bug} bug", agent_id="triage")
               for n, bug in ((4863, "login"), (2811, "billing"), (9377, "search"))}
    assert [t["disposition"] for t in tickets.values()] == ["active"] * 3
    assert all(t["reinforced"] is None for t in tickets.values())
    answer = recall(client, "which ticket is the billing bug?", tickets["search"]["position"], agent_id="triage")
    assert answer["results"][0]["memory_id"] == tickets["billing"]["memory_id"]

    notes = [write(client, f"Invoice INV-{1000 + 37 * i} was paid by Acme on the {i + 2}th", agent_id="billing")
             for i in range(12)]
    assert [n["disposition"] for n in notes] == ["active"] * 12
    # The decision says why: the identifier no neighbour carries.
    admitted = stream(client, notes[5]["memory_id"])[1]["data"]
    evidence = admitted["inputs"]["novelty_evidence"]
    assert evidence["value"] == 1.0 and evidence["neighbours"]
    assert all("1185" in n["new_key_terms"] for n in evidence["neighbours"])


def test_a_repeat_and_a_paraphrase_reinforce_and_a_new_number_does_not(client):
    first = write(client, "Bob's phone number is 555-1234", agent_id="crm")
    repeat = write(client, "Bob's phone number is 555-1234", agent_id="crm")
    paraphrase = write(client, "The phone number of Bob is 555-1234", agent_id="crm")
    assert repeat["reinforced"] == paraphrase["reinforced"] == first["memory_id"]
    other = write(client, "Bob's phone number is 555-9876", agent_id="crm")  # cosine 0.99, a new number
    assert other["reinforced"] is None and other["disposition"] == "active"


@pytest.mark.parametrize("filler", ["Thanks!", "haha 😀", "ok", "Caroline: Haha yes!!", "Thanks, Mel!"])
def test_filler_is_logged_but_not_kept_active(client, filler):
    write(client, "Caroline adopted a rescue dog named Biscuit", agent_id="chat")
    out = write(client, filler, agent_id="chat")
    assert out["disposition"] != "active" and out["reinforced"] is None, out
    [recorded, admitted] = stream(client, out["memory_id"])[:2]
    assert recorded["data"]["content"] == filler
    assert admitted["data"]["inputs"]["novelty_evidence"]["filler"] is True
    assert admitted["data"]["inputs"]["novelty"] == 0.0


def test_staging_answers_when_nothing_active_does_and_used_promotes_it(client, engine, governance_settings):
    governance_settings(gate_active=0.99)  # everything ordinary lands in staging
    staged = write(client, "The VPN gateway rotates its certificates every 45 days", agent_id="ops",
                   signals=ZERO_SIGNALS)
    assert staged["disposition"] == "staging"
    governance_settings()
    active = write(client, "The office printer is on the second floor", agent_id="ops")
    answer = recall(client, "how often does the VPN gateway rotate certificates?", active["position"],
                    agent_id="ops")
    [top] = answer["results"][:1]
    assert top["memory_id"] == staged["memory_id"] and top["explanation"]["from_staging"] is True
    fallback = answer["explanation"]["staging_fallback"]
    assert fallback["used"] is True and fallback["staging_results"][0] == staged["memory_id"], fallback
    assert fallback["second_pass"] == "run"
    # Without the safety net it stays hidden; include_staging still shows every staging memory.
    hidden = client.post("/v1/recall", json={"query": "VPN gateway certificates", "agent_id": "ops",
                                             "include_staging": True}).json()
    assert staged["memory_id"] in [r["memory_id"] for r in hidden["results"]]

    # Used after that recall: promoted, by the system, as an event.
    fb = client.post(f"/v1/recalls/{answer['recall_id']}/feedback",
                     json={"items": [{"memory_id": staged["memory_id"], "verdict": "used"}]})
    assert fb.status_code == 201, fb.text
    changes = [e for e in stream(client, staged["memory_id"]) if e["type"] == "MemoryStatusChanged"]
    [promotion] = changes
    assert (promotion["data"]["from_status"], promotion["data"]["to_status"]) == ("staging", "active")
    assert promotion["data"]["inputs"] == {"recall_id": answer["recall_id"], "verdict": "used"}
    assert promotion["metadata"]["actor"].startswith("system:")
    wait_projected(engine, promotion["position"])
    assert client.get(f"/v1/memories/{staged['memory_id']}").json()["status"] == "active"
    again = recall(client, "how often does the VPN gateway rotate certificates?", promotion["position"],
                   agent_id="ops")
    assert again["results"][0]["memory_id"] == staged["memory_id"]
    assert again["results"][0]["explanation"]["from_staging"] is False
    # Feedback again (a retry) promotes nothing twice.
    client.post(f"/v1/recalls/{answer['recall_id']}/feedback",
                json={"items": [{"memory_id": staged["memory_id"], "verdict": "used"}]})
    assert len([e for e in stream(client, staged["memory_id"]) if e["type"] == "MemoryStatusChanged"]) == 1

    # The promotion is in the log: a rebuild of the memories read model keeps it active.
    from projections.rebuild import rebuild
    from projections.registry import PROJECTORS

    rebuild(engine, PROJECTORS["memories"])
    assert client.get(f"/v1/memories/{staged['memory_id']}").json()["status"] == "active"


def test_a_staging_memory_holding_what_the_active_ones_lack_answers_before_a_near_wrong_fact(
        client, governance_settings):
    peanuts = write(client, "Alice is allergic to peanuts", agent_id="med")
    governance_settings(gate_active=0.99)
    shellfish = write(client, "Alice is allergic to shellfish", agent_id="med", signals=ZERO_SIGNALS)
    assert (peanuts["disposition"], shellfish["disposition"]) == ("active", "staging")
    answer = recall(client, "is Alice allergic to shellfish?", shellfish["position"], agent_id="med")
    top = answer["results"][0]
    assert top["memory_id"] == shellfish["memory_id"] and top["explanation"]["from_staging"] is True
    assert answer["explanation"]["staging_fallback"]["reason"] == "query terms only staging holds: shellfish"
    # A query the active memory answers fully does not look at staging.
    plain = recall(client, "what is Alice allergic to? peanuts?", shellfish["position"], agent_id="med")
    assert plain["results"][0]["memory_id"] == peanuts["memory_id"]
    assert plain["explanation"]["staging_fallback"] is None


def _engramlog_client(app, key: str):
    from engramlog_client import Engramlog

    return Engramlog(api_key=key, http_client=TestClient(app))  # the SDK, sending through the test app


def test_the_client_sends_its_last_written_position_on_the_next_recall(app, client, tenant):
    import json

    sent: list[dict] = []
    c = _engramlog_client(app, f"key-{tenant}")
    c.http.event_hooks["request"] = [lambda request: sent.append(
        json.loads(request.content)) if request.url.path == "/v1/recall" else None]
    written = c.remember("Dana's locker code is 4417", agent_id="gym")
    hits = c.recall("what is Dana's locker code?", agent_id="gym")
    assert sent[-1]["min_position"] == written.position == c.last_position
    assert hits.results[0].memory_id == written.memory_id
    c.recall("what is Dana's locker code?", agent_id="gym", consistent=False)
    assert "min_position" not in sent[-1]
    c.recall("what is Dana's locker code?", agent_id="gym", min_position=1)
    assert sent[-1]["min_position"] == 1
    assert c.wait_recallable() is True


def test_cli_remember_then_recall_answers(app, client, tenant, monkeypatch):
    import cli.calls
    import cli.main

    key = f"key-{tenant}"
    monkeypatch.setattr(cli.calls, "client", lambda: _engramlog_client(app, key))
    runner = CliRunner()
    out = runner.invoke(cli.main.app, ["remember", "Erin's flight to Oslo leaves at 7:40", "--agent-id", "travel"])
    assert out.exit_code == 0, out.output
    assert '"recallable": true' in out.output and '"disposition": "active"' in out.output
    found = runner.invoke(cli.main.app, ["recall", "when does Erin's flight leave?", "--agent-id", "travel",
                                         "--json"])
    assert found.exit_code == 0, found.output
    assert "Erin's flight to Oslo leaves at 7:40" in found.output


def test_positions_route_says_when_a_write_is_recallable(client):
    w = write(client, "Frank's badge number is 88231", agent_id="desk")
    r = client.get(f"/v1/positions/{w['position']}", params={"wait": 30})
    assert r.status_code == 200 and r.json()["recallable"] is True and r.json()["read_models"] == ["memories",
                                                                                                   "keyword"]
    beyond = client.get(f"/v1/positions/{w['position'] + 10**9}")
    assert beyond.status_code == 422, beyond.text


def _a_staged_and_an_active_memory(client, governance_settings) -> tuple[dict, dict]:
    """A VPN fact held in staging and an unrelated active one, for agent `ops`."""
    governance_settings(gate_active=0.99)
    staged = write(client, "The VPN gateway rotates its certificates every 45 days", agent_id="ops",
                   signals=ZERO_SIGNALS)
    governance_settings()
    active = write(client, "The office printer is on the second floor", agent_id="ops")
    assert staged["disposition"] == "staging"
    return staged, active


def test_the_staging_pass_is_skipped_when_no_staging_memory_could_be_a_candidate(client, governance_settings):
    staged, active = _a_staged_and_an_active_memory(client, governance_settings)
    # Weak for the active memory, and nothing the staging one holds: the second pass could only rank the first
    # pass's candidates again, so it is skipped, and the answer is the first pass's.
    lunch = recall(client, "lunch menu tomorrow", active["position"], agent_id="ops")
    fallback = lunch["explanation"]["staging_fallback"]
    assert fallback is not None and fallback["used"] is False, lunch["explanation"]
    assert fallback["second_pass"].startswith("skipped: no staging memory"), fallback
    assert staged["memory_id"] not in [r["memory_id"] for r in lunch["results"]]


def test_the_staging_test_finds_a_staging_memory_by_meaning_through_hnsw(client, governance_settings, monkeypatch):
    """Whether a staging memory could enter the second pass is asked of the vector leg's own search: past
    exact_scan_max_rows that is iterative HNSW (an exact scan of every staging vector read the whole table). A
    staging memory that shares no term with the query, only its meaning, still sends the recall to staging."""
    import api.routes.recall
    from infra.settings import get_settings, replace

    _staged, active = _a_staged_and_an_active_memory(client, governance_settings)
    hnsw = replace(get_settings(), exact_scan_max_rows=1)
    monkeypatch.setattr(api.routes.recall, "get_settings", lambda: hnsw)
    answer = recall(client, "how frequently is the tunnel endpoint's TLS identity renewed?", active["position"],
                    agent_id="ops")
    fallback = answer["explanation"]["staging_fallback"]
    assert fallback is not None and fallback["second_pass"] == "run", answer["explanation"]
    assert answer["explanation"]["vector_method"].startswith("hnsw"), answer["explanation"]
