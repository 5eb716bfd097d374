"""The worker's standings and a read's has-it-reached look at each reader type's first events after its checkpoint
through events_type_tx_position, whatever the planner guesses of a type's share of the log: with a bare LIMIT 1 it
once chose to read the whole log past ~60k events (1 s a standings call at 65k events, 15-40 ms a has_reached;
docs/recall.md, session 16). The statements are captured and explained as a one-off execution plans them and as
a prepared statement's generic plan may: every scan of `events` under a LIMIT is that index, bounded by type and
checkpoint, and none reads the log whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import event
from test_eventstore_read_plan import explain, numbered, walk

from eventstore.progress import has_reached, progress, standings
from projections.registry import PROJECTORS

pytestmark = pytest.mark.own_database


def _captured(engine: Any, ask: Any) -> tuple[str, dict[str, Any]]:
    seen: list[tuple[str, dict[str, Any]]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, dict(parameters)))

    with engine.connect() as conn:
        event.listen(conn, "before_cursor_execute", grab)
        ask(conn)
        event.remove(conn, "before_cursor_execute", grab)
    [found] = seen
    return found


ASKS = {
    "standings": lambda conn: standings(conn, {n: p.types for n, p in PROJECTORS.items()}),
    "has_reached": lambda conn: has_reached(conn, "memories", PROJECTORS["memories"].types, 1),
    "has_reached for a tenant": lambda conn: has_reached(conn, "memories", PROJECTORS["memories"].types, 1, "t"),
}
LAGS = {
    "progress": lambda conn: progress(conn, "memories", PROJECTORS["memories"].types),
    "progress of a tenant": lambda conn: progress(conn, "memories", PROJECTORS["memories"].types, "t"),
}


@pytest.mark.parametrize("generic", [True, False], ids=["generic plan", "custom plan"])
@pytest.mark.parametrize("ask", list(ASKS))
def test_each_type_is_looked_at_from_its_checkpoint_in_index_order(engine, ask, generic) -> None:
    statement, params = _captured(engine, ASKS[ask])
    plan = explain(engine, statement, params, generic)
    limited = [n for n, parent in walk(plan)
               if n.get("Relation Name") == "events" and parent is not None and parent["Node Type"] == "Limit"]
    assert limited, plan
    for node in limited:
        assert node.get("Index Name") == "events_type_tx_position", node
        cond = node.get("Index Cond", "")
        assert "type =" in cond and "ROW(tx_id" in cond, cond
    for node, _parent in walk(plan):
        if node.get("Relation Name") == "events" and node.get("Index Name") == "events_pkey":
            assert "position\" =" in node.get("Index Cond", "") or ">=" in node.get("Index Cond", ""), node


@pytest.mark.parametrize("generic", [True, False], ids=["generic plan", "custom plan"])
@pytest.mark.parametrize("ask", list(LAGS))
def test_a_lag_is_counted_from_the_checkpoint_type_by_type(engine, ask, generic) -> None:
    """A projection's lag (GET /v1/projections, the console) costs the lag, not the log: a tenant's was counted
    over all its events of the reader's types (30-50 ms at 65k events)."""
    statement, params = _captured(engine, LAGS[ask])
    plan = explain(engine, statement, params, generic)
    typed = [n for n, _parent in walk(plan) if n.get("Relation Name") == "events"
             and "type" in n.get("Index Cond", "") + n.get("Filter", "")]
    assert typed, plan
    for node in typed:
        assert node.get("Index Name") == "events_type_tx_position", node
        assert "type =" in node["Index Cond"] and "ROW(tx_id" in node["Index Cond"], node


BUSY_ASKS = {
    "standings": ASKS["standings"],
    "has_reached": ASKS["has_reached"],
    "has_reached for a tenant": lambda conn: has_reached(conn, "memories", PROJECTORS["memories"].types, 1, "busy"),
}
@pytest.fixture(scope="module")
def busy_log(engine) -> None:
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text("""
            INSERT INTO events (event_id, tenant, stream_id, stream_version, type, schema_version, data, occurred_at)
            SELECT gen_random_uuid(), 'busy', 'recall-' || i, 1, 'BusyLogFiller', 1, '{}', now()
            FROM generate_series(1, 30000) i"""))
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE events"))


@pytest.mark.parametrize("generic", [True, False], ids=["generic plan", "custom plan"])
@pytest.mark.parametrize("ask", list(BUSY_ASKS))
def test_a_reader_far_behind_on_a_busy_log_is_not_walked_through_other_types(engine, busy_log, ask, generic):
    """A soak's shape: readers of rare types whose checkpoints stay far behind, and thousands of later events of
    other types (hit-log events). Planned as PostgreSQL plans it (no planner settings changed, the table analysed),
    the first event of each type after a checkpoint is looked up in that type's range of events_type_tx_position:
    the worker's standings took 55-73 ms a call in a soak, walking events_tx_position through every later event.
    Each probe names its type in the text; planned for an unnamed one (unnest), these fail."""
    statement, params = _captured(engine, BUSY_ASKS[ask])
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        sql = "EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + numbered(statement) if generic else \
            "EXPLAIN (FORMAT JSON) " + statement
        row = raw.execute(sql, None if generic else params).fetchone()
        conn.rollback()
    plan = (row[0] if not isinstance(row[0], str) else json.loads(row[0]))[0]["Plan"]
    limited = [n for n, parent in walk(plan) if n.get("Relation Name") == "events"
               and parent is not None and parent["Node Type"] == "Limit"]
    assert limited, plan
    assert all(n.get("Index Name") == "events_type_tx_position" for n in limited), limited
