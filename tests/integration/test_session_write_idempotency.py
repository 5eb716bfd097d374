"""A retried session write never doubles the log: a resent append (its answer lost) appends no second
SessionMessagesAppended and is answered the first one's answer; a mark sent racing another for the same message
appends one SessionMessageSent; a retried mark sent tells where it was marked."""

from __future__ import annotations

import threading

from sqlalchemy import text

import services.sessions as sessions
from domain.privacy import NO_POLICY
from services.sessions import append_messages, mark_sent

META = {"actor": "test", "source": "test"}
BATCH = [{"message_id": "q-1", "role": "user", "content": "is the heron deploy done?"},
         {"message_id": "a-1", "role": "assistant", "content": "it is rolling out", "sent": False}]


def count(engine, tenant: str, type_name: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = :y"),
                            {"t": tenant, "y": type_name}).scalar_one()


def test_a_resent_append_is_answered_the_first_answer_and_appends_nothing(engine, tenant: str) -> None:
    first = append_messages(engine, tenant, "heron", BATCH, META, agent_id="deployer")
    again = append_messages(engine, tenant, "heron", BATCH, META, agent_id="deployer")  # its answer was lost
    assert again == first
    assert count(engine, tenant, "SessionMessagesAppended") == 1
    # A later append forwarding the whole list with a new message is not a retry: it is appended.
    more = append_messages(engine, tenant, "heron", [*BATCH, {"message_id": "q-2", "role": "user",
                                                                "content": "and the egret one?"}], META)
    assert more.position > first.position and more.message_ids == ["q-1", "a-1", "q-2"]
    assert count(engine, tenant, "SessionMessagesAppended") == 2


def test_a_resent_append_of_a_later_batch_and_one_without_ids(engine, tenant: str) -> None:
    append_messages(engine, tenant, "s", BATCH[:1], META, agent_id="ag")
    second = append_messages(engine, tenant, "s", BATCH[1:], META)
    assert append_messages(engine, tenant, "s", BATCH[1:], META) == second
    # The same ids in another session are other messages.
    assert append_messages(engine, tenant, "other", BATCH[1:], META).position > second.position
    # Without the client's ids nothing tells a retry from a new message: each is appended.
    unnamed = [{"role": "user", "content": "hello"}]
    a, b = (append_messages(engine, tenant, "s", unnamed, META) for _ in range(2))
    assert a.message_ids != b.message_ids
    assert count(engine, tenant, "SessionMessagesAppended") == 5


def test_a_mark_sent_racing_its_retry_appends_once(engine, tenant: str, monkeypatch) -> None:
    """The retry read the log before the first mark committed and appends after it: one SessionMessageSent,
    and both are answered the first one's position."""
    append_messages(engine, tenant, "s", BATCH, META)
    read, first_done = threading.Event(), threading.Event()
    message_state = sessions._message_state

    def log_then_wait(conn, tenant_, session_id, message_id):
        state = message_state(conn, tenant_, session_id, message_id)
        if threading.current_thread().name == "retry" and not read.is_set():
            read.set()
            first_done.wait()
        return state

    monkeypatch.setattr(sessions, "_message_state", log_then_wait)
    answers = {}

    def retry() -> None:
        answers["retry"] = mark_sent(engine, tenant, "s", "a-1", META, NO_POLICY)

    thread = threading.Thread(target=retry, name="retry")
    thread.start()
    assert read.wait(60)
    try:
        answers["first"] = mark_sent(engine, tenant, "s", "a-1", META, NO_POLICY)
    finally:
        first_done.set()
        thread.join(60)
    assert answers["first"].changed and answers["retry"].position == answers["first"].position
    assert count(engine, tenant, "SessionMessageSent") == 1
    later = mark_sent(engine, tenant, "s", "a-1", META, NO_POLICY)
    assert not later.changed and later.position == answers["first"].position  # where it was marked
    # Appended sent: no mark of its own; the session's newest event (here a-1's mark), so a read waits past it.
    assert mark_sent(engine, tenant, "s", "q-1", META, NO_POLICY).position == answers["first"].position
    assert count(engine, tenant, "SessionMessageSent") == 1
