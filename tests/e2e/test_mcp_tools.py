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
        given = await _call(session, "feedback", recall_id=found["recall_id"], used=[written["memory_id"]])
        assert given["items"] == 1
        newer = await _call(session, "supersede", memory_id=written["memory_id"],
                            content=f"Mara's locker code is 9020 ({tagged})", reason="she changed it")
        assert newer["supersedes"] == written["memory_id"]
        multi = await _call(session, "recall_multi", query="Mara locker code", agent_id=agent,
                            domains=["memories"], min_position=newer["position"])
        assert multi["buckets"][0]["results"][0]["memory_id"] == newer["memory_id"]
        chain = await _call(session, "history", memory_id=written["memory_id"])
        assert chain["current"] == newer["memory_id"]

        section = await _drilled(session, tagged)
        assert section["text"].startswith("## Lockers") and "level -1" in section["text"]

        session_id = f"chat-{tagged}"
        appended = await _call(session, "sessions_append", session_id=session_id, agent_id=agent, messages=[
            {"role": "user", "content": "Where are the lockers?"},
            {"role": "assistant", "content": "On level -1, next to the showers."}])
        assert len(appended["message_ids"]) == 2
        resumed = await _call(session, "resume_context", session_id=session_id)
        assert "next to the showers" in resumed["context"]

        deep = await session.call_tool("deep_recall", {"question": "what is Mara's locker code?",
                                                       "agent_id": agent})
        if deep.is_error:  # a thin call: the route's own refusal, carried as the service's message
            assert deep.content[0].text.startswith("Engramlog refused the call (HTTP")  # type: ignore[union-attr]
        else:
            assert "recall_id" in deep.structured_content  # type: ignore[operator]

        too_long = await _refused(session, "recall", query="x" * 5000)
        assert "HTTP 422" in too_long and "query" in too_long
        unknown = await _refused(session, "history", memory_id=str(uuid.uuid4()))
        assert "HTTP 404" in unknown and "no memory" in unknown


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
def library(live_server, tenant_key):  # type: ignore[no-untyped-def]
    def put(tagged: str) -> None:
        with Engramlog(live_server.url, api_key=tenant_key) as sdk:
            sdk.put_document(f"lockers-{tagged}.md", "# Gym\n\n## Lockers\nThe lockers are on level -1.\n")
    return put


def test_streamable_http_at_mcp_every_tool(live_server, tenant_key, module_worker, library) -> None:  # type: ignore[no-untyped-def]
    library("http")
    asyncio.run(_exercise(_http(live_server.url, tenant_key), "http", stdio=False))


def test_stdio_engramlog_mcp_every_tool(live_server, tenant_key, module_worker, library) -> None:  # type: ignore[no-untyped-def]
    library("stdio")
    asyncio.run(_exercise(_stdio(live_server.url, tenant_key), "stdio", stdio=True))


def test_mcp_refuses_a_wrong_key(live_server, tenant_key) -> None:  # type: ignore[no-untyped-def]
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
