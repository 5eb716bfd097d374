"""Recall over long texts (coding-assistant chat messages, bench/coding_chat.py): the graph walk's entity
neighbours do work in proportion to the entities the frontier names, not to their square, and answer what the
rule says; the memoised text views (domain.memo) leave every stage's answer as it was.

A long text names tens of entities (class and exception names, frameworks). The entity-neighbours statement
once counted each (entity, agent) pair's memories for every frontier row, twice (the planner inlined the CTE and
BETWEEN became two subplans): 5 frontier memories of a 104-message corpus ran ~7,600 index scans, 100-650 ms a
graph stage. Now each distinct pair is counted once, and no further than max_df + 1 rows.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from funnel_support import ask, remember_all, settings, stage
from sqlalchemy import text

from bench.coding_chat import messages
from domain.memo import clear_all
from recall.funnel import graph

STATUSES = ("active", "dormant")


def _reference(rows: list[Any], frontier: set[uuid.UUID], max_df: int) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """The rule, from the memory_entities rows: same agent, an entity 2..max_df of the agent's memories name."""
    df: dict[tuple[str, str], set[uuid.UUID]] = {}
    for r in rows:
        if r.agent_id is not None:
            df.setdefault((r.entity, r.agent_id), set()).add(r.memory_id)
    pairs = {(src, dst) for members in df.values() if 2 <= len(members) <= max_df
             for src in members & frontier for dst in members if dst != src}
    return sorted(pairs, key=lambda p: (str(p[0]), str(p[1])))


def _scans_of(plan: dict[str, Any], relation: str) -> int:
    """How many times the plan scanned `relation` (each node's loops, summed over the tree)."""
    own = plan.get("Actual Loops", 0) if plan.get("Relation Name") == relation else 0
    return own + sum(_scans_of(child, relation) for child in plan.get("Plans", []))


def _entity_neighbours(conn: Any, tenant: str, frontier: list[uuid.UUID], max_df: int) -> list[Any]:
    """The walk's entity neighbours of `frontier` (the neighbourhood statement with only the entity kind)."""
    walked = settings(graph_kinds=("entity",), graph_entity_max_df=max_df)
    return graph.neighbourhood(conn, tenant, frontier, datetime.now(UTC), walked, STATUSES).entity or []


def test_entity_neighbours_follow_the_rule_and_scale_with_distinct_entities(engine, tenant) -> None:
    texts = messages(24, seed=5)
    mine = remember_all(engine, tenant, texts[:18], agent_id="dev")
    remember_all(engine, tenant, texts[18:], agent_id="other")  # the same entities, another agent: never linked
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id, entity, agent_id FROM memory_entities WHERE tenant = :t"),
                            {"t": tenant}).all()
        assert len(rows) > 10 * len(texts)  # long texts: tens of entities each
        ids = [d.memory_id for d in mine]
        for frontier, max_df in ((ids[:5], 8), (ids[5:10], 3), (ids, 18), (ids[:1], 2)):
            got = _entity_neighbours(conn, tenant, frontier, max_df)
            assert got == _reference(rows, set(frontier), max_df)
        assert _entity_neighbours(conn, tenant, ids[:5], 8)  # the corpus does link memories

        frontier = ids[:5]
        named = [r for r in rows if r.memory_id in set(frontier)]
        distinct = {(r.entity, r.agent_id) for r in named}
        [[plan]] = conn.execute(text("EXPLAIN (ANALYZE, FORMAT JSON) "
                                     + str(graph.neighbourhood_statement(False, True))),
                                {"tenant": tenant, "ids": frontier, "statuses": list(STATUSES), "max_df": 8,
                                 "kinds": ["entity"]}).one()
        plan = json.loads(plan) if isinstance(plan, str) else plan
        scans = _scans_of(plan["Plan"], "memory_entities")
        # One scan for the frontier's rows, one count per distinct (entity, agent), at most one lookup per
        # frontier row (of a specific entity): linear in what the frontier names (it was rows × distinct, twice).
        assert scans <= 1 + len(distinct) + len(named), (scans, len(distinct), len(named))


def test_memoised_text_views_leave_the_answers_as_they_were(engine, tenant) -> None:
    remember_all(engine, tenant, messages(16, seed=9), agent_id="dev")
    cfg = settings(sim_candidate_floor=-1.0)
    for query in ("Why did it fail on the Docker runner?", "How did we fix the KeyError in OrderService?",
                  "What did Priya say about the payments module?"):
        clear_all()
        cold = ask(engine, tenant, query, k=5, cfg=cfg, agent_id="dev")
        warm = ask(engine, tenant, query, k=5, cfg=cfg, agent_id="dev")  # every view of these texts memoised now
        assert [r.memory_id for r in warm.results] == [r.memory_id for r in cold.results]
        assert [r.score for r in warm.results] == [r.score for r in cold.results]
        assert warm.abstained == cold.abstained
        for name in ("coref", "prf", "graph", "abstain"):
            before, after = stage(cold, name), stage(warm, name)
            assert (after["counts"], after.get("notes"), after.get("skipped")) == \
                (before["counts"], before.get("notes"), before.get("skipped")), name
    assert stage(cold, "prf")["notes"].get("entities") == ["Priya"]  # the entity boost ran on long texts
