"""`as_of` (recorded time) beyond memories: knowledge sections, transcript chunks and session messages answer, in
POST /v1/recall/multi and on their drills, what the store held at a log position (readmodels/unit_versions.py):
a section replaced later answers as it then stood, a message appended later is absent, a transcript's later
version is not read; code answers too (tests/e2e/test_code_as_of.py). A rebuild gives the same versions."""

from __future__ import annotations

import pytest
from funnel_support import project
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

DOC_V1 = "# Notes\n\n## Boat\nThe boat is named Albatross Kestrel and sleeps four.\n"
DOC_V2 = "# Notes\n\n## Boat\nThe boat is named Petrel Umber and sleeps six.\n"
TR_V1 = "[2026-02-01T09:00:00Z] USER: the lighthouse keeper is Quentin Varga\n"
TR_V2 = TR_V1 + "[2026-02-01T09:01:00Z] ASSISTANT: noted, and the ferry leaves at dawn from pier Osric\n"


def _bucket(client, query: str, domain: str, **more) -> dict:
    r = client.post("/v1/recall/multi", json={"query": query, "domains": [domain], **more})
    assert r.status_code == 200, r.text
    [bucket] = r.json()["buckets"]
    return bucket


def _texts(bucket: dict) -> str:
    """Every result's text, and a session hit's window (a message near a hit answers in its window)."""
    return " ".join([r["content"] for r in bucket["results"]]
                    + [m["content"] for r in bucket["results"] for m in r["fields"].get("window") or ()])


