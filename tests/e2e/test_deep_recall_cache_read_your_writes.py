"""Deep recall's query cache and read-your-writes: an answer cached before a caller's write is not served to a
deep recall whose min_position is past it (the SDK sends its last write's position), and is served again to one
at or before the position it was computed at."""

from __future__ import annotations

import json
import uuid

from funnel_support import project

from tests.deep_recall_support import ROOT, code, point_route_at


def _ok(r):
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.json()


def _remember(client, engine, content: str) -> int:
    position = _ok(client.post("/v1/memories", json={"content": content, "kind": "fact",
                                                     "must_keep": True}))["position"]
    project(engine, position)
    return position


def test_a_write_after_a_cached_answer_is_seen_by_the_next_deep_recall(client, engine, models, monkeypatch):
    point_route_at(models, monkeypatch)
    old, new = f"quartz-{uuid.uuid4().hex[:6]}", f"basalt-{uuid.uuid4().hex[:6]}"
    # Each deep recall searches once and answers the code words the search showed it.
    turns = (code("print(search('the vault code word', max_results=10))"),
             lambda messages: "FINAL: " + " ".join(w for w in (old, new) if w in json.dumps(messages)))
    question = "what is the vault code word?"
    first_write = _remember(client, engine, f"The vault code word is {old}.")
    models.script(ROOT, *turns)
    first = _ok(client.post("/v1/deep_recall", json={"question": question, "min_position": first_write}))
    assert first["cached"] is False and old in first["answer"] and new not in first["answer"], first
    again = _ok(client.post("/v1/deep_recall", json={"question": question, "min_position": first_write}))
    assert again["cached"] is True, again  # nothing written since: the cache answers

    second_write = _remember(client, engine, f"Since Monday the vault code word is {new}.")
    models.reset()
    models.script(ROOT, *turns)
    after = _ok(client.post("/v1/deep_recall", json={"question": question, "min_position": second_write}))
    assert after["cached"] is False and new in after["answer"], after  # not the answer from before the write
    cached_now = _ok(client.post("/v1/deep_recall", json={"question": question, "min_position": second_write}))
    assert cached_now["cached"] is True and new in cached_now["answer"], cached_now
