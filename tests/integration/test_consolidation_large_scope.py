"""Consolidation over a scope larger than its page size, and what a merge does to the kept memory's statistics.

- A scope of any size is consolidated whole: read in chunks, near-duplicates pruned across the whole scope,
  survivors planned in pages; the report counts every memory; a second run changes nothing; a rebuild agrees.
- The kept memory of a merge carries the merged ones' access statistics (access_count and feedback summed,
  last access the latest) and their pooled confidence, so its ACT-R activation reflects every use.
"""

from __future__ import annotations

import math
import uuid
from datetime import timedelta

import numpy as np
import pytest
from lifecycle_support import (
    events_of,
    feedback,
    head,
    record,
    rows,
    served,
    statuses,
    sync,
    types_after,
    verify_tenant,
)
from sqlalchemy import Engine, text

from domain.consolidation import ConsolidationConfig, Node, plan, prune
from domain.events import NewEvent, memory_stream, validate_payload
from eventstore.append import append

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

DEPLOY = ["The deploy failed because the database migration ran twice on the replica.",
          "The deploy failed because the database migration ran twice on the replica"]
TEA = ["Bob prefers green tea over coffee in the morning.",
       "Bob prefers green tea over coffee in the mornings."]
OTHERS = ["Alice adopted a grey cat named Biscuit last spring.",
          "Biscuit, Alice's cat, is afraid of the vacuum cleaner.",
          "The quarterly budget review moved from Tuesday to Thursday.",
          "Deployments must run database migrations exactly once, on the primary.",
          "Bob drinks a cup of green tea every morning before work.",
          "The office printer on floor two jams on glossy paper.",
          "Our CI runners cache pip wheels between builds."]


def db_now(engine: Engine):
    with engine.connect() as conn:
        return conn.execute(text("SELECT now()")).scalar_one()


def settings_with(**changes: object):
    from infra.settings import get_settings, replace

    return replace(get_settings(), **changes)


def activity_rows(engine: Engine, tenant: str) -> dict[uuid.UUID, dict]:
    with engine.connect() as conn:
        return {r.memory_id: dict(r._mapping) for r in conn.execute(
            text("SELECT * FROM memory_activity WHERE tenant = :t"), {"t": tenant})}


def test_a_scope_larger_than_a_page_is_consolidated_whole(engine, tenant) -> None:
    from projections.rebuild import verify
    from projections.registry import PROJECTORS
    from workers.consolidation import consolidate

    # One memory per transaction, so they are recorded in this order: each near-duplicate pair is split
    # across pages of 3 (the pair's first halves come first, their second halves last).
    order = [DEPLOY[0], TEA[0], *OTHERS, TEA[1], DEPLOY[1]]
    ids = [record(engine, tenant, [c], agent_id="big")[0] for c in order]
    by_content = dict(zip(order, ids, strict=True))
    served(engine, tenant, [by_content[DEPLOY[1]]])  # the newer deploy wording is the more used one: kept
    sync(engine)
    settings = settings_with(consolidation_max_memories=3, consolidation_bridge_min=0.1)

    clock = db_now(engine)
    [run] = consolidate(engine, clock, tenant=tenant, settings=settings).runs
    report = run.report
    assert report["memories"] == len(order) and report["page_size"] == 3  # nothing left out
    assert report["pages"] == math.ceil((len(order) - 2) / 3)  # the survivors, three at a time
    [scope] = report["per_scope"]
    assert (scope["memories"], scope["pages"]) == (len(order), report["pages"])
    assert report["changes"]["merged"] == 2 and report["changes"]["strengthened"] >= 1
    status = statuses(engine, tenant)
    assert status[by_content[DEPLOY[0]]] == "merged" and status[by_content[DEPLOY[1]]] == "active"
    assert status[by_content[TEA[1]]] == "merged" and status[by_content[TEA[0]]] == "active"
    assert sorted(status.values()).count("active") == len(order) - 2
    merges = {e.data["memory_id"]: e.data["merged_ids"] for e in events_of(engine, tenant, ["MemoriesMerged"])}
    assert merges == {str(by_content[DEPLOY[1]]): [str(by_content[DEPLOY[0]])],
                      str(by_content[TEA[0]]): [str(by_content[TEA[1]])]}

    # Twice in a row: the same survivors, the same pages, no change.
    edges_after = rows(engine, "memory_edges", tenant, "source_id, target_id, kind")
    memories_after = rows(engine, "memories", tenant, "memory_id")
    before = head(engine, tenant)
    [second] = consolidate(engine, clock + timedelta(minutes=1), tenant=tenant, settings=settings).runs
    assert not any(second.report["changes"].values()), second.report["changes"]
    assert second.report["pages"] == report["pages"]
    assert types_after(engine, tenant, before) == ["ConsolidationCompleted"]
    assert rows(engine, "memory_edges", tenant, "source_id, target_id, kind") == edges_after
    assert rows(engine, "memories", tenant, "memory_id") == memories_after
    assert verify_tenant(engine, "memories", tenant) == {"memories": 0, "memory_history": 0, "memory_versions": 0}
    assert verify_tenant(engine, "activity", tenant) == {"memory_activity": 0,
                                                         "memory_activity_versions": 0}
    assert verify(engine, PROJECTORS["edges"], batch_size=50).identical


