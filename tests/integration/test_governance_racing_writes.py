"""Identical writes racing into one scope: the governor decides them one after the other (a per-scope advisory
lock in the write's transaction), so they end as one admitted memory and reinforcements of it, never as several
near-duplicate active memories. No worker runs: every earlier write is still unprojected when the next is decided.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pytest
from sqlalchemy import Engine, text

WRITERS = 8


def _race(engine: Engine, tenant: str, content: str, scope: dict[str, str | None]) -> list[object]:
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from services.remember import MemoryInput, remember

    get_embedder(get_settings().embedding.embedding_model).warm()  # the model loads before the race, not inside it
    barrier = threading.Barrier(WRITERS)
    results: list[object] = [None] * WRITERS

    def write(i: int) -> None:
        barrier.wait()
        try:
            [results[i]] = remember(engine, tenant, [MemoryInput(content=content, idempotency_key=f"race-{i}",
                                                                 **scope)],  # type: ignore[arg-type]
                                    {"actor": "test", "source": "test"})
        except Exception as exc:  # noqa: BLE001 — reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not [r for r in results if isinstance(r, BaseException) or r is None], results
    return results


def _decisions(engine: Engine, tenant: str) -> tuple[Counter[str], list[dict], list[dict]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT type, data FROM events WHERE tenant = :t ORDER BY position"),
                            {"t": tenant}).all()
    admitted = [r.data for r in rows if r.type == "MemoryAdmitted"]
    return Counter(r.type for r in rows), admitted, [r.data for r in rows if r.type == "MemoryReinforced"]


def test_identical_racing_writes_admit_one_and_reinforce_it(engine, tenant) -> None:
    content = f"The racing deploy key for cluster {uuid.uuid4().hex[:6]} rotates every Sunday at midnight"
    results = _race(engine, tenant, content, {"agent_id": "racer", "project": "p1"})
    types, admitted, reinforced = _decisions(engine, tenant)
    kept = [a for a in admitted if a["disposition"] != "discard"]
    assert len(kept) == 1, [(a["disposition"], a["reason"]) for a in admitted]
    [first] = kept
    assert types["MemoryRecorded"] == WRITERS and types["MemoryReinforced"] == WRITERS - 1
    assert {r["memory_id"] for r in reinforced} == {first["memory_id"]}
    # Each reinforcement starts from the one before it (the log, not the lagging read model): 0.5 → 0.55 → …
    confidences = [r["confidence"] for r in reinforced]
    assert confidences == sorted(confidences) and len(set(confidences)) == WRITERS - 1
    assert confidences[-1] == pytest.approx(1 - 0.5 * 0.9 ** (WRITERS - 1), abs=1e-5)
    answers = Counter("admitted" if r.reinforced is None else "reinforced" for r in results)  # type: ignore[attr-defined]
    assert answers == {"admitted": 1, "reinforced": WRITERS - 1}
    assert {str(r.reinforced) for r in results if r.reinforced} == {first["memory_id"]}  # type: ignore[attr-defined]


def test_racing_writes_see_an_unprojected_promotion(engine, tenant, monkeypatch) -> None:
    """The first write lands in staging; the second reinforces and promotes it. The ones after must see it as
    active (its unprojected MemoryStatusChanged), and reinforce it too: one promotion, no second memory."""
    import services.append_events
    from infra.settings import get_settings, replace

    strict = replace(get_settings(), gate_active=0.99)  # whatever is novel lands in staging
    monkeypatch.setattr(services.append_events, "get_settings", lambda: strict)
    content = f"Grace keeps the spare office key {uuid.uuid4().hex[:6]} in the blue drawer"
    _race(engine, tenant, content, {"agent_id": "racer", "project": None})
    types, admitted, reinforced = _decisions(engine, tenant)
    kept = [a for a in admitted if a["disposition"] != "discard"]
    assert [a["disposition"] for a in kept] == ["staging"], [(a["disposition"], a["reason"]) for a in admitted]
    assert types["MemoryReinforced"] == WRITERS - 1 and types["MemoryStatusChanged"] == 1


def test_other_scopes_are_not_serialized_into_each_other(engine, tenant) -> None:
    """The same text in two scopes is two memories, also when written at the same time."""
    from services.neighbours import scope_lock_key

    assert scope_lock_key(tenant, ("a", None)) != scope_lock_key(tenant, (None, "a"))
    assert scope_lock_key(tenant, ("a", "b")) == scope_lock_key(tenant, ("a", "b"))
    content = "The nightly report goes to the finance channel at six"
    from services.remember import MemoryInput, remember

    done = remember(engine, tenant, [MemoryInput(content=content, agent_id="x"),
                                     MemoryInput(content=content, agent_id="y")], {"actor": "test"})
    assert [d.reinforced for d in done] == [None, None] and {d.disposition for d in done} == {"active"}
