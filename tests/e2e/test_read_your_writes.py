"""Every read sees its own writes: in each domain (memories, knowledge, sessions, transcripts, code), a write and
then at once the read of what it wrote, 20 times in a row, never stale; a recall's record read right after it
(20), and remember then deep recall at once (10, no model: the quick recall's results are its answer). Through
the SDK (it sends its last written position as min_position on every read) and through plain HTTP (min_position =
the write's position), against a real uvicorn server and a real Dramatiq worker projecting the read models.

The read models are the worker's alone here: nothing in this module catches them up itself.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
import sdk_support
from engramlog_client import AsyncEngramlog, Engramlog

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker

ROUNDS = 20  # each round a fresh write read at once: 16 tests x 20 = 320 round trips through the worker


@pytest.fixture
def sdk(live_server, tenant_key, module_worker) -> Iterator[Engramlog]:
    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
        yield client


@pytest.fixture
def raw(live_server, tenant_key, module_worker) -> Iterator[httpx.Client]:
    """Plain HTTP, no SDK: the test passes min_position itself."""
    with httpx.Client(base_url=live_server.url, headers={"authorization": f"Bearer {tenant_key}"},
                      timeout=60) as client:
        yield client


def ok(response: httpx.Response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def rounds(round_trip: Callable[[int, str], None]) -> None:
    """ROUNDS write-then-read round trips, each on something new (a fresh id, word and content)."""
    for i in range(ROUNDS):
        round_trip(i, uuid.uuid4().hex[:10])


# ------------------------------------------------------------------------------------------------ memories


def test_memories_sdk(sdk: Engramlog) -> None:
    def trip(i: int, tag: str) -> None:
        done = sdk.remember(f"The locker code of crew {tag} is {i}", must_keep=True)
        assert sdk.memory(done.memory_id).content == f"The locker code of crew {tag} is {i}"
        assert sdk.history(done.memory_id).current == done.memory_id
    rounds(trip)


def test_memories_http(raw: httpx.Client) -> None:
    def trip(i: int, tag: str) -> None:
        done = ok(raw.post("/v1/memories", json={"content": f"Crew {tag} sails at {i}", "must_keep": True}), 201)
        got = ok(raw.get(f"/v1/memories/{done['memory_id']}", params={"min_position": done["position"]}))
        assert got["content"] == f"Crew {tag} sails at {i}"
    rounds(trip)


# ------------------------------------------------------------------------------------------------ knowledge


def _doc(tag: str, i: int) -> str:
    return f"# Runbook {tag}\n\n## Rollback\nRun make rollback-{tag} then wait {i} minutes.\n"


def test_knowledge_sdk(sdk: Engramlog) -> None:
    def trip(i: int, tag: str) -> None:
        path = f"ops/{tag}.md"
        sdk.put_document(path, _doc(tag, i), project="ops")  # the SDK README's path: put, then the drill
        section = sdk.get_section(path, f"Runbook {tag} > Rollback", project="ops")
        assert f"rollback-{tag} then wait {i} minutes" in section.section.text
        assert sdk.get_document(path, project="ops").content == _doc(tag, i)
        assert path in [d.path for d in sdk.list_documents(project="ops", prefix=path).documents]
        found = sdk.recall_multi(f"rollback-{tag}", domains=["knowledge"], project="ops")
        assert [r.handle["path"] for r in found.buckets[0].results][:1] == [path], found.buckets[0]
    rounds(trip)


def test_knowledge_http(raw: httpx.Client) -> None:
    def trip(i: int, tag: str) -> None:
        path = f"ops/{tag}.md"
        at = ok(raw.put(f"/v1/knowledge/{path}", json={"content": _doc(tag, i), "project": "ops"}))["position"]
        section = ok(raw.get("/v1/knowledge-sections", params={
            "path": path, "heading_path": f"Runbook {tag} > Rollback", "project": "ops", "min_position": at}))
        assert f"rollback-{tag} then wait {i} minutes" in section["section"]["text"]
        listed = ok(raw.get("/v1/knowledge", params={"project": "ops", "prefix": path, "min_position": at}))
        assert [d["path"] for d in listed["documents"]] == [path]
        found = ok(raw.post("/v1/recall/multi", json={"query": f"rollback-{tag}", "domains": ["knowledge"],
                                                      "project": "ops", "min_position": at}))
        assert [r["handle"]["path"] for r in found["buckets"][0]["results"]][:1] == [path], found["buckets"]
    rounds(trip)


# ------------------------------------------------------------------------------------------------ sessions


def test_sessions_sdk(sdk: Engramlog) -> None:
    def trip(i: int, tag: str) -> None:
        sid = f"s-{tag}"
        sdk.append_messages(sid, [{"role": "user", "content": f"pack the {tag} tent, {i} pegs"}], agent_id=tag)
        page = sdk.session_messages(sid)  # a new session: a 404 while the read model lagged
        assert [m.content for m in page.messages] == [f"pack the {tag} tent, {i} pegs"]
        assert [s.session_id for s in sdk.list_sessions(agent_id=tag).sessions] == [sid]
        assert f"{tag} tent" in sdk.resume_context(sid).context
    rounds(trip)


def test_sessions_http(raw: httpx.Client) -> None:
    def trip(i: int, tag: str) -> None:
        sid = f"s-{tag}"
        at = ok(raw.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": f"{tag} at {i}"}),
                201)["position"]
        page = ok(raw.get(f"/v1/sessions/{sid}/messages", params={"min_position": at}))
        assert [m["content"] for m in page["messages"]] == [f"{tag} at {i}"]
        pending = ok(raw.post(f"/v1/sessions/{sid}/messages", json={"role": "assistant", "content": f"ok {tag}",
                                                                     "message_id": f"m-{tag}", "sent": False}), 201)
        marked = ok(raw.post(f"/v1/sessions/{sid}/messages/m-{tag}/sent", params={}))
        assert marked["changed"] and marked["position"] > pending["position"]
        page = ok(raw.get(f"/v1/sessions/{sid}/messages", params={"min_position": marked["position"]}))
        assert [(m["content"], m["sent"]) for m in page["messages"]] == [(f"{tag} at {i}", True),
                                                                         (f"ok {tag}", True)]
    rounds(trip)


# ------------------------------------------------------------------------------------------------ transcripts


def _transcript(tag: str, i: int) -> str:
    return f"[2026-02-01T09:00:00Z] USER: where is the {tag} kayak?\n[2026-02-01T09:00:05Z] ASSISTANT: dock {i}\n"


def test_transcripts_sdk(sdk: Engramlog) -> None:
    def trip(i: int, tag: str) -> None:
        tid = f"t-{tag}"
        sdk.put_transcript(tid, _transcript(tag, i))
        chunk = sdk.transcript_chunk(tid, 0)  # the drill reads the transcripts read model
        assert f"{tag} kayak" in chunk.chunk.text and f"dock {i}" in chunk.chunk.text
        assert sdk.transcript(tid).text == _transcript(tag, i)
        assert sdk.transcript_lines(tid, 2).text == _transcript(tag, i).splitlines(keepends=True)[1]
        assert tid in [t.transcript_id for t in sdk.list_transcripts(after=f"t-{tag[:-1]}").transcripts]
    rounds(trip)


def test_transcripts_http(raw: httpx.Client) -> None:
    def trip(i: int, tag: str) -> None:
        tid = f"t-{tag}"
        at = ok(raw.put(f"/v1/transcripts/{tid}", content=_transcript(tag, i).encode()))["position"]
        chunk = ok(raw.get(f"/v1/transcripts/{tid}/chunks/0", params={"min_position": at}))
        assert f"{tag} kayak" in chunk["chunk"]["text"] and f"dock {i}" in chunk["chunk"]["text"]
        listed = ok(raw.get("/v1/transcripts", params={"after": f"t-{tag[:-1]}", "limit": 1, "min_position": at}))
        assert [t["transcript_id"] for t in listed["transcripts"]] == [tid]
    rounds(trip)


# ------------------------------------------------------------------------------------------------ code


def _module(tag: str, i: int) -> str:
    return f"def fetch_{tag}(url):\n    \"\"\"Fetch {tag}.\"\"\"\n    return helper_{tag}(url) + {i}\n\n\n" \
           f"def helper_{tag}(url):\n    return len(url)\n"


def test_code_sdk(sdk: Engramlog) -> None:
    def trip(i: int, tag: str) -> None:
        path = f"pkg/m{tag}.py"
        sdk.put_code_files("rw", [{"path": path, "content": _module(tag, i)}])
        symbol = sdk.symbol("rw", f"pkg.m{tag}.fetch_{tag}")
        assert symbol.source.startswith(f"def fetch_{tag}(url):") and f"+ {i}" in symbol.source
        assert path in [f.path for f in sdk.code_files("rw", after=f"pkg/m{tag[:-1]}").files]
        found = sdk.search_symbols("rw", f"fetch_{tag}", k=3)
        assert found.symbols and found.symbols[0].symbol == f"pkg.m{tag}.fetch_{tag}"
    rounds(trip)


def test_code_http(raw: httpx.Client) -> None:
    def trip(i: int, tag: str) -> None:
        path = f"pkg/h{tag}.py"
        written = ok(raw.post("/v1/code/rwh/files", json={"files": [{"path": path, "content": _module(tag, i)}]}))
        at = written["files"][0]["position"]
        again = ok(raw.post("/v1/code/rwh/files", json={"files": [{"path": path, "content": _module(tag, i)}]}))
        assert again["files"][0]["action"] == "unchanged" and again["files"][0]["position"] == at  # what made it
        symbol = ok(raw.get(f"/v1/code/rwh/symbols/pkg.h{tag}.helper_{tag}", params={"min_position": at}))
        assert [c["symbol"] for c in symbol["callers"]] == [f"pkg.h{tag}.fetch_{tag}"]
        files = ok(raw.get("/v1/code/rwh/files", params={"after": f"pkg/h{tag[:-1]}", "limit": 1,
                                                        "min_position": at}))
        assert [f["path"] for f in files["files"]] == [path]
    rounds(trip)


# ------------------------------------------------------------------------------------------------ recall records


def test_recall_record_sdk(sdk: Engramlog) -> None:
    """A recall's id read right after it: the record of what it answered (its hit-log event)."""
    def trip(i: int, tag: str) -> None:
        done = sdk.remember(f"The {tag} ladder leans on shed {i}", must_keep=True)
        found = sdk.recall(f"{tag} ladder")
        assert [r.memory_id for r in found.results][:1] == [done.memory_id]
        record = sdk.recall_record(found.recall_id)
        assert record.query == f"{tag} ladder" and [r.memory_id for r in record.results] == \
            [r.memory_id for r in found.results]
    rounds(trip)


