"""Session messages' plain read-model lookups: the sessions listing, a session's messages in order, and the
windows of sent messages around hits (recall/domains/sessions.py). Every query filters by tenant and passes the
privacy gate (excluded sessions, agents and projects are unknown)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from domain.errors import InvalidPayload
from domain.privacy import PrivacyPolicy, session_excluded
from recall.scope import Scope
from recall.timeframe import MESSAGE_VERSIONS, NOW, TimeFrame

MESSAGE_COLUMNS = ("m.session_id, m.seq, m.message_id, m.role, m.content, m.tool_name, m.name, m.tool_call_id,"
                   " m.tool_calls, m.created_at, m.sent, m.checkpoint, m.agent_id, m.project, m.metadata")


def _windows(frame: TimeFrame) -> Any:
    """Per hit: the `window` sent messages before it, itself, and the `window` after (the (tenant, session_id, seq)
    key), now or as of the frame."""
    messages = frame.units(MESSAGE_VERSIONS)
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
    SELECT {MESSAGE_COLUMNS} FROM {frame.units(MESSAGE_VERSIONS)} m
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
    messages = frame.units(MESSAGE_VERSIONS)
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


__all__ = ["excluded", "list_sessions", "message_out", "message_row", "session_messages", "windows"]
