"""`engramlog up` stops everything on a signal at any moment of start-up, backs off a crashing child, and
neither it nor the CLI trusts a `stack.json` whose `up` is gone."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
from conftest import ROOT, wait_until
from test_stack_up import _free_port, _healthy, _seed_models, _up


def _processes_of(data_dir: Path) -> list[psutil.Process]:
    """Every process started for this data dir: the servers name it on their command line, the workers and the
    API carry it in their environment (ENGRAMLOG_DATA_DIR)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == os.getpid():
                continue
            mentions = str(data_dir) in " ".join(proc.cmdline())
            if not mentions:
                mentions = proc.environ().get("ENGRAMLOG_DATA_DIR") == str(data_dir)
            if mentions and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _child_named(proc: subprocess.Popen[bytes], *needles: str) -> bool:
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for child in children:
        try:
            cmdline = " ".join(child.cmdline())
            if all(needle in cmdline for needle in needles):
                return True
        except psutil.Error:
            continue
    return False


# The PostgreSQL server (initdb's own `postgres --boot` runs have no -k), then the worker (before the API serves).
@pytest.mark.parametrize(("sig", "started"), [(signal.SIGTERM, ("postgres", " -k ")),
                                              (signal.SIGHUP, ("dramatiq", "workers.main"))])
