"""Read-your-writes waits hold no thread: many recalls waiting on min_position leave /healthz and every other
route answering, and beyond ENGRAMLOG_MAX_POSITION_WAITERS a waiting recall is a 503 at once.

No worker runs in this module, so a fresh write is projected only when a test catches the read models up itself,
and until then every min_position recall waits.
"""

from __future__ import annotations

import threading

from conftest import wait_until

WAITERS = 45  # more than the threadpool's 40 threads, which froze every sync route when waits held them
CAP = 30


def _catch_up_recall_read_models(engine) -> None:
    """Apply the log to the memory recall's read models in this process: what a worker would do."""
    from api.read_your_writes import read_models_of
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for name in read_models_of(("memories",)):
        catch_up(engine, PROJECTORS[name], 1000)


def test_waiting_recalls_hold_no_thread_and_are_capped(client, engine, monkeypatch):
    import api.read_your_writes
    from infra.settings import get_settings, replace

    # A wait far longer than the test: every admitted waiter is still waiting when /healthz is asked, however
    # slow the machine, and ends only when the read models catch up below.
    settings = replace(get_settings(), min_position_wait_s=120.0, max_position_waiters=CAP)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: settings)
    written = client.post("/v1/memories", json={"content": "Ivy's locker is number 314", "must_keep": True})
    assert written.status_code == 201, written.text
    position = written.json()["position"]

    done: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def wait_recall() -> None:
        r = client.post("/v1/recall", json={"query": "Ivy's locker", "min_position": position})
        with lock:
            done.append(("recall", r.status_code, r.text))

    def capped() -> list[tuple[str, int, str]]:
        with lock:
            return [d for d in done if d[1] == 503 and "already waiting" in d[2]]

    threads = [threading.Thread(target=wait_recall) for _ in range(WAITERS)]
    for t in threads:
        t.start()
    assert wait_until(lambda: len(capped()) == WAITERS - CAP, timeout=60)  # the refused answer at once
    health = client.get("/healthz")
    other = client.get("/v1/events", params={"limit": 1})
    with lock:
        finished_before_health = [d for d in done if d[1] != 503 or "already waiting" not in d[2]]
    _catch_up_recall_read_models(engine)
    for t in threads:
        t.join(120)

    assert health.status_code in (200, 503) and other.status_code == 200  # answered while recalls waited
    assert finished_before_health == []  # every admitted waiter was still waiting then
    answered = [d for d in done if d[1] == 200]
    assert len(capped()) == WAITERS - CAP and len(answered) == CAP, [d[:2] for d in done]
    assert all("314" in d[2] for d in answered)  # each waiter, once caught up, read the write it waited for
    assert all('"error"' in d[2] for d in done if d[1] == 503)  # the JSON error shape


def test_a_caught_up_min_position_does_not_take_a_waiter_slot(client, monkeypatch):
    """A min_position the recall read models have already applied answers at once, without the wait: even with
    no waiter slot free (max_position_waiters 0), recall and recall/multi answer 200, not 503 'already waiting'.
    A position beyond the head is still refused first (422)."""
    import api.read_your_writes
    from infra.settings import get_settings, replace

    settings = replace(get_settings(), max_position_waiters=0)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: settings)
    written = client.post("/v1/memories", json={"content": "Oskar's bike is the green one", "must_keep": True})
    assert written.status_code == 201, written.text
    # Position 0: every read model has applied it (nothing at or below it to apply), whatever the worker does.
    for path in ("/v1/recall", "/v1/recall/multi"):
        r = client.post(path, json={"query": "Oskar's bike", "min_position": 0})
        assert r.status_code == 200, r.text
        beyond = client.post(path, json={"query": "Oskar's bike", "min_position": 2**62})
        assert beyond.status_code == 422 and "beyond the log's head" in beyond.text, beyond.text
    # Not caught up (no worker runs in this module) and no slot: refused at once, as before.
    waiting = client.post("/v1/recall", json={"query": "Oskar's bike", "min_position": written.json()["position"]})
    assert waiting.status_code == 503 and "already waiting" in waiting.text, waiting.text


def test_a_wait_that_runs_out_is_a_503_naming_the_read_models(client, monkeypatch):
    """A slot free but the read models never reaching the position within ENGRAMLOG_MIN_POSITION_WAIT_S: a 503
    naming the read models and the position, in the JSON error shape."""
    import api.read_your_writes
    from infra.settings import get_settings, replace

    settings = replace(get_settings(), min_position_wait_s=0.2, max_position_waiters=CAP)
    monkeypatch.setattr(api.read_your_writes, "get_settings", lambda: settings)
    written = client.post("/v1/memories", json={"content": "Pia's desk is by the window", "must_keep": True})
    assert written.status_code == 201, written.text
    position = written.json()["position"]
    r = client.post("/v1/recall", json={"query": "Pia's desk", "min_position": position})
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "NotCaughtUp" and f"have not reached position {position}" in r.json()["detail"]
