"""The SDK's methods for transcripts, code, sessions, deep recall and blind spots, against the real stack through a
real uvicorn server on loopback: each once with the sync client, a representative set with the async one, typed
answers holding what the server answered."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import sdk_support
from conftest import wait_until
from engramlog_client import AsyncEngramlog, Engramlog, InvalidRequestError, NotFoundError
from engramlog_client.models import (
    BlindSpot,
    ChatMessage,
    ChunkDrilled,
    CodeFilesWritten,
    DeepRecalled,
    MessagesPage,
    ResumeContext,
    SessionsPage,
    Symbol,
    SymbolSearch,
    TranscriptLines,
    TranscriptText,
    TranscriptWritten,
)

from domain.knowledge.sections import PATH_SEPARATOR
from projections.registry import PROJECTORS
from projections.runner import catch_up

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker

TRANSCRIPT = "".join(f"[2026-02-01T09:00:{i:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: step {i} of the "
                     f"kayak{i} plan\r\n" for i in range(12))
PARSER = ("import re\n\n\n"
          "def parse_http_url(url):\n"
          "    \"\"\"Split a URL into its scheme and the rest.\"\"\"\n"
          "    return split_scheme(url)\n\n\n"
          "def split_scheme(url):\n"
          "    return re.split(':', url, 1)\n")
CLIENT = ("from .parser import parse_http_url\n\n\n"
          "class Fetcher:\n"
          "    def fetch(self, url):\n"
          "        return parse_http_url(url)\n")
# An assistant turn as the OpenAI SDK dumps it (tool calls, empty extras), the tool's answer, a content-parts turn.
OPENAI_TURNS: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "what is the weather in Lisbon?"}]},
    {"role": "assistant", "content": None, "refusal": None, "audio": None, "function_call": None,
     "annotations": [{"type": "url_citation", "url": "https://weather.example"}],
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24 C"},
]


@pytest.fixture
def sdk(live_server, tenant_key, module_worker):
    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
        yield client


def projected(engine, name: str, ready: Callable[[], object]) -> bool:
    """Until `ready()` holds: the read model behind it is the worker's to project (helped along here)."""
    def check() -> bool:
        catch_up(engine, PROJECTORS[name], 500, max_seconds=30)
        return bool(ready())
    return wait_until(check, timeout=120, interval=0.25)


def test_transcripts(sdk: Engramlog, engine) -> None:
    put = sdk.put_transcript("t-kayak", TRANSCRIPT)
    assert isinstance(put, TranscriptWritten) and put.changed and put.format == "text"
    assert (put.version, put.lines, put.turns, put.bytes) == (1, 12, 12, len(TRANSCRIPT.encode()))
    assert sdk.last_position == put.position
    again = sdk.put_transcript("t-kayak", TRANSCRIPT.encode())  # bytes, as read from a file
    assert not again.changed and again.chunks_written == 0 and again.position == put.position  # the current one

    got = sdk.transcript("t-kayak")
    assert isinstance(got, TranscriptText) and got.text == TRANSCRIPT  # byte for byte, CRLF kept
    assert (got.version, got.content_hash, got.format) == (1, put.content_hash, "text")
    lines = sdk.transcript_lines("t-kayak", 3, 4)
    assert isinstance(lines, TranscriptLines) and (lines.first, lines.last, lines.lines_total) == (3, 4, 12)
    assert lines.text == "".join(TRANSCRIPT.splitlines(keepends=True)[2:4])
    assert sdk.transcript_lines("t-kayak", 12).text == TRANSCRIPT.splitlines(keepends=True)[-1]
    jsonl = '{"role": "user", "content": "caf\\u00e9 order"}\n{"role": "assistant", "content": "noted"}'
    assert sdk.put_transcript("t-json", jsonl, format="jsonl").format == "jsonl"

    assert projected(engine, "transcripts", lambda: len(sdk.list_transcripts().transcripts) == 2)
    listed = sdk.list_transcripts()
    assert [(t.transcript_id, t.version, t.turns) for t in listed.transcripts] == [("t-json", 1, 2),
                                                                                  ("t-kayak", 1, 12)]
    assert listed.next_after is None
    first = sdk.list_transcripts(limit=1)
    assert first.next_after == "t-json"
    assert [t.transcript_id for t in sdk.list_transcripts(after=first.next_after).transcripts] == ["t-kayak"]

    chunk = sdk.transcript_chunk("t-kayak", 0)
    assert isinstance(chunk, ChunkDrilled) and chunk.chunk.ord == 0 and chunk.chunk.text in TRANSCRIPT
    assert chunk.chunk.lines[0] == 1 and chunk.chunk.status == "active"
    exact = sdk.transcript_chunk("t-kayak", 0, content_hash=chunk.chunk.content_hash)
    assert exact.chunk.text == chunk.chunk.text and exact.drill_id != chunk.drill_id
    with pytest.raises(NotFoundError):
        sdk.transcript("t-unknown")
    with pytest.raises(InvalidRequestError) as bad:
        sdk.transcript_lines("t-kayak", 13)
    assert bad.value.status == 422


