"""The deep recall's hard outer timeout stops what is running when it passes, not only what would start next: a
code block still computing is stopped at the deadline even when its own block limit is longer, and a live call
still waiting (a model reply trickling in, each read in time) is abandoned at it; either way the deep recall
stops "timeout" and its audit event is appended."""

from __future__ import annotations

import time

from tests.deep_recall_support import ROOT, SUB, code, point_route_at


def _ask(client, question: str, timeout_s: float) -> dict:  # type: ignore[no-untyped-def,type-arg]
    r = client.post("/v1/deep_recall", json={"question": question, "budgets": {"timeout_s": timeout_s}})
    assert r.status_code == 200, r.text
    body = r.json()
    record = client.get(f"/v1/recalls/{body['recall_id']}")
    assert record.status_code == 200, record.text  # the audit event was appended
    return {**body, "audit": record.json()["explanation"]["deep_recall"]}


def test_an_infinite_loop_is_stopped_at_the_hard_timeout_before_its_block_limit(client, models,
                                                                               monkeypatch) -> None:
    point_route_at(models, monkeypatch, deep_block_timeout_s=60.0)

    def slow_turn(_messages):
        time.sleep(1.5)  # the block starts with less time left than its own limit, min(60 s, 3 s)
        return code("n = 0", "while True:", "    n += 1")

    models.script(ROOT, slow_turn, "FINAL: never asked")
    body = _ask(client, "count forever about the walrus", timeout_s=3)
    assert body["stopped"] == "timeout" and "hard timeout" in body["reason"] and body["answer"] is None
    [block] = body["audit"]["iterations"][0]["blocks"]
    assert block["stopped"] == "timeout"
    assert "hard timeout passed while this block was running" in block["error"]
    assert len(models.of(ROOT)) == 1  # stopped there: no further turn


def test_a_live_call_still_waiting_is_abandoned_at_the_hard_timeout(client, models, monkeypatch) -> None:
    point_route_at(models, monkeypatch, deep_block_timeout_s=60.0, llm_stream=True)
    models.trickle_s[SUB] = 1.0  # every chunk in time for the client's read timeout; the whole reply ~10 s
    models.script(SUB, "the walrus went back to v41, said slowly, one small piece at a time....")
    models.script(ROOT, code("print(llm_query('what did the walrus go back to?'))"), "FINAL: never asked")
    body = _ask(client, "slow walrus sub-call", timeout_s=3)
    assert body["stopped"] == "timeout" and body["answer"] is None
    [sub_call] = body["audit"]["sub_calls"]
    assert "answer" not in sub_call and "hard timeout" in sub_call["error"]
    [block] = body["audit"]["iterations"][0]["blocks"]
    assert "hard timeout" in (block["error"] or "")
