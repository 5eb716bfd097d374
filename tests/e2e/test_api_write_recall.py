"""The HTTP write and read paths end to end: real API, real PostgreSQL, a real Dramatiq worker projecting.

Every test works in a tenant of its own (an API key mapped to the `tenant` fixture), so counts of events
and read-model rows are exact even though the database is shared.
"""

from __future__ import annotations

import re
import uuid

import pytest
from conftest import WorkerProcess, wait_until
from sqlalchemy import text

# ------------------------------------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def warm_worker(engine):
    """One worker for the module, started once and waited on until it has its model loaded."""
    w = WorkerProcess().start()
    try:
        warm_tenant = f"warm-{uuid.uuid4().hex[:8]}"
        from services.remember import MemoryInput, remember

        [done] = remember(engine, warm_tenant, [MemoryInput(content="warming the worker up")], {"source": "test"})
        wait_projected(engine, done.position, timeout=120)
        yield w
    finally:
        w.stop()


def wait_projected(engine, position: int, timeout: float = 60) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def reached() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, position) for p in PROJECTORS.values())

    assert wait_until(reached, timeout=timeout, interval=0.1), f"projections did not reach {position}"


def count_events(engine, tenant: str, type_: str | None = None) -> int:
    """The tenant's events of a type, or all its own (not the governor's decisions written with each memory)."""
    sql = "SELECT count(*) FROM events WHERE tenant = :t" + (
        " AND type = :type" if type_ else
        " AND type NOT IN ('MemoryAdmitted', 'MemoryReinforced', 'MemorySuperseded', 'MemoryStatusChanged')")
    with engine.connect() as conn:
        return conn.execute(text(sql), {"t": tenant, "type": type_}).scalar_one()


def read_model_fingerprint(engine) -> tuple:
    """Row counts and content digests of the content read models: what recall, and the projection of its hit-log
    event, must not change. Checkpoints and access statistics do advance: the workers project RecallServed."""
    queries = [
        "SELECT count(*), coalesce(md5(string_agg(tenant || memory_id::text || content || status, ',' "
        "ORDER BY tenant, memory_id)), '') FROM memories",
        "SELECT count(*), coalesce(sum(length), 0) FROM keyword_docs",
        "SELECT count(*), coalesce(sum(tf), 0) FROM keyword_postings",
        "SELECT count(*), coalesce(sum(df), 0) FROM keyword_terms",
        "SELECT count(*), coalesce(sum(n_docs), 0) FROM keyword_stats",
        "SELECT count(*), 0 FROM memory_vectors",
        "SELECT count(*), 0 FROM embedding_cache",
    ]
    with engine.connect() as conn:
        return tuple(tuple(conn.execute(text(q)).one()) for q in queries)


def metric(body: str, name: str, labels: str = "") -> float:
    pattern = re.escape(name) + (re.escape("{" + labels + "}") if labels else "") + r" ([0-9.e+-]+|NaN)\n"
    match = re.search(pattern, body)
    assert match, f"{name}{{{labels}}} not in /metrics"
    return float(match.group(1))


def delete_heartbeats() -> None:
    from infra.broker import broker
    from workers.heartbeat import HEARTBEAT_PREFIX

    for key in list(broker.client.scan_iter(f"{HEARTBEAT_PREFIX}*")):
        broker.client.delete(key)


# ------------------------------------------------------------------------- health without any worker first


def test_healthz_names_worker_when_no_worker_heartbeat(http):
    # No worker runs in this module yet; a worker killed earlier in the session leaves a key with a TTL:
    # delete them so the check does not depend on what ran before.
    delete_heartbeats()
    response = http.get("/healthz")
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["status"] == "down"
    assert "worker" in body["down"], body
    assert "database" not in body["down"] and "redis" not in body["down"], body


def test_wait_for_position_times_out_on_an_unprojected_write(engine, tenant):
    """Direct: a real write with no worker running is not projected, so the bounded wait gives up."""
    from api.read_your_writes import wait_for_position
    from domain.errors import NotCaughtUp
    from services.remember import MemoryInput, remember

    [done] = remember(engine, tenant, [MemoryInput(content="nobody projects this yet")], {"source": "test"})
    with pytest.raises(NotCaughtUp, match=f"not reached position {done.position}"):
        wait_for_position(engine, done.position, 0.2)


# ----------------------------------------------------------------------------------------- with the worker


