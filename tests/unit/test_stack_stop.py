"""stack/stop.stop_child: the stop signal, the grace period, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys


def _child(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", f"import signal, sys, time\n{code}\nprint('ready', flush=True)\n"
                             "time.sleep(60)"], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_a_child_that_stops_on_its_signal_exits_by_it() -> None:
    from stack.stop import stop_child

    proc = _child("")
    assert stop_child(proc, signal.SIGTERM, grace_s=10)
    assert proc.returncode == -signal.SIGTERM


def test_a_child_that_ignores_its_signal_is_killed_after_the_grace() -> None:
    from stack.stop import stop_child

    proc = _child("signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    assert stop_child(proc, signal.SIGTERM, grace_s=0.2)
    assert proc.returncode == -signal.SIGKILL


def test_a_child_gone_already_is_left_alone() -> None:
    from stack.stop import stop_child

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not stop_child(proc)
