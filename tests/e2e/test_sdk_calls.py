"""The SDK (sdk/python, engramlog_client) against the real stack through a real uvicorn server on loopback:
every call once, typed answers, errors carrying the status and the server's reason, read-your-writes."""

from __future__ import annotations

import json
import uuid

import pytest
import sdk_support
from conftest import wait_until
from engramlog_client import AuthError, ConflictError, Engramlog, InvalidRequestError, NotFoundError
from engramlog_client.models import Drilled, Recalled, Remembered

# The module's fixtures (tests/sdk_support.py).
api_keys, tenant_key = sdk_support.api_keys, sdk_support.tenant_key
live_server, module_worker = sdk_support.live_server, sdk_support.module_worker


@pytest.fixture
def sdk(live_server, tenant_key, module_worker):
    with Engramlog(live_server.url, api_key=tenant_key, timeout=60) as client:
        yield client


def test_memories_recall_feedback_history_events(sdk: Engramlog) -> None:
    first = sdk.remember("Alice moved to Lisbon in May", agent_id="assistant", must_keep=True,
                         metadata={"source": "chat"}, tags=["people"])
    assert isinstance(first, Remembered) and first.disposition == "active"
    assert sdk.last_position == first.position
    many = sdk.remember_many([{"content": "Bob's badge number is 5521", "agent_id": "assistant", "must_keep": True},
                              {"content": "Carol leads the billing team", "agent_id": "assistant",
                               "must_keep": True}])
    assert len(many) == 2 and sdk.last_position == max(m.position for m in many)

    answer = sdk.recall("where does Alice live?", agent_id="assistant", k=5)  # read-your-writes: no sleep
    assert isinstance(answer, Recalled) and answer.results[0].memory_id == first.memory_id
    assert answer.results[0].metadata == {"source": "chat"}
    record = sdk.recall_record(answer.recall_id)
    assert record.query == "where does Alice live?" and record.results[0].memory_id == first.memory_id
    given = sdk.feedback(answer.recall_id, used=[first.memory_id])
    assert given.items == 1 and given.recall_id == answer.recall_id
    assert sdk.feedback(answer.recall_id, used=[first.memory_id]).position == given.position  # a retry: same

    multi = sdk.recall_multi("Bob badge number", domains=["memories"], agent_id="assistant")
    assert [b.domain for b in multi.buckets] == ["memories"]
    assert multi.buckets[0].results[0].memory_id == many[0].memory_id

    memory = sdk.memory(first.memory_id)
    assert memory.content == "Alice moved to Lisbon in May" and memory.tags == ["people"]
    newer = sdk.supersede(first.memory_id, "Alice moved to Porto in June", reason="she moved again")
    assert newer.supersedes == first.memory_id
    assert sdk.wait_recallable() is True  # history reads the memories read model: wait for this client's write
    chain = sdk.history(first.memory_id)
    assert chain.current == newer.memory_id and [m.memory_id for m in chain.chain] == [first.memory_id,
                                                                                         newer.memory_id]
    assert chain.transitions[0].reason == "she moved again"
    assert sdk.recall("where does Alice live?", agent_id="assistant").results[0].memory_id == newer.memory_id

    page = sdk.events(stream_id=f"memory-{first.memory_id}")
    assert [e.type for e in page.events][0] == "MemoryRecorded"
    assert len(list(sdk.iter_events(type="MemoryRecorded", limit=2))) == 4  # paged two by two
    assert sdk.position(sdk.last_position, wait=30).recallable is True
    names = {p.name for p in sdk.projections()}
    assert {"memories", "keyword"} <= names
    assert sdk.health().status in ("ok", "down")


def test_append_events_and_their_positions(sdk: Engramlog) -> None:
    memory_id = str(uuid.uuid4())
    [position] = sdk.append([{"type": "MemoryRecorded", "stream_id": f"memory-{memory_id}", "expected_version": 0,
                              "data": {"memory_id": memory_id, "content": "Dana's locker code is 4417",
                                       "agent_id": "gym", "must_keep": True}}])
    assert sdk.last_position == position
    assert sdk.recall("Dana locker code", agent_id="gym").results[0].memory_id == uuid.UUID(memory_id)


