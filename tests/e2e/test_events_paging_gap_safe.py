"""Public paging of the log (GET /v1/events, `engramlog events tail`, `events export`) never skips a late commit.

The race: a transaction takes its position first and commits last. Paging by position passed it (the page after
a later event's position never comes back for it); paging in (transaction id, position) order below the oldest
running transaction lists it once it commits.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from domain.events import NewEvent, memory_stream
from eventstore.append import append

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60


def memory(content: str) -> NewEvent:
    mid = uuid.uuid4()
    return NewEvent("MemoryRecorded", memory_stream(mid), {
        "memory_id": str(mid), "content": content, "kind": "observation", "agent_id": None, "project": None,
        "session_id": None, "tags": [], "metadata": {}}, expected_version=0)


def commit(engine: Any, tenant: str, event: NewEvent) -> int:
    with engine.begin() as conn:
        return append(conn, tenant, [event], {"actor": "test"})[0]


class LateCommit:
    """A transaction that appends (taking its position) now and commits only when told."""

    def __init__(self, engine: Any, tenant: str, event: NewEvent) -> None:
        self.conn = engine.connect()
        self.tx = self.conn.begin()
        self.position = append(self.conn, tenant, [event], {"actor": "test"})[0]

    def commit(self) -> None:
        self.tx.commit()
        self.conn.close()


def test_api_pages_in_log_order_and_lists_a_late_commit(client, engine, tenant):
    first, late, later = memory("first"), memory("takes its position first, commits last"), memory("later")
    commit(engine, tenant, first)
    seen: list[str] = []
    cursor: str | None = None

    def page() -> list[dict[str, Any]]:
        nonlocal cursor
        params = {"limit": 1, "type": "MemoryRecorded", **({"cursor": cursor} if cursor else {})}
        r = client.get("/v1/events", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        seen.extend(e["event_id"] for e in body["events"])
        if body["events"]:
            cursor = body["next_cursor"] or cursor
            assert body["next_cursor"] is None or isinstance(body["next_cursor"], str)
        return body["events"]

    deadline = time.monotonic() + WAIT_S
    while not seen and time.monotonic() < deadline:
        page()
    held = LateCommit(engine, tenant, late)
    later_position = commit(engine, tenant, later)
    assert held.position < later_position
    page()  # what a reader gets while the late transaction is still open: not `later` yet (it would pass `late`)
    held.commit()
    while len(seen) < 3 and time.monotonic() < deadline:
        page()
    assert seen == [str(first.event_id), str(late.event_id), str(later.event_id)]


def test_api_refuses_a_cursor_it_did_not_give(client):
    for bad in ("12", "x-1", "1-2-3", "99999999999999999999-1", "1-\x00"):
        r = client.get("/v1/events", params={"cursor": bad})
        assert r.status_code == 422, (bad, r.text)
    assert client.get("/v1/events", params={"cursor": "1" * 41}).status_code == 422


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _wait_for_ids(lines: queue.Queue[str], printed: list[str], ids: set[str]) -> None:
    import json

    deadline = time.monotonic() + WAIT_S
    while not ids <= set(printed) and time.monotonic() < deadline:
        try:
            printed.append(json.loads(lines.get(timeout=0.5))["event_id"])
        except queue.Empty:
            continue
    assert ids <= set(printed), (ids, printed)


def test_cli_tail_prints_a_late_commit(engine, tenant):
    env = {**os.environ, "COLUMNS": "200"}
    script = Path(sys.executable).parent / "engramlog"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]
    proc = subprocess.Popen([*command, "events", "tail", "--tenant", tenant, "--interval", "0.05"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = _lines(proc)
        printed: list[str] = []
        # The tail is following once it prints a marker written after it started: write one every 0.5 s.
        markers: set[str] = set()
        deadline = time.monotonic() + WAIT_S
        while not markers & set(printed) and time.monotonic() < deadline:
            marker = memory("marker")
            commit(engine, tenant, marker)
            markers.add(str(marker.event_id))
            time.sleep(0.5)
            _drain(lines, printed)
        assert markers & set(printed), printed
        late, later = memory("late"), memory("later")
        held = LateCommit(engine, tenant, late)
        commit(engine, tenant, later)
        time.sleep(0.3)  # the tail polls meanwhile; it must not move past `late` (no assertion on time)
        held.commit()
        _wait_for_ids(lines, printed, {str(late.event_id), str(later.event_id)})
        assert printed.count(str(late.event_id)) == 1 and printed.count(str(later.event_id)) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _drain(lines: queue.Queue[str], printed: list[str]) -> None:
    import json

    while not lines.empty():
        printed.append(json.loads(lines.get())["event_id"])


def test_cli_export_pages_every_event_once(engine, tenant, tmp_path):
    from eventstore.query import EventFilter, query_events

    for i in range(5):
        commit(engine, tenant, memory(f"export {i}"))
    out = tmp_path / "events.jsonl"
    env = {**os.environ, "COLUMNS": "200"}
    script = Path(sys.executable).parent / "engramlog"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]
    result = subprocess.run([*command, "events", "export", "--tenant", tenant, "--output", str(out)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    import json

    exported = [json.loads(line)["event_id"] for line in out.read_text().splitlines()]
    with engine.connect() as conn:
        expected = [str(e.event_id) for e in query_events(conn, EventFilter(tenant), 1000)]
    assert exported == expected and len(exported) == 5
