"""The knowledge library's write path (services/knowledge.py) and projector (projections/knowledge.py), on the real
database: sections cut verbatim, re-puts re-indexing only changed sections, retire, references from the hit-log,
bad input refused with nothing written, and a rebuild giving the same rows."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from domain.errors import ContentTooLarge, InvalidPayload
from domain.events import NewEvent, RecallServed, ResultDrilled, drill_stream, recall_stream
from domain.knowledge.sections import split_sections
from domain.text import tokenize
from eventstore.append import append
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up
from recall.document_log import document_at
from services.append_events import EventInput, append_events
from services.knowledge import DocumentInput, put_document, put_documents, retire_document

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}
DOC_V1 = "# Deploys\nhow we ship\n\n## Rollback\nrun `deploy --undo`\r\n\n## Canary\nship to 5% first\n"
DOC_V2 = "# Deploys\nhow we ship\n\n## Rollback\nrun `deploy --undo` then page oncall\n\n## Canary\nship to 5% first\n"


def project(engine) -> None:
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)


def sections(engine, tenant: str, path: str = "ops/deploys.md") -> list:
    with engine.connect() as conn:
        return conn.execute(text(
            "SELECT section_id, heading_path, ordinal, text, content_hash, status, version, first_version, ref_count,"
            " last_referenced_at FROM knowledge_sections WHERE tenant = :t AND path = :p ORDER BY status, ordinal"),
            {"t": tenant, "p": path}).all()


def postings_of(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM knowledge_postings WHERE tenant = :t"), {"t": tenant}).scalar()


def events_of(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar()


def test_put_cuts_exact_sections(engine, tenant: str) -> None:
    done = put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1, title="Deploys", tags=["ops"]), META)
    assert (done.version, done.changed, done.sections, done.sections_changed) == (1, True, 3, 3)
    project(engine)
    rows = sections(engine, tenant)
    assert [r.heading_path for r in rows] == ["", "Deploys > Rollback", "Deploys > Canary"]
    assert "".join(r.text for r in rows).encode() == DOC_V1.encode()  # the exact bytes, CRLF included
    assert all(r.status == "active" and r.version == 1 for r in rows)
    with engine.connect() as conn:
        doc = conn.execute(text("SELECT version, status, title, tags FROM knowledge_documents WHERE tenant = :t"),
                           {"t": tenant}).one()
    assert tuple(doc) == (1, "active", "Deploys", ["ops"])


def test_reput_reindexes_only_changed_sections(engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1), META)
    project(engine)
    before = {r.heading_path: r for r in sections(engine, tenant)}
    postings_before = postings_of(engine, tenant)

    done = put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V2), META)
    assert (done.version, done.changed, done.sections_changed) == (2, True, 1)
    project(engine)
    rows = sections(engine, tenant)
    active = {r.heading_path: r for r in rows if r.status == "active"}
    [replaced] = [r for r in rows if r.status == "replaced"]
    assert replaced.section_id == before["Deploys > Rollback"].section_id
    for kept in ("", "Deploys > Canary"):  # the same rows, now at version 2
        assert active[kept].section_id == before[kept].section_id
        assert (active[kept].first_version, active[kept].version) == (1, 2)
    new = active["Deploys > Rollback"]
    assert new.section_id != replaced.section_id and new.first_version == 2
    new_terms = len(set(tokenize(new.text)))
    assert postings_of(engine, tenant) == postings_before + new_terms  # only the changed section was indexed

    # Back to v1's text: the replaced section is active again, nothing new indexed.
    again = put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1), META)
    project(engine)
    assert again.version == 3
    rows = sections(engine, tenant)
    assert {r.section_id for r in rows if r.status == "active"} == {r.section_id for r in before.values()}
    assert postings_of(engine, tenant) == postings_before + new_terms


def test_unchanged_put_is_a_noop(engine, tenant: str) -> None:
    first = put_document(engine, tenant, DocumentInput("a.md", "## A\nx\n", tags=["t"]), META)
    n = events_of(engine, tenant)
    same = put_document(engine, tenant, DocumentInput("a.md", "## A\nx\n", tags=["t"]), META)
    assert (same.version, same.changed, same.content_hash) == (first.version, False, first.content_hash)
    assert events_of(engine, tenant) == n
    retagged = put_document(engine, tenant, DocumentInput("a.md", "## A\nx\n", tags=["u"]), META)
    assert (retagged.version, retagged.changed, retagged.sections_changed) == (2, True, 0)


def test_retire_and_reput(engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1), META)
    gone = retire_document(engine, tenant, "ops/deploys.md", None, META)
    assert (gone.version, gone.changed) == (2, True)
    assert not retire_document(engine, tenant, "ops/deploys.md", None, META).changed
    project(engine)
    assert {r.status for r in sections(engine, tenant)} == {"retired"}
    with engine.connect() as conn:
        assert document_at(conn, tenant, "ops/deploys.md", None).retired
    back = put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1), META)
    assert back.changed and back.version == 3
    project(engine)
    assert {r.status for r in sections(engine, tenant)} == {"active"}


def test_document_at_versions(engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("d.md", DOC_V1, project="p"), META)
    put_document(engine, tenant, DocumentInput("d.md", DOC_V2, project="p"), META)
    with engine.connect() as conn:
        assert document_at(conn, tenant, "d.md", "p").content == DOC_V2
        assert document_at(conn, tenant, "d.md", "p", 1).content == DOC_V1
        with pytest.raises(Exception, match="no document"):
            document_at(conn, tenant, "d.md", None)  # another project's path is another document
        with pytest.raises(Exception, match="no document"):
            document_at(conn, f"{tenant}-other", "d.md", "p")  # another tenant sees nothing


@pytest.mark.parametrize("doc", [
    DocumentInput("../escape.md", "x"), DocumentInput("/abs.md", "x"), DocumentInput("a\x00.md", "x"),
    DocumentInput("ok.md", "nul \x00 inside"), DocumentInput("ok.md", "x", metadata={"k" * 200: 1}),
])
def test_bad_input_writes_nothing(engine, tenant: str, doc: DocumentInput) -> None:
    with pytest.raises(InvalidPayload):
        put_documents(engine, tenant, [DocumentInput("good.md", "fine"), doc], META)
    assert events_of(engine, tenant) == 0


def test_huge_document_refused(engine, tenant: str, monkeypatch) -> None:
    import services.knowledge
    from infra.settings import get_settings, replace

    small = replace(get_settings(), max_document_bytes=1000)
    monkeypatch.setattr(services.knowledge, "get_settings", lambda: small)
    with pytest.raises(ContentTooLarge):
        put_document(engine, tenant, DocumentInput("big.md", "é" * 501), META)
    assert events_of(engine, tenant) == 0


def test_the_generic_event_api_refuses_documents_naming_their_route(engine, tenant: str) -> None:
    """A DocumentPut is appended by PUT /v1/knowledge/{path} (its version, its stream), never by the generic
    append path: refused with that route, nothing written."""
    from domain.text import content_hash

    data = {"path": "x.md", "content": "## X\n", "content_hash": content_hash("## X\n")}
    for stream_id in ("memory-x", None):
        with pytest.raises(InvalidPayload, match="PUT /v1/knowledge"):
            append_events(engine, tenant, [EventInput("DocumentPut", data, stream_id=stream_id)], META)
    assert events_of(engine, tenant) == 0


def test_references_from_the_hit_log(engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V1), META)
    project(engine)
    rollback = next(s for s in split_sections(DOC_V1) if s.heading_path == "Deploys > Rollback")
    handle = {"path": "ops/deploys.md", "heading_path": rollback.heading_path, "content_hash": rollback.content_hash,
              "version": 1, "project": None}
    recall_id, drill_id = uuid.uuid4(), uuid.uuid4()
    served = RecallServed(recall_id=recall_id, query="rollback", k=5, latency_ms=1.0, domains=["knowledge"],
                          results=[{"rank": 1, "score": 1.0, "domain": "knowledge", "handle": handle}])
    drilled = ResultDrilled(drill_id=drill_id, domain="knowledge", handle=handle)
    system = {"actor": "system:test"}
    with engine.begin() as conn:
        append(conn, tenant, [NewEvent.of(served, recall_stream(recall_id)),
                              NewEvent.of(drilled, drill_stream(drill_id))], system)
    project(engine)
    row = next(r for r in sections(engine, tenant) if r.heading_path == "Deploys > Rollback")
    assert row.ref_count == 2 and row.last_referenced_at is not None
    assert {r.ref_count for r in sections(engine, tenant) if r.heading_path != "Deploys > Rollback"} == {0}


def test_rebuild_gives_the_same_rows(engine, tenant: str) -> None:
    from projections.rebuild import rebuild, verify

    put_documents(engine, tenant, [DocumentInput("ops/deploys.md", DOC_V1, tags=["ops"]),
                                   DocumentInput("notes.txt", "plain notes, no heading", project="p"),
                                   DocumentInput("uni.md", "## 部署\n東京\n## 部署\nagain\n")], META)
    put_document(engine, tenant, DocumentInput("ops/deploys.md", DOC_V2), META)
    retire_document(engine, tenant, "notes.txt", "p", META)
    project(engine)
    before = sections(engine, tenant) + sections(engine, tenant, "uni.md")
    assert verify(engine, KnowledgeProjector(), batch_size=3).identical
    rebuild(engine, KnowledgeProjector(), batch_size=3)
    assert sections(engine, tenant) + sections(engine, tenant, "uni.md") == before
