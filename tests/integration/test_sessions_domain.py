"""The sessions projector and recall domain: BM25 over sent messages, the mix-rank, ±N windows (edges, merging),
pending messages never surfacing, the privacy gate, tenant isolation, and a rebuild giving the same rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from domain.privacy import NO_POLICY, PrivacyPolicy
from projections.runner import catch_up
from projections.sessions import SessionsProjector
from recall.domains.base import DomainQuery
from recall.domains.sessions import SessionsDomain
from recall.scope import Scope
from services.sessions import append_messages, mark_sent

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}
NOW = datetime.now(UTC)


def project(engine) -> None:
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)


def filler(n: int, start: int = 0) -> list[dict]:
    return [{"message_id": f"m{i}", "role": "user" if i % 2 else "assistant", "content": f"filler line {i}"}
            for i in range(start, start + n)]


def ask(engine, tenant: str, query: str, policy: PrivacyPolicy = NO_POLICY, k: int = 5, **scope):
    return SessionsDomain().search(engine, DomainQuery(Scope(tenant, **scope), query, k, NOW, policy))


def test_pending_messages_never_surface_as_hit_or_in_a_window(engine, tenant: str) -> None:
    messages = filler(10)
    messages[4] = {"message_id": "secret", "role": "assistant", "content": "zebra crossing plan", "sent": False}
    messages[5] = {"message_id": "m5", "role": "user", "content": "the giraffe question"}
    append_messages(engine, tenant, "s1", messages, META)
    project(engine)
    assert ask(engine, tenant, "zebra").results == []
    [hit] = ask(engine, tenant, "giraffe").results
    window = hit.fields["window"]
    assert [m["seq"] for m in window] == [1, 2, 3, 4, 6, 7, 8, 9, 10]  # seq 5 is pending: not in the window
    assert all(m["message_id"] != "secret" for m in window)
    with engine.connect() as conn:
        assert SessionsDomain().fetch(conn, Scope(tenant), {"session_id": "s1", "message_id": "secret"},
                                      NO_POLICY) is None
        assert conn.execute(text("SELECT count(*) FROM session_postings WHERE tenant = :t AND term = 'zebra'"),
                            {"t": tenant}).scalar_one() == 0

    mark_sent(engine, tenant, "s1", "secret", META, NO_POLICY)
    project(engine)
    [hit] = ask(engine, tenant, "zebra").results
    assert hit.handle == {"session_id": "s1", "message_id": "secret", "seq": 5}
    assert [m["seq"] for m in hit.fields["window"]] == list(range(1, 11))


def test_window_edges_and_merging(engine, tenant: str, monkeypatch) -> None:
    messages = filler(40)
    for i, word in ((0, "alpha"), (39, "omega"), (20, "middle"), (24, "nearby")):
        messages[i] = {"message_id": f"m{i}", "role": "user", "content": f"{word} marker"}
    append_messages(engine, tenant, "s", messages, META)
    project(engine)

    def seqs(query: str) -> list[list[int]]:
        return [[m["seq"] for m in h.fields["window"]] for h in ask(engine, tenant, query).results]

    assert seqs("alpha") == [list(range(1, 12))]  # the session's start: nothing before, 10 after
    assert seqs("omega") == [list(range(30, 41))]  # its end: 10 before, nothing after
    assert seqs("middle") == [list(range(11, 32))]  # ±10
    [merged] = ask(engine, tenant, "middle nearby").results  # two overlapping windows: one result
    assert [m["seq"] for m in merged.fields["window"]] == list(range(11, 36))
    assert sorted(h["seq"] for h in merged.fields["hits"]) == [21, 25]

    from infra.settings import get_settings, replace

    narrow = replace(get_settings(), session_window=2)
    monkeypatch.setattr("recall.domains.sessions.get_settings", lambda: narrow)
    assert seqs("middle") == [[19, 20, 21, 22, 23]]
    assert seqs("middle nearby") == [list(range(19, 28))]  # windows 19-23 and 23-27 overlap at 23: merged


def test_mix_rank_weights_change_the_order(engine, tenant: str, monkeypatch) -> None:
    old = (NOW - timedelta(days=60)).isoformat()
    append_messages(engine, tenant, "old", [
        {"message_id": "o", "role": "user", "content": "kiwi kiwi kiwi", "created_at": old}] + filler(5), META)
    append_messages(engine, tenant, "new", [
        {"message_id": "n", "role": "user", "content": "a kiwi and many other words about fruit markets, prices,"
                                                       " seasons, orchards, harvests and growers"}] + filler(5), META)
    project(engine)
    from infra.settings import get_settings, replace

    def top(**weights: float) -> str:
        s = replace(get_settings(), **weights)
        monkeypatch.setattr("recall.domains.sessions.get_settings", lambda: s)
        return ask(engine, tenant, "kiwi").results[0].handle["session_id"]

    assert top(session_w_density=1.0, session_w_recency=0.0, session_w_richness=0.0) == "old"
    assert top(session_w_density=0.0, session_w_recency=1.0, session_w_richness=0.0) == "new"
    assert top(session_w_density=0.0, session_w_recency=0.0, session_w_richness=1.0) == "new"
    hit = ask(engine, tenant, "kiwi").results[0]
    assert set(hit.explanation) >= {"density", "recency", "richness", "weights"}
    assert all(0.0 <= hit.explanation[t] <= 1.0 for t in ("density", "recency", "richness"))


def test_privacy_gate_and_tenant_isolation(engine, tenant: str) -> None:
    append_messages(engine, tenant, "hr-1", [{"role": "user", "content": "salary review for payroll"}], META,
                    agent_id="hr", project="people")
    append_messages(engine, tenant, "ops-1", [{"role": "user", "content": "payroll deploy window"}], META,
                    agent_id="ops")
    project(engine)
    assert {h.handle["session_id"] for h in ask(engine, tenant, "payroll").results} == {"hr-1", "ops-1"}
    for policy in (PrivacyPolicy(exclude_sessions=("hr-1",)), PrivacyPolicy(exclude_agents=("hr",)),
                   PrivacyPolicy(exclude_projects=("people",))):
        assert {h.handle["session_id"] for h in ask(engine, tenant, "payroll", policy).results} == {"ops-1"}
        with engine.connect() as conn:
            handle = {"session_id": "hr-1", "message_id": ask(engine, tenant, "salary").results[0].handle[
                "message_id"]}
            assert SessionsDomain().fetch(conn, Scope(tenant), handle, policy) is None
            assert SessionsDomain().fetch(conn, Scope(tenant), handle, NO_POLICY)["message"]["content"] == \
                "salary review for payroll"
    other = f"{tenant}-other"
    assert ask(engine, other, "payroll").reason == "no data"
    with engine.connect() as conn:
        assert SessionsDomain().has_data(conn, Scope(tenant))
        assert not SessionsDomain().has_data(conn, Scope(other))
    assert {h.handle["session_id"] for h in ask(engine, tenant, "payroll", agent_id="ops").results} == {"ops-1"}


def test_a_session_keeps_its_first_agent_and_repeated_ids_are_ignored(engine, tenant: str) -> None:
    from domain.errors import InvalidPayload

    append_messages(engine, tenant, "s", [{"message_id": "a", "role": "user", "content": "one"}], META,
                    agent_id="ag")
    with pytest.raises(InvalidPayload):
        append_messages(engine, tenant, "s", [{"role": "user", "content": "two"}], META, agent_id="other")
    append_messages(engine, tenant, "s", [{"message_id": "a", "role": "user", "content": "again"},
                                          {"message_id": "b", "role": "assistant", "content": "two"}], META)
    project(engine)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT seq, message_id, content, agent_id FROM session_messages"
                                 " WHERE tenant = :t ORDER BY seq"), {"t": tenant}).all()
        summary = conn.execute(text("SELECT messages, sent_messages, agent_id FROM sessions WHERE tenant = :t"),
                               {"t": tenant}).one()
    assert [tuple(r) for r in rows] == [(1, "a", "one", "ag"), (2, "b", "two", "ag")]
    assert tuple(summary) == (2, 2, "ag")


def test_rebuild_gives_the_same_rows(engine, tenant: str) -> None:
    from projections.rebuild import rebuild, verify

    append_messages(engine, tenant, "r", filler(30) + [{"message_id": "p", "role": "tool", "content": "pending",
                                                        "sent": False}], META)
    mark_sent(engine, tenant, "r", "p", META, NO_POLICY)
    project(engine)
    report = verify(engine, SessionsProjector())
    assert report.identical, [t.samples for t in report.tables]
    before = ask(engine, tenant, "filler line 7").results
    rebuild(engine, SessionsProjector())
    after = ask(engine, tenant, "filler line 7").results
    assert [(h.handle, h.fields["window"]) for h in before] == [(h.handle, h.fields["window"]) for h in after]


def _whole_fold_resume(engine, tenant: str, session_id: str, budget: int):
    """The resume context as it was built before paging: the whole stream folded, then build_resume."""
    from domain.events import SessionMessagesAppended, SessionMessageSent, session_stream
    from domain.sessions.messages import fold
    from domain.sessions.resume import build_resume
    from eventstore.stream import read_stream
    from infra.settings import get_settings

    with engine.connect() as conn:
        events = read_stream(conn, tenant, session_stream(session_id), (SessionMessagesAppended, SessionMessageSent))
    log = fold(session_id, events)
    return log.last_position, build_resume(log, budget, get_settings().sessions.resume_turns)


def _paged_resume(engine, tenant: str, session_id: str, budget: int):
    from services.sessions import resume_context

    with engine.connect() as conn:
        outline, ctx = resume_context(conn, tenant, session_id, budget, NO_POLICY)
    return outline.last_position, ctx


def test_the_paged_resume_answers_what_the_whole_fold_does(engine, tenant: str) -> None:
    tools = [{"message_id": f"t{i}", "role": "tool", "tool_name": f"tool{i % 3}", "content": f"result {i} " * 30}
             for i in range(40)]
    turns = [m for i in range(60) for m in (
        {"message_id": f"u{i}", "role": "user", "content": f"question {i} " * 60},
        {"message_id": f"a{i}", "role": "assistant", "content": f"answer {i} " * 120, "checkpoint": i == 5,
         "sent": i % 7 != 3})]
    append_messages(engine, tenant, "eq", turns[:30], META)
    append_messages(engine, tenant, "eq", tools + turns[:10], META)  # forwarded again: ignored, the first wins
    append_messages(engine, tenant, "eq", turns[30:], META)
    for i in (3, 17, 45):  # pending ones marked sent later
        mark_sent(engine, tenant, "eq", f"a{i}", META, NO_POLICY)
    for budget in (20_000, 50_000, 150_000):
        paged, whole = _paged_resume(engine, tenant, "eq", budget), _whole_fold_resume(engine, tenant, "eq", budget)
        assert paged == whole
    assert paged[1].dropped == 0 and paged[1].items["checkpoint"] == 1
    assert _paged_resume(engine, tenant, "eq", 20_000)[1].dropped > 0


def test_a_session_of_only_pending_messages_resumes_to_its_header(engine, tenant: str) -> None:
    append_messages(engine, tenant, "pend", [{"message_id": "p", "role": "user", "content": "x", "sent": False}],
                    META)
    last, ctx = _paged_resume(engine, tenant, "pend", 20_000)
    assert ctx.text == "# Resume context · session pend\n" and ctx.dropped == 0 and last is not None


def test_a_long_session_is_resumed_reading_bounded_pages(engine, tenant: str, monkeypatch) -> None:
    import services.sessions as sessions
    from eventstore.stream import stream_pages

    for batch in range(40):  # 40 appends of 50 messages, ~2 MB of text; the context holds ~80 kB of it
        append_messages(engine, tenant, "long", [
            {"message_id": f"m{batch}-{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"batch {batch} line {i} " + "x" * 1000} for i in range(50)], META)
    reads: list[tuple[bool, list[int]]] = []

    def recorded(*args, newest_first: bool = False, **kwargs):
        for page in stream_pages(*args, newest_first=newest_first, limit=3, **kwargs):
            reads.append((newest_first, [e.stream_version for e in page]))
            yield page

    monkeypatch.setattr(sessions, "stream_pages", recorded)
    paged = _paged_resume(engine, tenant, "long", 20_000)
    monkeypatch.undo()
    assert paged == _whole_fold_resume(engine, tenant, "long", 20_000) and paged[1].dropped > 0
    assert all(len(versions) <= 3 for _, versions in reads) and len(reads) > 13  # the outline: every page
    texts = [v for newest, versions in reads if newest for v in versions]
    # the messages' text is read back only as far as the oldest kept message's append: one page of the newest
    assert texts == [40, 39, 38] and "batch 38 line 49" in paged[1].text and "batch 37 " not in paged[1].text
