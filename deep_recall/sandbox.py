"""The sandbox the model's code runs in: pydantic-monty, an interpreter built for model-written Python, in worker
subprocesses. No file system, network, process, environment or host objects; only the standard modules monty
implements; a heap cap, an execution-time cap per code block, a cap on what a block prints. The live APIs are
host functions the sandbox calls by name (external functions); their exceptions arrive in the sandbox as Python
exceptions the code may catch, and an uncaught one ends the block with its message, never the loop.

A deep recall checks out one session (one worker, its variables kept from block to block) and gives it back at
the end; a nested mini-loop checks out its own. A loop checks out only with a worker reserved for it
(deep_recall/capacity.py), so a checkout never waits on the pool. Each block runs under two clocks: its own
execution-time limit (monty's max_feed_duration_secs) and the deep recall's hard deadline (the worker is killed
when it passes: deep_recall/deadline.py), so a block ends at min(its limit, the time left).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic_monty import CollectString, Monty, MontyCrashedError, MontyError, MontySession, ResourceLimits

from deep_recall.deadline import WorkerWatchdog
from infra.settings import Settings

log = structlog.get_logger(__name__)
CHECKOUT_WAIT_S = 5.0  # a backstop only: a checkout comes with a reserved worker (deep_recall/capacity.py)
_pool: Monty | None = None
_pool_lock = threading.Lock()

# Text utilities, defined inside the sandbox: they run there, under its limits (a model's regular expression
# never runs in the host).
PRELUDE = '''
import re

def grep(text, pattern, context=0, ignore_case=True):
    """Lines of `text` matching the regular expression `pattern`, each with `context` lines either side."""
    lines = text.split("\\n")
    flags = re.IGNORECASE if ignore_case else 0
    rx = re.compile(pattern, flags)
    out = []
    for i, line in enumerate(lines):
        if rx.search(line):
            lo = max(0, i - context)
            hi = min(len(lines), i + context + 1)
            out.append("\\n".join(lines[lo:hi]))
    return out

def chunk(text, size=4000, overlap=0):
    """`text` cut into pieces of `size` characters, consecutive pieces sharing `overlap` characters."""
    step = max(1, size - overlap)
    return [text[i:i + size] for i in range(0, max(1, len(text)), step)]

def get_lines(text, start, end=None):
    """Lines start..end of `text` (1-based, end included)."""
    lines = text.split("\\n")
    return "\\n".join(lines[max(0, start - 1):(end if end is not None else len(lines))])
'''


def pool(settings: Settings) -> Monty:
    """The process's worker pool, started on first use and closed at exit."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Monty(min_processes=1, max_processes=settings.deep.deep_sandbox_workers,
                          checkout_timeout=CHECKOUT_WAIT_S, request_timeout=settings.deep.deep_block_timeout_s + 10)
            _pool.__enter__()
            atexit.register(_close)
        return _pool


def close() -> None:
    """Stop the pool's workers and reap them (the API's shutdown; at exit)."""
    global _pool
    with _pool_lock:
        _close()


def _close() -> None:
    global _pool
    if _pool is not None:
        try:
            _pool.__exit__(None, None, None)
        finally:
            _pool = None


@dataclass
class BlockResult:
    output: str
    error: str | None
    at_deadline: bool = False  # stopped by the deep recall's hard timeout


def _error_text(exc: BaseException) -> str:
    try:
        return exc.display()  # type: ignore[attr-defined]  # on MontyError's subclasses only
    except Exception:  # a crash error has no display
        return f"{type(exc).__name__}: {exc}"


def _overran(exc: MontyError) -> bool:
    """The block hit its own execution-time limit (not a TimeoutError the code raised or a live call answered)."""
    inner = exc.exception()
    return isinstance(inner, TimeoutError) and "time limit exceeded" in str(inner)


class Sandbox:
    """One checked-out sandbox session: context variables bound once, blocks run in order, state kept."""

    def __init__(self, settings: Settings, inputs: dict[str, Any], externals: dict[str, Callable[..., Any]],
                 block_timeout_s: float) -> None:
        self.settings, self.inputs, self.externals = settings, inputs, externals
        self.block_timeout_s = block_timeout_s
        self._session: MontySession | None = None

    def __enter__(self) -> Sandbox:
        return self  # a session is opened by the first block, so a failure to open is that block's error

    def __exit__(self, *exc: object) -> None:
        self._drop()

    def _open(self) -> None:
        limits: ResourceLimits = {"max_feed_duration_secs": self.block_timeout_s,
                  "max_memory": self.settings.deep.deep_sandbox_memory_mb * 1024 * 1024,
                  "max_recursion_depth": 200, "max_suspensions": 10_000, "max_total_sleep_secs": 1.0}
        session = pool(self.settings).checkout(script_name="deep_recall.py", limits=limits)
        session.__enter__()
        try:
            session.feed_run(PRELUDE, inputs=self.inputs, print_callback=CollectString(max_bytes=1024))
        except BaseException:
            with contextlib.suppress(MontyError):
                session.__exit__(None, None, None)
            raise
        self._session = session

    def _drop(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            try:
                session.__exit__(None, None, None)
            except MontyError:
                log.warning("deep_recall.sandbox_exit_failed")

    def run(self, code: str, deadline: float) -> BlockResult:
        """Run one block until it ends, or until `deadline` (time.monotonic()) at the latest; its printed output
        (capped) and its error, if any, as the model will read them."""
        if self._session is None:
            try:
                self._open()
            except (MontyError, TimeoutError) as exc:  # no worker could be checked out, or it died starting
                log.warning("deep_recall.sandbox_open_failed", error=_error_text(exc)[:300])
                return BlockResult("", f"SandboxCrashed: no sandbox could be started ({_error_text(exc)[:300]}); "
                                       "this block did not run")
        session = self._session
        assert session is not None
        out = CollectString(max_bytes=self.settings.deep.deep_print_bytes)
        watchdog = WorkerWatchdog(session.worker_pid, deadline)
        try:
            try:
                session.feed_run(code, external_lookup=self.externals, print_callback=out)
            finally:
                watchdog.disarm()  # at once: a worker that finished in time is never killed
            return BlockResult(out.output, None)
        except MontyCrashedError as exc:
            # The worker died (killed at the deadline, or it overran its own limits): the pool replaces it;
            # this session's variables are lost.
            self._session = None
            with contextlib.suppress(MontyError):
                session.__exit__(None, None, None)
            if watchdog.fired:
                return BlockResult(out.output, "TimeoutError: the deep recall's hard timeout passed while this "
                                               "block was running: it was stopped", at_deadline=True)
            reason = "it overran its time limit" if getattr(exc, "timed_out", False) else str(exc)[:300]
            return BlockResult(out.output, f"SandboxCrashed: the sandbox was restarted ({reason}); variables "
                                           "defined so far are lost, `context` and the functions remain")
        except MontyError as exc:
            if not _overran(exc):
                return BlockResult(out.output, _error_text(exc))
            # Stopped mid-statement at its own time limit: its state may be half-updated, so it is not reused.
            self._drop()
            return BlockResult(out.output, f"{_error_text(exc)}\nSandboxRestarted: after the time limit the sandbox "
                                           "was restarted; variables defined so far are lost, `context` and the "
                                           "functions remain")


__all__ = ["PRELUDE", "BlockResult", "Sandbox", "close", "pool"]