def test_recall_record_http(raw: httpx.Client) -> None:
    """At the recall's own position: the record waits for every domain's read models to have applied it."""
    def trip(i: int, tag: str) -> None:
        done = ok(raw.post("/v1/memories", json={"content": f"The {tag} kettle boils at {i}", "must_keep": True}),
                  201)
        found = ok(raw.post("/v1/recall", json={"query": f"{tag} kettle", "min_position": done["position"]}))
        assert [r["memory_id"] for r in found["results"]][:1] == [done["memory_id"]]
        record = ok(raw.get(f"/v1/recalls/{found['recall_id']}", params={"min_position": found["position"]}))
        assert record["recall_id"] == found["recall_id"] and record["position"] == found["position"]
        assert [r["memory_id"] for r in record["results"]] == [r["memory_id"] for r in found["results"]]
    rounds(trip)


# ------------------------------------------------------------------------------------------------ deep recall

DEEP_ROUNDS = 10


@pytest.fixture
def no_model(monkeypatch) -> None:
    """Deep recall without a model (tests/deep_recall_support.py's other way): its quick recall's results are the
    answer, so whether it saw the write is what it answers."""
    import api.routes.deep_recall as route
    from infra.settings import get_settings, replace

    settings = replace(get_settings(), llm_model="")
    monkeypatch.setattr(route, "get_settings", lambda: settings)


