"""Each tenant's count of memory vectors per model (memory_vector_counts), kept by the vectors projector beside
memory_vectors, and the vector leg sizing a whole tenant by it (recall/vector.py _size_sql): a count of the table
past exact_scan_max_rows read 20,001 index entries only to learn the scope was past it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from lifecycle_support import reinforced
from sqlalchemy import event, text

from domain.events import NewEvent, memory_stream, validate_payload
from eventstore.append import append
from projections.rebuild import verify
from projections.registry import get_projector
from projections.runner import catch_up

pytestmark = pytest.mark.own_database


def _recorded(engine: Any, tenant: str, contents: list[str]) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in contents]
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent("MemoryRecorded", memory_stream(i), validate_payload("MemoryRecorded", {
            "memory_id": str(i), "content": c, "kind": "fact", "agent_id": "a1"}), expected_version=0)
            for i, c in zip(ids, contents, strict=True)], {"actor": "test", "source": "test"})
    return ids


def _project(engine: Any) -> None:
    for name in ("memories", "vectors"):
        catch_up(engine, get_projector(name), 500, max_seconds=120)


def _counts(engine: Any, *tenants: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(the kept counts, the counts of memory_vectors) of these tenants, by (tenant, model)."""
    with engine.connect() as conn:
        kept = {(r.tenant, r.model): r.n for r in conn.execute(text(
            "SELECT tenant, model, n FROM memory_vector_counts WHERE tenant = ANY(:t)"), {"t": list(tenants)})}
        counted = {(r.tenant, r.model): r.n for r in conn.execute(text(
            "SELECT tenant, model, count(*) AS n FROM memory_vectors WHERE tenant = ANY(:t) GROUP BY tenant, model"),
            {"t": list(tenants)})}
    return kept, counted


def test_the_counts_follow_the_vectors_through_inserts_a_model_change_and_a_rebuild(engine) -> None:
    from infra.settings import get_settings

    model = get_settings().embedding.embedding_model
    one, two = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    ids = _recorded(engine, one, [f"the Porto warehouse door note {i}" for i in range(5)])
    _recorded(engine, two, ["the Oslo ferry leaves at nine", "the Oslo ferry returns at six"])
    _project(engine)
    kept, counted = _counts(engine, one, two)
    assert kept == counted == {(one, model): 5, (two, model): 2}
    _project(engine)  # applied once: nothing counted twice
    assert _counts(engine, one, two)[0] == {(one, model): 5, (two, model): 2}

    # Two vectors left under an older model (as after a model change), then one re-embedded by a reinforcement.
    with engine.begin() as conn:
        conn.execute(text("UPDATE memory_vectors SET model = 'older-model' WHERE tenant = :t AND memory_id = ANY(:i)"),
                     {"t": one, "i": ids[:2]})
        conn.execute(text("UPDATE memory_vector_counts SET n = 3 WHERE tenant = :t AND model = :m"),
                     {"t": one, "m": model})
        conn.execute(text("INSERT INTO memory_vector_counts VALUES (:t, 'older-model', 2)"), {"t": one})
    reinforced(engine, one, ids[0], "the Porto warehouse door code is 7-3-7-0")
    _project(engine)
    kept, counted = _counts(engine, one)
    assert kept == counted == {(one, model): 4, (one, "older-model"): 1}
    reinforced(engine, one, ids[1], "the Porto warehouse door code is 7-3-20-0")
    _project(engine)
    kept, counted = _counts(engine, one)
    assert kept == counted == {(one, model): 5}  # the older model's row gone with its last vector

    report = verify(engine, get_projector("vectors"))
    assert report.identical, [t for t in report.tables if not t.identical]


def test_a_whole_tenant_past_the_limit_by_its_count_is_not_counted_and_any_other_scope_is(engine) -> None:
    from domain.privacy import PrivacyPolicy
    from infra.embedding import get_embedder
    from infra.settings import get_settings, replace
    from recall.scope import Scope
    from recall.vector import nearest_vectors

    settings = get_settings()
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    _recorded(engine, tenant, [f"the Lisbon tram timetable note {i}" for i in range(6)])
    _project(engine)
    query = get_embedder(settings.embedding.embedding_model).query_vector(tenant, "Lisbon tram timetable")
    statuses = ("pending", "active")
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    def search(scope: Scope, max_rows: int = settings.hybrid.exact_scan_max_rows) -> Any:
        with engine.connect() as conn:
            [found] = nearest_vectors(conn, scope, [query], 3, replace(settings, exact_scan_max_rows=max_rows),
                                      statuses)
        return found

    answers = {}
    event.listen(engine, "before_cursor_execute", seen)
    try:
        for name, scope in (("tenant", Scope(tenant)), ("agent", Scope(tenant, agent_id="a1")),
                            ("policy", Scope(tenant, policy=PrivacyPolicy(exclude_agents=("a9",))))):
            statements.clear()
            answers[name] = search(scope)
            [statement] = statements  # under the limit: counted and searched in one statement
            assert ("memory_vector_counts" in statement) == (name == "tenant"), name
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert answers["tenant"].method == "exact" and len(answers["tenant"].hits) == 3
    assert answers["tenant"] == answers["agent"] == answers["policy"]  # every memory is a1's, none a9's

    # The counts say 100, past a limit of 50: HNSW, the table not counted (it holds 6: counted, the scan is exact).
    with engine.begin() as conn:
        conn.execute(text("UPDATE memory_vector_counts SET n = 100 WHERE tenant = :t"), {"t": tenant})
    found = search(Scope(tenant), max_rows=50)
    assert found.method == "hnsw_iterative"
    assert found.hits == answers["tenant"].hits
    assert search(Scope(tenant, agent_id="a1"), max_rows=50).method == "exact"  # counted: 6
    # No count kept (a store the projector has not reached): counted, exact.
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM memory_vector_counts WHERE tenant = :t"), {"t": tenant})
    assert search(Scope(tenant), max_rows=50) == answers["tenant"]