def test_drills_as_of_a_position(sdk: Engramlog, engine) -> None:
    """Every drill takes as_of: the document, section, transcript (text, lines, chunk) and session messages as they
    stood at a log position; what was not recorded yet is NotFoundError."""
    first = sdk.put_document("asof.md", "# A\n\n## Boat\nThe boat is Albatross.\n")
    sdk.put_transcript("t-asof", TRANSCRIPT)
    said = sdk.append_messages("s-asof", [{"role": "user", "content": "gate code 7741", "message_id": "m1"}])
    then = said.position
    sdk.put_document("asof.md", "# A\n\n## Boat\nThe boat is Petrel.\n")
    sdk.put_transcript("t-asof", TRANSCRIPT + "[2026-02-01T09:01:00Z] USER: and the ferry at dawn\r\n")
    sdk.append_messages("s-asof", [{"role": "user", "content": "gate code 9902", "message_id": "m2"}])
    for name in ("knowledge", "transcripts", "sessions"):
        catch_up(engine, PROJECTORS[name], 500, max_seconds=60)
    assert sdk.get_document("asof.md").version == 2
    assert "Albatross" in sdk.get_document("asof.md", as_of=then).content
    assert "Albatross" in sdk.get_section("asof.md", f"A{PATH_SEPARATOR}Boat", as_of=then).section.text
    assert sdk.transcript("t-asof", as_of=then).text == TRANSCRIPT
    assert sdk.transcript_lines("t-asof", 1, as_of=then).lines_total == 12
    assert "ferry" not in sdk.transcript_chunk("t-asof", 0, as_of=then).chunk.text
    assert [m.message_id for m in sdk.session_messages("s-asof", as_of=then).messages] == ["m1"]
    with pytest.raises(NotFoundError):
        sdk.get_document("asof.md", as_of=first.position - 1)
    with pytest.raises(NotFoundError):
        sdk.session_messages("s-asof", as_of=first.position - 1)
    old = sdk.put_code_files("asof", [{"path": "boat.py", "content": "def sail():\n    return 1\n"}])
    sdk.put_code_files("asof", [{"path": "boat.py", "content": "def row():\n    return 2\n"}])
    catch_up(engine, PROJECTORS["code"], 500, max_seconds=60)
    at = max(f.position for f in old.files if f.position)
    sailed = sdk.symbol("asof", "boat.sail", as_of=at)
    assert "return 1" in sailed.source and sailed.edges is False
    assert [h.symbol for h in sdk.search_symbols("asof", "sail", as_of=at).symbols] == ["boat.sail"]
    with pytest.raises(NotFoundError):
        sdk.symbol("asof", "boat.sail")


