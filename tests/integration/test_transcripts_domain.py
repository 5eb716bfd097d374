"""Transcripts through the service, the projectors and the domain (projections caught up by hand, no worker):
delta-sync writes only the new or changed chunks and an unchanged put writes nothing; the read model follows each
version exactly; the domain answers BM25 plus the lazily embedded vector leg; the privacy gate and tenants."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from domain.events import TranscriptChunksPut
from domain.privacy import NO_POLICY, PrivacyPolicy
from domain.transcripts.ids import handle_chunk, transcript_stream
from eventstore.stream import read_stream
from infra.embedding import get_embedder
from infra.settings import get_settings
from projections.runner import catch_up
from projections.transcript_vectors import TranscriptVectorsProjector
from projections.transcripts import TranscriptsProjector
from recall.domains.base import DomainQuery
from recall.domains.transcripts import TranscriptsDomain, drill_chunk
from recall.multi import MultiRequest, recall_multi
from recall.scope import Scope
from services.transcripts import put_transcript, transcript_lines, transcript_text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}


def turns(n: int, start: int = 0) -> str:
    return "".join(f"[2026-01-01T10:00:{i % 60:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: message {i} "
                   f"about widget{i}\n" for i in range(start, start + n))


def _project(engine: Engine) -> None:
    catch_up(engine, TranscriptsProjector(), 500, max_seconds=120)


def _events(engine: Engine, tenant: str, tid: str) -> list:
    with engine.connect() as conn:
        return read_stream(conn, tenant, transcript_stream(tid), [TranscriptChunksPut])


def _chunks(engine: Engine, tenant: str, tid: str) -> list:
    with engine.connect() as conn:
        return conn.execute(text("SELECT ord, content_hash, text, first_line, last_line, first_turn, last_turn FROM "
                                 "transcript_chunks WHERE tenant = :t AND transcript_id = :i AND status = 'active' "
                                 "ORDER BY ord"), {"t": tenant, "i": tid}).all()


def test_delta_sync_writes_only_new_chunks_and_an_unchanged_put_nothing(engine, tenant: str) -> None:
    first = put_transcript(engine, tenant, "s1", turns(100), META)
    assert first.changed and first.version == 1 and first.chunks_reused == 0
    assert first.chunks_written == first.chunks == 13 and first.turns == 100

    again = put_transcript(engine, tenant, "s1", turns(100), META)
    assert not again.changed and again.version == 1 and again.chunks_written == 0
    assert len(_events(engine, tenant, "s1")) == 1  # nothing appended

    grown = put_transcript(engine, tenant, "s1", turns(110), META)
    assert grown.changed and grown.version == 2 and grown.chunks == 14
    # 100 turns = 12 chunks of 8 and one of 4; 110 keeps the 12 full ones, grows the 13th, adds a 14th.
    assert (grown.chunks_reused, grown.chunks_written) == (12, 2)
    [v1, v2] = _events(engine, tenant, "s1")
    assert len(v2.data["chunks"]) == 2 and len(v2.data["chunk_hashes"]) == 14
    assert v2.data["chunk_hashes"][:12] == v1.data["chunk_hashes"][:12]

    with engine.connect() as conn:
        assert transcript_text(conn, tenant, "s1").text == turns(110)  # byte-exact, from the log
        s = transcript_lines(conn, tenant, "s1", 101, 103)
        assert s.text == turns(3, start=100) and (s.first, s.last, s.lines_total) == (101, 103, 110)

    _project(engine)
    rows = _chunks(engine, tenant, "s1")
    assert "".join(r.text for r in rows) == turns(110)
    assert [(r.first_line, r.last_line, r.first_turn, r.last_turn) for r in rows][-2:] == [(97, 104, 96, 103),
                                                                                         (105, 110, 104, 109)]
    with engine.connect() as conn:
        replaced = conn.execute(text("SELECT count(*) FROM transcript_chunks WHERE tenant = :t AND status = "
                                     "'replaced'"), {"t": tenant}).scalar_one()
        summary = conn.execute(text("SELECT version, chunks, lines, turns FROM transcripts WHERE tenant = :t"),
                               {"t": tenant}).one()
    assert replaced == 1 and tuple(summary) == (2, 14, 110, 110)  # the grown 13th chunk's old text

    # A shrink and a regrow: the chunk dropped by version 3 is found in the log again by version 4.
    put_transcript(engine, tenant, "s1", turns(50), META)
    back = put_transcript(engine, tenant, "s1", turns(110), META)
    assert back.chunks_written == 0 and back.chunks_reused == 14
    _project(engine)
    assert "".join(r.text for r in _chunks(engine, tenant, "s1")) == turns(110)


def _search(engine: Engine, tenant: str, query: str, policy: PrivacyPolicy = NO_POLICY, vector: bool = False):
    settings = get_settings()
    qv = None
    if vector:
        from infra.embedding import to_pgvector
        qv = to_pgvector(get_embedder(settings.embedding.embedding_model).encode_one(query))
    from datetime import UTC, datetime
    return TranscriptsDomain().search(engine, DomainQuery(Scope(tenant), query, 3, datetime.now(UTC), policy, qv))


def test_the_domain_answers_chunks_and_their_handles_fetch_them(engine, tenant: str) -> None:
    put_transcript(engine, tenant, "s2", turns(40), META)
    _project(engine)
    answer = _search(engine, tenant, "widget17")
    [hit] = answer.results
    assert "message 17 about widget17" in hit.content and hit.handle["transcript_id"] == "s2"
    assert hit.handle["ord"] == 2 and hit.handle["lines"] == [17, 24] and hit.legs["vector"] is None
    with engine.connect() as conn:
        fetched = TranscriptsDomain().fetch(conn, Scope(tenant), hit.handle, NO_POLICY)
        assert fetched["text"] == hit.content == transcript_lines(conn, tenant, "s2", 17, 24).text
        # Privacy: the transcript's id named by exclude_sessions hides it from search and fetch.
        policy = PrivacyPolicy(exclude_sessions=("s2",))
        assert TranscriptsDomain().fetch(conn, Scope(tenant), hit.handle, policy) is None
    assert _search(engine, tenant, "widget17", policy).results == []
    # Another tenant sees none of it.
    assert _search(engine, f"{tenant}-other", "widget17").results == []


_EMBEDDED = text("SELECT chunk_id FROM transcript_chunk_vectors WHERE tenant = :t AND model = :m")


def _embedded(engine: Engine, tenant: str) -> set:
    with engine.connect() as conn:
        return set(conn.execute(_EMBEDDED, {"t": tenant, "m": get_settings().embedding.embedding_model}).scalars())


def test_a_chunk_has_a_vector_only_after_its_first_hit(engine, tenant: str) -> None:
    catch_up(engine, TranscriptVectorsProjector(), 500, max_seconds=300)  # whatever earlier tests left
    put_transcript(engine, tenant, "s3", turns(40), META)
    _project(engine)
    catch_up(engine, TranscriptVectorsProjector(), 500, max_seconds=300)
    assert _embedded(engine, tenant) == set()  # a put embeds nothing

    settings = get_settings()
    answer = recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                          MultiRequest(Scope(tenant), "widget9", ("transcripts",), 1), META)
    [bucket] = answer.buckets
    [hit] = bucket.results
    assert bucket.domain == "transcripts" and hit.handle["ord"] == 1
    assert _embedded(engine, tenant) == set()  # the read path embeds nothing
    catch_up(engine, TranscriptVectorsProjector(), 500, max_seconds=300)
    assert _embedded(engine, tenant) == {handle_chunk(tenant, hit.handle)}

    drilled = drill_chunk(engine, tenant, "s3", 4, NO_POLICY, META)
    catch_up(engine, TranscriptVectorsProjector(), 500, max_seconds=300)
    assert _embedded(engine, tenant) == {handle_chunk(tenant, hit.handle),
                                         handle_chunk(tenant, {**drilled.chunk, "ord": 4})}
    # Now the vector leg covers the embedded chunk: scored on both legs, the others on BM25 alone.
    legs = {h.handle["ord"]: h.legs for h in _search(engine, tenant, "widget9 widget30", vector=True).results}
    assert legs[1]["vector"] is not None and all(v["vector"] is None for o, v in legs.items() if o not in (1, 4))


def test_a_rebuild_reproduces_the_chunks_and_the_embedded_set(engine, tenant: str) -> None:
    from projections.rebuild import rebuild, verify

    put_transcript(engine, tenant, "s4", turns(30), META)
    put_transcript(engine, tenant, "s4", turns(12), META)  # a shrink: chunks replaced
    put_transcript(engine, tenant, "s4", turns(45), META)  # a regrow: a dropped chunk's text from the log
    _project(engine)
    drill_chunk(engine, tenant, "s4", 2, NO_POLICY, META)
    catch_up(engine, TranscriptVectorsProjector(), 500, max_seconds=300)
    embedded = _embedded(engine, tenant)
    assert len(embedded) == 1
    for projector in (TranscriptsProjector(), TranscriptVectorsProjector()):
        report = verify(engine, projector, batch_size=2)
        assert report.identical, [t.samples for t in report.tables]
        rebuild(engine, projector, batch_size=3)
    assert _embedded(engine, tenant) == embedded
    assert "".join(r.text for r in _chunks(engine, tenant, "s4")) == turns(45)


def test_a_put_racing_another_is_refused_and_writes_nothing(engine, tenant: str, monkeypatch) -> None:
    import pytest

    import services.transcripts as service
    from domain.errors import ConcurrencyConflict

    put_transcript(engine, tenant, "s5", turns(10), META)
    # The second put read the stream before the first appended (as two concurrent puts do): it appends at version
    # 0, which the first put's event took, so it is a 409 and its event is not written.
    monkeypatch.setattr(service, "_held", lambda conn, t, i: service._Held(None, 0, frozenset()))
    with pytest.raises(ConcurrencyConflict):
        put_transcript(engine, tenant, "s5", turns(12), META)
    monkeypatch.undo()
    assert len(_events(engine, tenant, "s5")) == 1
    with engine.connect() as conn:
        assert transcript_text(conn, tenant, "s5").text == turns(10)


def test_the_log_fallbacks_read_the_stream_page_by_page(engine, tenant: str, monkeypatch) -> None:
    """A chunk's text not in its event nor in the rows (not projected yet) is read from the earlier events oldest
    first, a page at a time and no further than the event; a handle's chunk newest first until found."""
    import projections.transcript_vectors as vectors
    import projections.transcripts as transcripts
    from eventstore.stream import stream_pages

    for n in (30, 12, 45, 45 + 8):  # v3 regrows what v2 dropped: v1's chunks, carried by v1 only
        put_transcript(engine, tenant, "paged", turns(n), META)
    events = _events(engine, tenant, "paged")
    assert [e.stream_version for e in events] == [1, 2, 3, 4]
    reads: list[tuple[bool, list[int]]] = []

    def recorded(*args, newest_first: bool = False, **kwargs):
        for page in stream_pages(*args, newest_first=newest_first, limit=1, **kwargs):
            reads.append((newest_first, [e.stream_version for e in page]))
            yield page

    monkeypatch.setattr(transcripts, "stream_pages", recorded)
    monkeypatch.setattr(vectors, "stream_pages", recorded)
    v3 = events[2]
    p = TranscriptChunksPut.model_validate(v3.data)
    with engine.connect() as conn:
        texts = transcripts.chunk_texts(conn, v3, p, set(p.chunk_hashes))
    assert "".join(texts[h] for h in p.chunk_hashes) == turns(45)
    assert reads == [(False, [1])]  # v1 holds every missing one: v2 and later are never read
    reads.clear()
    first = TranscriptChunksPut.model_validate(events[0].data)
    handle = {"transcript_id": "paged", "ord": 0, "content_hash": first.chunks[0].content_hash, "version": 1}
    with engine.connect() as conn:
        [embedded] = vectors._texts_from_log(conn, tenant, {handle_chunk(tenant, handle): handle}).values()
    assert "message 0 about widget0" in embedded
    assert [versions for _, versions in reads] == [[4], [3], [2], [1]] and all(newest for newest, _ in reads)