def test_write_then_recall_with_min_position(client, engine, tenant, warm_worker):
    occurred = "2024-05-01T10:30:00+00:00"
    metadata = {"dia_id": "D7:2", "nested": {"list": [1, 2.5, None, True], "text": "ünïcødé ✓"}, "n": 0}
    one = client.post("/v1/memories", json={
        "content": "Marguerite adopted a grey tabby cat named Biscuit", "agent_id": "ag", "project": "p1",
        "session_id": "s1", "tags": ["pets"], "metadata": metadata, "occurred_at": occurred, "kind": "fact"})
    assert one.status_code == 201, one.text
    batch = client.post("/v1/memories/batch", json={"memories": [
        {"content": "The quarterly budget review moved to Thursday", "agent_id": "ag"},
        {"content": "Marguerite's favourite colour is teal", "agent_id": "ag", "metadata": {"k": "v"}},
        {"content": "Biscuit the cat belongs to another agent", "agent_id": "other"},
    ]})
    assert batch.status_code == 201, batch.text
    written = batch.json()["memories"]
    assert len(written) == 3
    positions = [one.json()["position"], *(m["position"] for m in written)]
    assert positions == sorted(positions) and len(set(positions)) == 4
    assert count_events(engine, tenant, "MemoryRecorded") == 4

    # Straight after the write: min_position makes recall wait for the projections (read-your-writes).
    answer = client.post("/v1/recall", json={"query": "what is the name of Marguerite's cat?", "agent_id": "ag",
                                             "k": 3, "min_position": max(positions)})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    uuid.UUID(body["recall_id"])
    results = body["results"]
    assert results, body
    top = results[0]
    assert top["memory_id"] == one.json()["memory_id"]
    assert top["content"] == "Marguerite adopted a grey tabby cat named Biscuit"
    assert top["metadata"] == metadata  # verbatim, nested JSON included
    assert top["kind"] == "fact"
    assert top["occurred_at"].replace("Z", "+00:00") == occurred
    assert isinstance(top["score"], float) and 0 < top["score"] <= 1
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    explanation = top["explanation"]
    # Read-your-writes waits for memories and keyword only: the vector may be on its way, and then says so.
    assert "keyword" in explanation["legs"] and explanation["bm25"] is not None
    if explanation["cosine"] is None:
        assert "no vector yet" in explanation["note"]
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    def vectors_reached() -> bool:
        with engine.connect() as conn:
            return has_reached(conn, PROJECTORS["vectors"], max(positions))

    assert wait_until(vectors_reached, timeout=60)
    again = client.post("/v1/recall", json={"query": "what is the name of Marguerite's cat?", "agent_id": "ag",
                                            "k": 3}).json()
    explanation = again["results"][0]["explanation"]
    assert set(explanation["legs"]) == {"keyword", "vector"}
    assert explanation["cosine"] is not None and explanation["bm25"] is not None
    assert explanation["weight_vector"] == pytest.approx(0.6) and explanation["weight_keyword"] == pytest.approx(0.4)
    # The scope filter holds: the other agent's memory mentioning Biscuit is never returned.
    other_id = written[2]["memory_id"]
    assert other_id not in {r["memory_id"] for r in results}
    assert len(results) <= 3

    # GET one memory: what was written, as the read model holds it.
    got = client.get(f"/v1/memories/{one.json()['memory_id']}")
    assert got.status_code == 200, got.text
    m = got.json()
    assert (m["content"], m["kind"], m["agent_id"], m["project"], m["session_id"], m["tags"], m["metadata"],
            m["status"], m["position"]) == ("Marguerite adopted a grey tabby cat named Biscuit", "fact", "ag",
                                            "p1", "s1", ["pets"], metadata, "active", positions[0])
    assert client.get(f"/v1/memories/{uuid.uuid4()}").status_code == 404
    assert client.get("/v1/memories/not-a-uuid").status_code == 422

    # The hit-log: one RecallServed event per recall (two above), carrying the query, scope and ranked ids.
    served = client.get("/v1/events", params={"type": "RecallServed"})
    assert served.status_code == 200, served.text
    events = served.json()["events"]
    assert len(events) == 2, events
    e = events[0]
    assert e["stream_id"] == f"recall-{body['recall_id']}"
    assert e["data"]["recall_id"] == body["recall_id"]
    assert e["data"]["query"] == "what is the name of Marguerite's cat?"
    assert e["data"]["scope"]["agent_id"] == "ag"
    assert [(r["memory_id"], r["rank"]) for r in e["data"]["results"]] == \
        [(r["memory_id"], i + 1) for i, r in enumerate(results)]
    assert e["position"] == body["position"]


