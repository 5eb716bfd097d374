"""What every HTTP request passes before a route: the loopback rule, plain-text parameters, and its correlation id.

One plain ASGI middleware, not Starlette's `BaseHTTPMiddleware` (`@app.middleware("http")`): each of those runs
the rest of the app in a task of its own behind memory streams and a task group, and three of them were a third of
the API's Python time under a load of governed writes (py-spy, GIL samples). This one only wraps `send`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.context import loopback_refusal
from api.parameters import parameter_problem

CORRELATION_HEADER = "x-correlation-id"
ErrorResponse = Callable[[int, str, object], Response]  # api/app.py's one error shape


class RequestGuard:
    """Refuses, in this order, a request from another machine while API keys are off (403, before its body is
    read) and a NUL or invalid UTF-8 in the path or the query (422); binds the request's correlation id (the
    caller's `X-Correlation-ID`, else a new one) into the logs and `request.state`, and answers it as a header."""

    def __init__(self, app: ASGIApp, error: ErrorResponse) -> None:
        self.app = app
        self.error = error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        correlation_id = headers.get(CORRELATION_HEADER) or str(uuid.uuid4())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[CORRELATION_HEADER] = correlation_id
            await send(message)

        refusal = loopback_refusal(scope.get("client"), headers.get("host"))
        if refusal:
            await self.error(403, "loopback_only", refusal)(scope, receive, send_with_id)
            return
        problem = parameter_problem(scope)
        if problem:
            await self.error(422, "invalid_request", [problem])(scope, receive, send_with_id)
            return
        scope.setdefault("state", {})["correlation_id"] = correlation_id
        structlog.contextvars.bind_contextvars(correlation_id=correlation_id)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            structlog.contextvars.unbind_contextvars("correlation_id")
