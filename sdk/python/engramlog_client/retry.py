"""Retries: exponential backoff with full jitter on 503 (and 429, 502, 504, a retryable 409) and on connection
errors. The one place that decides whether a Call is sent again and after how long (`Retry.wait`); every write
the client sends carries an idempotency key chosen before the first attempt (_calls.py), so a retry of a write
that did land is answered with the original (the server appends nothing twice)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from engramlog_client._calls import Call

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Failures after which the request may be sent again: nothing sent (connect), or no answer read (the write may have
# landed: its idempotency key makes the retry answer the original).
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)  # the request never reached the server


@dataclass(frozen=True)
class Retry:
    attempts: int = 4  # tries in all (1: no retry)
    backoff_s: float = 0.25  # the first wait's ceiling; doubled each retry
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 30.0  # a server's Retry-After is honoured up to this

    def wait(self, call: Call[Any], attempt: int, *, response: httpx.Response | None = None,
             error: httpx.TransportError | None = None) -> float | None:
        """Seconds to wait before sending `call` again after try `attempt` (from 0) was answered `response` or
        ended with `error`; None: no retry (the answer is final, or the error is raised)."""
        if not call.retried or attempt + 1 >= self.attempts:
            return None
        if response is not None:
            return self.delay(attempt, response) if self.retries(response) else None
        if not isinstance(error, RETRYABLE_ERRORS):
            return None
        # A write without an idempotency key is sent again only when it cannot have landed.
        return self.delay(attempt) if call.idempotent or isinstance(error, NOT_SENT) else None

    def retries(self, response: httpx.Response) -> bool:
        if response.status_code in RETRY_STATUSES:
            return True
        # A concurrent append won a race: the same request, sent again, is decided against the new state.
        return response.status_code == 409 and _error_kind(response) == "RetryableConflict"

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before try `attempt + 1` (attempt counts from 0)."""
        after = response.headers.get("retry-after") if response is not None else None
        if after is not None:
            try:
                return min(max(float(after), 0.0), self.max_retry_after_s)
            except ValueError:
                pass  # an HTTP date: fall back to the backoff
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))


NO_RETRY = Retry(attempts=1)


def _error_kind(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None
