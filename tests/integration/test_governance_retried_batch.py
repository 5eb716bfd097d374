"""A governed batch retried with the same idempotency keys is answered from the write that was applied, never
decided again: a retry after it (caught before the batch is embedded), and a concurrent retry that was already
waiting for the scope's lock when the first committed (caught right after the lock, services/append_events.py).
Either way the log gains no decision event and the retry answers the first write's ids, positions and decisions.
No worker runs: the batch is still unprojected when the retry comes."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from sqlalchemy import Engine, text

SCOPE = ("retrier", "p-retry")
BATCH = ("Ines keeps the boiler service log in the grey binder on the second shelf",
         "The boiler service is booked every October with the same plumber")
METADATA = {"actor": "test", "source": "test"}


def _write(engine: Engine, tenant: str) -> list[Any]:
    from services.remember import MemoryInput, remember

    return remember(engine, tenant, [MemoryInput(content=c, agent_id=SCOPE[0], project=SCOPE[1],
                                                 idempotency_key=f"retry-{i}") for i, c in enumerate(BATCH)],
                    METADATA)


def _types(engine: Engine, tenant: str) -> Counter[str]:
    with engine.connect() as conn:
        return Counter(conn.execute(text("SELECT type FROM events WHERE tenant = :t"), {"t": tenant}).scalars())


def _count_decides(monkeypatch) -> list[int]:
    """Counts Prepared.decide's runs (the real one runs): the governor's reads and decisions of a batch."""
    from services.governance import Prepared

    calls: list[int] = []
    real = Prepared.decide

    def counted(self: Prepared, conn: Any) -> Any:
        calls.append(len(self.writes))
        return real(self, conn)

    monkeypatch.setattr(Prepared, "decide", counted)
    return calls


def _waiting_on(engine: Engine, key: int) -> int:
    """Sessions waiting for the advisory lock `key` (a bigint lock shows as classid = high, objid = low 32 bits)."""
    with engine.connect() as conn:
        return conn.execute(text("""
            SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
              AND ((classid::bigint << 32) | objid::bigint) = :key"""), {"key": key}).scalar_one()


def _same(a: list[Any], b: list[Any]) -> None:
    assert [(r.memory_id, r.position, r.disposition, r.reinforced) for r in a] == \
           [(r.memory_id, r.position, r.disposition, r.reinforced) for r in b]


def test_a_retry_after_the_write_is_answered_from_the_log(engine, tenant, monkeypatch) -> None:
    first = _write(engine, tenant)
    before = _types(engine, tenant)
    assert before["MemoryRecorded"] == 2 and before["MemoryAdmitted"] == 2
    decides = _count_decides(monkeypatch)
    _same(_write(engine, tenant), first)
    assert decides == [] and _types(engine, tenant) == before


def test_a_concurrent_retry_waiting_for_the_lock_is_not_decided_again(engine, tenant, monkeypatch) -> None:
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from services.neighbours import lock_scopes, scope_lock_key

    get_embedder(get_settings().embedding.embedding_model).warm()
    decides = _count_decides(monkeypatch)
    results: list[Any] = [None, None]

    def write(i: int) -> None:
        try:
            results[i] = _write(engine, tenant)
        except Exception as exc:  # noqa: BLE001 — reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    key = scope_lock_key(tenant, SCOPE)
    with engine.begin() as held:
        # Both writes pass the check before the batch is embedded (nothing is applied yet) and queue on the lock.
        lock_scopes(held, tenant, {SCOPE})
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while _waiting_on(engine, key) < 2:
            assert time.monotonic() < deadline, "the two writes never queued on the scope's lock"
            assert all(t.is_alive() for t in threads), results
            time.sleep(0.05)
    for t in threads:
        t.join(120)
    assert not [r for r in results if r is None or isinstance(r, BaseException)], results
    _same(results[0], results[1])
    assert decides == [2], decides  # the one that got the lock second answered the first's result undecided
    types = _types(engine, tenant)
    assert types["MemoryRecorded"] == 2 and types["MemoryAdmitted"] == 2, types
