"""The HTTP API: routes, correlation ids, and one error shape for every refusal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.guard import RequestGuard
from api.routes import code as code_routes
from api.routes import dead_letters, events, events_import, feedback, memories, operations, policy, positions, recall
from api.routes import deep_recall as deep_recall_routes
from api.routes import forget as forget_routes
from api.routes import imports as import_routes
from api.routes import knowledge as knowledge_routes
from api.routes import sessions as session_routes
from api.routes import transcripts as transcript_routes
from console.routes import mount as mount_console
from deep_recall import sandbox
from deep_recall.deadline import stop_on_signals
from domain.errors import DomainError
from infra.db_errors import is_unavailable
from infra.embedding import get_embedder
from infra.logging import configure_logging
from infra.loopback import listening_hosts, refuse_exposed_without_keys
from infra.settings import get_settings
from mcp_server.http import mount_mcp
from recall.funnel import rerank

log = structlog.get_logger(__name__)
MAX_BODY_BYTES = 64 * 1024 * 1024


def _printable(detail: object) -> object:
    """A detail that can be sent as UTF-8 JSON: a refused input's lone surrogates are escaped, not re-raised."""
    if isinstance(detail, str):
        return detail.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(detail, list | tuple):
        return [_printable(d) for d in detail]
    if isinstance(detail, dict):
        return {str(_printable(k)): _printable(v) for k, v in detail.items()}
    return detail


def _error(status: int, kind: str, detail: object) -> JSONResponse:
    return JSONResponse({"error": kind, "detail": _printable(detail)}, status_code=status)


def create_app() -> FastAPI:
    settings = get_settings()
    configure_logging(settings.stack.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A socket bound before start-up (inherited, --workers) is checked here; api/main.py checks the command line.
        refuse_exposed_without_keys(bool(settings.api.api_keys), listening_hosts())
        # Load (and on first start export) the query-time models before the first recall, not during it.
        get_embedder(settings.embedding.embedding_model).warm()
        rerank.warm(settings)
        stop_on_signals()  # a stop ends running deep recalls at once (deep_recall/deadline.py)
        yield
        sandbox.close()  # the sandbox workers stopped and reaped

    # max_body_size: a body over the limit is refused while it arrives (chunked too), not by Content-Length alone.
    app = FastAPI(title="Engramlog", version="0.1.0", lifespan=lifespan, max_body_size=MAX_BODY_BYTES,
                  description="Event-sourced long-term memory for LLM agents")
    for module in (events, memories, recall, positions, feedback, operations, dead_letters, policy):
        app.include_router(module.router)
    app.include_router(knowledge_routes.router)  # the knowledge library (api/routes/knowledge.py)
    app.include_router(code_routes.router)  # code intelligence (api/routes/code.py)
    app.include_router(session_routes.router)  # session messages and the resume context (api/routes/sessions.py)
    app.include_router(deep_recall_routes.router)  # deep recall and blind spots (api/routes/deep_recall.py)
    app.include_router(transcript_routes.router)  # transcripts (api/routes/transcripts.py)
    app.include_router(forget_routes.router)  # forgetting a subject (api/routes/forget.py, docs/forget.md)
    app.include_router(import_routes.router)  # chat exports imported (api/routes/imports.py)
    app.include_router(events_import.router)  # an export of the log restored (api/routes/events_import.py)

    mount_console(app)  # the operators' and analysts' pages at /console, same keys (console/)
    mount_mcp(app)  # the MCP tools as streamable HTTP at /mcp, same bearer keys (mcp_server/http.py)
    app.add_middleware(RequestGuard, error=_error)  # loopback, plain-text parameters, correlation id

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

    @app.exception_handler(SQLAlchemyError)
    @app.exception_handler(psycopg.Error)
    async def database_error(request: Request, exc: Exception) -> JSONResponse:
        # Down, restarting, out of connections, a statement or lock timeout: a JSON 503, as the README promises.
        if is_unavailable(exc):
            log.warning("request.database_unavailable", error=type(exc).__name__, detail=str(exc)[:300])
            return _error(503, "service_unavailable", "the database is unavailable or busy; retry")
        log.error("request.database_error", error=type(exc).__name__, detail=str(exc)[:300])
        return _error(500, "internal_error", "a database statement failed")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _error(exc.status_code, "payload_too_large" if exc.status_code == 413 else "http_error", exc.detail)
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    return app