def test_code(sdk: Engramlog, engine) -> None:
    written = sdk.put_code_files("net", [{"path": "net/parser.py", "content": PARSER},
                                         {"path": "net/client.py", "content": CLIENT}])
    assert isinstance(written, CodeFilesWritten) and written.written == 2
    assert [f.action for f in written.files] == ["put", "put"]
    assert sdk.last_position == max(f.position for f in written.files if f.position)
    assert projected(engine, "code", lambda: len(sdk.code_files("net").files) == 2)
    assert [(r.repo, r.files) for r in sdk.code_repos().repos] == [("net", 2)]

    symbol = sdk.symbol("net", "net.parser.parse_http_url")
    assert isinstance(symbol, Symbol) and (symbol.kind, symbol.file, symbol.lines) == ("function",
                                                                                        "net/parser.py", [4, 6])
    assert symbol.source == "".join(PARSER.splitlines(keepends=True)[3:6])
    assert [(c.symbol, c.line) for c in symbol.callers] == [("net.client.Fetcher.fetch", 6)]
    assert symbol.callees and symbol.callees[0].symbol == "net.parser.split_scheme" and symbol.callees[0].resolved
    assert sdk.symbol("net", "net.parser.parse_http_url", file="net/parser.py").source == symbol.source
    found = sdk.search_symbols("net", "parseHttpUrl", k=3)
    assert isinstance(found, SymbolSearch) and found.symbols[0].symbol == "net.parser.parse_http_url"
    assert found.symbols[0].source == symbol.source and found.symbols[0].callees is None
    assert found.symbols[0].handle["qualified_name"] == "net.parser.parse_http_url"
    assert sdk.search_symbols("net", "parseHttpUrl", callees=True).symbols[0].callees
    files = sdk.code_files("net")
    assert [(f.path, f.language, f.parse_errors) for f in files.files] == [("net/client.py", "python", 0),
                                                                          ("net/parser.py", "python", 0)]
    assert sdk.code_files("net", limit=1).next_after == "net/client.py"

    same = sdk.put_code_files("net", [{"path": "net/parser.py", "content": PARSER}])
    assert [f.action for f in same.files] == ["unchanged"] and same.written == 0
    removed = sdk.put_code_files("net", [{"path": "net/client.py", "remove": True}])
    assert [f.action for f in removed.files] == ["removed"]
    with pytest.raises(NotFoundError) as missing:
        sdk.symbol("net", "net.parser.nope")
    assert "no symbol" in missing.value.detail
    with pytest.raises(InvalidRequestError):
        sdk.put_code_files(".hidden", [{"path": "a.py", "content": "x = 1\n"}])


def test_sessions(sdk: Engramlog, engine) -> None:
    done = sdk.append_messages("s-weather", OPENAI_TURNS, agent_id="assistant")
    assert len(done.message_ids) == 3 and sdk.last_position == done.position
    pending = sdk.append_messages("s-weather", [ChatMessage(role="assistant", content="Sunny in Lisbon today.",
                                                            message_id="out-1", sent=False)])
    assert pending.message_ids == ["out-1"]
    assert projected(engine, "sessions", lambda: sdk.list_sessions().sessions)

    page = sdk.session_messages("s-weather")
    assert isinstance(page, MessagesPage) and page.next_after_seq is None
    assert [(m.seq, m.role) for m in page.messages] == [(1, "user"), (2, "assistant"), (3, "tool")]
    user, call, tool = page.messages
    assert user.content == "what is the weather in Lisbon?"
    assert call.tool_calls and call.tool_calls[0]["function"]["name"] == "get_weather"
    assert call.metadata["openai"] == {"annotations": OPENAI_TURNS[1]["annotations"]}  # the empty extras dropped
    assert (tool.tool_name, tool.tool_call_id) == ("get_weather", "call_1")
    assert [m.message_id for m in sdk.session_messages("s-weather", include_unsent=True).messages][-1] == "out-1"
    two = sdk.session_messages("s-weather", limit=2)
    assert two.next_after_seq == 2 and [m.seq for m in sdk.session_messages("s-weather", after_seq=2).messages] == [3]
    assert [m.seq for m in sdk.iter_session_messages("s-weather", limit=1)] == [1, 2, 3]

    assert "Sunny in Lisbon" not in sdk.resume_context("s-weather").context
    sent = sdk.mark_sent("s-weather", "out-1")
    assert sent.changed and sent.position and sdk.last_position == sent.position
    assert sdk.mark_sent("s-weather", "out-1").changed is False  # again: nothing appended
    resume = sdk.resume_context("s-weather", budget_tokens=20_000)
    assert isinstance(resume, ResumeContext) and "Sunny in Lisbon today." in resume.context
    assert resume.budget_tokens == 20_000 and resume.tokens <= 20_000 and resume.dropped == 0
    assert sum(resume.items.values()) >= 1 and resume.last_position == sent.position

    listed = sdk.list_sessions(agent_id="assistant")
    assert isinstance(listed, SessionsPage) and [s.session_id for s in listed.sessions] == ["s-weather"]
    assert (listed.sessions[0].agent_id, listed.sessions[0].messages) == ("assistant", 4)
    sdk.append_messages("s-later", [{"role": "user", "content": "a later session"}])
    assert projected(engine, "sessions", lambda: len(sdk.list_sessions().sessions) == 2)
    newest = sdk.list_sessions(limit=1)
    assert [s.session_id for s in newest.sessions] == ["s-later"] and newest.next_cursor
    assert [s.session_id for s in sdk.list_sessions(cursor=newest.next_cursor).sessions] == ["s-weather"]
    with pytest.raises(NotFoundError):
        sdk.mark_sent("s-weather", "nope")
    with pytest.raises(ValueError):
        sdk.append_messages("s-weather", [{"content": "no role"}])  # refused before anything is sent


