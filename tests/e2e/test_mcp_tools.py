"""The MCP server with the official SDK's own clients, over both transports: streamable HTTP at /mcp on a real
uvicorn server (same bearer keys as the API; a wrong key is refused) and stdio (`engramlog mcp` as a subprocess
speaking HTTP to that server). List the tools, call each one, and the service's refusals as tool errors."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import sdk_support
from engramlog_client import Engramlog
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp_server.tools import TOOL_NAMES

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker
ENGRAMLOG = str(Path(sys.executable).parent / "engramlog")


def _http(url: str, key: str) -> AbstractAsyncContextManager[Any]:
    return streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=120))


def _stdio(url: str, key: str) -> AbstractAsyncContextManager[Any]:
    return stdio_client(StdioServerParameters(command=ENGRAMLOG, args=["mcp", "--api-url", url],
                                              env={"ENGRAMLOG_API_KEY": key, "HF_HUB_OFFLINE": "1"}))


async def _call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


async def _refused(session: ClientSession, name: str, **arguments: Any) -> str:
    result = await session.call_tool(name, arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


async def _exercise(transport: AbstractAsyncContextManager[Any], tagged: str, stdio: bool) -> None:
    async with transport as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == set(TOOL_NAMES)
        for tool in tools.values():  # typed schemas an agent can act on
            assert tool.description and tool.input_schema["type"] == "object"
            assert all(p.get("description") for p in tool.input_schema["properties"].values()), tool.name

        agent = f"agent-{tagged}"
        written = await _call(session, "remember", content=f"Mara's locker code is 4417 ({tagged})", agent_id=agent,
                              must_keep=True)
        assert written["disposition"] == "active"
        # Over stdio the session's one client sends its last write as min_position; over /mcp the caller does.
        wait = {} if stdio else {"min_position": written["position"]}
        found = await _call(session, "recall", query="what is Mara's locker code?", agent_id=agent, **wait)
        assert found["results"][0]["memory_id"] == written["memory_id"]
        given = await _call(session, "feedback", recall_id=found["recall_id"],
                            items=[{"memory_id": written["memory_id"], "verdict": "used"}])
        assert given["items"] == 1
        newer = await _call(session, "supersede", memory_id=written["memory_id"],
                            content=f"Mara's locker code is 9020 ({tagged})", reason="she changed it")
        assert newer["supersedes"] == written["memory_id"]
        multi = await _call(session, "recall_multi", query="Mara locker code", agent_id=agent,
                            domains=["memories"], min_position=newer["position"])
        assert multi["buckets"][0]["results"][0]["memory_id"] == newer["memory_id"]
        # The read tools take min_position as their routes do; over stdio the client's last write is the default.
        chain = await _call(session, "history", memory_id=written["memory_id"],
                            **({} if stdio else {"min_position": newer["position"]}))
        assert chain["current"] == newer["memory_id"]

        section = await _drilled(session, tagged)
        assert section["text"].startswith("## Lockers") and "level -1" in section["text"]

        session_id = f"chat-{tagged}"
        appended = await _call(session, "sessions_append", session_id=session_id, agent_id=agent, messages=[
            {"role": "user", "content": "Where are the lockers?"},
            {"role": "assistant", "content": "On level -1, next to the showers."}])
        assert len(appended["message_ids"]) == 2
        resumed = await _call(session, "resume_context", session_id=session_id,
                              **({} if stdio else {"min_position": appended["position"]}))
        assert "next to the showers" in resumed["context"]

        deep = await session.call_tool("deep_recall", {"question": "what is Mara's locker code?",
                                                       "agent_id": agent, "min_position": appended["position"]})
        if deep.is_error:  # a thin call: the route's own refusal, carried as the service's message
            assert deep.content[0].text.startswith("Engramlog refused the call (HTTP")  # type: ignore[union-attr]
        else:
            assert "recall_id" in deep.structured_content  # type: ignore[operator]

        too_long = await _refused(session, "recall", query="x" * 5000)
        assert "HTTP 422" in too_long and "query" in too_long
        unknown = await _refused(session, "history", memory_id=str(uuid.uuid4()))
        assert "HTTP 404" in unknown and "no memory" in unknown
        # The tools' schemas are the routes': what the API refuses, the tool refuses before calling it.
        developer = await _refused(session, "sessions_append", session_id=session_id,
                                   messages=[{"role": "developer", "content": "hi"}])
        assert "role" in developer and "HTTP" not in developer
        small = await _refused(session, "resume_context", session_id=session_id, budget_tokens=1)
        assert "budget_tokens" in small and "20000" in small and "HTTP" not in small


async def _drilled(session: ClientSession, tagged: str) -> dict[str, Any]:
    """recall_multi over the knowledge library until the document's section is projected, then get_section."""
    deadline = time.monotonic() + 90
    while True:
        out = await _call(session, "recall_multi", query="where are the lockers", domains=["knowledge"])
        hits = [r for r in out["buckets"][0]["results"] if r["handle"].get("path") == f"lockers-{tagged}.md"]
        if hits or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    handle = hits[0]["handle"]
    return await _call(session, "get_section", path=handle["path"], heading_path=handle["heading_path"],
                       content_hash=handle.get("content_hash"), recall_id=out["recall_id"])