def test_deep_recall_sdk(sdk: Engramlog, no_model) -> None:
    """remember, then deep recall at once: its quick recall finds the memory (the SDK sends last_position in the
    body); the record of that deep recall read right after names it too."""
    for i in range(DEEP_ROUNDS):
        tag = uuid.uuid4().hex[:10]
        done = sdk.remember(f"The {tag} compass is in drawer {i}", must_keep=True)
        deep = sdk.deep_recall(f"where is the {tag} compass?")
        assert str(done.memory_id) in [r.get("memory_id") for r in deep.results], deep
        record = sdk.recall_record(deep.recall_id)
        assert done.memory_id in [r.memory_id for r in record.results]


def test_deep_recall_and_blind_spots_http(raw: httpx.Client, no_model) -> None:
    """A deep recall at a write's position finds it; one that finds nothing registers a blind spot, listed by
    GET /v1/blind_spots at the deep recall's position at once."""
    for i in range(DEEP_ROUNDS):
        tag = uuid.uuid4().hex[:10]
        done = ok(raw.post("/v1/memories", json={"content": f"The {tag} lantern hangs on hook {i}",
                                                 "agent_id": f"a-{tag}", "must_keep": True}), 201)
        deep = ok(raw.post("/v1/deep_recall", json={"question": f"where is the {tag} lantern?", "agent_id": f"a-{tag}",
                                                    "min_position": done["position"]}))
        assert done["memory_id"] in [r.get("memory_id") for r in deep["results"]], deep
        empty = ok(raw.post("/v1/deep_recall", json={"question": f"who painted the {tag} barn?",
                                                     "agent_id": f"b-{tag}", "min_position": deep["position"]}))
        assert empty["results"] == [], empty
        spots = ok(raw.get("/v1/blind_spots", params={"agent_id": f"b-{tag}", "min_position": empty["position"]}))
        assert [s["recall_id"] for s in spots["blind_spots"]] == [empty["recall_id"]], spots


