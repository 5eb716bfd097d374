"""The one post-append path (infra/wake.py): every committed append is counted once and leaves a wake-up of the
projectors pending after it (sent by this append, or one already queued and not yet started: at most one waits in
the queue), recall's hit-log and feedback included; the write side never imports the workers' actors."""

from __future__ import annotations

import ast
import time
import uuid
from pathlib import Path

import pytest
from conftest import wait_until
from funnel_support import ask, remember_all

from infra.wake import settled

ROOT = Path(__file__).resolve().parents[2]
# Layers below the workers: they reach the actors only through infra/wake.py's message.
BELOW_WORKERS = ("domain", "eventstore", "infra", "services", "projections", "recall", "deep_recall", "mcp_server")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_no_layer_below_the_workers_imports_them() -> None:
    offenders = [f"{p.relative_to(ROOT)}: {m}" for layer in BELOW_WORKERS for p in sorted((ROOT / layer).rglob("*.py"))
                 for m in _imports(p) if m == "workers" or m.startswith("workers.")]
    assert offenders == []


class _Sent:
    """Records the messages the real broker enqueues (and enqueues them: the real Redis gets them)."""

    def __init__(self, monkeypatch) -> None:
        import infra.wake

        self.messages: list[object] = []
        real = infra.wake.broker.enqueue

        def enqueue(message, **kwargs):
            self.messages.append(message)
            return real(message, **kwargs)

        monkeypatch.setattr(infra.wake.broker, "enqueue", enqueue)

    def wake_ups(self) -> int:
        from infra.wake import PROJECTIONS_QUEUE, RUN_PROJECTIONS_ACTOR

        return sum(1 for m in self.messages
                   if m.queue_name == PROJECTIONS_QUEUE and m.actor_name == RUN_PROJECTIONS_ACTOR)  # type: ignore[attr-defined]


def _appended_total() -> float:
    from infra.metrics import EVENTS_APPENDED

    return EVENTS_APPENDED._value.get()


def _queued() -> int:
    """Wake-up messages in Redis that no worker has taken (the test session's own Redis)."""
    from infra.broker import broker
    from infra.wake import PROJECTIONS_QUEUE

    return int(broker.client.llen(f"{broker.namespace}:{PROJECTIONS_QUEUE}"))  # type: ignore[attr-defined]


def _flagged() -> bool:
    from infra.broker import redis_client
    from infra.wake import WAKE_PENDING_KEY

    return bool(redis_client.exists(WAKE_PENDING_KEY))


def _pending() -> bool:
    """A wake-up is pending: flagged, with a message queued behind the flag (no worker runs in these tests unless
    one is started)."""
    return _flagged() and _queued() >= 1


@pytest.fixture
def none_pending(monkeypatch) -> None:
    """As a worker's actor leaves it when it starts: no wake-up pending. The flag lives long enough that a slow
    machine's burst stays under one flag."""
    import infra.wake

    monkeypatch.setattr(infra.wake, "WAKE_PENDING_TTL_S", 120)
    assert settled()  # no background send of an earlier test lands after the clearing
    infra.wake.wake_taken()
    assert not _flagged()


def _remember(engine, tenant: str, text: str) -> int:
    from services.remember import MemoryInput, remember

    [done] = remember(engine, tenant, [MemoryInput(content=f"{text} {uuid.uuid4()}", must_keep=True)],
                      {"source": "test"})
    return int(done.position)


def test_recall_counts_its_hit_log_and_wakes_the_projectors(engine, tenant, monkeypatch, none_pending) -> None:
    remember_all(engine, tenant, ["The deploy script lives in the ops repository under tools/deploy.sh"])
    import infra.wake

    infra.wake.wake_taken()  # the write's own wake-up taken: the recall's hit-log sends the next
    sent = _Sent(monkeypatch)
    before = _appended_total()
    answer = ask(engine, tenant, "where is the deploy script")
    assert answer.results
    assert _appended_total() == before + 1  # the one RecallServed
    assert settled()  # sent off the answer's path, by the wake-up thread
    assert sent.wake_ups() == 1 and _pending()


def test_background_wake_ups_are_coalesced_and_never_dropped(monkeypatch, none_pending) -> None:
    from infra.wake import appended, wake_taken

    sent = _Sent(monkeypatch)
    before = _appended_total()
    for _ in range(50):
        appended(1, background=True)
    assert _appended_total() == before + 50  # counted at once
    assert settled()
    assert sent.wake_ups() == 1 and _pending()  # a burst shares one pending wake-up
    wake_taken()  # a worker starts it
    appended(1, background=True)  # an append after that start gets a send of its own
    assert settled()
    assert sent.wake_ups() == 2 and _pending()


def test_a_recalls_wake_up_is_sent_after_the_hit_log_delay_for_every_recall_of_it(monkeypatch, none_pending) -> None:
    """ENGRAMLOG_HITLOG_WAKE_DELAY_MS later, one send for every hit-log append of that span (0: at once)."""
    from infra.settings import get_settings
    from infra.wake import appended

    sent = _Sent(monkeypatch)
    monkeypatch.setenv("ENGRAMLOG_HITLOG_WAKE_DELAY_MS", "1500")
    get_settings.cache_clear()
    try:
        appended(1, background=True)
        time.sleep(0.3)
        appended(1, background=True)  # within the first one's span
        assert sent.wake_ups() == 0 and not _flagged()  # not yet: the delay runs
        assert settled()
        assert sent.wake_ups() == 1 and _pending()
    finally:
        monkeypatch.delenv("ENGRAMLOG_HITLOG_WAKE_DELAY_MS")
        get_settings.cache_clear()
    assert get_settings().projections.hitlog_wake_delay_ms == 250  # the default


