"""Every read sees its own writes: in each domain (memories, knowledge, sessions, transcripts, code), a write and
then at once the read of what it wrote, 50 times in a row, never stale. Through the SDK (it sends its last
written position as min_position on every read) and through plain HTTP (min_position = the write's position),
against a real uvicorn server and a real Dramatiq worker projecting the read models.

The read models are the worker's alone here: nothing in this module catches them up itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
import sdk_support
from engramlog_client import Engramlog

api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker

ROUNDS = 50


@pytest.fixture
def sdk(live_server, tenant_key, module_worker) -> Iterator[Engramlog]:  # type: ignore[no-untyped-def]
    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
        yield client


@pytest.fixture
def raw(live_server, tenant_key, module_worker) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
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
