"""What the sync and async clients share: auth headers, read-your-writes position tracking, reading answers."""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import httpx

from engramlog_client._calls import Call
from engramlog_client.errors import EngramlogError, error_for
from engramlog_client.retry import Retry

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "engramlog-client/0.1.0"


class ClientBase:
    """Causal consistency, as database client sessions give it: the client remembers the highest position it has
    written (`last_position`) and sends it as `min_position` on its next recall, so a recall sees this client's
    own writes. Pass `min_position=` to choose another, or `consistent=False` not to wait at all."""

    def __init__(self, api_key: str | None, retry: Retry | None) -> None:
        self.api_key = api_key
        self.retry = retry or Retry()
        self.last_position = 0  # the highest position this client has written

    def _headers(self, call: Call[Any]) -> dict[str, str]:
        headers = {"user-agent": USER_AGENT, **call.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def _prepared(self, call: Call[T], consistent: bool = True) -> Call[T]:
        if not (call.reads_own_writes and consistent and self.last_position and call.json is not None):
            return call
        if call.json.get("min_position") is not None:
            return call
        call = copy.copy(call)
        call.json = {**(call.json or {}), "min_position": self.last_position}
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

    def _retries(self, call: Call[Any], attempt: int) -> bool:
        return call.retried and attempt + 1 < self.retry.attempts
