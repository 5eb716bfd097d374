"""The one post-append path (infra/wake.py): every committed append is counted once and wakes the projectors,
recall's hit-log and feedback included; the write side never imports the workers' actors."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

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


def test_recall_counts_its_hit_log_and_wakes_the_projectors(engine, tenant, monkeypatch) -> None:
    remember_all(engine, tenant, ["The deploy script lives in the ops repository under tools/deploy.sh"])
    sent = _Sent(monkeypatch)
    before = _appended_total()
    answer = ask(engine, tenant, "where is the deploy script")
    assert answer.results
    assert _appended_total() == before + 1  # the one RecallServed
    assert settled()  # sent off the answer's path, by the wake-up thread
    assert sent.wake_ups() == 1


def test_background_wake_ups_are_coalesced_and_never_dropped(monkeypatch) -> None:
    from infra.wake import appended

    assert settled()
    sent = _Sent(monkeypatch)
    before = _appended_total()
    for _ in range(50):
        appended(1, background=True)
    assert _appended_total() == before + 50  # counted at once
    assert settled()
    assert 1 <= sent.wake_ups() <= 50  # a burst shares its sends
    after_burst = sent.wake_ups()
    appended(1, background=True)  # an append after the burst gets a send of its own
    assert settled()
    assert sent.wake_ups() == after_burst + 1


def test_feedback_counts_every_event_it_appends_and_wakes(engine, tenant, monkeypatch) -> None:
    from services.feedback import give_feedback

    remember_all(engine, tenant, ["The staging database is reset every Sunday night at 02:00 UTC"])
    answer = ask(engine, tenant, "when is the staging database reset")
    [first, *_] = answer.results
    assert settled()  # the recall's own wake-up is out before counting the feedback's
    sent = _Sent(monkeypatch)
    before = _appended_total()
    give_feedback(engine, tenant, answer.recall_id, [{"memory_id": str(first.memory_id), "verdict": "used"}],
                  {"source": "test", "actor": "test"})
    assert _appended_total() == before + 1
    assert sent.wake_ups() == 1
    # A retry appends nothing: neither counted nor woken.
    give_feedback(engine, tenant, answer.recall_id, [{"memory_id": str(first.memory_id), "verdict": "used"}],
                  {"source": "test", "actor": "test"})
    assert _appended_total() == before + 1
    assert sent.wake_ups() == 1


def test_a_governed_write_is_counted_with_its_decisions_once(engine, tenant, monkeypatch) -> None:
    from services.remember import MemoryInput, remember

    sent = _Sent(monkeypatch)
    before = _appended_total()
    remember(engine, tenant, [MemoryInput(content=f"counted once {uuid.uuid4()}", must_keep=True)], {"source": "test"})
    assert _appended_total() == before + 2  # MemoryRecorded and its MemoryAdmitted
    assert sent.wake_ups() == 1
