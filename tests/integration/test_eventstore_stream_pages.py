"""eventstore/stream.py stream_pages: a long stream read page by page, bounded by count and bytes, in order."""

from __future__ import annotations

import secrets
import uuid

from sqlalchemy import text

from domain.events import NewEvent, SessionMessagesAppended, SessionMessageSent, session_stream
from eventstore.append import append
from eventstore.stream import read_stream, stream_pages


def _fill(engine, tenant: str, session_id: str, n: int, pad: int = 0) -> None:
    """n SessionMessageSent on the session's stream (message ids m0..; `pad` random characters, which the
    database cannot compress, make each one larger)."""
    events = [NewEvent(SessionMessageSent.type_name(), session_stream(session_id),
                       {"session_id": session_id, "message_id": f"m{i}-" + secrets.token_hex(pad // 2)})
              for i in range(n)]
    with engine.begin() as conn:
        append(conn, tenant, events, {"source": "test"})


def test_pages_cover_the_stream_in_order_bounded_by_count(engine, tenant):
    sid = f"s-{uuid.uuid4().hex[:8]}"
    _fill(engine, tenant, sid, 23)
    with engine.connect() as conn:
        pages = list(stream_pages(conn, tenant, session_stream(sid), limit=5))
        whole = read_stream(conn, tenant, session_stream(sid))
        backwards = list(stream_pages(conn, tenant, session_stream(sid), newest_first=True, limit=5))
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [e.stream_version for p in pages for e in p] == list(range(1, 24))
    assert [e.event_id for p in pages for e in p] == [e.event_id for e in whole]
    assert [e.stream_version for p in backwards for e in p] == list(range(23, 0, -1))


def test_pages_are_bounded_by_bytes_and_a_large_event_still_comes(engine, tenant):
    sid = f"s-{uuid.uuid4().hex[:8]}"
    _fill(engine, tenant, sid, 12, pad=1000)  # each event's data is over 1000 bytes
    with engine.connect() as conn:
        size = dict(conn.execute(text(
            "SELECT stream_version, pg_column_size(data) + pg_column_size(metadata) FROM events "
            "WHERE tenant = :t AND stream_id = :s"), {"t": tenant, "s": session_stream(sid)}).all())
        budget = size[1] * 3
        pages = list(stream_pages(conn, tenant, session_stream(sid), limit=100, max_bytes=budget))
        tiny = list(stream_pages(conn, tenant, session_stream(sid), limit=100, max_bytes=1))
    assert len(pages) >= 4
    for page in pages:  # as eventstore/read.py: a page takes events while the bytes before each are in budget
        assert sum(size[e.stream_version] for e in page[:-1]) < budget
        if page[-1].stream_version + 1 in size:
            assert sum(size[e.stream_version] for e in page) >= budget
    assert [e.stream_version for p in pages for e in p] == list(range(1, 13))
    assert [len(p) for p in tiny] == [1] * 12  # the first event of a page always comes, however large


def test_pages_of_types_skip_the_others_and_stopping_reads_no_further(engine, tenant):
    sid = f"s-{uuid.uuid4().hex[:8]}"
    _fill(engine, tenant, sid, 7)
    with engine.connect() as conn:
        assert list(stream_pages(conn, tenant, session_stream(sid), (SessionMessagesAppended,), limit=3)) == []
        sent = list(stream_pages(conn, tenant, session_stream(sid), (SessionMessageSent,), limit=3))
        first = next(stream_pages(conn, tenant, session_stream(sid), limit=2))
        assert list(stream_pages(conn, tenant, session_stream("no-such-session"))) == []
    assert [len(p) for p in sent] == [3, 3, 1]
    assert [e.stream_version for e in first] == [1, 2]
