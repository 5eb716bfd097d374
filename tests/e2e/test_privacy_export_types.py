"""The event export (GET /v1/events for a non-operator key) decides every content-bearing event type by the same
item identity as the domain that serves it (recall/event_privacy.py, domain/privacy.py): memories, documents and
their sections, session messages (a mark-sent too, which names only its session), transcripts, code files by
`<repo>/<path>` (not the file's path alone), recall records and drills by each result's handle, deep recalls
(their live calls' results kept as strings, their store() values). Each excluded item holds a unique marker;
the reader's export holds none of them and names none of the excluded items, while the items the domains serve
stay in it; GET /v1/recalls/{id} of the recalls and of the deep recall served before the policy shows nothing
excluded either."""

from __future__ import annotations

import json
import uuid

from funnel_support import project
from privacy_support import (
    POLICY,
    SECRET_AGENT,
    SECRET_SESSION,
    all_events,
    assert_reveals_nothing_excluded,
    build_privacy_world,
    privacy_clients,
    put_policy,
)

from tests.deep_recall_support import ROOT, code, point_route_at


def _ok(r):
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.json()


def test_every_content_bearing_type_is_decided_by_its_domains_identity(app, tenant, engine, models,
                                                                       monkeypatch):
    world = build_privacy_world(privacy_clients(app, tenant, monkeypatch))
    reader, m = world.reader, uuid.uuid4().hex[:8]

    def secret(name: str) -> str:
        text = f"classified {name} {m} zebra-{name}"
        world.hidden_texts.append(text)
        return text

    # documents: at an excluded path, with an excluded tag; one retired (DocumentRetired names only its path)
    _ok(reader.put("/v1/knowledge/hr/pay.md", json={"content": f"# Pay\n\n## Grid\n{secret('doc_path')}\n"}))
    _ok(reader.put("/v1/knowledge/eng/plan.md", json={"content": f"# Plan\n\n## Q3\n{secret('doc_tag')}\n",
                                                      "tags": ["tag-secret"]}))
    _ok(reader.put("/v1/knowledge/eng/old.md", json={"content": f"# Old\n\n## Gone\n{secret('doc_retired')}\n",
                                                     "tags": ["tag-secret"]}))
    _ok(reader.delete("/v1/knowledge/eng/old.md"))
    _ok(reader.put("/v1/knowledge/eng/public.md", json={"content": f"# Public\n\n## Harbour\nharbour {m}\n"}))
    # session messages: an excluded session; an excluded agent's session, whose pending message is marked sent
    _ok(reader.post(f"/v1/sessions/{SECRET_SESSION}/messages",
                    json={"messages": [{"role": "user", "content": secret("session_id")}]}))
    pending = _ok(reader.post("/v1/sessions/agent-chat/messages", json={"agent_id": SECRET_AGENT, "messages": [
        {"role": "user", "content": secret("session_agent"), "message_id": "p1", "sent": False}]}))
    assert pending
    _ok(reader.post("/v1/sessions/agent-chat/messages/p1/sent"))
    _ok(reader.post("/v1/sessions/public-chat/messages", json={"messages": [{"role": "user",
                                                                             "content": f"harbour {m}"}]}))
    # a transcript whose id exclude_sessions names
    _ok(reader.put(f"/v1/transcripts/{SECRET_SESSION}",
                   content=f"[2026-02-01T09:00:00Z] USER: {secret('transcript')}\n".encode()))
    # code: repo "hr" + "pay.py" is hr/pay.py (excluded); repo "eng" + "hr/tools.py" is eng/hr/tools.py (served)
    _ok(reader.post("/v1/code/hr/files", json={"files": [
        {"path": "pay.py", "content": f"def salary_grid():\n    return '{secret('code')}'\n"}]}))
    _ok(reader.post("/v1/code/eng/files", json={"files": [
        {"path": "hr/tools.py", "content": f"def harbour_tool():\n    return 'harbour {m}'\n"}]}))
    head = reader.get("/v1/events", params={"limit": 1000}).json()["events"][-1]["position"]
    project(engine, head)

    # recall records and a drill, served before the policy
    multi = _ok(reader.post("/v1/recall/multi", json={"query": f"classified {m} salary grid zebra", "k": 40}))
    served = {b["domain"]: len(b["results"]) for b in multi["buckets"]}
    assert all(served.get(d) for d in ("knowledge", "sessions", "transcripts", "code")), served
    drill = reader.get("/v1/knowledge-sections", params={"path": "hr/pay.md", "heading_path": "Pay > Grid"})
    assert drill.status_code == 200, drill.text
    # a deep recall whose search returned excluded content, printed it, stored it and answered from it
    point_route_at(models, monkeypatch)
    models.script(ROOT, code(f"hits = search('classified {m} zebra', max_results=20)",
                             "store('seen', [h['content'] for h in hits])",
                             "print([h['content'] for h in hits])",
                             "sessions = list_sessions()", "print(sessions)"),
                  f"FINAL: {secret('deep_answer')}")
    deep = _ok(reader.post("/v1/deep_recall", json={"question": "what is classified?"}))
    assert deep["stopped"] == "final", deep
    everything = json.dumps(all_events(world.ops))
    assert "zebra-code" in everything and "DeepRecallStored" in everything  # there, for an operator

    assert put_policy(world.ops, POLICY).status_code == 200
    seen = [e for e in all_events(reader) if e["type"] != "PrivacyPolicySet"]
    assert_reveals_nothing_excluded(seen, world)
    types = {e["type"] for e in seen}
    dump = json.dumps(seen)
    for name in ("hr/pay.md", "eng/plan.md", "eng/old.md", SECRET_SESSION, "agent-chat", "pay.py", deep["recall_id"],
                 multi["recall_id"], str(drill.json()["drill_id"])):
        assert name not in dump, name
    assert "DeepRecallStored" not in types and "ResultDrilled" not in types
    # what the domains serve stays: the public document, session and the file eng/hr/tools.py
    assert {e["data"]["path"] for e in seen if e["type"] == "DocumentPut"} == {"eng/public.md"}
    assert {e["data"]["session_id"] for e in seen if e["type"].startswith("SessionMessage")} == {"public-chat"}
    assert [(e["data"]["repo"], e["data"]["path"]) for e in seen if e["type"] == "CodeFilePut"] == [
        ("eng", "hr/tools.py")]
    assert "TranscriptChunksPut" not in types
    # the code domain's own gate agrees: eng/hr/tools.py is listed, hr/pay.py is not
    assert [f["path"] for f in reader.get("/v1/code/eng/files").json()["files"]] == ["hr/tools.py"]
    assert reader.get("/v1/code/hr/files").json()["files"] == []

    # the records served before the policy, read now
    for recall_id in (multi["recall_id"], deep["recall_id"]):
        for client in (reader, world.ops):
            r = client.get(f"/v1/recalls/{recall_id}")
            assert r.status_code == 200, r.text
            assert_reveals_nothing_excluded(r, world)
            assert "hr/pay.md" not in r.text and SECRET_SESSION not in r.text and '"pay.py"' not in r.text