def test_a_signal_during_start_up_leaves_no_child_running(tmp_path: Path, sig: int, started: tuple[str, ...]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    data_dir = tmp_path / "stack"
    proc = _up(data_dir, _free_port(), env)
    try:
        # Start-up is under way: this child is running and the API is not serving yet.
        assert wait_until(lambda: _child_named(proc, *started) or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, proc.stdout.read().decode()[-3000:]  # type: ignore[union-attr]
        proc.send_signal(sig)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_until(lambda: not _processes_of(data_dir), timeout=30), f"left behind: {_processes_of(data_dir)}"
    assert not (data_dir / "stack.json").exists()


def test_a_stop_signal_whose_exception_was_swallowed_still_stops_start_up_and_supervision(tmp_path: Path) -> None:
    """The handler raises Stopping wherever the main thread is, and library code that catches every Exception can
    swallow it (`up` then supervised on, deaf to the next signals: this file's first test hung so, 1 run in 3).
    The flag it sets is asked between the steps: the health wait and the supervision loop raise Stopping."""
    from infra.settings import get_settings, replace
    from stack.up import Stack, Stopping

    stack = Stack(replace(get_settings(), data_dir=tmp_path, host="127.0.0.1", api_keys={}))
    stack.stopping = True  # what the handler sets before it raises
    with pytest.raises(Stopping):
        stack._wait_healthy()  # noqa: SLF001 - the step start-up is in when the worker has started
    with pytest.raises(Stopping):
        stack.wait()


def _api_processes(started: list[psutil.Process]) -> list[psutil.Process]:
    """The processes serving the API: uvicorn itself, or the ones its supervisor spawned when it runs several."""
    uvicorn = [p for p in started if "uvicorn" in " ".join(p.cmdline())]
    spawned = [p for p in started if "spawn_main" in " ".join(p.cmdline()) and p.ppid() in {u.pid for u in uvicorn}]
    return spawned or uvicorn


@pytest.mark.parametrize("api_processes", [1, 2])
def test_a_sigkilled_up_takes_every_child_with_it(tmp_path: Path, api_processes: int) -> None:
    """`up` SIGKILLed by its caller (no handler runs): PostgreSQL, Redis, the worker (master and worker processes)
    and the API (uvicorn, and the processes its supervisor runs with --api-processes) die with it, by their
    parent-death signal (infra/lifeline.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["ENGRAMLOG_API_PROCESSES"] = str(api_processes)
    data_dir = tmp_path / "stack"
    _seed_models(data_dir)
    port = _free_port()
    proc = _up(data_dir, port, env)
    try:
        assert wait_until(lambda: _healthy(port) or proc.poll() is not None, timeout=180)
        assert _healthy(port), proc.stdout.read().decode()[-3000:] if proc.poll() is not None else "not healthy"
        started = _processes_of(data_dir)
        names = " ".join(" ".join(p.cmdline()) for p in started)
        assert all(n in names for n in ("postgres", "redis-server", "dramatiq", "uvicorn")), names
        assert len(_api_processes(started)) == api_processes, names
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:  # each on any of them
            written = http.post("/v1/memories", json={"content": "the stack remembers kingfishers", "agent_id": "k"})
            assert written.status_code == 201
            answer = http.post("/v1/recall", json={"query": "kingfishers", "agent_id": "k",
                                                   "min_position": written.json()["position"]})
            assert answer.status_code == 200 and answer.json()["results"][0]["content"].endswith("kingfishers")
        killed_at = time.monotonic()
        proc.kill()
        proc.wait(30)
        assert wait_until(lambda: not _processes_of(data_dir), timeout=20), f"left behind: {_processes_of(data_dir)}"
        print(f"{len(started)} processes gone {time.monotonic() - killed_at:.2f} s after SIGKILL of up")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for left in _processes_of(data_dir):  # never leave them to the next test
            with contextlib.suppress(psutil.Error):
                left.kill()


def test_a_child_that_keeps_crashing_is_restarted_with_a_growing_bounded_delay(tmp_path: Path, monkeypatch) -> None:
    from infra.settings import get_settings, replace
    from stack.up import ChildRestarts, Stack

    stack = Stack(replace(get_settings(), data_dir=tmp_path, host="127.0.0.1", api_keys={}))
    monkeypatch.setattr(stack, "commands", lambda: {"worker": [sys.executable, "-c", "raise SystemExit(3)"]})
    # The test's own clock, handed to every start and pass: a run's length must not depend on the machine's uptime.
    now = 1000.0
    first = stack.start_child("worker", now)
    delays, pids = [], {first.pid}
    try:
        for _ in range(9):
            stack.children["worker"].wait(30)
            stack.supervise(now)
            delay = stack.restart_at["worker"] - now
            delays.append(delay)
            stack.supervise(now + delay / 2)  # not yet
            assert "worker" in stack.restart_at
            now += delay
            stack.supervise(now)  # due: started again
            assert "worker" not in stack.restart_at
            pids.add(stack.children["worker"].pid)
    finally:
        stack.children["worker"].wait(30)
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert len(pids) == 10

    restarts = ChildRestarts(base_s=1, max_s=60, stable_s=60)
    assert [restarts.exited(ran_s=0.1) for _ in range(3)] == [1, 2, 4]
    assert restarts.exited(ran_s=600) == 1  # it ran long enough: a new crash starts the back-off over


def test_up_removes_a_stale_state_file(tmp_path: Path) -> None:
    from infra.settings import get_settings, replace
    from stack.up import Stack

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "stack.json").write_text(json.dumps({"pid": dead.pid, "api_url": "http://127.0.0.1:1"}))
    stack = Stack(replace(get_settings(), data_dir=tmp_path, host="127.0.0.1", api_keys={}))
    stack._take_lock()
    try:
        assert not (tmp_path / "stack.json").exists()
    finally:
        stack.stop()


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ENGRAMLOG_API_KEY": "secret-key-of-the-user"}
    env.pop("ENGRAMLOG_DATA_DIR", None)
    return subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(data_dir), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_cli_refuses_a_state_file_it_cannot_trust(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = tmp_path / "stack.json"

    state.write_text(json.dumps({"pid": dead.pid, "api_url": "http://127.0.0.1:1"}))
    out = _cli(tmp_path, "recall", "anything")
    assert out.returncode == 2 and "stale" in out.stderr and str(dead.pid) in out.stderr, out.stderr

    # A live pid that holds the data dir's lock, as a running `up` does; the API on another machine.
    with open(tmp_path / "up.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        state.write_text(json.dumps({"pid": os.getpid(), "api_url": "http://203.0.113.9:8000"}))
        out = _cli(tmp_path, "recall", "anything")
        assert out.returncode == 2 and "another machine" in out.stderr, out.stderr
        assert "secret-key-of-the-user" not in out.stderr + out.stdout

        # Trusted (live, locked, local): the CLI goes on and only then finds no API listening there.
        state.write_text(json.dumps({"pid": os.getpid(), "api_url": f"http://127.0.0.1:{_free_port()}"}))
        out = _cli(tmp_path, "recall", "anything")
        assert out.returncode == 2 and "cannot reach the API" in out.stderr, out.stderr

    # The same live pid without the lock: pid reused by another process, the stack is gone.
    out = _cli(tmp_path, "recall", "anything")
    assert out.returncode == 2 and "stale" in out.stderr, out.stderr
