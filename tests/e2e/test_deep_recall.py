"""Deep recall over HTTP against a scripted model server on loopback (the OpenAI chat protocol, streamed and
not): multi-iteration searches, sub-calls, depth 2, each budget running out, the cache, blind spots, the
shortcut, the store across calls and restarts, the audit in GET /v1/recalls/{id}, bad input."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from deep_recall.store import forget_process_state
from eventstore.read import event_at
from projections.deep_recall import DeepRecallProjector
from projections.runner import catch_up
from projections.sessions import SessionsProjector
from tests.deep_recall_support import ROOT, SUB, Cut, code, last_user, point_route_at

FACTS = [("s-march", "We decided to roll the walrus deploy back to v41 on March 12."),
         ("s-march", "The walrus incident was caused by a bad cache key."),
         ("s-april", "In April we moved the walrus service to the new cluster."),
         ("s-may", "The walrus retro in May listed three follow-ups."),
         ("s-june", "In June the walrus dashboard got an error budget panel.")]


@pytest.fixture
def deep(models, monkeypatch):
    """The route's settings pointed at the scripted models (the shortcut off unless a test turns it on)."""
    configure = point_route_at(models, monkeypatch)
    configure.models = models  # type: ignore[attr-defined]
    return configure


def seed(client: TestClient, engine) -> None:
    for session_id, content in FACTS:
        assert client.post(f"/v1/sessions/{session_id}/messages",
                           json={"role": "user", "content": content, "agent_id": "ops"}).status_code == 201
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)


def ask(client: TestClient, question: str = "what did we decide about the walrus deploy?", **body):
    r = client.post("/v1/deep_recall", json={"question": question, **body})
    assert r.status_code == 200, r.text
    return r.json()


TURN_COST = (100 * 3.0 + 50 * 15.0) / 1_000_000  # the scripted usage at the test's prices