def test_deep_recall_without_a_model_and_blind_spots(sdk: Engramlog, engine) -> None:
    # No model configured and nothing in the scope: the quick recall's (empty) results, not the shortcut (it needs
    # results), and a blind spot registered.
    answer = sdk.deep_recall("what did we decide about the quokka migration?", agent_id="planner",
                             budgets={"iterations": 3})
    assert isinstance(answer, DeepRecalled) and answer.shortcut is False and answer.results == []
    assert answer.reason and "no model" in answer.reason and answer.iterations == 0
    assert projected(engine, "deep_recall", lambda: sdk.blind_spots(agent_id="planner"))
    [spot] = sdk.blind_spots(agent_id="planner")
    assert isinstance(spot, BlindSpot) and spot.question == "what did we decide about the quokka migration?"
    assert spot.recall_id == answer.recall_id and spot.priority == pytest.approx(0.85)
    assert spot.expires_at > spot.registered_at
    assert sdk.recall_record(answer.recall_id).recall_id == answer.recall_id
    with pytest.raises(ValueError):
        sdk.deep_recall("x", budgets={"iteratoins": 3})  # a typo is refused before anything is sent


async def _async_flow(url: str, key: str, engine) -> None:
    async with AsyncEngramlog(url, api_key=key, timeout=60) as sdk:
        put = await sdk.put_transcript("a-kayak", TRANSCRIPT)
        assert put.changed and sdk.last_position == put.position
        assert (await sdk.transcript("a-kayak")).text == TRANSCRIPT
        assert (await sdk.transcript_lines("a-kayak", 2, 2)).text == TRANSCRIPT.splitlines(keepends=True)[1]

        written = await sdk.put_code_files("web", [{"path": "web/parser.py", "content": PARSER}])
        assert written.written == 1
        for _ in range(480):  # the symbol reads the code read model (the worker projects it)
            try:
                symbol = await sdk.symbol("web", "web.parser.split_scheme")
                break
            except NotFoundError:
                await asyncio.sleep(0.25)
        assert symbol.callers[0].symbol == "web.parser.parse_http_url"
        assert (await sdk.search_symbols("web", "split scheme")).symbols[0].symbol == "web.parser.split_scheme"

        done = await sdk.append_messages("a-weather", OPENAI_TURNS + [
            {"role": "assistant", "content": "Sunny.", "message_id": "a-out", "sent": False}])
        assert len(done.message_ids) == 4
        assert (await sdk.mark_sent("a-weather", "a-out")).changed is True
        assert "Sunny." in (await sdk.resume_context("a-weather")).context
        for _ in range(480):
            if (await sdk.list_sessions()).sessions:
                break
            await asyncio.sleep(0.25)
        assert [m.seq async for m in sdk.iter_session_messages("a-weather", limit=2)] == [1, 2, 3, 4]
        assert (await sdk.session_messages("a-weather")).messages[2].tool_name == "get_weather"
        assert [s.session_id for s in (await sdk.list_sessions()).sessions] == ["a-weather"]

        answer = await sdk.deep_recall("what is the quokka migration's deadline?")
        assert not answer.shortcut and answer.stopped == "final" and answer.results == []
        for _ in range(480):
            if await sdk.blind_spots():
                break
            await asyncio.sleep(0.25)
        assert [s.recall_id for s in await sdk.blind_spots()] == [answer.recall_id]


def test_async_client_domains(live_server, tenant_key, module_worker, engine) -> None:
    asyncio.run(_async_flow(live_server.url, tenant_key, engine))


def test_through_a_test_client_of_another_httpx(client) -> None:
    # Starlette's TestClient answers responses of its own httpx (httpx2): answers are duck-typed, not isinstance'd.
    with Engramlog("http://testserver", http_client=client) as sdk:
        put = sdk.put_transcript("t-tc", "[2026-02-01T09:00:00Z] USER: the heron plan\n")
        assert put.changed and sdk.transcript("t-tc").text.endswith("the heron plan\n")
        assert sdk.request("GET", "/v1/transcripts/t-tc/lines")["lines_total"] == 1
        with pytest.raises(NotFoundError):
            sdk.transcript("t-none")
