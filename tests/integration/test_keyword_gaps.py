"""`engramlog analyze keyword-gaps` (recall/analysis.py): per domain, the share of recalls where the keyword leg
missed a result the vector leg found and that was then used, and the share of vector-only results marked not
useful, computed from hand-made hit-log events."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import Engine

from domain.events import (
    NewEvent,
    RecallFeedbackGiven,
    RecallServed,
    ResultDrilled,
    drill_stream,
    recall_stream,
)
from eventstore.append import append
from recall.analysis import keyword_gaps

META = {"actor": "test", "source": "test"}
KW, VEC, BOTH, NONE = {"keyword": 2.0, "vector": None}, {"keyword": None, "vector": 0.6}, \
    {"keyword": 1.0, "vector": 0.5}, None


def _memory(m: uuid.UUID, legs: Any) -> dict[str, Any]:
    return {"domain": "memories", "memory_id": m, "legs": legs}


def _section(name: str, legs: Any) -> dict[str, Any]:
    return {"domain": "knowledge", "legs": legs,
            "handle": {"path": "ops.md", "heading_path": name, "content_hash": name * 4, "version": 1,
                       "project": None}}


def _recall(engine: Engine, tenant: str, results: list[dict[str, Any]], used: tuple[uuid.UUID, ...] = (),
            not_useful: tuple[uuid.UUID, ...] = (), drilled: tuple[dict[str, Any], ...] = ()) -> uuid.UUID:
    rid = uuid.uuid4()
    stream = recall_stream(rid)
    entries = [{"rank": i, "score": 0.5, **r} for i, r in enumerate(results, 1)]
    events = [NewEvent.of(RecallServed(recall_id=rid, query="q", k=10, results=entries, latency_ms=1.0,
                                       domains=sorted({r["domain"] for r in results})), stream)]
    items = [{"memory_id": m, "verdict": "used"} for m in used] + \
        [{"memory_id": m, "verdict": "not_useful"} for m in not_useful]
    if items:
        events.append(NewEvent.of(RecallFeedbackGiven(recall_id=rid, items=items), stream))
    for d in drilled:
        events.append(NewEvent.of(ResultDrilled(drill_id=uuid.uuid4(), domain="knowledge", handle={**d, "version": 2},
                                                recall_id=rid), stream))
    with engine.begin() as conn:
        append(conn, tenant, events, META)
    return rid


def _hit_log(engine: Engine, tenant: str) -> None:
    m = [uuid.uuid4() for _ in range(7)]
    _recall(engine, tenant, [_memory(m[0], BOTH), _memory(m[1], VEC)], used=(m[1],))  # missed, then used
    _recall(engine, tenant, [_memory(m[2], VEC)], not_useful=(m[2],))  # a hybrid false positive
    _recall(engine, tenant, [_memory(m[3], KW)], used=(m[3],))  # used, found by keyword
    _recall(engine, tenant, [_memory(m[4], VEC)])  # vector-only, no verdict
    _recall(engine, tenant, [_memory(m[5], NONE)], used=(m[5],))  # served before legs were recorded
    s1, s2, s3 = _section("A", VEC), _section("B", BOTH), _section("C", VEC)
    _recall(engine, tenant, [s1, s2, _memory(m[6], KW)], drilled=(s1["handle"],))  # knowledge: missed, drilled
    _recall(engine, tenant, [s3])
    drill_id = uuid.uuid4()  # a drill into s3 with no recall behind it: not a use of that recall's result
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent.of(ResultDrilled(drill_id=drill_id, domain="knowledge", handle=s3["handle"]),
                                          drill_stream(drill_id))], META)


def test_keyword_gaps_per_domain(engine, tenant: str) -> None:
    _hit_log(engine, tenant)
    with engine.connect() as conn:
        gaps = {g.domain: g for g in keyword_gaps(conn, tenant)}
    memories, knowledge = gaps["memories"], gaps["knowledge"]
    assert (memories.recalls, memories.recalls_without_legs, memories.recalls_with_use) == (5, 1, 2)
    assert (memories.vector_only, memories.vector_only_used, memories.vector_only_not_useful) == (3, 1, 1)
    assert memories.keyword_false_negatives == 1 / 5
    assert memories.keyword_false_negatives_among_used == 1 / 2
    assert memories.hybrid_false_positives == 1 / 3
    assert (knowledge.recalls, knowledge.recalls_with_use, knowledge.vector_only, knowledge.vector_only_used) == \
        (2, 1, 2, 1)
    assert knowledge.keyword_false_negatives == 1 / 2
    assert knowledge.hybrid_false_positives is None  # no not-useful signal for sections
    with engine.connect() as conn:
        assert keyword_gaps(conn, f"{tenant}-other") == []  # tenant isolation


def test_cli_prints_the_figures_and_the_gate(engine, tenant: str, monkeypatch) -> None:
    from typer.testing import CliRunner

    import cli.calls
    import cli.main

    _hit_log(engine, tenant)
    monkeypatch.setattr(cli.calls, "engine", lambda: engine)
    out = CliRunner().invoke(cli.main.app, ["analyze", "keyword-gaps", "--tenant", tenant, "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["domain"]: r for r in json.loads(out.output)}
    assert rows["memories"]["keyword_false_negatives"] == 0.2 and rows["knowledge"]["hybrid_false_positives"] is None
    assert rows["memories"]["gate"] == {"keyword_false_negatives_at_least": 0.2, "hybrid_false_positives_below": 0.1}
    table = CliRunner().invoke(cli.main.app, ["analyze", "keyword-gaps", "--tenant", tenant])
    assert table.exit_code == 0 and "SwarmAI's gate" in table.output and ">= 20%" in table.output
    bad = CliRunner().invoke(cli.main.app, ["analyze", "keyword-gaps", "--since", "yesterday"])
    assert bad.exit_code == 2
