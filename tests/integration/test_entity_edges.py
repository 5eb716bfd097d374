"""Entity edges: the `memory_entities` read model (projections/entities.py) and the graph walk following it
(recall/funnel/graph.py), with the real write path, projectors and recall."""

from __future__ import annotations

import uuid

from funnel_support import ask, remember_all, settings, stage
from sqlalchemy import text

from projections.entities import talks_about

DIARY = [
    "Melanie: Oliver hid his bone in my slipper once, he is such a clown",
    "Melanie: We took the kids camping by the lake last summer",
    "Caroline: I joined a choir that sings at the Pride parade",
    "Melanie: Oliver is scared of thunderstorms and hides under the bed",
    "Caroline: Mozart and Sara Bareilles are what I play on the piano",
]


def test_talks_about_leaves_the_speaker_out() -> None:
    assert talks_about("Melanie: Oliver hid his bone in my slipper, Caroline!") == ["oliver", "caroline"]
    assert talks_about("Melanie: I love my kids") == []
    assert talks_about("The Berlin office moved to Lisbon") == ["berlin", "lisbon"]


def test_projection_rows_and_entity_walk(engine) -> None:
    tenant = f"ent-{uuid.uuid4().hex[:8]}"
    done = remember_all(engine, tenant, DIARY, agent_id="mel")
    other = remember_all(engine, tenant, ["Melanie: Oliver chewed the sofa"], agent_id="someone-else")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id, entity, agent_id FROM memory_entities WHERE tenant = :t"),
                            {"t": tenant}).all()
    by_memory: dict[uuid.UUID, set[str]] = {}
    for r in rows:
        by_memory.setdefault(r.memory_id, set()).add(r.entity)
    assert by_memory[done[0].memory_id] == {"oliver"} and by_memory[done[3].memory_id] == {"oliver"}
    assert by_memory[done[4].memory_id] == {"mozart", "sara bareilles"}
    assert done[1].memory_id not in by_memory  # nothing named but the speaker
    assert {r.agent_id for r in rows if r.memory_id == other[0].memory_id} == {"someone-else"}

    # The question matches the bone memory; the thunderstorm one talks about Oliver too and gets the boost.
    cfg = settings(sim_candidate_floor=-1.0, graph_temporal_span=0, graph_entity_weight=0.5)
    walked = ask(engine, tenant, "where did Oliver hide his bone", k=5, cfg=cfg, agent_id="mel")
    graph = stage(walked, "graph")
    assert graph["counts"]["entity_shared"] >= 1, graph
    storm = {r.memory_id: r for r in walked.results}[done[3].memory_id]
    assert storm.explanation["stages"]["graph"]["boost"] > 0
    # Off: no entity edges followed (and none across agents ever: the other agent's Oliver is not reached).
    off = ask(engine, tenant, "where did Oliver hide his bone", k=5, agent_id="mel",
              cfg=settings(sim_candidate_floor=-1.0, graph_temporal_span=0, graph_entity_weight=0.0))
    assert "entity_shared" not in stage(off, "graph")["counts"]
    # A hub (more memories talk about it than the cap) links nothing.
    capped = ask(engine, tenant, "where did Oliver hide his bone", k=5, agent_id="mel",
                 cfg=settings(sim_candidate_floor=-1.0, graph_temporal_span=0, graph_entity_weight=0.5,
                              graph_entity_max_df=1))
    assert stage(capped, "graph")["counts"].get("entity_shared", 0) == 0
