"""Lazy per-surface embedding (projections/section_vectors.py): a knowledge section gets a vector the first time
the hit-log shows it used (a recall/multi returned it, a drill fetched it), only then, never on the read path;
ENGRAMLOG_KNOWLEDGE_EMBEDDING=eager embeds every section of each put version; a rebuild reproduces the embedded
set. Projections are caught up by hand in this process (no worker)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine, text

from domain.events import section_id
from domain.knowledge.handles import handle_section
from domain.knowledge.sections import split_sections
from domain.privacy import NO_POLICY
from infra.embedding import get_embedder
from infra.settings import get_settings, replace
from projections.knowledge import KnowledgeProjector
from projections.runner import catch_up
from projections.section_vectors import SectionVectorsProjector
from recall.domains.knowledge import drill
from recall.multi import MultiRequest, recall_multi
from recall.scope import Scope
from services.knowledge import DocumentInput, put_document

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}
RUNBOOK = ("# Runbook\nthe on-call handbook\n\n## Rollback\nrun deploy undo to roll back a bad release\n\n"
           "## Paging\nthe pager rotation and escalation ladder\n\n## Backups\nnightly snapshots of the database\n")
GLOSSARY = "## Quokka\na small marsupial mascot\n\n## Zeppelin\nthe airship naming scheme for clusters\n"


def _put(engine: Engine, tenant: str) -> None:
    put_document(engine, tenant, DocumentInput("ops/runbook.md", RUNBOOK), META)
    put_document(engine, tenant, DocumentInput("ops/glossary.md", GLOSSARY), META)
    catch_up(engine, KnowledgeProjector(), 500, max_seconds=120)


def _sid(tenant: str, path: str, doc: str, heading: str) -> uuid.UUID:
    [s] = [s for s in split_sections(doc) if s.heading_path == heading]
    return section_id(tenant, None, path, heading, s.content_hash)


def _all_sections(tenant: str) -> set[uuid.UUID]:
    return {_sid(tenant, p, d, s.heading_path) for p, d in (("ops/runbook.md", RUNBOOK), ("ops/glossary.md", GLOSSARY))
            for s in split_sections(d)}


_EMBEDDED = text("SELECT section_id FROM knowledge_section_vectors WHERE tenant = :t AND model = :m")


def _embedded(engine: Engine, tenant: str) -> set[uuid.UUID]:
    with engine.connect() as conn:
        return set(conn.execute(_EMBEDDED, {"t": tenant, "m": get_settings().embedding.embedding_model}).scalars())


def _cached(engine: Engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM embedding_cache WHERE tenant = :t"), {"t": tenant}).scalar_one()


def _recall(engine: Engine, tenant: str, query: str, k: int = 1) -> set[uuid.UUID]:
    settings = get_settings()
    answer = recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                          MultiRequest(Scope(tenant), query, ("knowledge",), k), META)
    [bucket] = answer.buckets
    return {handle_section(tenant, h.handle) for h in bucket.results}  # type: ignore[misc]


def _project(engine: Engine) -> None:
    catch_up(engine, SectionVectorsProjector(), 500, max_seconds=300)


def test_a_section_has_a_vector_only_after_its_first_hit(engine, tenant: str) -> None:
    _project(engine)  # whatever earlier tests left
    _put(engine, tenant)
    _project(engine)
    assert _embedded(engine, tenant) == set()  # lazy: a put embeds nothing

    cached = _cached(engine, tenant)
    hit = _recall(engine, tenant, "roll back a bad release")
    assert hit == {_sid(tenant, "ops/runbook.md", RUNBOOK, "Runbook > Rollback")}
    # The read path embeds no section: nothing cached, no vector, until the projector reads the hit-log.
    assert _cached(engine, tenant) == cached and _embedded(engine, tenant) == set()

    _project(engine)
    assert _embedded(engine, tenant) == hit
    assert _cached(engine, tenant) == cached + 1

    drilled = _sid(tenant, "ops/glossary.md", GLOSSARY, "Zeppelin")
    drill(engine, tenant, "ops/glossary.md", "Zeppelin", None, NO_POLICY, META)
    assert _embedded(engine, tenant) == hit  # the drill's read path embeds nothing either
    _project(engine)
    assert _embedded(engine, tenant) == hit | {drilled}  # only hit sections: the others still have none
    assert _embedded(engine, tenant) < _all_sections(tenant)

    # Hit again: nothing recomputed (the vector is there; the cache keys by model and content hash).
    _recall(engine, tenant, "roll back a bad release")
    _project(engine)
    assert _embedded(engine, tenant) == hit | {drilled} and _cached(engine, tenant) == cached + 2

    # Now the vector leg covers the embedded sections: a recall of the hit section scores it on both legs.
    settings = get_settings()
    answer = recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                          MultiRequest(Scope(tenant), "roll back a bad release", ("knowledge",), 3), META)
    legs = {handle_section(tenant, h.handle): h.legs for h in answer.buckets[0].results}
    assert legs[next(iter(hit))]["vector"] is not None
    assert all(v["vector"] is None for s, v in legs.items() if s not in hit | {drilled})


def test_rebuild_reproduces_the_embedded_set(engine, tenant: str) -> None:
    from lifecycle_support import verify_tenant

    from projections.rebuild import rebuild

    _put(engine, tenant)
    _recall(engine, tenant, "pager rotation escalation")
    drill(engine, tenant, "ops/glossary.md", "Quokka", None, NO_POLICY, META)
    _project(engine)
    before = _embedded(engine, tenant)
    assert before == {_sid(tenant, "ops/runbook.md", RUNBOOK, "Runbook > Paging"),
                      _sid(tenant, "ops/glossary.md", GLOSSARY, "Quokka")}
    projector = SectionVectorsProjector()
    # This tenant's rows replay identically (the shared database holds other tests' tenants, some embedded with
    # another model or mode on purpose: verify narrowed to this tenant).
    assert all(n == 0 for n in verify_tenant(engine, "section_vectors", tenant).values())
    cached = _cached(engine, tenant)
    rebuild(engine, projector, batch_size=3)
    assert _embedded(engine, tenant) == before
    assert _cached(engine, tenant) == cached  # the rebuild computed nothing again


@pytest.fixture
def eager(monkeypatch, engine):
    """Eager mode for this process's projector; afterwards the live table is rebuilt in lazy mode, so it is again
    what the log gives in the mode every other run uses."""
    import projections.section_vectors

    _project(engine)  # earlier tests' puts are projected lazily
    settings = replace(get_settings(), knowledge_embedding="eager")
    monkeypatch.setattr(projections.section_vectors, "get_settings", lambda: settings)
    yield
    monkeypatch.undo()
    from projections.rebuild import rebuild

    rebuild(engine, SectionVectorsProjector())


def test_eager_embeds_every_section_of_a_put(engine, tenant: str, eager) -> None:
    _put(engine, tenant)
    assert _embedded(engine, tenant) == set()
    _project(engine)
    assert _embedded(engine, tenant) == _all_sections(tenant)
    _recall(engine, tenant, "nightly snapshots")
    _project(engine)
    assert _embedded(engine, tenant) == _all_sections(tenant)


def test_a_handle_naming_no_section_is_skipped(engine, tenant: str) -> None:
    from domain.events import NewEvent, ResultDrilled, drill_stream
    from eventstore.append import append

    _put(engine, tenant)
    bad = [{"path": "ops/runbook.md", "heading_path": "Runbook > Rollback", "content_hash": "0" * 64, "version": 1,
            "project": None},
           {"path": "ops/runbook.md", "heading_path": "Runbook > Rollback", "version": 9, "project": None,
            "content_hash": split_sections(RUNBOOK)[1].content_hash},
           {"path": "nowhere.md", "heading_path": "x", "content_hash": "0" * 64, "version": 1, "project": None}]
    with engine.begin() as conn:
        for handle in bad:
            drill_id = uuid.uuid4()
            append(conn, tenant, [NewEvent.of(ResultDrilled(drill_id=drill_id, domain="knowledge", handle=handle),
                                              drill_stream(drill_id))], META)
    _project(engine)
    assert _embedded(engine, tenant) == set()