def test_feedback_counts_every_event_it_appends_and_wakes(engine, tenant, monkeypatch, none_pending) -> None:
    from infra.wake import wake_taken
    from services.feedback import give_feedback

    remember_all(engine, tenant, ["The staging database is reset every Sunday night at 02:00 UTC"])
    answer = ask(engine, tenant, "when is the staging database reset")
    [first, *_] = answer.results
    assert settled()  # the recall's own wake-up is out before counting the feedback's
    wake_taken()
    sent = _Sent(monkeypatch)
    before = _appended_total()
    give_feedback(engine, tenant, answer.recall_id, [{"memory_id": str(first.memory_id), "verdict": "used"}],
                  {"source": "test", "actor": "test"})
    assert _appended_total() == before + 1
    assert sent.wake_ups() == 1 and _pending()
    # A retry appends nothing: neither counted nor woken.
    wake_taken()
    give_feedback(engine, tenant, answer.recall_id, [{"memory_id": str(first.memory_id), "verdict": "used"}],
                  {"source": "test", "actor": "test"})
    assert _appended_total() == before + 1
    assert sent.wake_ups() == 1 and not _flagged()


def test_a_governed_write_is_counted_with_its_decisions_once(engine, tenant, monkeypatch, none_pending) -> None:
    from services.remember import MemoryInput, remember

    sent = _Sent(monkeypatch)
    before = _appended_total()
    remember(engine, tenant, [MemoryInput(content=f"counted once {uuid.uuid4()}", must_keep=True)], {"source": "test"})
    assert _appended_total() == before + 2  # MemoryRecorded and its MemoryAdmitted
    assert sent.wake_ups() == 1 and _pending()
    # The next write finds that wake-up pending, not yet started: counted, and covered by it.
    remember(engine, tenant, [MemoryInput(content=f"counted too {uuid.uuid4()}", must_keep=True)], {"source": "test"})
    assert _appended_total() == before + 4
    assert sent.wake_ups() == 1 and _pending()


def test_a_burst_leaves_one_wake_up_queued_until_the_actor_starts_it(engine, tenant, monkeypatch,
                                                                     none_pending) -> None:
    """No worker takes messages: a burst of appends queues one wake-up, not one each. The actor clears the flag
    before it reads the log (the catch-up sees it cleared), and the next append sends again."""
    import workers.actors

    sent, queued, before = _Sent(monkeypatch), _queued(), _appended_total()
    for i in range(12):
        _remember(engine, tenant, f"burst write {i}")
    assert _appended_total() == before + 24  # each write and its decision
    assert sent.wake_ups() == 1 and _queued() == queued + 1 and _flagged()

    seen: list[bool] = []
    monkeypatch.setattr(workers.actors, "catch_up_all", lambda: seen.append(_flagged()) or 0)
    workers.actors.run_projections()  # the actor's own body, in this process
    assert seen == [False]  # cleared before the catch-up reads anything
    _remember(engine, tenant, "after the actor started")
    assert sent.wake_ups() == 2 and _queued() == queued + 2 and _pending()


def test_an_append_committed_while_a_catch_up_runs_gets_a_catch_up_after_it(engine, tenant, monkeypatch,
                                                                             none_pending) -> None:
    """The append lands after the catch-up has read the log (it may miss it): the flag the actor cleared at its
    start is set again, so a wake-up is queued behind it."""
    import workers.actors

    _remember(engine, tenant, "before the catch-up")
    sent, queued = _Sent(monkeypatch), _queued()
    assert _flagged()

    def catch_up_then_an_append() -> int:
        _remember(engine, tenant, "during the catch-up")  # committed after the catch-up's reads, say
        return 0

    monkeypatch.setattr(workers.actors, "catch_up_all", catch_up_then_an_append)
    workers.actors.run_projections()
    assert sent.wake_ups() == 1 and _queued() == queued + 1 and _pending()


def test_a_worker_projects_a_paced_burst_on_wake_ups_alone(engine, tenant, start_worker) -> None:
    """A real worker whose poll is an hour away: appends before, during and after its catch-ups all reach every
    projection through the coalesced wake-ups, and the queue holds at most one once it has caught up."""
    from projections.registry import PROJECTORS
    from projections.runner import has_reached

    start_worker(extra_env={"ENGRAMLOG_POLL_INTERVAL_S": "3600", "ENGRAMLOG_SCHEDULER_ENABLED": "0"})
    positions = []
    for i in range(30):
        positions.append(_remember(engine, tenant, f"paced write {i}"))
        time.sleep(0.1)  # the worker takes wake-ups meanwhile

    def reached() -> bool:
        with engine.connect() as conn:
            return all(has_reached(conn, p, positions[-1]) for p in PROJECTORS.values())

    assert wait_until(reached, timeout=180, interval=0.2)
    assert wait_until(lambda: _queued() <= 1, timeout=30)