def test_every_versioned_domain_answers_as_of_a_position(client, engine, tenant):
    first = client.put("/v1/knowledge/notes.md", json={"content": DOC_V1})
    assert first.status_code == 200, first.text
    assert client.put("/v1/transcripts/tr-asof", content=TR_V1.encode()).status_code == 200
    said = client.post("/v1/sessions/s-asof/messages",
                       json={"role": "user", "content": "The harbour gate code is 7741 tern", "message_id": "m1"})
    assert said.status_code == 201, said.text
    then = said.json()["position"]
    assert client.put("/v1/knowledge/notes.md", json={"content": DOC_V2}).status_code == 200
    assert client.put("/v1/transcripts/tr-asof", content=TR_V2.encode()).status_code == 200
    later = client.post("/v1/sessions/s-asof/messages",
                        json={"role": "user", "content": "The harbour gate code changed to 9902 tern",
                              "message_id": "m2"})
    assert later.status_code == 201, later.text
    project(engine, later.json()["position"])

    # Knowledge: now the second version's section; as of then the first's, active then (replaced since).
    now = _bucket(client, "what is the boat named", "knowledge")
    assert "Petrel Umber" in _texts(now) and "Albatross" not in _texts(now)
    past = _bucket(client, "what is the boat named", "knowledge", as_of=then)
    assert "Albatross Kestrel" in _texts(past) and "Petrel" not in _texts(past), past
    assert past["results"][0]["fields"]["status"] == "active" and past["results"][0]["fields"]["version"] == 1
    before_all = _bucket(client, "what is the boat named", "knowledge", as_of=first.json()["position"] - 1)
    assert before_all["results"] == [], before_all
    # Its drills: the document and the section as they stood.
    doc = client.get("/v1/knowledge/notes.md", params={"as_of": then})
    assert doc.status_code == 200 and doc.json()["version"] == 1 and doc.json()["current_version"] == 1, doc.text
    assert "Albatross" in doc.json()["content"]
    assert client.get("/v1/knowledge/notes.md").json()["version"] == 2
    heading = past["results"][0]["handle"]["heading_path"]
    section = client.get("/v1/knowledge-sections", params={"path": "notes.md", "heading_path": heading,
                                                           "as_of": then})
    assert section.status_code == 200, section.text
    assert "Albatross" in section.json()["section"]["text"] and section.json()["section"]["status"] == "active"
    assert section.json()["current_differs"] is False
    drilled_now = client.get("/v1/knowledge-sections", params={"path": "notes.md", "heading_path": heading,
                                                               "content_hash": past["results"][0]["handle"][
                                                                   "content_hash"]}).json()
    assert drilled_now["section"]["status"] == "replaced" and drilled_now["current_differs"] is True
    gone = client.get("/v1/knowledge/notes.md", params={"as_of": first.json()["position"] - 1})
    assert gone.status_code == 404, gone.text

    # Sessions: the message appended later is absent as of then, in recall and in the messages listing.
    past = _bucket(client, "harbour gate code", "sessions", as_of=then)
    assert "7741" in _texts(past) and "9902" not in _texts(past), past
    assert "9902" in _texts(_bucket(client, "harbour gate code", "sessions"))
    page = client.get("/v1/sessions/s-asof/messages", params={"as_of": then})
    assert page.status_code == 200 and [m["message_id"] for m in page.json()["messages"]] == ["m1"], page.text
    assert client.get("/v1/sessions/s-asof/messages",
                      params={"as_of": first.json()["position"] - 1}).status_code == 404

    # Transcripts: the text, lines and chunks of the version held then.
    past = _bucket(client, "ferry pier Osric", "transcripts", as_of=then)
    assert "Osric" not in _texts(past), past
    assert "Osric" in _texts(_bucket(client, "ferry pier Osric", "transcripts"))
    assert "Quentin Varga" in _texts(_bucket(client, "lighthouse keeper Quentin", "transcripts", as_of=then))
    body = client.get("/v1/transcripts/tr-asof", params={"as_of": then})
    assert body.status_code == 200 and body.text == TR_V1 and body.headers["X-Transcript-Version"] == "1"
    assert client.get("/v1/transcripts/tr-asof").text == TR_V2
    lines = client.get("/v1/transcripts/tr-asof/lines", params={"as_of": then}).json()
    assert lines["lines_total"] == 1 and "Osric" not in lines["text"], lines
    chunk = client.get("/v1/transcripts/tr-asof/chunks/0", params={"as_of": then})
    assert chunk.status_code == 200 and "Osric" not in chunk.json()["chunk"]["text"], chunk.text

    # A timestamp works as a position does; code answers as of a position too (code_symbol_versions).
    stamp = client.post("/v1/recall/multi", json={"query": "what is the boat named", "domains": ["knowledge"],
                                                  "as_of": "2000-01-01T00:00:00Z"})
    assert stamp.status_code == 200 and stamp.json()["buckets"][0]["results"] == [], stamp.text
    src = {"path": "boat.py", "content": "def boat():\n    return 1\n"}
    code = client.post("/v1/code/eng/files", json={"files": [src]})
    assert code.status_code == 200, code.text
    project(engine, code.json()["position"])
    kept = _bucket(client, "boat", "code", as_of=code.json()["position"])
    assert [r["fields"]["symbol"] for r in kept["results"]] == ["boat.boat"], kept
    assert _bucket(client, "boat", "code", as_of=then)["results"] == []  # not put yet then


def test_a_rebuild_gives_the_same_unit_versions(client, engine, tenant):
    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    assert client.put("/v1/knowledge/rebuilt.md", json={"content": DOC_V1}).status_code == 200
    assert client.put("/v1/knowledge/rebuilt.md", json={"content": DOC_V2}).status_code == 200
    assert client.put("/v1/transcripts/tr-rebuilt", content=TR_V1.encode()).status_code == 200
    assert client.put("/v1/transcripts/tr-rebuilt", content=TR_V2.encode()).status_code == 200
    last = client.post("/v1/sessions/s-rebuilt/messages", json={"role": "user", "content": "hello", "message_id": "a"})
    project(engine, last.json()["position"])
    with engine.connect() as conn:
        held = {t: conn.execute(text(f"SELECT count(*) FROM {t} WHERE tenant = :t"), {"t": tenant}).scalar_one()
                for t in ("knowledge_section_versions", "transcript_chunk_versions", "session_message_versions")}
    assert held["knowledge_section_versions"] >= 3 and held["transcript_chunk_versions"] >= 2, held
    assert held["session_message_versions"] == 1, held
    for name in ("knowledge", "transcripts", "sessions"):
        report = verify(engine, PROJECTORS[name])
        assert report.identical, report