def test_recall_writes_no_read_model(client, engine, tenant, warm_worker):
    written = client.post("/v1/memories", json={"content": "The lighthouse keeper logs every passing ship"})
    assert written.status_code == 201
    wait_projected(engine, written.json()["position"])
    before = read_model_fingerprint(engine)
    events_before = count_events(engine, tenant)
    for query in ("lighthouse keeper", "ships passing at night", "a query nobody has embedded before"):
        answer = client.post("/v1/recall", json={"query": query, "min_position": written.json()["position"]})
        assert answer.status_code == 200, answer.text
        served_at = answer.json()["position"]
    # Once the workers have projected the three hit-log events, the content read models are still the same.
    wait_projected(engine, served_at)
    assert read_model_fingerprint(engine) == before
    assert count_events(engine, tenant) == events_before + 3
    assert count_events(engine, tenant, "RecallServed") == 3


def test_events_filters_and_cursor_pagination(client, engine, tenant):
    ids = [uuid.uuid4() for _ in range(7)]
    posted = client.post("/v1/events", json={"events": [
        {"type": "MemoryRecorded", "data": {"memory_id": str(i), "content": f"event number {n}"}}
        for n, i in enumerate(ids)]})
    assert posted.status_code == 201, posted.text
    positions = posted.json()["positions"]
    assert len(positions) == 7

    # Cursor pagination: pages of 3 cover every event once, in order, and the last page has no cursor.
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, "type": "MemoryRecorded", **({"cursor": cursor} if cursor is not None else {})}
        page = client.get("/v1/events", params=params).json()
        pages += 1
        seen += [e["position"] for e in page["events"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 10
    assert seen == positions
    assert pages == 3

    # Filters: stream, type, after/before position, time window.
    by_stream = client.get("/v1/events", params={"stream_id": f"memory-{ids[3]}",
                                                 "type": "MemoryRecorded"}).json()["events"]
    assert [e["position"] for e in by_stream] == [positions[3]]
    assert by_stream[0]["data"]["content"] == "event number 3" and by_stream[0]["stream_version"] == 1
    assert client.get("/v1/events", params={"type": "RecallServed"}).json()["events"] == []
    window = client.get("/v1/events", params={"after": positions[1], "before": positions[5],
                                              "type": "MemoryRecorded"}).json()["events"]
    assert [e["position"] for e in window] == positions[2:5]
    first_at = client.get("/v1/events", params={"limit": 1}).json()["events"][0]["recorded_at"]
    assert len(client.get("/v1/events", params={"since": first_at, "type": "MemoryRecorded"}).json()["events"]) == 7
    assert client.get("/v1/events", params={"until": first_at}).json()["events"] == []
    assert client.get("/v1/events", params={"limit": 0}).status_code == 422
    assert client.get("/v1/events", params={"limit": 1001}).status_code == 422


def test_post_events_batch_idempotency_key(client, engine, tenant):
    batch = {"idempotency_key": "import-42", "events": [
        {"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "first of the batch"}},
        {"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "second of the batch"}},
    ]}
    first = client.post("/v1/events", json=batch)
    assert first.status_code == 201, first.text
    assert count_events(engine, tenant) == 2
    again = client.post("/v1/events", json=batch)
    assert again.status_code == 201, again.text
    assert again.json()["positions"] == first.json()["positions"]
    assert count_events(engine, tenant) == 2

    # Memories with an idempotency key: a retry answers the same memory id and position, writes nothing.
    one = {"content": "retried write", "idempotency_key": "mem-1"}
    a, b = client.post("/v1/memories", json=one), client.post("/v1/memories", json=one)
    assert a.status_code == b.status_code == 201
    assert a.json() == b.json()
    assert count_events(engine, tenant) == 3


def test_expected_version_conflict_is_409_and_atomic(client, engine, tenant):
    memory_id = str(uuid.uuid4())
    ok = client.post("/v1/events", json={"events": [
        {"type": "MemoryRecorded", "data": {"memory_id": memory_id, "content": "recorded once"}}]})
    assert ok.status_code == 201, ok.text
    # The memory's stream is at version 1; recording it again (expected version 0) conflicts.
    again = client.post("/v1/events", json={"events": [
        {"type": "MemoryRecorded", "data": {"memory_id": memory_id, "content": "recorded twice"}}]})
    assert again.status_code == 409, again.text
    assert "version" in again.json()["detail"]
    # A memory is recorded at version 0 only: another expected_version is refused, with its valid batch-mate.
    mixed = client.post("/v1/events", json={"events": [
        {"type": "MemoryRecorded", "data": {"memory_id": str(uuid.uuid4()), "content": "fine on its own"}},
        {"type": "MemoryRecorded", "expected_version": 3,
         "data": {"memory_id": str(uuid.uuid4()), "content": "wrong expectation"}}]})
    assert mixed.status_code == 422, mixed.text
    assert count_events(engine, tenant) == 1
    # The right expected version is accepted.
    right = client.post("/v1/events", json={"events": [
        {"type": "MemoryRecorded", "expected_version": 0,
         "data": {"memory_id": str(uuid.uuid4()), "content": "right expectation"}}]})
    assert right.status_code == 201, right.text
    assert count_events(engine, tenant) == 2


def test_projections_status_metrics_and_health(client, http, engine, tenant, warm_worker, monkeypatch):
    import api.context
    from infra.settings import replace

    # The process's counters and the global lag are every tenant's traffic: this key is an operator's.
    operator = replace(api.context.get_settings(), operator_keys=(f"key-{tenant}",))
    monkeypatch.setattr(api.context, "get_settings", lambda: operator)
    before = client.get("/metrics")
    assert before.status_code == 200
    appended_before = metric(before.text, "engramlog_events_appended_total")
    recalls_before = metric(before.text, "engramlog_recall_latency_seconds_count")

    written = client.post("/v1/memories/batch", json={"memories": [
        {"content": f"metrics memory {i}", "must_keep": True} for i in range(5)]})  # near copies: no reinforcing
    assert written.status_code == 201
    last = written.json()["memories"][-1]["position"]
    assert client.post("/v1/recall", json={"query": "metrics memory", "min_position": last}).status_code == 200

    after = client.get("/metrics").text
    # 5 memories, their 5 MemoryAdmitted decisions and the RecallServed event are appends through this
    # process; the recall is timed.
    assert metric(after, "engramlog_events_appended_total") == appended_before + 11
    assert metric(after, "engramlog_recall_latency_seconds_count") == recalls_before + 1
    for name in ("memories", "keyword", "vectors"):
        assert metric(after, "engramlog_projection_lag_events", f'projection="{name}"') >= 0

    status = client.get("/v1/projections")
    assert status.status_code == 200, status.text
    projections = {p["name"]: p for p in status.json()["projections"]}
    from projections.registry import PROJECTORS

    assert set(projections) == set(PROJECTORS)  # every registered projection, the memory core's among them
    assert {"memories", "keyword", "vectors", "activity", "edges", "entities"} <= set(projections)
    for name, p in projections.items():
        # The lifecycle read models apply only recall, feedback and decision events: their checkpoint
        # moves with those, not with the memories written here; read-your-writes waits for memories and keyword only.
        assert (name not in ("memories", "keyword") or p["position"] >= last) and p["head"] >= last, p
        assert {"lag_events", "lag_seconds", "updated_at"} <= set(p)

    def caught_up() -> bool:
        ps = client.get("/v1/projections").json()["projections"]
        return all(p["lag_events"] == 0 for p in ps)

    assert wait_until(caught_up, timeout=30)
    lag = client.get("/metrics").text
    for name in ("memories", "keyword", "vectors"):
        assert metric(lag, "engramlog_projection_lag_events", f'projection="{name}"') == 0

    assert wait_until(lambda: http.get("/healthz").status_code == 200, timeout=20)
    assert http.get("/healthz").json() == {"status": "ok"}


def test_min_position_beyond_the_log_is_refused_at_once(client, engine, monkeypatch, warm_worker):
    """Even with every projection caught up, a position the log has not reached yet cannot be served: no write
    answered it, so it is a 422 at once, not a wait and a 503."""
    import api.read_your_writes
    from infra.settings import get_settings, replace

    short = replace(get_settings(), min_position_wait_s=0.3)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: short)
    with engine.connect() as conn:
        head = conn.execute(text("SELECT coalesce(max(position), 0) FROM events")).scalar_one()
    wait_projected(engine, head)
    response = client.post("/v1/recall", json={"query": "anything at all", "min_position": head + 10**9})
    assert response.status_code == 422, response.text  # refused at once: a wait would have ended in a 503
    detail = response.json()["detail"]
    assert str(head + 10**9) in detail and "beyond the log's head" in detail, detail
