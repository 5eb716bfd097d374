"""The sessions domain: recall over the agents' session messages, each hit with its window of messages.

search: Okapi BM25 over SENT messages in scope (recall/keyword.py bm25_top with the sessions' tables; a pending
message has no postings and is filtered out besides), the best ENGRAMLOG_SESSION_CANDIDATES (200, at least 10·k)
ranked by SwarmAI's mix-rank (domain/sessions/ranking.py):

    score = 0.4·density + 0.35·recency + 0.25·richness     (ENGRAMLOG_SESSION_W_DENSITY / _RECENCY / _RICHNESS)

    density  ∈ [0, 1]  the hit's BM25 / the best BM25 among the candidates
    recency  ∈ (0, 1]  0.5 ** (age in days / ENGRAMLOG_SESSION_RECENCY_HALF_LIFE_DAYS (7)), age from the query's
                       clock to the message's created_at (a later date counts as age 0)
    richness ∈ [0, 1]  min(1, the message's distinct terms / ENGRAMLOG_SESSION_RICHNESS_TERMS (50))

The top k hits each get their window: up to ENGRAMLOG_SESSION_WINDOW (10) sent messages before and after, in
order (fewer at the session's start or end); windows of one session that overlap are merged into one result
scored by its best hit, so a bucket holds at most k windows. A pending message (sent = false) is never a hit and
never inside a window. A hit is an active or dormant message (dormant: unreferenced for a while,
workers/reference_decay.py), as knowledge's sections are; with include_history archived ones too, scored ×0.1.
A window shows the hit's neighbours whatever their decay status: they are its context, not hits. Every result
passes the privacy gate (excluded sessions, agents, projects): in the SQL,
and per row.

A result's handle {session_id, message_id, seq} names its best hit; fetch(handle) answers that message with its
window.

The plain read-model lookups (the sessions listing, a session's messages in order, the windows of sent messages
around hits) live here too; every one filters by tenant and passes the privacy gate (excluded sessions, agents and
projects are unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, ScalarSelect, text

from domain.errors import InvalidPayload
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy, session_excluded
from domain.sessions.ranking import MixCandidate, MixRanked, MixWeights, Window, merge_windows, mix_rank
from domain.text import tokenize
from infra.db import read_only
from infra.settings import get_settings
from readmodels.item_domains import MESSAGES
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, data_check, held
from recall.hybrid import HISTORY_FACTOR
from recall.keyword import KeywordTables, bm25_top
from recall.relevance import scale
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame

MESSAGE_COLUMNS = ("m.session_id, m.seq, m.message_id, m.role, m.content, m.tool_name, m.name, m.tool_call_id,"
                   " m.tool_calls, m.created_at, m.sent, m.checkpoint, m.agent_id, m.project, m.metadata")


def _windows(frame: TimeFrame) -> Any:
    """Per hit: the `window` sent messages before it, itself, and the `window` after (the (tenant, session_id, seq)
    key), now or as of the frame."""
    messages = frame.units(MESSAGES.versions)
    return text(f"""
    SELECT h.ord, w.* FROM unnest(CAST(:sessions AS text[]), CAST(:seqs AS int[])) WITH ORDINALITY AS h(sid, seq, ord)
    CROSS JOIN LATERAL (
        (SELECT {MESSAGE_COLUMNS} FROM {messages} m
         WHERE m.tenant = :tenant AND m.session_id = h.sid AND m.sent AND m.seq <= h.seq
         ORDER BY m.seq DESC LIMIT :before)
        UNION ALL
        (SELECT {MESSAGE_COLUMNS} FROM {messages} m
         WHERE m.tenant = :tenant AND m.session_id = h.sid AND m.sent AND m.seq > h.seq
         ORDER BY m.seq LIMIT :after)
    ) w
    ORDER BY h.ord, w.seq
    """)


def _message(frame: TimeFrame) -> Any:
    return text(f"""
    SELECT {MESSAGE_COLUMNS} FROM {frame.units(MESSAGES.versions)} m
    WHERE m.tenant = :tenant AND m.session_id = :session_id AND m.message_id = :message_id
    """)


def message_out(row: Any) -> dict[str, Any]:
    return {"session_id": row.session_id, "seq": row.seq, "message_id": row.message_id, "role": row.role,
            "content": row.content, "tool_name": row.tool_name, "name": row.name, "tool_call_id": row.tool_call_id,
            "tool_calls": row.tool_calls, "created_at": row.created_at, "sent": row.sent,
            "checkpoint": row.checkpoint, "metadata": row.metadata}


def excluded(policy: PrivacyPolicy, row: Any) -> bool:
    return session_excluded(policy, row.session_id, row.agent_id, row.project)


def _cursor(value: str | None) -> tuple[datetime, str] | None:
    if not value:
        return None
    at, sep, session_id = value.partition("|")
    try:
        return datetime.fromisoformat(at), session_id
    except ValueError:
        raise InvalidPayload(f"cursor {value!r} is not one this listing answered") from None


def list_sessions(conn: Connection, tenant: str, policy: PrivacyPolicy, agent_id: str | None = None,
                  project: str | None = None, cursor: str | None = None,
                  limit: int = 100) -> tuple[list[dict[str, Any]], str | None]:
    """Sessions, newest (latest message) first, with counts and date ranges; paged by `next_cursor`."""
    where, params = Scope(tenant, agent_id, project, policy=policy).where("s")
    after = _cursor(cursor)
    if after is not None:
        where += " AND (s.last_at, s.session_id) < (CAST(:at AS timestamptz), :sid)"
        params = {**params, "at": after[0], "sid": after[1]}
    rows = conn.execute(text(f"""
    SELECT s.session_id, s.agent_id, s.project, s.messages, s.sent_messages, s.first_at, s.last_at, s.last_position
    FROM sessions s WHERE {where} ORDER BY s.last_at DESC, s.session_id DESC LIMIT :limit
    """), {**params, "limit": limit + 1}).all()
    more = len(rows) > limit
    rows = rows[:limit]
    out = [{"session_id": r.session_id, "agent_id": r.agent_id, "project": r.project, "messages": r.messages,
            "sent_messages": r.sent_messages, "first_at": r.first_at, "last_at": r.last_at,
            "last_position": r.last_position} for r in rows]
    next_cursor = f"{rows[-1].last_at.isoformat()}|{rows[-1].session_id}" if more and rows else None
    return out, next_cursor


def session_messages(conn: Connection, tenant: str, session_id: str, policy: PrivacyPolicy, after_seq: int = 0,
                     limit: int = 100, include_unsent: bool = False,
                     frame: TimeFrame = NOW) -> tuple[list[dict[str, Any]], int | None] | None:
    """A session's messages in order after `after_seq` (sent only, unless asked), and the next page's after_seq,
    now or as of the frame (the messages appended by then, sent by then); None when the session is unknown (as of
    the frame: had no message yet) or excluded."""
    head = conn.execute(text("SELECT session_id, agent_id, project FROM sessions WHERE tenant = :tenant"
                             " AND session_id = :session_id"), {"tenant": tenant, "session_id": session_id}).first()
    if head is None or excluded(policy, head):
        return None
    messages = frame.units(MESSAGES.versions)
    if frame.as_of is not None and not conn.execute(text(
            f"SELECT EXISTS (SELECT 1 FROM {messages} m WHERE m.tenant = :tenant AND m.session_id = :session_id)"),
            {"tenant": tenant, "session_id": session_id, **frame.params()}).scalar_one():
        return None
    rows = conn.execute(text(f"""
    SELECT {MESSAGE_COLUMNS} FROM {messages} m
    WHERE m.tenant = :tenant AND m.session_id = :session_id AND m.seq > :after AND (m.sent OR :unsent)
    ORDER BY m.seq LIMIT :limit
    """), {"tenant": tenant, "session_id": session_id, "after": after_seq, "unsent": include_unsent,
           "limit": limit + 1, **frame.params()}).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return [message_out(r) for r in rows], (rows[-1].seq if more and rows else None)


def windows(conn: Connection, tenant: str, hits: Sequence[tuple[str, int]], size: int,
            frame: TimeFrame = NOW) -> list[list[Any]]:
    """Per hit (session_id, seq), in order: the sent messages of its window, in seq order (the hit's own included
    when it is sent), now or as of the frame."""
    if not hits:
        return []
    out: list[list[Any]] = [[] for _ in hits]
    for row in conn.execute(_windows(frame), {"tenant": tenant, "sessions": [h[0] for h in hits],
                                              "seqs": [h[1] for h in hits], "before": size + 1, "after": size,
                                              **frame.params()}):
        out[row.ord - 1].append(row)
    return out


def message_row(conn: Connection, tenant: str, session_id: str, message_id: str, frame: TimeFrame = NOW) -> Any:
    return conn.execute(_message(frame), {"tenant": tenant, "session_id": session_id, "message_id": message_id,
                                          **frame.params()}).first()


SESSIONS = MESSAGES.name
SESSION_KEYWORD = KeywordTables.of(MESSAGES)
RECALLED = RECALLABLE  # answered by default: the memories' and knowledge's rule
HISTORY = ("archived",)  # answered only when history is asked for, scored ×HISTORY_FACTOR


def _rows(frame: TimeFrame) -> Any:
    """What mix-rank and the privacy gate read of each candidate; the hits' own columns come with their windows."""
    return text(f"""
    SELECT m.message_uid, m.distinct_terms, m.status, m.session_id, m.seq, m.created_at, m.agent_id, m.project
    FROM {frame.units(MESSAGES.versions)} m
    WHERE m.tenant = :tenant AND m.message_uid = ANY(:uids) AND m.sent
    """)


