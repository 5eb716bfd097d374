"""One relevance scale across domains, on the real stack (embedded PostgreSQL + pgvector, the real projectors caught
up by hand, the real embedding model): every result of POST /v1/recall/multi carries a calibrated `relevance` in
[0, 1], the fused `results` list ranks by it, an unrelated code symbol never reaches deep recall's shortcut floor
(the issue's "When does Priya fly to Oslo?" with a code index in the tenant), a title-only section never outranks
the section that answers ("# Deploys" vs Rollback), and the memories' abstention gate reads relevance."""

from __future__ import annotations

from typing import Any

from tests.deep_recall_support import point_route_at

MEMORIES = ["Priya flies to Oslo on 3 February for the Nordic sales kickoff.",
            "Priya's dog Biscuit is a three-year-old beagle.",
            "Jonas drives an electric Kia Niro to the office.",
            "The quarterly planning offsite is in Lisbon this year."]
# Code that shares words with the question (fly, when, does) without answering it.
CODE = {
    "drone/flight.py": ("class Drone:\n"
                        "    def fly(self, route):\n"
                        "        \"\"\"Fly the drone along a route; when does it land? when the battery is low.\"\"\"\n"
                        "        return [self.goto(p) for p in route]\n\n"
                        "    def goto(self, point):\n"
                        "        return point\n\n\n"
                        "def when_ready(drone, timeout):\n"
                        "    \"\"\"Block until the drone does its pre-flight checks.\"\"\"\n"
                        "    return drone\n"),
    "drone/trips.py": ("def plan_trip(origin, destination, departs_on):\n"
                       "    \"\"\"A trip from origin to destination departing on a date.\"\"\"\n"
                       "    return {'from': origin, 'to': destination, 'on': departs_on}\n\n\n"
                       "def cancel_trip(trip):\n"
                       "    trip.clear()\n"),
}
DEPLOYS = ("# Deploys\n\n"
           "## Rollback\n"
           "To roll back a deploy, run `deployctl rollback <service>`: it redeploys the previous release to every "
           "pool. Rolling back is allowed during a freeze.\n\n"
           "## Canary\n"
           "Each deploy goes to the canary pool first, 5% of traffic for 30 minutes.\n\n"
           "## Freeze windows\n"
           "No deploys on Fridays after 15:00.\n")


def catch_up_all(engine) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for projector in PROJECTORS.values():
        catch_up(engine, projector, 1000, max_seconds=120)


def seed(client, engine) -> None:
    r = client.post("/v1/code/drones/files", json={"files": [{"path": p, "content": c} for p, c in CODE.items()]})
    assert r.status_code == 200, r.text
    assert client.put("/v1/knowledge/runbooks/deploys.md", json={"content": DEPLOYS}).status_code in (200, 201)
    for content in MEMORIES:
        assert client.post("/v1/memories", json={"content": content, "must_keep": True}).status_code == 201
    catch_up_all(engine)


def multi(client, query: str, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/recall/multi", json={"query": query, **body})
    assert r.status_code == 200, r.text
    return r.json()


def test_an_unrelated_code_symbol_never_reaches_the_shortcut_floor(client, engine, models, monkeypatch) -> None:
    seed(client, engine)
    body = multi(client, "When does Priya fly to Oslo?")
    every = [(b["domain"], r) for b in body["buckets"] for r in b["results"]]
    assert every and all(0.0 <= r["relevance"] <= 1.0 for _, r in every)
    code = [r for d, r in every if d == "code"]
    assert code, "the code bucket answers something (it shares words with the question)"
    assert all(r["relevance"] < 0.8 for r in code), [(r["handle"]["qualified_name"], r["relevance"]) for r in code]
    top = body["results"][0]
    assert top["domain"] == "memories" and "Oslo" in top["content"]
    assert [r["relevance"] for r in body["results"]] == sorted((r["relevance"] for r in body["results"]),
                                                               reverse=True)
    assert len(body["results"]) == len(every)  # every bucket's results, under the ceiling
    for r in body["results"]:  # each names its bucket's result
        bucket = next(b for b in body["buckets"] if b["domain"] == r["domain"])
        assert bucket["results"][r["rank"] - 1]["handle"] == r["handle"]

    # Deep recall's shortcut reads the same relevance: the code symbols do not pad its answer.
    point_route_at(models, monkeypatch)(llm_model="", deep_shortcut_hits=3, deep_shortcut_score=0.8)
    deep = client.post("/v1/deep_recall", json={"question": "When does Priya fly to Oslo?"})
    assert deep.status_code == 200, deep.text
    answer = deep.json()
    assert answer["shortcut"] is False
    assert not [r for r in answer["results"] if r["domain"] == "code" and r["relevance"] >= 0.8]
    assert answer["results"][0]["domain"] == "memories"  # the quick recall's fused list, best first


def test_a_title_only_section_never_outranks_the_section_that_answers(client, engine) -> None:
    from projections.runner import catch_up
    from projections.section_vectors import SectionVectorsProjector

    seed(client, engine)
    for attempt in ("before the section vectors", "with them"):  # sections are embedded lazily, from the hit-log
        body = multi(client, "how do I roll back a deploy?", domains=["knowledge"])
        [bucket] = body["buckets"]
        paths = [r["handle"]["heading_path"] for r in bucket["results"]]
        assert paths[0] == "Deploys > Rollback", (attempt, paths)
        relevance = {r["handle"]["heading_path"]: r["relevance"] for r in bucket["results"]}
        if "" in relevance:  # the "# Deploys" title, if it is answered at all, ranks below the answer
            assert relevance[""] < relevance["Deploys > Rollback"], (attempt, relevance)
        assert all(r["explanation"]["relevance"]["calibration"] for r in bucket["results"])
        catch_up(engine, SectionVectorsProjector(), 1000, max_seconds=120)


def test_memories_carry_relevance_and_the_gate_reads_it(client, engine) -> None:
    seed(client, engine)
    r = client.post("/v1/recall", json={"query": "When does Priya fly to Oslo?", "k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["results"] and "Oslo" in body["results"][0]["content"]
    assert all(0.0 <= x["relevance"] <= 1.0 for x in body["results"])
    assert body["results"][0]["explanation"]["relevance"]["features"]["coverage"] > 0
    gate = next(s for s in body["explanation"]["stages"] if s["stage"] == "abstain")
    assert "relevance" in gate["notes"]["channels"] and gate["config"]["relevance_floor"] > 0
    record = client.get(f"/v1/recalls/{body['recall_id']}").json()  # the hit-log records each result's relevance
    assert [x["relevance"] for x in record["results"]] == [x["relevance"] for x in body["results"]]
    nothing = client.post("/v1/recall", json={"query": "What is the boiling point of tungsten?", "k": 3}).json()
    if nothing["results"]:  # answered anyway: then the relevance channel said so with a value under the others'
        assert all(x["relevance"] < 0.5 for x in nothing["results"])