def test_lifting_the_policy_shows_the_deep_recall_again_and_an_unrelated_one_stays(app, tenant, engine, models,
                                                                                  monkeypatch):
    """A deep recall served under a policy at least as strict as the one in force now is shown whole."""
    world = privacy_clients(app, tenant, monkeypatch)
    reader = world.reader
    _ok(reader.put("/v1/knowledge/eng/public.md", json={"content": "# Public\n\n## Harbour\nthe harbour opens\n"}))
    project(engine, reader.get("/v1/events").json()["events"][-1]["position"])
    assert put_policy(world.ops, POLICY).status_code == 200
    point_route_at(models, monkeypatch)
    models.script(ROOT, code("print(search('harbour', max_results=3))"), "FINAL: the harbour opens")
    deep = _ok(reader.post("/v1/deep_recall", json={"question": "when does the harbour open?"}))
    assert put_policy(world.ops, {"exclude_agents": [SECRET_AGENT]}).status_code == 200  # looser
    audit = reader.get(f"/v1/recalls/{deep['recall_id']}").json()["explanation"]
    assert audit["deep_recall"]["answer"] == "the harbour opens"
    assert deep["recall_id"] in json.dumps(all_events(reader, type="DeepRecallServed"))


def test_the_decay_decisions_of_each_domain_follow_their_items(app, tenant, engine, monkeypatch):
    """The lifecycle's decisions on a section, a session message, a transcript chunk and a code symbol name their
    item only by its domain's keys: each is hidden exactly when its item is."""
    from datetime import UTC, datetime

    from domain.events import NewEvent, validate_payload
    from eventstore.append import append

    world = privacy_clients(app, tenant, monkeypatch)
    _ok(world.reader.put("/v1/knowledge/eng/plan.md", json={"content": "# P\n\n## Q\nplan\n", "tags": ["tag-secret"]}))
    _ok(world.reader.post("/v1/sessions/agent-chat/messages", json={"agent_id": SECRET_AGENT, "messages": [
        {"role": "user", "content": "hi", "message_id": "m1"}]}))
    clock = datetime.now(UTC).isoformat()
    move = {"from_status": "active", "to_status": "dormant", "reason": "unreferenced", "clock": clock}
    decided = {  # (type, hidden item's data, visible item's data)
        "SectionStatusChanged": [{"path": p, "heading_path": "P > Q", "content_hash": "0" * 64,
                                  "section_id": str(uuid.uuid4()), **move} for p in ("eng/plan.md", "eng/open.md")],
        "SessionMessageStatusChanged": [{"session_id": s, "message_id": "m1", **move}
                                        for s in ("agent-chat", "open-chat")],
        "TranscriptChunkStatusChanged": [{"transcript_id": t, "chunk_id": str(uuid.uuid4()), "ord": 0,
                                          "content_hash": "0" * 64, **move} for t in (SECRET_SESSION, "open-t")],
        "CodeSymbolStatusChanged": [{"repo": r, "path": p, "qualified_name": "f", **move}
                                    for r, p in (("hr", "pay.py"), ("eng", "hr/pay.py"))],
    }
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent(t, f"decay-{t}-{i}", validate_payload(t, d))
                              for t, pair in decided.items() for i, d in enumerate(pair)], {"actor": "system:test"})
    assert put_policy(world.ops, {**POLICY, "exclude_paths": ["hr/**"]}).status_code == 200
    keys = ("path", "session_id", "transcript_id", "repo")

    def items(events: list[dict]) -> list[tuple]:  # type: ignore[type-arg]
        return sorted((e["type"], *(e["data"].get(k) for k in keys)) for e in events if e["type"] in decided)

    assert items(all_events(world.reader)) == sorted((t, *(pair[1].get(k) for k in keys))
                                                     for t, pair in decided.items())
    assert len([e for e in all_events(world.ops) if e["type"] in decided]) == 8