def test_knowledge_put_get_list_drill_delete_batch(sdk: Engramlog) -> None:
    doc = "# Deploys\n\n## Rollback\nRun `make rollback` within the 30 minute window.\n\n## Freeze\nNo Fridays.\n"
    put = sdk.put_document("ops/deploys.md", doc, project="ops", tags=["runbook"])
    assert put.changed and put.version == 1 and put.sections == 3
    assert sdk.put_document("ops/deploys.md", doc, project="ops", tags=["runbook"]).changed is False
    got = sdk.get_document("ops/deploys.md", project="ops")
    assert got.content == doc and got.tags == ["runbook"]
    batch = sdk.put_documents([{"path": "ops/oncall.md", "content": "## Pager\nCall Erin.\n", "project": "ops"},
                               {"path": "ops/notes.txt", "content": "plain notes", "project": "ops"}])
    assert [d.path for d in batch] == ["ops/oncall.md", "ops/notes.txt"]
    paths = ["ops/deploys.md", "ops/notes.txt", "ops/oncall.md"]  # the listing reads the knowledge read model
    assert wait_until(lambda: [d.path for d in sdk.list_documents(project="ops").documents] == paths)

    section = sdk.get_section("ops/deploys.md", "Deploys > Rollback", project="ops")
    assert isinstance(section, Drilled) and "make rollback" in section.section.text
    assert section.current_differs is False
    gone = sdk.delete_document("ops/notes.txt", project="ops")
    assert gone.changed is True
    assert sdk.get_document("ops/notes.txt", project="ops").retired is True


def test_privacy_policy_and_errors(sdk: Engramlog, live_server) -> None:
    # The module's keys are tenant keys, not operator keys: setting the policy is refused with the reason.
    with pytest.raises(AuthError) as refused:
        sdk.set_privacy_policy(exclude_tags=["secret"])
    assert refused.value.status == 403 and "operator key" in str(refused.value.detail)
    assert sdk.privacy_policy().position is None
    with pytest.raises(NotFoundError) as missing:
        sdk.memory(uuid.uuid4())
    assert missing.value.status == 404 and missing.value.error == "NotFound" and "no memory" in missing.value.detail
    with pytest.raises(InvalidRequestError) as bad:
        sdk.recall("x" * 5000)
    assert bad.value.status == 422 and bad.value.correlation_id
    first = sdk.remember("Erin's flight leaves at 7:40", must_keep=True)
    sdk.supersede(first.memory_id, "Erin's flight leaves at 8:10", reason="rescheduled")
    with pytest.raises(ConflictError) as twice:
        sdk.supersede(first.memory_id, "Erin's flight leaves at 9:00", reason="again")
    assert twice.value.status == 409 and "already superseded" in twice.value.detail
    with Engramlog(live_server.url, api_key="not-a-key") as stranger, pytest.raises(AuthError) as unknown:
        stranger.recall("anything")
    assert unknown.value.status == 401 and unknown.value.detail == "unknown API key"
    with pytest.raises(ValueError):
        sdk.remember("typo", agnet_id="x")  # type: ignore[call-arg]  # refused before anything is sent


def test_read_your_writes_min_position_sent_unless_consistent_false(sdk: Engramlog) -> None:
    sent: list[dict] = []
    sdk.http.event_hooks["request"] = [lambda request: sent.append(json.loads(request.content))
                                       if request.url.path.startswith("/v1/recall") else None]
    written = sdk.remember("Frank's parking spot is B12", agent_id="garage", must_keep=True)
    hits = sdk.recall("Frank parking spot", agent_id="garage")
    assert sent[-1]["min_position"] == written.position == sdk.last_position
    assert hits.results[0].memory_id == written.memory_id
    sdk.recall_multi("Frank parking spot", agent_id="garage")
    assert sent[-1]["min_position"] == written.position
    sdk.recall("Frank parking spot", agent_id="garage", consistent=False)
    assert "min_position" not in sent[-1]
    sdk.recall("Frank parking spot", agent_id="garage", min_position=1)
    assert sent[-1]["min_position"] == 1
