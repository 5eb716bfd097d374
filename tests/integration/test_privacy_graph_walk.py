"""The privacy gate holds in every funnel stage: a memory excluded by the policy by its tag (which the legs' SQL
cannot see) that the query matches and that shares an entity with a visible result (a graph-walk neighbour)
is in no stage's output: not the pool after the graph walk, not the ranked list, not the answer. (The walk
itself adds no memory to the pool, recall/funnel/graph.py; the gate runs after it, recall/funnel/privacy.py.)"""

from __future__ import annotations

from sqlalchemy import text


def _catch_up(engine) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for p in PROJECTORS.values():
        catch_up(engine, p, 1000)


def test_an_excluded_graph_neighbour_is_never_answered(engine, tenant):
    from domain.privacy import PrivacyPolicy
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.service import RecallRequest, recall
    from services.remember import MemoryInput, remember

    visible, hidden = remember(engine, tenant, [
        MemoryInput(content="Priya Raman leads the payments migration to the new ledger service",
                    agent_id="ops", must_keep=True),
        MemoryInput(content="Priya Raman's salary review is scheduled with HR for March",
                    agent_id="ops", tags=["hr-private"], must_keep=True)], {"source": "test"})
    _catch_up(engine)
    with engine.connect() as conn:  # the two are neighbours through the entity they share
        shared = conn.execute(text("SELECT count(DISTINCT memory_id) FROM memory_entities WHERE tenant = :t"),
                              {"t": tenant}).scalar_one()
    assert shared == 2
    settings = get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    ask = RecallRequest(Scope(tenant, agent_id="ops"), "what is Priya Raman working on?", 5, trace=True)
    open_ = recall(engine, embedder, settings, ask, {"actor": "test"})
    trace = open_.details["trace"]
    assert {str(visible.memory_id), str(hidden.memory_id)} <= set(trace["pool"]), trace  # both, without a policy
    gated = recall(engine, embedder, settings, ask, {"actor": "test"}, PrivacyPolicy(exclude_tags=("hr-private",)))
    trace = gated.details["trace"]
    assert str(visible.memory_id) in trace["pool"]
    assert str(hidden.memory_id) not in trace["pool"] + trace["ranked"], trace
    assert hidden.memory_id not in [r.memory_id for r in gated.results]
    assert all("salary" not in r.content for r in gated.results)
    assert gated.explanation["privacy"]["excluded"] == 1