@pytest.mark.parametrize("stream", [False, True])
def test_multi_iteration_searches_then_final(client, engine, deep, stream) -> None:
    seed(client, engine)
    deep(llm_stream=stream)
    models = deep.models

    def second(messages):
        assert "walrus" in last_user(messages)  # the first block's printed search results came back
        return code("s = list_sessions()", "print([x['session_id'] for x in s])",
                    "t = load_transcript('s-march')", "print(grep(t, 'v41'))")

    models.script(ROOT, code("hits = search('walrus deploy', max_results=5)",
                             "print(len(hits), [h['content'] for h in hits])"),
                  second, "FINAL: rolled back to v41 on March 12")
    body = ask(client)
    assert body["stopped"] == "final" and body["answer"] == "rolled back to v41 on March 12"
    assert body["iterations"] == 3 and body["shortcut"] is False and body["sub_calls"] == 0
    assert body["tokens"] == {"input": 300, "output": 150, "total": 450}
    assert body["cost_usd"] == pytest.approx(3 * TURN_COST)
    third = last_user(models.of(ROOT)[2]["messages"])
    assert "s-march" in third and "v41" in third
    assert models.of(ROOT)[0]["stream"] is stream if stream else "stream" not in models.of(ROOT)[0]
    # The audit: GET /v1/recalls/{id} shows each iteration's code and what each live call returned.
    record = client.get(f"/v1/recalls/{body['recall_id']}")
    assert record.status_code == 200, record.text
    audit = record.json()["explanation"]["deep_recall"]
    assert audit["question"].startswith("what did we decide") and audit["answer"] == body["answer"]
    calls = [c for it in audit["iterations"] for b in it["blocks"] for c in b["live_calls"]]
    assert [c["fn"] for c in calls] == ["search", "list_sessions", "load_transcript"]
    assert "v41" in calls[2]["result"] and "search('walrus deploy'" in audit["iterations"][0]["blocks"][0]["code"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_turn_cut_at_max_tokens_inside_a_block_is_told_so(client, engine, deep, stream) -> None:
    seed(client, engine)
    deep(llm_stream=stream)
    models = deep.models
    models.script(ROOT, Cut("Let me search.\n```python\nhits = search('walrus deploy', max_res"),
                  "```python\nprint('no fence')\n", "FINAL: v41")
    body = ask(client)
    assert body["stopped"] == "final" and body["answer"] == "v41" and body["iterations"] == 3
    second, third = (last_user(r["messages"]) for r in models.of(ROOT)[1:3])
    assert "cut off at the output token limit" in second  # the cut block was not run, and the model knows why
    assert "had no ```python block" in third  # an unclosed block that was not cut is no block
    audit = client.get(f"/v1/recalls/{body['recall_id']}").json()["explanation"]["deep_recall"]
    assert [it.get("truncated", False) for it in audit["iterations"][:2]] == [True, False]
    assert all(not it["blocks"] for it in audit["iterations"])


def test_a_sub_call_at_depth_1_is_a_plain_completion(client, engine, deep) -> None:
    seed(client, engine)
    models = deep.models
    models.script(ROOT, code("a = llm_query('summarise: ' + str(context['knowledge'])[:500])", "print(a)"),
                  lambda m: code(f"FINAL({last_user(m).splitlines()[1]!r})"))
    models.script(SUB, "the summary")
    body = ask(client)
    assert body["stopped"] == "final" and body["answer"] == "the summary"
    assert body["sub_calls"] == 1 and body["iterations"] == 2
    assert body["cost_usd"] == pytest.approx(3 * TURN_COST)
    assert models.of(SUB)[0]["messages"][0]["content"].startswith("summarise: ")
    audit = client.get(f"/v1/recalls/{body['recall_id']}").json()["explanation"]["deep_recall"]
    assert audit["sub_calls"][0]["kind"] == "completion" and audit["sub_calls"][0]["answer"] == "the summary"


def test_depth_2_makes_a_sub_call_a_nested_loop(client, engine, deep) -> None:
    seed(client, engine)
    models = deep.models
    models.script(ROOT, code("print(llm_query('which version did the walrus go back to?'))"),
                  lambda m: "FINAL: " + last_user(m).splitlines()[1])
    models.script(SUB, code("print(context)", "print(search('walrus v41')[0]['content'])"),
                  lambda m: code("FINAL('v41')") if "v41" in last_user(m) else "FINAL: not seen")
    body = ask(client, max_depth=2)
    assert body["stopped"] == "final" and body["answer"] == "v41"
    assert body["sub_calls"] == 1 and body["iterations"] == 2
    assert body["cost_usd"] == pytest.approx(4 * TURN_COST)  # the nested loop's two turns charged to the parent
    assert "sub-call of a deep recall" in models.of(SUB)[0]["messages"][0]["content"]
    audit = client.get(f"/v1/recalls/{body['recall_id']}").json()["explanation"]["deep_recall"]
    nested = audit["sub_calls"][0]
    assert nested["kind"] == "loop" and nested["iterations"] == 2 and nested["stopped"] == "final"


def test_the_iteration_budget_runs_out_with_a_warning(client, engine, deep) -> None:
    models = deep.models
    models.script(ROOT, *[code("print('still looking')")] * 5)
    body = ask(client, "where is the walrus budget?", budgets={"iterations": 3})
    assert body["stopped"] == "budget" and body["iterations"] == 3 and body["answer"] is None
    assert "iteration budget" in body["reason"]
    assert "BUDGET WARNING" in last_user(models.of(ROOT)[2]["messages"])


def test_the_dollar_budget_runs_out(client, engine, deep) -> None:
    deep.models.script(ROOT, *[code("print(1)")] * 5)
    body = ask(client, "walrus dollars?", budgets={"cost_usd": TURN_COST * 1.5})
    assert body["stopped"] == "budget" and body["iterations"] == 2 and "dollar budget" in body["reason"]


def test_the_sub_call_budget_refuses_further_sub_calls(client, engine, deep) -> None:
    models = deep.models
    models.script(ROOT, code("print(llm_query_parallel(['a', 'b', 'c']))"),
                  lambda m: code(f"FINAL({str('sub-call budget spent' in last_user(m))!r})"))
    models.script(SUB, "x", "x", "x")
    body = ask(client, "walrus sub-calls?", budgets={"sub_calls": 2})
    assert body["answer"] == "True" and body["sub_calls"] == 2 and len(models.of(SUB)) == 2


def test_the_hard_timeout_stops_the_loop(client, engine, deep) -> None:
    models = deep.models
    models.script(ROOT, code("print(1)"), code("print(2)"))
    models.delay_s = 0.8
    body = ask(client, "walrus timeout?", budgets={"timeout_s": 1})
    assert body["stopped"] == "timeout" and "hard timeout" in body["reason"]


def test_a_model_error_stops_with_error(client, engine, deep) -> None:
    deep(llm_base_url="http://127.0.0.1:9/v1")  # nothing listens on the discard port
    body = ask(client, "walrus unreachable?")
    assert body["stopped"] == "error" and "model error" in body["reason"]


def test_a_cached_question_answers_at_once(client, engine, deep) -> None:
    models = deep.models
    models.script(ROOT, "FINAL: cached walrus")
    first = ask(client, "What about the Walrus cache?")
    again = ask(client, "  what about the   walrus CACHE?")
    assert first["cached"] is False and again["cached"] is True and again["answer"] == "cached walrus"
    assert again["iterations"] == 0 and len(models.of(ROOT)) == 1 and again["recall_id"] != first["recall_id"]
    other_scope = ask(client, "What about the Walrus cache?", project="elsewhere")
    assert other_scope["cached"] is False


def test_no_useful_answer_registers_a_blind_spot(client, engine, deep) -> None:
    deep.models.script(ROOT, code("FINAL('NOT FOUND: nothing about penguins')"), "FINAL: NOT FOUND again")
    body = ask(client, "what about the penguins?", agent_id="ops")
    assert body["stopped"] == "final"
    ask(client, "what about the penguins?", agent_id="ops")  # still not found: not registered twice
    catch_up(engine, DeepRecallProjector(), 1000, max_seconds=60)
    spots = client.get("/v1/blind_spots", params={"agent_id": "ops"}).json()["blind_spots"]
    assert [(s["question"], s["priority"], s["kind"]) for s in spots] == [
        ("what about the penguins?", 0.85, "knowledge_gap")]
    assert (spots[0]["expires_at"][:10] > spots[0]["registered_at"][:10])
    assert client.get("/v1/blind_spots").json()["blind_spots"] == []  # another scope


def test_the_shortcut_answers_high_scores_without_the_loop(client, engine, deep) -> None:
    seed(client, engine)
    deep(deep_shortcut_hits=3, deep_shortcut_score=0.0001)
    body = ask(client, "walrus")
    assert body["shortcut"] is True and len(body["results"]) >= 3 and "walrus" in body["answer"]
    assert deep.models.of(ROOT) == [] and body["iterations"] == 0
    record = client.get(f"/v1/recalls/{body['recall_id']}").json()
    assert record["query"] == "walrus" and len(record["results"]) == len(body["results"])
    deep(deep_shortcut_score=0.99)  # too few at this score: the loop runs
    deep.models.script(ROOT, "FINAL: looped")
    assert ask(client, "walrus again")["shortcut"] is False


def test_with_no_model_the_quick_results_answer_and_say_why(client, engine, deep) -> None:
    seed(client, engine)
    deep(llm_model="")
    body = ask(client, "walrus cluster")
    # The shortcut's condition is off (deep_shortcut_hits=1000): not the shortcut, the quick recall's results.
    assert body["shortcut"] is False and "no model configured" in body["reason"] and "walrus" in body["answer"]
    assert body["results"] and body["stopped"] == "final"


def test_the_store_survives_calls_and_restarts(client, engine, deep) -> None:
    models = deep.models
    models.script(ROOT, code("store('walrus', {'version': 'v41'})", "FINAL('kept')"),
                  code("FINAL(get('walrus')['version'])"),
                  code("print(stored_keys())", "FINAL(get('walrus')['version'] + ' after restart')"))
    assert ask(client, "keep the walrus", session_id="w")["answer"] == "kept"
    assert ask(client, "read the walrus", session_id="w")["answer"] == "v41"
    catch_up(engine, DeepRecallProjector(), 1000, max_seconds=60)
    forget_process_state()  # what a restart of the API process forgets
    assert ask(client, "read the walrus again", session_id="w")["answer"] == "v41 after restart"
    with engine.connect() as conn:
        # The key is content, sealed in the stored payload (eventstore/codec.py): read it through the log.
        positions = conn.execute(text("SELECT position FROM events WHERE type = 'DeepRecallStored'"
                                      " AND data->>'session_id' = 'w'")).scalars().all()
        stored = [e for p in positions if (e := event_at(conn, p)) is not None and e.data.get("key") == "walrus"]
    assert len(stored) >= 1
    # A rebuild of the read model from the log gives the same rows, and the store still answers.
    from projections.rebuild import rebuild, verify

    rebuild(engine, DeepRecallProjector(), batch_size=50)
    report = verify(engine, DeepRecallProjector(), batch_size=50)
    assert report.identical and any(t.table == "deep_recall_store" and t.live_rows > 0 for t in report.tables)
    forget_process_state()
    models.script(ROOT, code("FINAL(get('walrus')['version'] + ' after rebuild')"))
    assert ask(client, "read the walrus once more", session_id="w")["answer"] == "v41 after rebuild"


def test_bad_input_is_refused_with_nothing_written(client, engine, deep, tenant) -> None:
    for body in ({"question": ""}, {"question": "x", "max_depth": 4}, {"question": "x", "budgets": {"iterations": 0}},
                 {"question": "x", "budgets": {"cost_usd": 1000}}, {"question": "x", "surprise": 1}):
        r = client.post("/v1/deep_recall", json=body)
        assert r.status_code == 422, (body, r.text)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one() == 0


def test_the_anthropic_messages_client_drives_the_loop(client, engine, deep) -> None:
    models = deep.models
    deep(llm_provider="anthropic", llm_base_url=models.url.removesuffix("/v1"), llm_api_key="k-test")
    models.script(ROOT, code("print(len(list_sessions()))"), "FINAL: via anthropic")
    body = ask(client, "walrus via anthropic?")
    assert body["stopped"] == "final" and body["answer"] == "via anthropic" and body["iterations"] == 2
    assert body["tokens"]["total"] == 300 and models.headers[0]["x-api-key"] == "k-test"
    first = models.of(ROOT)[0]["messages"]
    assert first[0]["role"] == "system" and "Turn protocol" in first[0]["content"]  # sent as `system`


def test_the_bootstrap_snapshot_is_rebuilt_after_its_ttl_and_the_store_survives(client, engine, deep) -> None:
    models = deep.models
    read = code("store('seen', get('seen', 0) + 1)", "FINAL(context['built_at'] + ' ' + str(get('seen')))")
    models.script(ROOT, read, read, read)
    first = ask(client, "walrus snapshot one", session_id="b")["answer"].split()
    second = ask(client, "walrus snapshot two", session_id="b")["answer"].split()
    assert second[0] == first[0] and (first[1], second[1]) == ("1", "2")  # the same snapshot within its TTL
    deep(deep_bootstrap_ttl_s=0.001)
    third = ask(client, "walrus snapshot three", session_id="b")["answer"].split()
    assert third[0] > first[0] and third[1] == "3"  # rebuilt; the store survived the rebuild
