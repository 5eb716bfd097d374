"""A projection that commits between the governor's two neighbour reads (the log window and the read model)
must not hide a memory from both: the log window is read first, so such a memory is found by one or the other.

Seen on CI: a paraphrase written right after a memory was added instead of reinforcing it, when the memory's
vector was projected between the two reads. Here the projection is run exactly there, by hand (no worker).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text


def test_a_vector_projected_between_the_two_reads_still_leaves_the_memory_a_neighbour(engine, tenant, monkeypatch):
    import services.governance
    from projections.registry import PROJECTORS
    from projections.runner import catch_up
    from services.remember import MemoryInput, remember

    fact = "The nightly invoice export lands in the finance bucket at 02:40"
    [first] = remember(engine, tenant, [MemoryInput(content=fact, agent_id="between")], {"source": "test"})
    catch_up(engine, PROJECTORS["memories"], 500)  # in memories, with no vector yet
    with engine.connect() as conn:
        vectors = conn.execute(text("SELECT count(*) FROM memory_vectors WHERE tenant = :t"),
                               {"t": tenant}).scalar_one()
    assert vectors == 0

    projected: list[str] = []

    def project_after(name: str, read: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            found = read(*args, **kwargs)
            if not projected:  # after whichever read runs first, before the other
                projected.append(name)
                catch_up(engine, PROJECTORS["vectors"], 500)
            return found
        return wrapped

    monkeypatch.setattr(services.governance, "unprojected",
                        project_after("unprojected", services.governance.unprojected))
    monkeypatch.setattr(services.governance, "nearest_in_read_model",
                        project_after("read_model", services.governance.nearest_in_read_model))
    [again] = remember(engine, tenant, [MemoryInput(content=fact, agent_id="between")], {"source": "test"})
    assert again.reinforced == first.memory_id, (projected, again)
    assert projected == ["unprojected"]
