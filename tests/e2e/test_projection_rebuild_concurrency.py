"""Rebuild and verify under concurrency: one rebuild of a projection at a time, a swap that never deadlocks with
a reader, and a verify that does not stall the other projectors.

Projections are global (every tenant); assertions are on this test's tenant rows, or on the whole table where
verify compares it. No worker runs here: rebuild and verify are driven in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from domain.text import term_frequencies
from eventstore.append import append
from eventstore.read import Checkpoint, read_after
from projections import rebuild as rebuild_module
from projections.rebuild import ProjectionBusy, rebuild, verify
from projections.registry import get_projector

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

WAIT_S = 120  # bound on every wait for another thread; never a timed assertion
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # DATABASE_URL and REDIS_URL point at the test servers
    script = Path(sys.executable).parent / "engramlog"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]
    return subprocess.run([*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def memory(content: str) -> NewEvent:
    mid = uuid.uuid4()
    return NewEvent("MemoryRecorded", memory_stream(mid), {
        "memory_id": str(mid), "content": content, "kind": "observation", "agent_id": "a", "project": None,
        "session_id": None, "tags": [], "metadata": {}}, expected_version=0)


def write(engine: Any, tenant: str, contents: list[str]) -> None:
    with engine.begin() as conn:
        append(conn, tenant, [memory(c) for c in contents], {"actor": "test"})


def expected_keyword_stats(contents: list[str]) -> tuple[int, int, int]:
    """(documents, total length, distinct terms) a replay of these memories gives."""
    terms: Counter[str] = Counter()
    total = 0
    for c in contents:
        tfs = term_frequencies(c)
        total += sum(tfs.values())
        terms.update(set(tfs))
    return len(contents), total, len(terms)


def keyword_stats(engine: Any, tenant: str) -> tuple[int, int, int]:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT n_docs, total_length FROM keyword_stats WHERE tenant = :t"),
                           {"t": tenant}).first()
        terms = conn.execute(text("SELECT count(*) FROM keyword_terms WHERE tenant = :t"), {"t": tenant}).scalar_one()
    return (row.n_docs, row.total_length, terms) if row else (0, 0, terms)


class Writer(threading.Thread):
    """Appends small batches of memories for one tenant until stopped; remembers what it wrote."""

    def __init__(self, engine: Any, tenant: str) -> None:
        super().__init__(daemon=True)
        self.engine, self.tenant = engine, tenant
        self.stop = threading.Event()
        self.written: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            n = 0
            while not self.stop.is_set():
                batch = [f"writer {self.tenant} note {n + i} about term{(n + i) % 17} and word{n + i}"
                         for i in range(5)]
                write(self.engine, self.tenant, batch)
                self.written += batch
                n += len(batch)
                time.sleep(0.01)
        except BaseException as exc:  # reported by the test
            self.error = exc


class Paused(threading.Thread):
    """A rebuild (or verify) that pauses at its first progress report until released."""

    def __init__(self, target: Any, *args: Any) -> None:
        super().__init__(daemon=True)
        self.target, self.args = target, args
        self.paused, self.release = threading.Event(), threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def progress(self, done: int, total: int) -> None:
        if not self.paused.is_set():
            self.paused.set()
            assert self.release.wait(WAIT_S)

    def run(self) -> None:
        try:
            self.result = self.target(*self.args, progress=self.progress)
        except BaseException as exc:
            self.error = exc


def test_a_second_rebuild_is_refused_while_writes_go_on_and_the_first_is_exact(engine, tenant, http):
    initial = [f"first {i} memory of {tenant} with word{i} and term{i % 5}" for i in range(40)]
    write(engine, tenant, initial)
    keyword = get_projector("keyword")
    first = Paused(rebuild, engine, keyword, 7)
    writer = Writer(engine, tenant)
    first.start()
    writer.start()
    try:
        assert first.paused.wait(WAIT_S), first.error
        # The library, the HTTP endpoint and the CLI all refuse a second rebuild (and a verify) of keyword now.
        with pytest.raises(ProjectionBusy, match="already running"):
            rebuild(engine, keyword, 7)
        with pytest.raises(ProjectionBusy):
            verify(engine, keyword, 7)
        r = http.post("/v1/projections/keyword/rebuild")
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "ProjectionBusy" and "already running" in r.json()["detail"]
        result = cli("projections", "rebuild", "keyword")
        assert result.returncode == 2 and "already running" in result.stderr, result.stdout + result.stderr
        # Another projection is not affected.
        rebuild(engine, get_projector("activity"), 50)
        while len(writer.written) < 50 and writer.is_alive():
            time.sleep(0.01)
    finally:
        writer.stop.set()
        writer.join(WAIT_S)
        first.release.set()
        first.join(WAIT_S)
    assert writer.error is None and first.error is None, (writer.error, first.error)
    # The rebuild swapped in everything below the log's horizon, the writer's memories included: the tenant's
    # BM25 statistics are those of a replay of what was written (no double counting, no UniqueViolation).
    assert keyword_stats(engine, tenant) == expected_keyword_stats(initial + writer.written)
    # And the lock is free again: the next rebuild runs, and agrees.
    rebuild(engine, keyword, 500)
    assert keyword_stats(engine, tenant) == expected_keyword_stats(initial + writer.written)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'rebuild_%'")).scalar_one() == 0


def _waiting_on(engine: Any, table: str) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(text("""
            SELECT pid, waitstart FROM pg_locks
            WHERE relation = CAST(:t AS regclass) AND mode = 'AccessExclusiveLock' AND NOT granted"""),
                            {"t": table}).all()


def _wait_for(predicate: Any) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_swap_takes_its_locks_in_the_readers_order_and_never_deadlocks_with_bm25(engine, tenant):
    """A reader that has read keyword_stats (the BM25 statement names it first) and then reads keyword_docs in the
    same transaction: the swap waits for it without holding keyword_docs, so the reader goes on and both finish."""
    write(engine, tenant, [f"reader test {tenant} {i}" for i in range(5)])
    swap = Paused(rebuild, engine, get_projector("keyword"), 500)
    swap.start()
    assert swap.paused.wait(WAIT_S)
    with engine.connect() as reader:
        reader.execute(text("SELECT n_docs FROM keyword_stats WHERE tenant = :t"), {"t": tenant}).all()
        swap.release.set()
        _wait_for(lambda: _waiting_on(engine, "keyword_stats"))  # the swap waits for our lock
        # The same transaction reads the other keyword tables (as the rest of a BM25 statement would).
        reader.execute(text("SELECT count(*) FROM keyword_docs WHERE tenant = :t"), {"t": tenant}).scalar_one()
        reader.execute(text("SELECT count(*) FROM keyword_postings WHERE tenant = :t"), {"t": tenant}).scalar_one()
        reader.commit()
    swap.join(WAIT_S)
    assert swap.error is None, swap.error
    assert keyword_stats(engine, tenant)[0] == 5


def test_swap_gives_up_after_its_lock_timeout_and_tries_again(engine, tenant, monkeypatch):
    monkeypatch.setattr(rebuild_module, "SWAP_LOCK_TIMEOUT_MS", 200)
    write(engine, tenant, [f"timeout test {tenant} {i}" for i in range(3)])
    swap = Paused(rebuild, engine, get_projector("keyword"), 500)
    swap.start()
    assert swap.paused.wait(WAIT_S)
    with engine.connect() as reader:
        reader.execute(text("SELECT n_docs FROM keyword_stats WHERE tenant = :t"), {"t": tenant}).all()
        swap.release.set()
        # Two distinct waits of the swap on keyword_stats: it timed out (rolled back), then tried again.
        starts: set[Any] = set()
        _wait_for(lambda: starts.update(w.waitstart for w in _waiting_on(engine, "keyword_stats")) or len(starts) > 1)
        reader.commit()
    swap.join(WAIT_S)
    assert swap.error is None, swap.error
    assert keyword_stats(engine, tenant)[0] == 3


def test_verify_holds_no_transaction_id_while_it_replays(engine, tenant):
    """Projectors read below the oldest running transaction id: a verify in the middle of its replay must not be
    that transaction, or every projector stalls until it ends."""
    write(engine, tenant, [f"verify test {tenant} {i}" for i in range(6)])
    seen: list[bool] = []

    def progress(done: int, total: int) -> None:
        if seen:
            return
        late = memory(f"written while verify runs {tenant}")
        with engine.begin() as conn:
            append(conn, tenant, [late], {"actor": "test"})
        with engine.connect() as conn:
            readable = read_after(conn, Checkpoint(), ["MemoryRecorded"], 1_000_000)
        seen.append(any(e.event_id == late.event_id for e in readable))

    memories = get_projector("memories")
    rebuild(engine, memories, 500)  # a live checkpoint past this test's events (no worker runs here)
    report = verify(engine, memories, batch_size=2, progress=progress)
    assert seen == [True]
    assert report.position >= 0