@pytest.fixture
def library(live_server, tenant_key):
    def put(tagged: str) -> None:
        with Engramlog(live_server.url, api_key=tenant_key) as sdk:
            sdk.put_document(f"lockers-{tagged}.md", "# Gym\n\n## Lockers\nThe lockers are on level -1.\n")
    return put


def test_streamable_http_at_mcp_every_tool(live_server, tenant_key, module_worker, library) -> None:
    library("http")
    asyncio.run(_exercise(_http(live_server.url, tenant_key), "http", stdio=False))


def test_stdio_engramlog_mcp_every_tool(live_server, tenant_key, module_worker, library) -> None:
    library("stdio")
    asyncio.run(_exercise(_stdio(live_server.url, tenant_key), "stdio", stdio=True))


def test_mcp_refuses_a_wrong_key(live_server, tenant_key) -> None:
    refused = httpx.post(f"{live_server.url}/mcp", headers={"Authorization": "Bearer not-a-key"},
                         json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401 and refused.json()["detail"] == "unknown API key"
    missing = httpx.post(f"{live_server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert missing.status_code == 401

    async def connect() -> None:
        async with _http(live_server.url, "not-a-key") as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()

    with pytest.raises(BaseException) as failed:  # the SDK's client fails to initialise on the 401
        asyncio.run(asyncio.wait_for(connect(), 60))
    assert "MCPError" in repr(failed.value) and "Server returned an error response" in repr(failed.value)


# The route each tool calls (method, OpenAPI path), and for a route that parses its body by hand, the models it
# parses with (the body's top level, then each of its `messages`).
ROUTES = {
    "remember": ("post", "/v1/memories"),
    "recall": ("post", "/v1/recall"),
    "recall_multi": ("post", "/v1/recall/multi"),
    "deep_recall": ("post", "/v1/deep_recall"),
    "get_section": ("get", "/v1/knowledge-sections"),
    "supersede": ("post", "/v1/memories/{memory_id}/supersede"),
    "feedback": ("post", "/v1/recalls/{recall_id}/feedback"),
    "history": ("get", "/v1/memories/{memory_id}/history"),
    "sessions_append": ("post", "/v1/sessions/{session_id}/messages"),
    "resume_context": ("get", "/v1/sessions/{session_id}/resume"),
}
_WORDS = ("title", "description", "default")


def _resolved(schema: Any, refs: dict[str, Any]) -> Any:
    """The schema with every $ref replaced by what it names (`refs`: "#/..." → schema)."""
    if isinstance(schema, list):
        return [_resolved(s, refs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _resolved(refs[schema["$ref"]], refs)
    return {k: _resolved(v, refs) for k, v in schema.items()}


def _route_inputs(openapi: dict[str, Any], tool: str) -> dict[str, Any]:
    """The route's inputs as one object schema: its path and query parameters and its JSON body's fields."""
    from api.sessions_schemas import BatchIn, MessageIn

    method, path = ROUTES[tool]
    operation = openapi["paths"][path][method]
    refs = {f"#/components/schemas/{k}": v for k, v in openapi["components"]["schemas"].items()}
    properties = {p["name"]: p["schema"] for p in operation.get("parameters", [])}
    required = [p["name"] for p in operation.get("parameters", []) if p.get("required")]
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if tool == "sessions_append":  # the body is a batch, a list or one message, each parsed with these models
        batch = BatchIn.model_json_schema()
        batch["properties"]["messages"]["items"] = MessageIn.model_json_schema()
        body = batch
    if body is not None:
        body = _resolved(body, refs)
        properties |= body["properties"]
        required += body.get("required", [])
    return _resolved({"type": "object", "properties": properties, "required": required}, refs)


def _conforms(tool: Any, route: Any, where: str) -> None:
    """The tool's schema is the route's, on every input it offers (bounds, enums, formats, nullability,
    required-ness and defaults); it may offer fewer inputs, never one the route lacks or leaves required."""
    if isinstance(tool, dict) and "properties" in tool:
        offered, known = tool["properties"], route["properties"]
        for name, sub in offered.items():
            assert name in known, f"{where}.{name}: not an input of the route"
            if "default" in known[name]:
                assert sub.get("default") == known[name]["default"], f"{where}.{name}: default"
            _conforms(sub, known[name], f"{where}.{name}")
        wanted = set(route.get("required", []))
        assert wanted <= set(offered), f"{where}: the route requires {wanted - set(offered)}"
        assert set(tool.get("required", [])) == wanted, f"{where}: required"
        return
    if isinstance(tool, list):
        assert len(tool) == len(route), where
        for i, (t, r) in enumerate(zip(tool, route, strict=True)):
            _conforms(t, r, f"{where}[{i}]")
        return
    if isinstance(tool, int | float) and not isinstance(tool, bool):
        assert float(tool) == float(route), where  # the OpenAPI document writes 2**63 - 1 as a float
        return
    if not isinstance(tool, dict):
        assert tool == route, where
        return
    keys = set(tool) - set(_WORDS)
    assert keys == set(route) - set(_WORDS), f"{where}: {sorted(keys)} vs {sorted(set(route) - set(_WORDS))}"
    for key in keys:
        _conforms(tool[key], route[key], f"{where}.{key}")


def test_every_tool_takes_its_routes_inputs(app) -> None:
    """Listed over MCP and compared with the app's OpenAPI: one source of truth for both (mcp_server/inputs.py)."""
    from mcp_server.tools import build_server

    listed = asyncio.run(build_server(lambda ctx: None).list_tools())  # type: ignore[arg-type, return-value]
    assert {t.name for t in listed} == set(ROUTES) == set(TOOL_NAMES)
    openapi = app.openapi()
    for tool in listed:
        schema = tool.input_schema
        refs = {f"#/$defs/{k}": v for k, v in schema.get("$defs", {}).items()}
        _conforms(_resolved({k: v for k, v in schema.items() if k != "$defs"}, refs),
                  _route_inputs(openapi, tool.name), tool.name)
    by_name = {t.name: t.input_schema for t in listed}
    # Every tool whose route takes min_position (read-your-writes) offers it, and only those.
    waits = {name for name in ROUTES if "min_position" in _route_inputs(openapi, name)["properties"]}
    assert waits == {name for name, schema in by_name.items() if "min_position" in schema["properties"]}
    assert {"recall", "recall_multi", "deep_recall", "get_section", "history", "resume_context"} <= waits
    role = by_name["sessions_append"]["$defs"]["ChatMessage"]["properties"]["role"]
    assert "developer" not in role["enum"]
    budget = by_name["resume_context"]["properties"]["budget_tokens"]["anyOf"][0]
    assert (budget["minimum"], budget["maximum"]) == (20_000, 150_000)