def _keyword(frame: TimeFrame) -> tuple[KeywordTables, str]:
    """The BM25 tables and the filter on d for a recall of sent messages, now or as of the frame (the status and
    the sent mark of each message's version then)."""
    if frame.as_of is None:
        return SESSION_KEYWORD, "d.sent"
    return replace(SESSION_KEYWORD, status_filter=MESSAGES.versions.status_as_of("d", " AND x.sent")), "TRUE"


def _scope(scope: Scope, policy: PrivacyPolicy) -> Scope:
    """Messages belong to a session, its agent and project: those filter (kinds do not apply), and the policy."""
    return Scope(scope.tenant, scope.agent_id, scope.project, scope.session_id, policy=policy)


def handle_of(row: Any) -> dict[str, Any]:
    return {"session_id": row.session_id, "message_id": row.message_id, "seq": row.seq}


def _window_out(rows: list[Any]) -> list[dict[str, Any]]:
    return [message_out(r) for r in rows]


def _history_scored(ranked: list[MixRanked], status: dict[tuple[str, int], str]) -> list[MixRanked]:
    """An archived hit (asked for with include_history) scored ×HISTORY_FACTOR, best first again."""
    if not any(status[(h.candidate.session_id, h.candidate.seq)] in HISTORY for h in ranked):
        return ranked
    scored = [replace(h, score=h.score * HISTORY_FACTOR)
              if status[(h.candidate.session_id, h.candidate.seq)] in HISTORY else h for h in ranked]
    return sorted(scored, key=lambda h: (-h.score, h.candidate.session_id, h.candidate.seq))