def test_the_kept_memory_carries_the_merged_ones_statistics(engine, tenant) -> None:
    from projections.activity import activity_for
    from workers.consolidation import consolidate
    from workers.lifecycle import decay_sweep

    old, new = record(engine, tenant, DEPLOY, agent_id="fold")
    for _ in range(2):
        r = served(engine, tenant, [new])
    feedback(engine, tenant, r, used=[new])
    last = served(engine, tenant, [old])  # the latest access of the concept is the merged memory's
    feedback(engine, tenant, last, used=[old])
    sync(engine)
    before = activity_rows(engine, tenant)
    assert (before[new]["access_count"], before[old]["access_count"]) == (2, 1)
    # The kept memory went dormant after its two accesses (the sweep's decision saw ref_count 2).
    clock = db_now(engine)
    dormant = validate_payload("MemoryStatusChanged", {
        "memory_id": str(new), "from_status": "active", "to_status": "dormant", "reason": "test: idle",
        "clock": clock.isoformat(), "inputs": {"ref_count": 2}})
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent("MemoryStatusChanged", memory_stream(new), dormant)],
               {"actor": "system:scheduler"})
    sync(engine)

    [run] = consolidate(engine, clock, tenant=tenant).runs
    assert run.report["changes"]["merged"] == 1
    after = activity_rows(engine, tenant)
    kept = after[new]
    assert kept["access_count"] == 3 and kept["used_count"] == 2 and kept["not_useful_count"] == 0
    assert kept["last_access_at"] == before[old]["last_access_at"] > before[new]["last_access_at"]
    assert kept["status_ref_count"] == 3  # a merge is not a reference: the sweep must not reactivate it for it
    assert after[old] == before[old]  # the merged memory's own row is left as it was
    with engine.connect() as conn:
        assert activity_for(conn, tenant, [new])[new].access_count == 3
        confidence = dict(conn.execute(text("SELECT memory_id, confidence FROM memories WHERE tenant = :t"),
                                       {"t": tenant}).all())
    assert confidence[new] == pytest.approx(0.599, abs=1e-3)  # 0.55 and 0.55 pooled in log-odds
    assert confidence[old] == pytest.approx(0.55)
    assert statuses(engine, tenant) == {new: "dormant", old: "merged"}
    assert not any(t[1] == new for t in decay_sweep(engine, clock, tenant).transitions)

    # Deterministic: a replay folds the same rows; a second cycle changes nothing.
    assert verify_tenant(engine, "activity", tenant) == {"memory_activity": 0,
                                                         "memory_activity_versions": 0}
    assert verify_tenant(engine, "memories", tenant) == {"memories": 0, "memory_history": 0, "memory_versions": 0}
    assert not any(consolidate(engine, clock + timedelta(minutes=1), tenant=tenant).runs[0].report["changes"].values())
    assert activity_rows(engine, tenant) == after


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_pruning_does_not_depend_on_blocking_and_pages_agree_with_one_plan() -> None:
    from datetime import UTC, datetime

    rng = np.random.default_rng(11)
    now = datetime(2025, 6, 1, tzinfo=UTC)
    vectors = []
    for topic in rng.normal(size=(6, 48)):
        base = _unit(topic)
        vectors += [base, _unit(base + rng.normal(size=48) * 0.02), _unit(base + rng.normal(size=48) * 0.3)]
    nodes = [Node(uuid.UUID(int=i + 1), "fact", f"m{i}", now - timedelta(days=60 - i), i % 4, None, v)
             for i, v in enumerate(vectors)]
    whole = prune(nodes, 0.85)
    assert len(whole) == 6
    assert prune(nodes, 0.85, block_entries=1) == whole == prune(nodes, 0.85, block_entries=len(nodes) * 5)
    assert plan(nodes, [], {}, now, ConsolidationConfig()).merges == whole
    # A page given the scope's merges reports only its own and never clusters a merged memory.
    merged_into = {m: k.memory_id for k in whole for m in k.merged_ids}
    survivors = [n for n in nodes if n.memory_id not in merged_into]
    page = survivors[:4]
    mine = [k for k in whole if k.memory_id in {n.memory_id for n in page}]
    p = plan(page, [], {}, now, ConsolidationConfig(), merges=mine, merged_into=merged_into)
    assert p.merges == mine and not ({m for c in p.clusters for m in c} & set(merged_into))
