"""services/chat_import.py on the real log: a conversation that grew gets only its new messages (and a new
transcript version), a session half written by another path is completed from its log, the privacy policy and an
agent conflict refuse the whole import before anything is written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import text

from domain.errors import InvalidPayload
from domain.imports.chat_formats import parse_chat
from domain.privacy import PrivacyPolicy
from services.chat_import import import_chats
from services.sessions import append_messages, session_outline

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "chat"
META = {"actor": "test:import"}
OPEN = PrivacyPolicy()


def events(engine, tenant: str) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT type FROM events WHERE tenant = :t ORDER BY position"),
                                 {"t": tenant}).scalars())


def test_a_grown_conversation_appends_only_its_new_messages(engine, tenant) -> None:
    [whole, _] = parse_chat((FIXTURES / "claude_conversations.json").read_bytes())
    first = replace(whole, messages=whole.messages[:2])
    done = import_chats(engine, tenant, [first], META, policy=OPEN, agent_id="gardener")
    assert (done.messages_appended, done.sessions_new, done.transcripts_written) == (2, 1, 1)
    grown = import_chats(engine, tenant, [whole], META, policy=OPEN, agent_id="gardener")
    assert (grown.messages_appended, grown.messages_present, grown.sessions_new, grown.transcripts_written) == \
        (2, 2, 0, 1)
    with engine.connect() as conn:
        outline = session_outline(conn, tenant, whole.session_id)
    assert [line.message_id for line in outline.lines] == [m.message_id for m in whole.messages]
    assert outline.agent_id == "gardener"
    assert events(engine, tenant) == ["TranscriptChunksPut", "SessionMessagesAppended"] * 2
    again = import_chats(engine, tenant, [whole], META, policy=OPEN)
    assert (again.messages_appended, again.transcripts_unchanged) == (0, 1) and len(events(engine, tenant)) == 4


def test_a_session_written_another_way_is_completed_from_its_log(engine, tenant) -> None:
    [kayak, _] = parse_chat((FIXTURES / "chatgpt_conversations.json").read_bytes())
    # the first three messages appended one by one (another client, or an import cut short): no whole-import key
    for m in kayak.messages[:3]:
        append_messages(engine, tenant, kayak.session_id, [m.as_session_message()], META)
    done = import_chats(engine, tenant, [kayak], META, policy=OPEN)
    assert (done.messages_appended, done.messages_present, done.sessions_new) == (3, 3, 0)
    with engine.connect() as conn:
        ids = [line.message_id for line in session_outline(conn, tenant, kayak.session_id).lines]
    assert ids == [m.message_id for m in kayak.messages]
    n = len(events(engine, tenant))
    assert import_chats(engine, tenant, [kayak], META, policy=OPEN).messages_appended == 0
    assert len(events(engine, tenant)) == n


def test_policy_and_agent_conflicts_refuse_the_whole_import(engine, tenant) -> None:
    kayak, bread = parse_chat((FIXTURES / "chatgpt_conversations.json").read_bytes())
    with pytest.raises(InvalidPayload, match="privacy policy"):
        import_chats(engine, tenant, [kayak, bread], META, policy=PrivacyPolicy(exclude_sessions=(bread.session_id,)))
    with pytest.raises(InvalidPayload, match="privacy policy"):
        import_chats(engine, tenant, [kayak], META, policy=PrivacyPolicy(exclude_agents=("bot",)), agent_id="bot")
    assert events(engine, tenant) == []
    import_chats(engine, tenant, [replace(bread, messages=bread.messages[:1])], META, policy=OPEN, agent_id="a")
    n = len(events(engine, tenant))
    with pytest.raises(InvalidPayload, match="belongs to another agent_id"):
        import_chats(engine, tenant, [kayak, bread], META, policy=OPEN, agent_id="b")  # kayak would be new: not written
    assert len(events(engine, tenant)) == n
