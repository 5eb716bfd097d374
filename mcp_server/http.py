"""/mcp on the API: the tools as streamable HTTP (stateless, JSON answers), behind the API's own bearer-key auth.

A request to /mcp is authenticated as every route is (api/context.py caller: 401 for a missing or unknown key,
before any MCP processing); each tool then calls the app in-process (httpx ASGITransport) with the caller's own
key, so validation, the tenant scope and the privacy gate are exactly the HTTP API's. Stateless (any API process
answers any call), so read-your-writes across calls is the caller's: `remember` answers a `position`, `recall`
takes it as `min_position`. (Over stdio one client serves the session and sends it by itself.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from engramlog_client import AsyncEngramlog
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.context import caller
from mcp_server.tools import build_server

MCP_PATH = "/mcp"


class McpEndpoint:
    """The ASGI app at /mcp: auth, then the MCP session manager of the running lifespan."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.server = build_server(self._client_for)
        self.managers: list[StreamableHTTPSessionManager] = []  # one per running lifespan (a manager runs once)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self.server._lowlevel_server, stateless=True, json_response=True,
            # The API's own middleware answers for the Host header (keyless: loopback names only) and keys.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        async with manager.run():
            self.managers.append(manager)
            try:
                yield
            finally:
                self.managers.remove(manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            caller(request, request.headers.get("authorization"), None)
        except HTTPException as exc:
            await JSONResponse({"error": "http_error", "detail": exc.detail}, status_code=exc.status_code,
                               headers=exc.headers)(scope, receive, send)
            return
        if not self.managers:
            await JSONResponse({"error": "service_unavailable", "detail": "the MCP endpoint is not started"},
                               status_code=503)(scope, receive, send)
            return
        await self.managers[-1].handle_request(scope, receive, send)

    @asynccontextmanager
    async def _client_for(self, ctx: Context) -> AsyncIterator[AsyncEngramlog]:
        headers: Any = ctx.headers or {}
        authorization = headers.get("authorization") or ""
        _, _, key = authorization.partition(" ")
        transport = httpx.ASGITransport(app=self.app)  # the caller's request, in-process, through the whole app
        async with AsyncEngramlog("http://127.0.0.1", api_key=key or None, transport=transport) as client:
            yield client


def mount_mcp(app: FastAPI) -> McpEndpoint:
    """Serve the MCP tools at /mcp on `app`, their session manager running with the app's lifespan."""
    endpoint = McpEndpoint(app)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        # The app's own start-up first: its refusals (a socket exposed without keys) come out as themselves, not
        # inside the MCP session manager's task group.
        async with inner(a) as state, endpoint.lifespan():
            yield state

    app.router.lifespan_context = lifespan
    app.router.routes.append(Route(MCP_PATH, endpoint, methods=["GET", "POST", "DELETE"]))
    return endpoint
