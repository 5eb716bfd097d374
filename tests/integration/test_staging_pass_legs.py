"""The first pass searches its legs at twice the breadth with staging, for the staging fallback's pass too
(recall/funnel/candidates.py search_with_staging): on an exact scope each pass gets the legs it would search on
its own, and the fallback pass is skipped exactly when no staging memory would enter its candidates."""

from __future__ import annotations

import uuid

import pytest
from funnel_support import COOKING, ask, project, remember_all, settings
from sqlalchemy import text

from infra.db import read_only
from infra.embedding import get_embedder
from recall.funnel import candidates
from recall.scope import Scope

STAGED = [
    "The sourdough starter is fed with rye flour every twelve hours",
    "Keep the pizza dough in the fridge for two days before baking",
    "The VPN gateway rotates its certificates every 45 days",
    "Rinse the rice until the water runs clear before cooking it",
]
QUERIES = ["how long should I bake the sourdough loaf?", "pizza dough fridge", "rice water rinse",
           "VPN certificate rotation", "chocolate mousse egg whites", "lunch menu tomorrow"]
FIRST, WITH_STAGING = ("active", "dormant"), ("active", "dormant", "staging")


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def kitchen_with_staging(engine, monkeypatch_module):
    import services.append_events
    from services.remember import MemoryInput, remember

    tenant = f"staged-{uuid.uuid4().hex[:8]}"
    remember_all(engine, tenant, COOKING)
    gated = settings(gate_active=0.99)
    monkeypatch_module.setattr(services.append_events, "get_settings", lambda: gated)
    zero = {"surprise": 0, "decision": 0, "causal": 0, "effort": 0, "correction": False}
    done = remember(engine, tenant, [MemoryInput(content=t, signals=zero) for t in STAGED],
                    {"source": "test", "actor": "test"})
    monkeypatch_module.undo()
    project(engine, max(d.position for d in done))
    with engine.connect() as conn:
        statuses = conn.execute(text("SELECT status, count(*) FROM memories WHERE tenant = :t GROUP BY 1"),
                                {"t": tenant}).all()
    assert dict(statuses) == {"active": len(COOKING), "staging": len(STAGED)}, statuses
    return tenant


def _legs(legs):
    return None if legs is None else (legs.bm25, legs.cosine)


@pytest.mark.parametrize("n", [2, 4, 50])
def test_one_search_gives_each_pass_its_own_legs(engine, kitchen_with_staging, n):
    tenant, cfg = kitchen_with_staging, settings()
    scope, entered, skipped = Scope(tenant), 0, 0
    for query in QUERIES:
        vector = get_embedder(cfg.embedding.embedding_model).query_vector(tenant, query)
        with read_only(engine) as conn:
            first, second = candidates.search_with_staging(conn, scope, query, vector, n, FIRST, cfg)
            alone = candidates.search_legs(conn, scope, query, vector, n, FIRST, cfg)
            full = candidates.search_legs(conn, scope, query, vector, n, WITH_STAGING, cfg)
            staged = set(conn.execute(text("SELECT memory_id FROM memories WHERE tenant = :t AND status = 'staging'"),
                                      {"t": tenant}).scalars())
        assert _legs(first) == _legs(alone), (query, n)
        if full.entering(cfg.funnel.sim_candidate_floor) & staged:
            entered += 1
            assert _legs(second) == _legs(full), (query, n)
        else:
            skipped += 1
            assert second is None, (query, n)
    assert entered and (skipped or n == 50)


def test_the_fallback_pass_ranks_the_legs_searched_for_it(engine, kitchen_with_staging):
    answer = ask(engine, kitchen_with_staging, "how often does the VPN gateway rotate its certificates?", k=3)
    fallback = answer.explanation["staging_fallback"]
    assert fallback is not None and fallback["second_pass"] == "run" and fallback["used"], answer.explanation
    [candidates_stage] = [s for s in answer.explanation["stages"] if s["stage"] == "candidates"]
    assert candidates_stage["config"]["legs"] == "the first pass's search with staging"
    assert "staging" in answer.explanation["statuses"] and answer.results[0].content == STAGED[2]


def test_a_fallback_no_staging_memory_could_answer_is_skipped(engine, kitchen_with_staging):
    answer = ask(engine, kitchen_with_staging, "quantum chromodynamics lattice", k=3)
    fallback = answer.explanation["staging_fallback"]
    assert fallback is not None and fallback["used"] is False, answer.explanation
    if fallback["second_pass"] != "run":
        assert fallback["second_pass"].startswith("skipped: no staging memory")
    [candidates_stage] = [s for s in answer.explanation["stages"] if s["stage"] == "candidates"]
    assert candidates_stage["config"]["legs"].startswith("searched at twice the breadth")


def test_the_keyword_leg_runs_before_the_query_vector_is_asked_for(engine, kitchen_with_staging, monkeypatch):
    """A vector still being computed (the aggregator's, or a recall's own: Embedder.query_vector_soon) is asked
    for only after the BM25 leg ran, and the legs are those the vector itself gives."""
    tenant, cfg = kitchen_with_staging, settings()
    scope, steps = Scope(tenant), []
    bm25_top = candidates.bm25_top
    monkeypatch.setattr(candidates, "bm25_top", lambda *a, **kw: steps.append("bm25") or bm25_top(*a, **kw))
    for query in QUERIES:
        vector = get_embedder(cfg.embedding.embedding_model).query_vector(tenant, query)
        steps.clear()
        with read_only(engine) as conn:
            lazily = candidates.search_with_staging(conn, scope, query,
                                                    lambda v=vector: steps.append("vector") or v, 4, FIRST, cfg)
            asked = list(steps)
            given = candidates.search_with_staging(conn, scope, query, vector, 4, FIRST, cfg)
        assert [_legs(p) for p in lazily] == [_legs(p) for p in given], query
        assert asked[:2] == ["bm25", "vector"], asked


def test_the_fallback_pass_reads_only_the_rows_the_first_pass_did_not(engine, kitchen_with_staging, monkeypatch):
    """The staging fallback's pass ranks legs the first pass searched, for the same query vector: the candidates the
    first pass read are not read again, and its answers are those of reading every row again."""
    tenant = kitchen_with_staging
    generate, reads = candidates.generate, []

    def reading_again(*args, **kw):
        kw["known"] = None
        return generate(*args, **kw)

    def counted(*args, **kw):
        items, facts = generate(*args, **kw)
        reads.append((len(items), len(kw.get("known") or {})))
        return items, facts

    for query in ["how often does the VPN gateway rotate its certificates?", "pizza dough fridge"]:
        monkeypatch.setattr(candidates, "generate", reading_again)
        again = ask(engine, tenant, query, k=3)
        monkeypatch.setattr(candidates, "generate", counted)
        reads.clear()
        reused = ask(engine, tenant, query, k=3)
        assert [(r.memory_id, round(r.score, 4)) for r in reused.results] == \
            [(r.memory_id, round(r.score, 4)) for r in again.results], query
        assert reused.explanation["staging_fallback"]["second_pass"] == "run", reused.explanation
        [(first, none), (second, known)] = reads
        assert none == 0 and known == first and second > 0
