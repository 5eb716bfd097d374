"""The one BM25 statement (recall/keyword.py bm25_top), over the sessions' postings: its scores are Okapi BM25,
and its plan computes each query term's idf once, in float8, instead of a numeric ln per posting joined to the
terms (the plan that made sessions recall slow down with the corpus: bench/sessions_recall.py --profile)."""

from __future__ import annotations

import json
import math
from typing import Any
from unittest import mock

from domain.text import term_frequencies, tokenize
from infra.db import unprepared
from projections.runner import catch_up
from projections.sessions import SessionsProjector, message_uid
from recall import keyword
from recall.domains.sessions import SESSION_KEYWORD
from recall.keyword import bm25_top
from recall.scope import Scope
from services.sessions import append_messages

META = {"actor": "test", "source": "test"}
CONTENTS = ["the walrus ate the herring", "a walrus and a walrus again", "herring soup recipe with walrus fat",
            "nothing relevant here at all", "herring herring herring", "tea with the harbour master"]
K1, B = 1.2, 0.75
# b of the random corpora's cases: the documents' default, the memories' (ENGRAMLOG_MEMORY_BM25_B) and none
B_VALUES = (B, 0.3, 0.0)


def _load(engine: Any, tenant: str) -> list[dict[str, Any]]:
    messages = [{"message_id": f"m{i}", "role": "user", "content": c} for i, c in enumerate(CONTENTS)]
    append_messages(engine, tenant, "s1", messages, META)
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    return messages


def _okapi(query: str) -> dict[str, float]:
    """Okapi BM25 by hand over CONTENTS (idf = ln(1 + (N - df + 0.5) / (df + 0.5)))."""
    docs = [term_frequencies(c) for c in CONTENTS]
    n, avgdl = len(docs), sum(sum(d.values()) for d in docs) / len(docs)
    scores: dict[str, float] = {}
    for i, tfs in enumerate(docs):
        length = sum(tfs.values())
        score = 0.0
        for term in set(tokenize(query)):
            if term in tfs:
                df = sum(term in d for d in docs)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tfs[term] * (K1 + 1) / (tfs[term] + K1 * (1 - B + B * length / avgdl))
        if score:
            scores[f"m{i}"] = score
    return scores


def test_scores_are_okapi_bm25(engine, tenant: str) -> None:
    _load(engine, tenant)
    uid_of = {message_uid(tenant, "s1", f"m{i}"): f"m{i}" for i in range(len(CONTENTS))}
    with engine.connect() as conn:
        got = bm25_top(conn, Scope(tenant), tokenize("walrus herring"), 10, K1, B, None, SESSION_KEYWORD, "d.sent")
    expected = _okapi("walrus herring")
    assert {uid_of[u] for u in got} == set(expected)
    for uid, score in got.items():
        assert math.isclose(score, expected[uid_of[uid]], rel_tol=1e-9)
    assert list(got) == sorted(got, key=lambda u: (-got[u], str(u)))  # best first


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _plan_nodes(child))]


def _explained(conn: Any, call: Any, options: str) -> dict[str, Any]:
    """Run `call` (one bm25_top on `conn`) and EXPLAIN (`options`, FORMAT JSON) the one statement it ran, with its
    values bound as bm25_top binds them (infra/db.py unprepared): the top plan node."""
    captured: list[tuple[str, Any]] = []

    def capture(conn_: Any, statement: str, params: Any) -> list[Any]:
        captured.append((statement, params))
        return unprepared(conn_, statement, params)

    with mock.patch.object(keyword, "unprepared", capture):
        call()
    [(statement, params)] = captured
    [row] = unprepared(conn, f"EXPLAIN ({options}, FORMAT JSON) " + statement, params)
    raw = row[0]
    return (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]


def _branches_run(engine: Any, conn: Any, call: Any) -> list[bool]:
    """Run `call` (one bm25_top) and EXPLAIN ANALYZE its statement: for each branch of its UNION (a narrowed
    scope: the read of every posting, then the walk), whether it scanned anything (a gate that held it back runs
    no scan under it)."""
    top = _explained(conn, call, "ANALYZE")

    def scanned(node: dict[str, Any]) -> bool:
        return ("Scan" in node["Node Type"] and node.get("Actual Loops", 0) > 0) or any(
            scanned(c) for c in node.get("Plans", []) if c.get("Parent Relationship") not in ("InitPlan", "SubPlan"))

    return [scanned(m) for m in _members(top)]


