"""What the sync and async clients share: the whole exchange of one Call with the server (retries, backoff,
read-your-writes, reading the answer) as a generator without I/O. The clients only drive it: send the request it
yields, or sleep the seconds it yields, and hand back what happened (sync.py, aio.py)."""

from __future__ import annotations

import copy
from collections.abc import Generator
from typing import Any, TypeVar

import httpx

from engramlog_client._calls import Call
from engramlog_client.errors import EngramlogConnectionError, EngramlogError, error_for
from engramlog_client.retry import Retry

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "engramlog-client/0.1.0"
# What the exchange yields: the request to send (httpx.Client.request's keyword arguments), or seconds to wait.
Step = dict[str, Any] | float
# What the driver sends back for a request: the answer, or the transport error it ended with (after a wait: next()).
Outcome = httpx.Response | httpx.TransportError


class ClientBase:
    """Causal consistency, as database client sessions give it: the client remembers the highest position it has
    written (`last_position`) and sends it as `min_position` on every read (recalls, drills, documents, session
    and transcript pages, code files and symbols, memories), so a read sees this client's own writes. Pass
    `min_position=` to a recall to choose another, or `consistent=False` (recalls, `send`) not to wait at all."""

    def __init__(self, api_key: str | None, retry: Retry | None) -> None:
        self.api_key = api_key
        self.retry = retry or Retry()
        self.last_position = 0  # the highest position this client has written

    def _exchange(self, call: Call[T], consistent: bool) -> Generator[Step, Outcome, T]:
        """One Call from its first attempt to its answer. Every attempt sends the same request (the same body, so
        the same idempotency key: the Call chose it when it was made); `Retry.wait` decides whether and how long
        to wait before the next."""
        request = self._request(self._prepared(call, consistent))
        attempt = 0
        while True:
            outcome = yield request
            # Not isinstance(httpx.Response): a client handed in may speak another httpx (Starlette's TestClient
            # answers httpx2 responses); anything that is not the transport error the driver caught is an answer.
            if not isinstance(outcome, BaseException):
                wait = self.retry.wait(call, attempt, response=outcome)
                if wait is None:
                    return self._answer(call, outcome)
            else:
                wait = self.retry.wait(call, attempt, error=outcome)
                if wait is None:
                    raise EngramlogConnectionError(outcome, attempt + 1) from outcome
            yield wait
            attempt += 1

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        headers = {"user-agent": USER_AGENT, **call.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return {"method": call.method, "url": call.path, "json": call.json, "params": call.params,
                "content": call.content, "headers": headers}

    def _prepared(self, call: Call[T], consistent: bool = True) -> Call[T]:
        """A read sends the last written position as min_position: in its JSON body (the recalls), else as a
        query parameter (every GET of a domain's read models). One given already is kept."""
        if not (call.reads_own_writes and consistent and self.last_position):
            return call
        carrier = call.json if call.json is not None else call.params or {}
        if carrier.get("min_position") is not None:
            return call
        call = copy.copy(call)
        if call.json is not None:
            call.json = {**call.json, "min_position": self.last_position}
        else:
            call.params = {**(call.params or {}), "min_position": self.last_position}
        return call

    def _answer(self, call: Call[T], response: httpx.Response) -> T:
        if not (response.is_success or response.status_code in call.ok_statuses):
            raise error_for(response)
        try:
            out = call.parse(response)
        except ValueError as exc:  # not JSON, or not the shape this client knows
            raise EngramlogError(response.status_code, {"error": "unexpected_answer", "detail": str(exc)[:500]},
                                 response.headers.get("x-correlation-id")) from exc
        if call.wrote is not None:
            self._wrote(*call.wrote(out))
        return out

    def _wrote(self, *positions: int | None) -> None:
        self.last_position = max([self.last_position, *(p for p in positions if p is not None)])


def json_or_text(response: httpx.Response) -> Any:
    """`request()`'s answer: parsed JSON, the text when it is not JSON, None when empty."""
    if not response.content:
        return None
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    return response.text
