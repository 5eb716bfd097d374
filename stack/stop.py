"""Stopping a child server: its stop signal, a grace period, then SIGKILL. One way for every child `engramlog up`
runs (PostgreSQL, Redis, the worker, the API)."""

from __future__ import annotations

import signal
import subprocess


def stop_child(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace_s: float = 10) -> bool:
    """Send `sig`, wait up to `grace_s`, then kill. False when it had exited already (nothing was sent)."""
    if proc.poll() is not None:
        return False
    proc.send_signal(sig)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return True


__all__ = ["stop_child"]
