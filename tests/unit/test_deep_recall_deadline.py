"""deep_recall/deadline.py: a host call is waited for until the deadline and no longer; its answer or its own
error comes back as it is; a call that is still running at the deadline is a HardTimeout (a TimeoutError)."""

from __future__ import annotations

import threading
import time

import pytest

from deep_recall.deadline import HardTimeout, call_within


def test_a_call_in_time_answers_and_its_own_error_comes_back_as_it_is() -> None:
    assert call_within(time.monotonic() + 30, lambda: 42, "test call") == 42

    def fails() -> None:
        raise LookupError("no such session")

    with pytest.raises(LookupError, match="no such session"):
        call_within(time.monotonic() + 30, fails, "test call")


def test_a_call_still_running_at_the_deadline_is_abandoned() -> None:
    release = threading.Event()
    with pytest.raises(HardTimeout, match="still running at the deep recall's hard timeout"):
        call_within(time.monotonic() + 0.2, release.wait, "blocked call")
    release.set()
    with pytest.raises(TimeoutError, match="has passed"):  # nothing starts once the deadline has passed
        call_within(time.monotonic() - 1, lambda: 1, "late call")
