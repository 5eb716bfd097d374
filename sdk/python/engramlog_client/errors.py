"""Errors the client raises: each carries the HTTP status and the server's reason (`error`, `detail`)."""

from __future__ import annotations

from typing import Any

import httpx


class EngramlogError(RuntimeError):
    """The server refused the request. `status` is the HTTP status, `error` the server's kind of refusal
    (invalid_request, NotFound, service_unavailable, ...), `detail` its reason, `body` the whole answer."""

    def __init__(self, status: int, body: Any, correlation_id: str | None = None) -> None:
        self.status = status
        self.body = body
        self.error = body.get("error") if isinstance(body, dict) else None
        self.detail = body.get("detail") if isinstance(body, dict) else body
        self.correlation_id = correlation_id
        reason = self.detail if self.detail not in (None, "") else body
        super().__init__(f"HTTP {status}{f' {self.error}' if self.error else ''}: {reason}")


class AuthError(EngramlogError):
    """401 (missing or unknown API key) or 403 (the key may not do this)."""


class NotFoundError(EngramlogError):
    """404: unknown, another tenant's, or hidden by the privacy policy (the server does not say which)."""


class ConflictError(EngramlogError):
    """409: a version or idempotency conflict, an already superseded memory, feedback already given."""


class PayloadTooLargeError(EngramlogError):
    """413: the content or request body is over the server's limit."""


class InvalidRequestError(EngramlogError):
    """400 or 422: bad input; nothing was written."""


class UnavailableError(EngramlogError):
    """503 after the client's retries: the server is not caught up, busy or its database is down."""


class EngramlogConnectionError(EngramlogError):
    """The server could not be reached (or the connection broke) on every attempt; status is 0."""

    def __init__(self, cause: httpx.TransportError, attempts: int) -> None:
        super().__init__(0, {"error": type(cause).__name__,
                             "detail": f"{cause or type(cause).__name__} (after {attempts} attempt(s))"})
        self.__cause__ = cause


_BY_STATUS: dict[int, type[EngramlogError]] = {400: InvalidRequestError, 401: AuthError, 403: AuthError,
                                                404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
                                                422: InvalidRequestError, 503: UnavailableError}


def error_for(response: httpx.Response) -> EngramlogError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    kind = _BY_STATUS.get(response.status_code, EngramlogError)
    return kind(response.status_code, body, response.headers.get("x-correlation-id"))