class SessionsDomain:
    name = SESSIONS
    read_models = (MESSAGES.projection,)  # what a read of it waits for (min_position)
    vector_leg = MESSAGES.vectors is not None  # a vectors table declared: the query's vector is read
    times = ("valid", "recorded")  # a message's created_at; session_message_versions (as_of)

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        where, params = _scope(scope, scope.policy).where("s")
        return data_check(f"SELECT EXISTS (SELECT 1 FROM sessions s WHERE {where} AND s.sent_messages > 0)", params)

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        return held(conn, {self.name: self.data_check(scope)})[self.name]

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        s = get_settings()
        scope = _scope(q.scope, q.policy)
        n = max(s.sessions.session_candidates, q.k * 10)
        with read_only(engine) as conn:
            # The aggregator's check (DomainQuery.held) is this one when no policy narrows the scope.
            if not (q.held and q.policy.empty) and not self.has_data(conn, scope):
                return DomainAnswer([], "no data")
            statuses = RECALLED + HISTORY if q.include_history else RECALLED
            tables, sent = _keyword(q.frame)
            bm25 = bm25_top(conn, scope, tokenize(q.query), n, s.keyword.bm25_k1, s.keyword.bm25_b, statuses, tables,
                            sent + q.frame.valid_sql("d.created_at"), q.frame.params())
            if not bm25:
                return DomainAnswer([], "no match")
            rows = {r.message_uid: r for r in conn.execute(_rows(q.frame), {"tenant": scope.tenant,
                                                                            "uids": list(bm25), **q.frame.params()})}
            allowed = [r for uid, r in rows.items() if not excluded(q.policy, r)]
            ranked = mix_rank([MixCandidate(r.session_id, r.seq, bm25[r.message_uid], r.created_at, r.distinct_terms)
                               for r in allowed], q.now,
                              MixWeights(s.sessions.session_w_density, s.sessions.session_w_recency,
                                         s.sessions.session_w_richness),
                              s.sessions.session_recency_half_life_days, s.sessions.session_richness_terms)
            ranked = _history_scored(ranked, {(r.session_id, r.seq): r.status for r in allowed})[:q.k]
            fetched = windows(conn, scope.tenant, [(h.candidate.session_id, h.candidate.seq) for h in ranked],
                              s.sessions.session_window, q.frame)
        hit_rows = {(r.session_id, r.seq): r for r in allowed}
        fetched_of: dict[str, dict[int, Any]] = {}  # each session's fetched messages by seq, for its merged windows
        spans = []
        for hit, rows_ in zip(ranked, fetched, strict=True):
            for r in rows_:
                fetched_of.setdefault(r.session_id, {})[r.seq] = r
            spans.append(Window(hit.candidate.session_id, rows_[0].seq, rows_[-1].seq, hit.score, [hit]))
        results = []
        grade = scale(SESSIONS, s.embedding.embedding_model)
        for w in merge_windows(spans):
            best = w.hits[0]
            messages = fetched_of[w.session_id]
            found, row = hit_rows[(w.session_id, best.candidate.seq)], messages[best.candidate.seq]
            features = grade.features(q.query, row.content, None, bm25[found.message_uid])
            window = [messages[seq] for seq in sorted(messages) if w.first_seq <= seq <= w.last_seq]
            results.append(DomainHit(
                content=row.content, score=w.score, handle=handle_of(row), relevance=grade.of(features),
                legs={"keyword": bm25[found.message_uid]},
                fields={"session_id": w.session_id, "seq": row.seq, "role": row.role, "tool_name": row.tool_name,
                        "created_at": row.created_at.isoformat(), "agent_id": row.agent_id,
                        "project": row.project, "status": found.status, "window": _window_out(window),
                        "hits": [{"message_id": messages[h.candidate.seq].message_id,
                                  "seq": h.candidate.seq, "score": h.score} for h in w.hits]},
                explanation={"density": best.density, "recency": best.recency, "richness": best.richness,
                             "weights": {"density": s.sessions.session_w_density,
                                         "recency": s.sessions.session_w_recency,
                                         "richness": s.sessions.session_w_richness},
                             "relevance": grade.explain(features)}))
        reason = None if results else ("excluded" if rows and not allowed else "no match")
        return DomainAnswer(results, reason, {"candidates": len(bm25), "gated": len(rows) - len(allowed)})

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy,
              frame: TimeFrame = NOW) -> Any:
        """{"message": the sent message the handle names, "window": its window in order}, now or as of the frame;
        None when unknown, pending or excluded (then)."""
        session_id, message_id = handle.get("session_id"), handle.get("message_id")
        if not isinstance(session_id, str) or not isinstance(message_id, str):
            return None
        row = message_row(conn, scope.tenant, session_id, message_id, frame)
        if row is None or not row.sent or excluded(policy, row):
            return None
        [window] = windows(conn, scope.tenant, [(session_id, row.seq)], get_settings().sessions.session_window, frame)
        return {"message": message_out(row), "window": _window_out(window)}


__all__ = ["SESSIONS", "SESSION_KEYWORD", "SessionsDomain", "excluded", "handle_of", "list_sessions", "message_out",
           "message_row", "session_messages", "windows"]