# ------------------------------------------------------------------------------------------------ the SDK's part


def test_the_sdk_sends_its_last_written_position_on_every_read(sdk: Engramlog, no_model) -> None:
    """Every domain read the SDK makes carries min_position = its last written position (a query parameter on
    GETs, the body on recalls), and the routes take it (no 422: each names min_position)."""
    sent: list[httpx.Request] = []
    sdk.http.event_hooks["request"] = [sent.append]
    tag = uuid.uuid4().hex[:8]
    memory = sdk.remember(f"the {tag} canoe is green", must_keep=True)
    sdk.put_document(f"d/{tag}.md", f"# D {tag}\n\n## A\ntext {tag}\n")
    sdk.put_transcript(f"t-{tag}", _transcript(tag, 1))
    sdk.put_code_files("sent", [{"path": f"p/m{tag}.py", "content": _module(tag, 1)}])
    sdk.append_messages(f"s-{tag}", [{"role": "user", "content": f"hi {tag}"}])
    last = sdk.last_position
    reads = [lambda: sdk.memory(memory.memory_id), lambda: sdk.history(memory.memory_id),
             lambda: sdk.get_document(f"d/{tag}.md"), lambda: sdk.list_documents(),
             lambda: sdk.get_section(f"d/{tag}.md", f"D {tag} > A"), lambda: sdk.transcript(f"t-{tag}"),
             lambda: sdk.transcript_lines(f"t-{tag}", 1), lambda: sdk.list_transcripts(),
             lambda: sdk.transcript_chunk(f"t-{tag}", 0), lambda: sdk.code_files("sent"),
             lambda: sdk.search_symbols("sent", f"fetch_{tag}"), lambda: sdk.symbol("sent", f"p.m{tag}.fetch_{tag}"),
             lambda: sdk.list_sessions(), lambda: sdk.session_messages(f"s-{tag}"),
             lambda: sdk.resume_context(f"s-{tag}"), lambda: sdk.blind_spots(),
             lambda: sdk.recall_record(sdk.recall(f"{tag} canoe").recall_id)]
    for read in reads:
        sent.clear()
        read()
        assert sent[-1].url.params.get("min_position") == str(last), sent[-1].url
    sent.clear()
    for recall in (lambda: sdk.recall_multi(f"{tag} canoe"), lambda: sdk.deep_recall(f"where is the {tag} canoe?")):
        sent.clear()
        recall()
        assert json.loads(sent[-1].content)["min_position"] == last
    assert sdk.last_position == last  # reads (drills and recalls append hit-log events) do not move it


def test_the_async_sdk_reads_its_own_writes(live_server, tenant_key, module_worker) -> None:
    async def run() -> None:
        async with AsyncEngramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
            for i in range(ROUNDS):
                tag = uuid.uuid4().hex[:10]
                await client.append_messages(f"s-{tag}", [{"role": "user", "content": f"async {tag} {i}"}])
                page = await client.session_messages(f"s-{tag}")
                assert [m.content for m in page.messages] == [f"async {tag} {i}"]
    asyncio.run(run())
