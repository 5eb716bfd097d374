"""The HTTP API: routes, correlation ids, and one error shape for every refusal."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.context import loopback_refusal
from api.routes import events, feedback, memories, operations, positions, recall
from domain.errors import DomainError
from infra.embedding import get_embedder
from infra.logging import configure_logging
from infra.loopback import listening_hosts, refuse_exposed_without_keys
from infra.settings import get_settings
from recall.funnel import rerank

log = structlog.get_logger(__name__)
MAX_BODY_BYTES = 64 * 1024 * 1024


def _error(status: int, kind: str, detail: object) -> JSONResponse:
    return JSONResponse({"error": kind, "detail": detail}, status_code=status)


def create_app() -> FastAPI:
    settings = get_settings()
    configure_logging(settings.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A socket bound before start-up (inherited, --workers) is checked here; api/main.py checks the command line.
        refuse_exposed_without_keys(bool(settings.api_keys), listening_hosts())
        # Load (and on first start export) the query-time models before the first recall, not during it.
        get_embedder(settings.embedding_model).warm()
        rerank.warm(settings)
        yield

    app = FastAPI(title="Engramlog", version="0.1.0", lifespan=lifespan,
                  description="Event-sourced long-term memory for LLM agents")
    for module in (events, memories, recall, positions, feedback, operations):
        app.include_router(module.router)

    @app.middleware("http")
    async def correlation(request: Request, call_next):  # type: ignore[no-untyped-def]
        correlation_id = request.headers.get("x-correlation-id") or str(uuid.uuid4())
        request.state.correlation_id = correlation_id
        structlog.contextvars.bind_contextvars(correlation_id=correlation_id)
        try:
            length = int(request.headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                return _error(413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes")
            response = await call_next(request)
        finally:
            structlog.contextvars.unbind_contextvars("correlation_id")
        response.headers["x-correlation-id"] = correlation_id
        return response

    @app.middleware("http")
    async def loopback_only(request: Request, call_next):  # type: ignore[no-untyped-def]
        # Outermost: a refused request reads no body. Keys off → this machine only, by peer and by Host (rebinding).
        refusal = loopback_refusal(request.scope.get("client"), request.headers.get("host"))
        if refusal:
            return _error(403, "loopback_only", refusal)
        return await call_next(request)

    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> JSONResponse:
        log.info("request.refused", error=type(exc).__name__, detail=str(exc))
        return _error(exc.status_code, type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "the request body is not valid JSON")
        reasons = [f"{'.'.join(str(p) for p in e['loc'] if p != 'body')}: {e['msg']}" for e in errors]
        return _error(422, "invalid_request", reasons)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _error(exc.status_code, "http_error", exc.detail)
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    return app