def _members(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The branches of the statement's UNION, under any sort of it."""
    mine = [m for m in node.get("Plans", []) if m.get("Parent Relationship") == "Member"]
    return mine or next((found for c in node.get("Plans", []) if c.get("Parent Relationship") == "Outer"
                         for found in [_members(c)] if found), [])


def _answered_by_walk(conn: Any, call: Any) -> bool:
    """Whether the walk, the UNION's last branch, gave the rows (one branch gives them: the others' gates hold)."""
    return _members(_explained(conn, call, "ANALYZE"))[-1]["Actual Rows"] > 0


def test_idf_is_computed_once_per_term_in_float8(engine, tenant: str) -> None:
    _load(engine, tenant)
    with engine.connect() as conn:
        plan = _explained(conn, lambda: bm25_top(conn, Scope(tenant), tokenize("walrus herring"), 10, K1, B, None,
                                                 SESSION_KEYWORD, "d.sent"), "VERBOSE")
    nodes = _plan_nodes(plan)
    assert any(n.get("Subplan Name") == "CTE idf" for n in nodes)  # materialized: once per query term
    aggregate_outputs = " ".join(" ".join(n.get("Output", [])) for n in nodes if n["Node Type"] == "Aggregate")
    assert "sum(" in aggregate_outputs
    assert "numeric" not in aggregate_outputs  # no numeric ln per posting


def test_a_common_term_brings_only_its_best_postings_and_every_score_stays_exact(engine, tenant: str) -> None:
    """Each term brings its first `per_term` postings by impact ((length + 10) / tf); the candidates are scored
    with the whole corpus's Okapi BM25, over all their postings of the query's terms. With no read of every
    posting to fall back on (read_all_max 0), the walk answers its candidates even where it cannot prove them the
    top n."""
    _load(engine, tenant)
    uid_of = {message_uid(tenant, "s1", f"m{i}"): f"m{i}" for i in range(len(CONTENTS))}
    with engine.connect() as conn:
        got = bm25_top(conn, Scope(tenant), tokenize("herring soup walrus"), 10, K1, B, None, SESSION_KEYWORD,
                       "d.sent", per_term=1, walk_over=0, full_walk=0, read_all_max=0)
        walked = bm25_top(conn, Scope(tenant), tokenize("herring soup walrus"), 10, K1, B, None,
                          SESSION_KEYWORD, "d.sent", walk_over=0)
        proved = bm25_top(conn, Scope(tenant), tokenize("herring soup walrus"), 10, K1, B, None,
                          SESSION_KEYWORD, "d.sent", per_term=1, walk_over=0, full_walk=0)
        everything = bm25_top(conn, Scope(tenant), tokenize("herring soup walrus"), 10, K1, B, None,
                              SESSION_KEYWORD, "d.sent")
    expected = _okapi("herring soup walrus")
    # herring's best posting is m4 ("herring herring herring"), soup's only one m2, walrus's best m1 (tf 2)
    assert {uid_of[u] for u in got} == {"m4", "m2", "m1"}
    for uid, score in got.items():
        assert math.isclose(score, expected[uid_of[uid]], rel_tol=1e-9)
    assert {uid_of[u] for u in everything} == set(expected)  # few postings: every one is read
    assert walked.keys() == everything.keys()  # every term is rare here (df ≤ full_walk): walked to its end
    # a walk it cannot prove exact (4 candidates of 10 asked) falls back to reading every posting
    assert list(proved) == list(everything)
    for uid, score in walked.items():
        assert math.isclose(score, everything[uid], rel_tol=1e-9)


def test_a_walk_answers_alone_when_its_bound_proves_its_top_n(engine, tenant: str) -> None:
    """A rare term (soup) walked to its end, a common one (filler) walked short: every document outside the walk
    holds only the common term, so scores at most its idf times the weight bound past its last walked posting.
    When n candidates outscore that, the walk's top n is the exact top n and the read of every posting never
    runs; when they do not, it runs and answers the same top n."""
    contents = [f"soup filler {'pad ' * i}" for i in range(3)] + [f"filler {'pad ' * (i % 7)}" for i in range(60)]
    messages = [{"message_id": f"f{i}", "role": "user", "content": c} for i, c in enumerate(contents)]
    append_messages(engine, tenant, "s1", messages, META)
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    expected = _okapi_over(contents, "soup filler")
    best_first = sorted(expected, key=lambda i: (-expected[i], str(message_uid(tenant, "s1", f"f{i}"))))
    uid_of = {message_uid(tenant, "s1", f"f{i}"): i for i in range(len(contents))}
    read_every: dict[int, bool] = {}
    with engine.connect() as conn:
        for n in (3, 10):
            def call(n: int = n) -> dict[Any, float]:
                return bm25_top(conn, Scope(tenant, session_id="s1"), tokenize("soup filler"), n, K1, B, None,
                                SESSION_KEYWORD, "d.sent", per_term=5, walk_over=0, full_walk=3)
            assert [uid_of[u] for u in call()] == best_first[:n]
            every, _walk = _branches_run(engine, conn, call)
            read_every[n] = every
    assert read_every == {3: False, 10: True}  # 3: soup's 3 outscore any filler-only message; 10: not provable


def test_the_terms_postings_pick_the_plan_and_the_plan_not_picked_never_runs(engine, tenant: str) -> None:
    """The query terms' postings count picks the statement: past walk_over, the one that can walk, where a one-time
    filter per branch picks the plan and the other is never executed; under it, the read of every posting alone,
    with no walk in it to plan (a narrowed scope: a whole tenant's has a third plan, the next test's). Both answer
    the same top n here."""
    _load(engine, tenant)
    plans, answers = {}, {}
    with engine.connect() as conn:
        for walk_over in (0, 10_000):
            def call(walk_over: int = walk_over) -> dict[Any, float]:
                return bm25_top(conn, Scope(tenant, session_id="s1"), tokenize("herring soup"), 10, K1, B, None,
                                SESSION_KEYWORD, "d.sent", walk_over=walk_over)
            answers[walk_over] = call()
            plans[walk_over] = _branches_run(engine, conn, call)
            walk_ctes = {n.get("Subplan Name") for n in _plan_nodes(_explained(conn, call, "VERBOSE"))}
            assert ("CTE walked" in walk_ctes) == (walk_over == 0)
    assert plans[0] == [False, True]  # past walk_over: only the walk runs (both terms walked to their end)
    assert plans[10_000] == []  # under it: the read of every posting, the statement's only branch
    assert answers[0] == answers[10_000]


def test_the_tables_own_walk_over_picks_the_plan_unless_one_is_given(engine, tenant: str) -> None:
    """Each domain's tables say past how many postings a walk may run (memories: READ_ALL_MAX, their short even
    documents giving the walk no bound to prove with; the others: WALK_OVER_POSTINGS), and bm25_top uses it when no
    walk_over is given."""
    from dataclasses import replace

    from recall.keyword import MEMORY_KEYWORD, READ_ALL_MAX, WALK_OVER_POSTINGS

    assert MEMORY_KEYWORD.walk_over == READ_ALL_MAX and SESSION_KEYWORD.walk_over == WALK_OVER_POSTINGS
    _load(engine, tenant)
    with engine.connect() as conn:
        for walk_over in (0, 10_000):
            tables = replace(SESSION_KEYWORD, walk_over=walk_over)

            def call(tables: Any = tables) -> dict[Any, float]:
                return bm25_top(conn, Scope(tenant, session_id="s1"), tokenize("herring soup"), 10, K1, B, None,
                                tables, "d.sent")
            walk_ctes = {n.get("Subplan Name") for n in _plan_nodes(_explained(conn, call, "VERBOSE"))}
            assert ("CTE walked" in walk_ctes) == (walk_over == 0)


def _okapi_over(contents: list[str], query: str, b: float = B) -> dict[int, float]:
    """Okapi BM25 by hand over `contents`, by index."""
    docs = [term_frequencies(c) for c in contents]
    n, avgdl = len(docs), sum(sum(d.values()) for d in docs) / len(docs)
    scores: dict[int, float] = {}
    for i, tfs in enumerate(docs):
        length, score = sum(tfs.values()), 0.0
        for term in set(tokenize(query)) & tfs.keys():
            df = sum(term in d for d in docs)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tfs[term] * (K1 + 1) / (tfs[term] + K1 * (1 - b + b * length / avgdl))
        if score:
            scores[i] = score
    return scores


def test_a_whole_tenant_read_filters_after_scoring_and_answers_what_filtering_first_does(engine, tenant: str) -> None:
    """A whole-tenant scope scores the postings alone and looks the filters up for the best 2n + 20 only; when
    fewer than n of those pass (here: only the longest, lowest-scored messages are kept), the read of every
    posting with the filters joined answers instead. Either way: the filtered top n by Okapi BM25."""
    contents = ["walrus " + " ".join(f"filler{j}" for j in range(i)) for i in range(40)]
    messages = [{"message_id": f"w{i}", "role": "user", "content": c} for i, c in enumerate(contents)]
    append_messages(engine, tenant, "s1", messages, META)
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    uid_of = {message_uid(tenant, "s1", f"w{i}"): i for i in range(len(contents))}
    expected = _okapi_over(contents, "walrus")
    best_first = sorted(expected, key=lambda i: (-expected[i], str(message_uid(tenant, "s1", f"w{i}"))))
    with engine.connect() as conn:
        for keep, n in ((range(40), 3), (range(40), 30), (range(34, 40), 2), (range(34, 40), 10)):
            kept = [f"w{i}" for i in keep]
            got = bm25_top(conn, Scope(tenant), tokenize("walrus"), n, K1, B, None, SESSION_KEYWORD,
                           "d.sent AND d.message_id = ANY(:kept)", {"kept": kept})
            want = [i for i in best_first if f"w{i}" in kept][:n]
            assert [uid_of[u] for u in got] == want, (keep, n)
            for uid, score in got.items():
                assert math.isclose(score, expected[uid_of[uid]], rel_tol=1e-9)


def _random_corpus(engine: Any, tenant: str, rng: Any, vocabulary: list[str]) -> tuple[list[str], dict[Any, int]]:
    """90 Zipf-like messages of 1-9 words of `vocabulary`, appended and projected into session s1: their texts,
    and each one's index by its message uid."""
    weights = [1 / (i + 1) for i in range(len(vocabulary))]
    contents = [" ".join(rng.choices(vocabulary, weights, k=rng.randint(1, 9))) for _ in range(90)]
    messages = [{"message_id": f"r{i}", "role": "user", "content": c} for i, c in enumerate(contents)]
    append_messages(engine, tenant, "s1", messages, META)
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    return contents, {message_uid(tenant, "s1", f"r{i}"): i for i in range(len(contents))}


def test_every_plan_answers_okapi_bm25s_top_n_on_random_corpora(engine, tenant: str) -> None:
    """Random Zipf-like messages and queries, every plan forced in turn (walk cuts of 1-7 postings, rare terms walked
    to their end or not, n from 1 to 25): up to read_all_max postings the answer is always Okapi BM25's top n over
    every document, walked and proved, or read in full when the walk cannot prove it."""
    import random

    rng = random.Random(14)
    vocabulary = [f"w{i}" for i in range(12)]
    contents, uid_of = _random_corpus(engine, tenant, rng, vocabulary)
    with engine.connect() as conn:
        for _ in range(150):
            query = " ".join(rng.choices(vocabulary, k=rng.randint(1, 3)))
            n, per_term, full_walk = rng.randint(1, 25), rng.randint(1, 7), rng.choice((0, 3, 10))
            b = rng.choice(B_VALUES)
            expected = _okapi_over(contents, query, b)
            got = bm25_top(conn, Scope(tenant, session_id="s1"), tokenize(query), n, K1, b, None, SESSION_KEYWORD,
                           "d.sent", per_term=per_term, walk_over=0, full_walk=full_walk)
            case = (query, n, per_term, full_walk, b)
            # the top n scores (ties at the cut may name either document), each returned score the document's own
            assert [round(v, 9) for v in got.values()] == sorted((round(v, 9) for v in expected.values()),
                                                                  reverse=True)[:n], case
            for uid, score in got.items():
                assert math.isclose(score, expected[uid_of[uid]], rel_tol=1e-9), case


def test_a_narrow_agent_scope_reads_every_posting_of_its_own_and_is_exact(engine, tenant: str) -> None:
    """A scope of one agent whose memories are few (at most narrow_max, and a tenth of the tenant's) reads every
    posting of the query's terms and keeps the agent's, never walking: a walk must pass over most of a common
    term's postings to find the agent's best, and here, cut short and unable to fall back (read_all_max 0), it
    misses them. An agent holding more than a tenth of the tenant's memories is walked as before."""
    from funnel_support import remember_all

    mine = [f"the walrus ate herring number {i} {'pad ' * i}" for i in range(8)]
    remember_all(engine, tenant, mine, agent_id="a0")
    remember_all(engine, tenant, [f"walrus herring walrus story {i}" for i in range(100)], agent_id="a1")
    terms = tokenize("walrus herring")
    with engine.connect() as conn:
        def top(agent: str, **knobs: Any) -> dict[Any, float]:
            return bm25_top(conn, Scope(tenant, agent_id=agent), terms, 5, K1, B, ("active",), **knobs)

        exact = top("a0", walk_over=10**9)  # few postings: every one read
        assert len(exact) == 5
        narrow = top("a0", per_term=1, full_walk=0, walk_over=0, read_all_max=0)
        assert list(narrow) == list(exact)
        for key, score in narrow.items():
            assert math.isclose(score, exact[key], rel_tol=1e-9)
        assert _branches_run(engine, conn, lambda: top("a0", per_term=1, full_walk=0, walk_over=0,
                                                       read_all_max=0)) == [True, False]
        # the same knobs with the narrow read turned off walk, and the walk cut at one posting a term misses
        walked = top("a0", per_term=1, full_walk=0, walk_over=0, read_all_max=0, narrow_max=0)
        assert list(walked) != list(exact)
        assert _branches_run(engine, conn, lambda: top("a0", per_term=1, full_walk=0, walk_over=0, read_all_max=0,
                                                       narrow_max=0)) == [False, True]
        # a1 holds 100 of the 108 memories: not narrow, walked
        assert _branches_run(engine, conn, lambda: top("a1", per_term=1, full_walk=0, walk_over=0,
                                                       read_all_max=0)) == [False, True]


def test_a_whole_tenant_walk_looks_its_filters_up_after_scoring_and_answers_okapi_bm25s_top_n(engine,
                                                                                              tenant: str) -> None:
    """A whole-tenant scope walks each term's postings of every document and looks the filters up for its best
    candidates only. Random corpora, a random share of the messages kept by the filter (the best-scored often
    not), every walk forced (cuts of 1-40 postings, rare terms walked to their end or not, n from 1 to 25): the
    answer is always Okapi BM25's top n among the kept documents, the walk's when it proves it, else the read of
    every posting."""
    import random

    rng = random.Random(23)
    vocabulary = [f"w{i}" for i in range(12)]
    contents, uid_of = _random_corpus(engine, tenant, rng, vocabulary)
    walks_answered = 0
    with engine.connect() as conn:
        for _ in range(150):
            query = " ".join(rng.choices(vocabulary, k=rng.randint(1, 3)))
            n, per_term, full_walk = rng.randint(1, 25), rng.choice((1, 3, 7, 20, 40)), rng.choice((0, 3, 10))
            kept = {i for i in range(len(contents)) if rng.random() < rng.choice((0.5, 0.9, 1.0))}
            b = rng.choice(B_VALUES)
            expected = {i: v for i, v in _okapi_over(contents, query, b).items() if i in kept}

            def call(n: int = n, per_term: int = per_term, full_walk: int = full_walk,
                     kept: set[int] = kept, query: str = query, b: float = b) -> dict[Any, float]:
                return bm25_top(conn, Scope(tenant), tokenize(query), n, K1, b, None, SESSION_KEYWORD,
                                "d.sent AND d.message_id = ANY(:kept)", {"kept": [f"r{i}" for i in kept]},
                                per_term=per_term, walk_over=0, full_walk=full_walk)
            got = call()
            case = (query, n, per_term, full_walk, len(kept), b)
            assert [round(v, 9) for v in got.values()] == sorted((round(v, 9) for v in expected.values()),
                                                                  reverse=True)[:n], case
            for uid, score in got.items():
                assert uid_of[uid] in kept and math.isclose(score, expected[uid_of[uid]], rel_tol=1e-9), case
            walks_answered += _answered_by_walk(conn, call)
    assert walks_answered > 20  # the walk proves its own answer often, the read of every posting the rest


def test_holds_any_answers_whether_bm25_finds_a_document(engine, tenant: str) -> None:
    """keyword.holds_any (the staging fallback's check): on random corpora and filters keeping from none to all of the
    messages, it answers whether any kept message holds a query term, as bm25_top's top 1 does, without scoring."""
    import random

    from recall.keyword import holds_any

    rng = random.Random(31)
    vocabulary = [f"w{i}" for i in range(12)]
    contents, _ = _random_corpus(engine, tenant, rng, vocabulary)
    held = [set(tokenize(c)) for c in contents]
    found = {True: 0, False: 0}
    with engine.connect() as conn:
        for _ in range(120):
            terms = tokenize(" ".join(rng.choices([*vocabulary, "absent", "nowhere"], k=rng.randint(1, 3))))
            kept = {i for i in range(len(contents)) if rng.random() < rng.choice((0.0, 0.02, 0.1, 1.0))}
            scope = rng.choice((Scope(tenant), Scope(tenant, session_id="s1"), Scope(tenant, session_id="s2")))
            filters = ("d.sent AND d.message_id = ANY(:kept)", {"kept": [f"r{i}" for i in kept]})
            expected = scope.session_id != "s2" and any(held[i] & set(terms) for i in kept)
            assert holds_any(conn, scope, terms, None, SESSION_KEYWORD, *filters) is expected, (terms, len(kept))
            assert bool(bm25_top(conn, scope, terms, 1, K1, B, None, SESSION_KEYWORD, *filters)) is expected
            found[expected] += 1
        assert not holds_any(conn, Scope(tenant), [], None, SESSION_KEYWORD)
    assert found[True] > 20 and found[False] > 20
