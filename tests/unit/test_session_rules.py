"""Session messages' pure rules: the events' bounds, the fold, the mix-rank and its weights, window merging, and
the resume context (sections, budget, determinism)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import InvalidPayload
from domain.events import RecordedEvent, SessionMessagesAppended, SessionMessageSent, event_type, validate_payload
from domain.sessions.messages import fold, message_state, message_text, resolve_tool_names
from domain.sessions.ranking import MixCandidate, MixRanked, MixWeights, Window, merge_windows, mix_rank
from domain.sessions.resume import build_resume, estimate_tokens

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def recorded(position: int, schema: type, data: dict, tx: int | None = None) -> RecordedEvent:
    payload = validate_payload(schema, data)
    return RecordedEvent(position, uuid.uuid4(), "t", f"session-{data['session_id']}", position,
                         schema.type_name(), event_type(schema).version, payload, {}, T0, T0,
                         tx if tx is not None else position)


def appended(position: int, messages: list[dict], session_id: str = "s", tx: int | None = None,
             **kw) -> RecordedEvent:
    return recorded(position, SessionMessagesAppended, {"session_id": session_id, "messages": messages, **kw}, tx)


def msg(mid: str, role: str, content: object = "", **kw) -> dict:
    return {"message_id": mid, "role": role, "content": content, **kw}


def test_unknown_roles_and_repeated_ids_are_refused() -> None:
    for bad in ({"session_id": "s", "messages": [msg("a", "developer", "x")]},
                {"session_id": "s", "messages": [msg("a", "user", "x"), msg("a", "user", "y")]},
                {"session_id": "s", "messages": []},
                {"session_id": "", "messages": [msg("a", "user")]},
                {"session_id": "s\n", "messages": [msg("a", "user")]},
                {"session_id": "s", "messages": [msg("a", "user", [{"type": "text"}])]}):
        with pytest.raises(InvalidPayload):
            validate_payload(SessionMessagesAppended, bad)


def test_openai_content_parts_and_tool_names() -> None:
    assert message_text([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}},
                         {"type": "text", "text": "b"}]) == "a\nb"
    assert message_text(None) == ""
    forwarded = resolve_tool_names([
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
        {"role": "tool", "tool_call_id": "c9", "content": "?"}])
    assert [m.get("tool_name") for m in forwarded] == [None, "search", None]


def test_fold_orders_by_apply_order_first_id_wins_and_marks_sent() -> None:
    events = [appended(2, [msg("b", "assistant", "second")], tx=20),
              appended(1, [msg("a", "user", "first"), msg("p", "assistant", "pending", sent=False)], tx=10,
                       agent_id="ag"),
              appended(3, [msg("a", "user", "again")], tx=30, agent_id="other"),  # a repeated id: ignored
              recorded(4, SessionMessageSent, {"session_id": "s", "message_id": "p"}, tx=40),
              recorded(5, SessionMessageSent, {"session_id": "s", "message_id": "nope"}, tx=50)]
    log = fold("s", events)
    assert [(li.seq, li.message_id, li.text, li.sent) for li in log.lines] == [
        (1, "a", "first", True), (2, "p", "pending", True), (3, "b", "second", True)]
    assert log.agent_id == "ag" and log.last_position == 5


def test_message_state_says_what_the_fold_says_of_one_message_in_any_order() -> None:
    events = [appended(2, [msg("b", "assistant", "second", sent=False)], tx=20),
              recorded(6, SessionMessageSent, {"session_id": "s", "message_id": "q"}, tx=5),  # before q's listing
              appended(1, [msg("a", "user", "first"), msg("p", "assistant", "pending", sent=False)], tx=10,
                       agent_id="ag", project="pr"),
              appended(3, [msg("a", "user", "again", sent=False), msg("q", "user", "late", sent=False)], tx=30),
              recorded(4, SessionMessageSent, {"session_id": "s", "message_id": "p"}, tx=40),
              recorded(5, SessionMessageSent, {"session_id": "other", "message_id": "b"}, tx=50)]
    log = fold("s", events)
    for order in (events, events[::-1]):
        for mid in ("a", "b", "p", "q", "nope"):
            state = message_state("s", mid, order)
            line = next((li for li in log.lines if li.message_id == mid), None)
            assert (state is None) == (line is None)
            if state is not None and line is not None:
                assert (state.sent, state.agent_id, state.project, state.last_position) == (
                    line.sent, log.agent_id, log.project, log.last_position)
    assert [li.sent for li in log.lines] == [True, True, False, False]  # a, p, b, q


def cand(seq: int, bm25: float, age_days: float, terms: int) -> MixCandidate:
    return MixCandidate("s", seq, bm25, T0 - timedelta(days=age_days), terms)


def test_mix_rank_terms_and_weights_change_the_order() -> None:
    strong_old = cand(1, 10.0, 70, 5)  # the best BM25, ten half-lives old, terse
    weak_new = cand(2, 2.0, 0, 5)  # a weak match, just said
    rich = cand(3, 2.0, 70, 80)  # a weak, old match that says a lot
    cands = [strong_old, weak_new, rich]

    def order(w: MixWeights) -> list[int]:
        return [r.candidate.seq for r in mix_rank(cands, T0, w, 7.0, 50)]

    assert order(MixWeights(1, 0, 0)) == [1, 2, 3]
    assert order(MixWeights(0, 1, 0)) == [2, 1, 3]
    assert order(MixWeights(0, 0, 1)) == [3, 1, 2]
    assert order(MixWeights()) == [2, 1, 3]  # 0.4·0.2 + 0.35·1 + 0.25·0.1 beats 0.4·1 + 0.35·0.001 + 0.025
    [r1, r2, r3] = sorted(mix_rank(cands, T0, MixWeights(), 7.0, 50), key=lambda r: r.candidate.seq)
    assert (r1.density, r2.density) == (1.0, 0.2) and r2.recency == 1.0 and r3.richness == 1.0
    assert r1.recency == pytest.approx(0.5 ** 10) and r1.richness == pytest.approx(0.1)
    future = mix_rank([cand(1, 1.0, -3, 0)], T0, MixWeights(), 7.0, 50)[0]
    assert future.recency == 1.0 and future.richness == 0.0


def test_overlapping_windows_of_a_session_merge() -> None:
    def w(session: str, lo: int, hi: int, score: float) -> Window:
        return Window(session, lo, hi, score, [MixRanked(MixCandidate(session, (lo + hi) // 2, 1, T0, 1),
                                                         score, 1, 1, 1)])

    merged = merge_windows([w("a", 1, 11, 0.5), w("a", 5, 20, 0.9), w("a", 21, 30, 0.1), w("b", 1, 11, 0.7)])
    assert [(m.session_id, m.first_seq, m.last_seq, m.score, len(m.hits)) for m in merged] == [
        ("a", 1, 20, 0.9, 2), ("b", 1, 11, 0.7, 1), ("a", 21, 30, 0.1, 1)]
    assert [h.score for h in merged[0].hits] == [0.9, 0.5]


def conversation(turns: int, checkpoint_at: int | None = None, pending_at: int | None = None) -> list[RecordedEvent]:
    messages = []
    for t in range(turns):
        messages.append(msg(f"u{t}", "user", f"question {t}"))
        messages.append(msg(f"t{t}", "tool", f"result {t}", tool_name=f"tool{t % 2}"))
        messages.append(msg(f"a{t}", "assistant", f"answer {t}", checkpoint=t == checkpoint_at,
                            sent=t != pending_at))
    return [appended(1, messages)]


def test_resume_sections_in_order() -> None:
    log = fold("s", conversation(40, checkpoint_at=3))
    ctx = build_resume(log, 20_000, 30)
    text = ctx.text
    assert text.startswith("# Resume context · session s\n\n## Checkpoint\n[#12 assistant")
    heads = [text.index(h) for h in ("## Checkpoint", "## Conclusions", "## Key tool results", "## Last 30 turns")]
    assert heads == sorted(heads)
    # Conclusions: turns 4..9 (after the checkpoint, before the last 30 turns); tools: the last of each in that span
    assert ctx.items == {"checkpoint": 1, "conclusions": 6, "tool_results": 2, "turns": 30}
    conclusions = text[heads[1]:heads[2]]
    assert "answer 4" in conclusions and "answer 9" in conclusions and "answer 3" not in conclusions
    tools = text[heads[2]:heads[3]]
    assert "result 8" in tools and "result 9" in tools and "result 7" not in tools
    turns = text[heads[3]:]
    assert "question 10" in turns and "question 9\n" not in turns and turns.rstrip().endswith("answer 39")
    assert ctx.tokens == estimate_tokens(text) and build_resume(log, 20_000, 30).text == text


def test_resume_never_holds_a_pending_message_and_drops_whole_items_oldest_first() -> None:
    log = fold("s", conversation(40, checkpoint_at=3, pending_at=39))
    full = build_resume(log, 150_000, 30)
    assert "answer 39" not in full.text and full.dropped == 0
    big = [appended(1, [msg(f"u{t}", "user", f"q{t} " + "x" * 4000) for t in range(40)]
                    + [msg("cp", "assistant", "the checkpoint", checkpoint=True)])]
    ctx = build_resume(fold("s", big), 20_000, 30)
    assert ctx.tokens <= 20_000 and ctx.dropped > 0 and "the checkpoint" in ctx.text
    kept = [t for t in range(40) if f"q{t} " in ctx.text]
    assert kept == list(range(40 - len(kept), 40))  # the newest turns stay, each whole
    assert all((f"q{t} " + "x" * 4000) in ctx.text for t in kept)
