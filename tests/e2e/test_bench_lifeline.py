"""A bench (and `make fuzz`, which execs bench.fuzz) leaves nothing behind when its caller is killed: it gets a
SIGTERM when its caller exits, and SIGTERM unwinds it through start_stack's cleanup (servers stopped, temp dir
removed); SIGKILLed itself, its servers still die with it (the flag `engramlog up`'s tests cover:
infra/lifeline.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
from conftest import ROOT, wait_until

# The bench, started by a caller that prints the bench's pid and then sleeps (standing for make).
_BENCH = """
import os, time
from bench.common import start_stack
with start_stack():
    print("data_dir=" + os.environ["ENGRAMLOG_DATA_DIR"], flush=True)
    time.sleep(600)
"""
_CALLER = """
import subprocess, sys, time
bench = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=sys.stdout)
print(bench.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _servers(bench: int) -> list[int]:
    return [p.pid for p in psutil.Process(bench).children(recursive=True)]


def _start() -> tuple[subprocess.Popen[bytes], int, Path, list[int]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ENGRAMLOG_DATA_DIR")}
    caller = subprocess.Popen([sys.executable, "-c", _CALLER, _BENCH], cwd=ROOT, stdout=subprocess.PIPE,
                              env={**env, "HF_HUB_OFFLINE": "1"})
    assert caller.stdout is not None
    bench = int(caller.stdout.readline())
    line = b""
    while not line.startswith(b"data_dir="):  # printed once the stack is up (its log lines come first)
        line = caller.stdout.readline()
        assert line, "the bench ended before its stack was up"
    data_dir = Path(line.decode().strip().removeprefix("data_dir="))
    servers = _servers(bench)
    assert len(servers) >= 2 and data_dir.is_dir()  # PostgreSQL (and its backends) and Redis
    return caller, bench, data_dir, servers


def test_a_killed_caller_takes_the_bench_and_its_stack_with_it() -> None:
    caller, bench, data_dir, servers = _start()
    caller.kill()  # SIGKILL, as `kill -9` of make: the bench's parent-death signal is a SIGTERM
    caller.wait(30)
    assert wait_until(lambda: not any(_alive(p) for p in [bench, *servers]), 120)
    assert not data_dir.exists()  # SIGTERM unwound start_stack: its temp dir is removed

