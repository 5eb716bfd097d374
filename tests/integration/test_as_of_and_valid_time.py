"""Recorded time (`as_of`) and valid time (`since` / `until`) on recall (recall/timeframe.py, memory_versions):
a backdated write is absent as of before it was recorded and present for a range of when it happened; a memory
superseded later is answered as of before as it then stood; a date filter excludes even the best matches and still
answers k in-range results; a rebuild of the memories projection gives the same versions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from funnel_support import ask, project
from sqlalchemy import text

from recall.timeframe import TimeFrame

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

LAST_YEAR = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
KAYAK = "Marit Ellsworth bought a red kayak at the Porto harbour market"


def _remember(engine, tenant: str, items: Sequence[tuple[str, datetime | None]], **kwargs):
    from services.remember import MemoryInput, remember

    done = remember(engine, tenant, [MemoryInput(content=c, must_keep=True, occurred_at=at, **kwargs)
                                     for c, at in items], {"source": "test", "actor": "test"})
    project(engine, max(d.position for d in done))
    return done


def _at(engine, tenant: str, position, **valid) -> TimeFrame:
    """The frame as the routes make it: as_of resolved (settled to its transaction's end: eventstore/positions.py)."""
    from recall.timeframe import resolve_as_of

    return TimeFrame(as_of=resolve_as_of(engine, tenant, position), **valid)


def _ids(answer) -> list[uuid.UUID]:
    return [r.memory_id for r in answer.results]


@pytest.fixture(scope="module")
def store(engine):
    """A tenant with a memory recorded before a backdated one (recorded now, occurred last year)."""
    tenant = f"asof-{uuid.uuid4().hex[:8]}"
    [before] = _remember(engine, tenant, [("The team office moved to a new building in Lisbon", None)])
    with engine.connect() as conn:
        recorded_before = conn.execute(
            text("SELECT max(recorded_at) FROM events WHERE tenant = :t"),
            {"t": tenant}).scalar_one()
    [kayak] = _remember(engine, tenant, [(KAYAK, LAST_YEAR)])
    return tenant, before, kayak, recorded_before


def test_a_backdated_write_is_absent_as_of_before_it_was_recorded_and_present_until_last_year(engine, store):
    tenant, before, kayak, recorded_before = store
    query = "Where did Marit Ellsworth buy the red kayak?"
    assert kayak.memory_id in _ids(ask(engine, tenant, query))
    # Recorded time: at the position before its write (and the timestamp before it), the store did not hold it.
    assert kayak.memory_id not in _ids(ask(engine, tenant, query, frame=_at(engine, tenant, before.position)))
    frame = _at(engine, tenant, recorded_before)
    assert frame.as_of is not None and before.position <= frame.as_of < kayak.position
    assert kayak.memory_id not in _ids(ask(engine, tenant, query, frame=frame))
    # Valid time: it happened last year, so a range ending last year answers it, one starting this year does not.
    end_of_last_year = datetime(2025, 12, 31, 23, 59, tzinfo=UTC)
    assert _ids(ask(engine, tenant, query, frame=TimeFrame(until=end_of_last_year)))[0] == kayak.memory_id
    assert kayak.memory_id not in _ids(ask(engine, tenant, query,
                                           frame=TimeFrame(since=end_of_last_year + timedelta(minutes=1))))
    # Both: as of its write's position it is there, for a range of when it happened.
    frame = _at(engine, tenant, kayak.position, until=end_of_last_year)
    both = ask(engine, tenant, query, frame=frame)
    assert _ids(both) == [kayak.memory_id]
    assert both.explanation["time_frame"] == {"since": None, "until": end_of_last_year.isoformat(),
                                              "as_of": frame.as_of}


def test_a_memory_superseded_later_is_answered_as_it_stood(engine, tenant):
    from domain.errors import NotFound
    from recall import queries

    [blue] = _remember(engine, tenant, [("My car is a blue Volvo estate", None)])
    [red] = _remember(engine, tenant, [("My car is a red Volvo estate now, I had it repainted", None)],
                      supersedes=blue.memory_id, reason="repainted")
    query = "What colour is my car?"
    now = ask(engine, tenant, query)
    assert blue.memory_id not in _ids(now) and red.memory_id in _ids(now)
    then = ask(engine, tenant, query, frame=_at(engine, tenant, blue.position))
    assert _ids(then) == [blue.memory_id]
    assert then.results[0].explanation["status"] == "active"
    with engine.connect() as conn:
        assert queries.memory(conn, tenant, blue.memory_id)["status"] == "superseded"
        old = queries.memory(conn, tenant, blue.memory_id, _at(engine, tenant, blue.position).as_of)
        assert old["status"] == "active" and old["superseded_by"] is None
        newer = queries.memory(conn, tenant, red.memory_id, _at(engine, tenant, red.position).as_of)
        assert newer["supersedes"] == blue.memory_id
        with pytest.raises(NotFound, match="as of position"):  # not recorded yet
            queries.memory(conn, tenant, red.memory_id, _at(engine, tenant, blue.position).as_of)


def test_since_until_exclude_the_best_matches_and_answer_k_in_range(engine, tenant):
    spring = datetime(2024, 4, 1, tzinfo=UTC)
    best = [(f"The heron nested by the mill pond, sighting number {i}", datetime(2023, 1, 1 + i, tzinfo=UTC))
            for i in range(6)]
    ranged = [(f"A heron was seen near the pond on walk {i}", spring + timedelta(days=i)) for i in range(6)]
    done = _remember(engine, tenant, best + ranged)
    inside = {d.memory_id for d in done[6:]}
    query = "heron nested by the mill pond"
    assert set(_ids(ask(engine, tenant, query, k=3))) <= {d.memory_id for d in done[:6]}  # the best, unfiltered
    answer = ask(engine, tenant, query, k=3, frame=TimeFrame(since=spring, until=spring + timedelta(days=30)))
    assert len(answer.results) == 3 and set(_ids(answer)) <= inside
    assert all(spring <= r.occurred_at <= spring + timedelta(days=30) for r in answer.results)
    # inclusive at both ends: the first day only
    assert _ids(ask(engine, tenant, query, k=3, frame=TimeFrame(since=spring, until=spring))) == [done[6].memory_id]


def test_a_rebuild_gives_the_same_versions(engine, store):
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    report = verify(engine, PROJECTORS["memories"])
    assert report.identical, [t for t in report.tables if not t.identical]
    with engine.connect() as conn:
        open_versions = conn.execute(text(
            "SELECT count(*) FROM memory_versions WHERE tenant = :t AND valid_to IS NULL"),
            {"t": store[0]}).scalar_one()
    assert open_versions == 2  # one current version per memory


def test_http_bad_time_frames_are_422_and_as_of_reads(engine, client):
    for body, why in (({"since": "2025-02-01T00:00:00Z", "until": "2025-01-01T00:00:00Z"}, "after until"),
                      ({"since": "2025-02-01T00:00:00"}, "timezone"),
                      ({"until": "not a date"}, "datetime"),
                      ({"as_of": 10 ** 15}, "beyond the log's head"),
                      ({"as_of": -1}, "greater than or equal")):
        for route in ("/v1/recall", "/v1/recall/multi"):
            r = client.post(route, json={"query": "anything", **body})
            assert r.status_code == 422, (route, body, r.text)
            assert why in r.text, (route, body, r.text)
    written = client.post("/v1/memories", json={"content": KAYAK, "occurred_at": LAST_YEAR.isoformat(),
                                                "must_keep": True}).json()
    project(engine, written["position"])
    memory_id = written["memory_id"]
    assert client.get(f"/v1/memories/{memory_id}", params={"as_of": written["position"]}).status_code == 200
    assert client.get(f"/v1/memories/{memory_id}", params={"as_of": "2020-01-01T00:00:00Z"}).status_code == 404
    r = client.post("/v1/recall/multi", json={"query": "red kayak Porto", "until": "2025-12-31T00:00:00Z",
                                              "domains": ["memories", "knowledge"]})
    assert r.status_code == 200, r.text
    buckets = {b["domain"]: b for b in r.json()["buckets"]}
    assert [x["memory_id"] for x in buckets["memories"]["results"]] == [memory_id]
    assert buckets["knowledge"]["results"] == [] and buckets["knowledge"]["reason"]
    early = client.post("/v1/recall", json={"query": "red kayak Porto", "as_of": "2020-01-01T00:00:00Z"})
    assert early.status_code == 200 and early.json()["results"] == []


def test_session_messages_filter_by_their_created_at(engine, client):
    """recall/multi's sessions domain: a message outside [since, until] is never a hit, however well it matches."""
    r = client.post("/v1/sessions/trip/messages", json={"messages": [
        {"role": "user", "content": "We booked the ferry to the Azores islands for the whole family",
         "created_at": "2024-03-02T10:00:00Z"},
        {"role": "user", "content": "The Azores ferry tickets came by email", "created_at": "2025-07-09T10:00:00Z"}]})
    assert r.status_code in (200, 201), r.text
    project(engine, r.json()["position"])
    ask_ = {"query": "Azores ferry family", "domains": ["sessions"]}
    for frame, year in (({"since": "2025-01-01T00:00:00Z"}, "2025"), ({"until": "2024-12-31T00:00:00Z"}, "2024")):
        bucket = client.post("/v1/recall/multi", json={**ask_, **frame}).json()["buckets"][0]
        # one hit each time, the message of that year (its window, the hit's context, may reach outside the range)
        assert [len(h["fields"]["hits"]) for h in bucket["results"]] == [1], bucket
        assert bucket["results"][0]["fields"]["created_at"].startswith(year), bucket
    # Recorded time: as of the append the messages answer; as of the position before it, none had been said.
    as_of = client.post("/v1/recall/multi", json={**ask_, "as_of": r.json()["position"]}).json()["buckets"][0]
    assert as_of["results"], as_of
    before = client.post("/v1/recall/multi", json={**ask_, "as_of": r.json()["position"] - 1}).json()["buckets"][0]
    assert before["results"] == [], before
