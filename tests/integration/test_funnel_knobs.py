"""Each recall-funnel knob, set through its environment variable, changes what it claims to; and the
cross-encoder stage runs with a REAL CrossEncoder built from local weights (and is skipped, with an
explanation, when none is configured)."""

from __future__ import annotations

import uuid

import pytest
from funnel_support import COOKING, ask, build_cross_encoder, remember_all, stage


@pytest.fixture(scope="module")
def kitchen(engine):
    tenant = f"knobs-{uuid.uuid4().hex[:8]}"
    extra = [f"Note {i}: the oven thermometer reads {150 + i * 10} degrees after preheating" for i in range(40)]
    return tenant, remember_all(engine, tenant, COOKING + extra)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return build_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


def env_settings(monkeypatch, **env: str):
    """Settings read from the environment with `env` set: the knob goes in through its real override."""
    from infra.settings import Settings, get_settings, replace

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    fresh = Settings()
    base = get_settings()  # the test stack's service URLs
    return replace(fresh, database_url=base.stack.database_url, redis_url=base.stack.redis_url)


QUERY = "what temperature does the oven thermometer read after preheating?"


def test_rerank_pool_default_and_override(engine, kitchen, monkeypatch, cross_encoder):
    tenant, _ = kitchen
    cfg = env_settings(monkeypatch, ENGRAMLOG_RERANKER_MODEL=str(cross_encoder))
    default = ask(engine, tenant, QUERY, k=3, cfg=cfg)
    assert stage(default, "rerank")["config"]["rerank_pool"] == 40  # max(k·4, 40)
    assert stage(default, "rerank")["counts"]["scored"] == 40
    small = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_RERANK_POOL="12"))
    rr = stage(small, "rerank")
    assert rr["config"]["rerank_pool"] == 12 and rr["counts"]["pool"] == 12 and rr["counts"]["scored"] == 12
    wide = ask(engine, tenant, QUERY, k=20, cfg=env_settings(monkeypatch, ENGRAMLOG_RERANK_POOL="0"))
    assert stage(wide, "rerank")["config"]["rerank_pool"] == 80  # max(20·4, 40)


def test_topn_mult_sets_the_composite_cut(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    default = ask(engine, tenant, QUERY, k=10, cfg=env_settings(monkeypatch))
    assert stage(default, "composite")["config"]["top_n"] == 80  # k · 8
    # top_n = max(k · topn_mult, rerank pool): with a pool of 5, the multiplier decides.
    answer = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_TOPN_MULT="2",
                                                                ENGRAMLOG_RERANK_POOL="5"))
    composite = stage(answer, "composite")
    assert composite["config"]["top_n"] == 6 and composite["counts"]["kept"] == 6
    assert stage(answer, "rerank")["counts"]["in"] == 6
    wider = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_TOPN_MULT="10",
                                                               ENGRAMLOG_RERANK_POOL="5"))
    assert stage(wider, "composite")["counts"]["kept"] == 30



def test_abstain_gate_k_sets_how_many_results_are_judged(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    for k_gate in ("1", "5"):
        answer = ask(engine, tenant, QUERY, k=10, cfg=env_settings(monkeypatch, ENGRAMLOG_ABSTAIN_GATE_K=k_gate))
        gate = stage(answer, "abstain")
        assert gate["config"]["gate_k"] == int(k_gate) and gate["counts"]["judged"] == int(k_gate)


def test_candidate_floor_gates_the_vector_leg(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    query = "a sweet treat made with berries"  # shares no term with the memories: only the vector leg answers
    loose = ask(engine, tenant, query, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_SIM_CANDIDATE_FLOOR="-1"))
    counts = stage(loose, "candidates")["counts"]
    assert counts["keyword"] == 0 and counts["vector"] > 0 and counts["vector_below_floor"] == 0
    strict = ask(engine, tenant, query, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_SIM_CANDIDATE_FLOOR="0.99"))
    counts = stage(strict, "candidates")["counts"]
    assert counts["vector"] == 0 and counts["candidates"] == 0 and counts["vector_below_floor"] > 0
    assert strict.results == [] and strict.abstained["reason"] == "no candidate passed candidate generation"


def test_abstention_floors_and_quorum(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    relevant = "how long should I bake the sourdough loaf?"
    assert ask(engine, tenant, relevant, k=3, cfg=env_settings(monkeypatch)).abstained is None
    strict = env_settings(monkeypatch, ENGRAMLOG_ABSTAIN_SIM_FLOOR="0.99", ENGRAMLOG_ABSTAIN_QUORUM="1")
    answer = ask(engine, tenant, relevant, k=3, cfg=strict)
    assert answer.results == [] and "best cosine" in answer.abstained["reason"]
    assert answer.abstained["channels"]["vector"]["floor"] == pytest.approx(0.99)
    veto = env_settings(monkeypatch, ENGRAMLOG_ABSTAIN_TERM_FLOOR="1.01", ENGRAMLOG_ABSTAIN_VETO="keyword")
    vetoed = ask(engine, tenant, relevant, k=3, cfg=veto)
    assert vetoed.results == [] and vetoed.abstained["reason"].startswith("vetoed by keyword")


def test_blend_weights_set_the_quality_factor(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    zero = env_settings(monkeypatch, ENGRAMLOG_W_ACTIVATION="0", ENGRAMLOG_W_HEBBIAN="0", ENGRAMLOG_W_CENTRALITY="0",
                        ENGRAMLOG_W_CONFIDENCE="0", ENGRAMLOG_W_FEEDBACK="0")
    for r in ask(engine, tenant, QUERY, k=3, cfg=zero).results:
        c = r.explanation["stages"]["composite"]
        assert c["quality"] == pytest.approx(1.0) and c["score"] == pytest.approx(c["relevance"], abs=1e-5)
    half = env_settings(monkeypatch, ENGRAMLOG_W_ACTIVATION="0.5", ENGRAMLOG_W_HEBBIAN="0",
                        ENGRAMLOG_W_CENTRALITY="0", ENGRAMLOG_W_CONFIDENCE="0", ENGRAMLOG_W_FEEDBACK="0")
    answer = ask(engine, tenant, QUERY, k=3, cfg=half)
    assert stage(answer, "composite")["config"]["weights"]["activation"] == 0.5
    for r in answer.results:
        c = r.explanation["stages"]["composite"]
        assert c["quality"] == pytest.approx(0.5 + 0.5 * c["signals"]["activation"], abs=1e-5)


def test_prf_and_entity_weights(engine, kitchen, monkeypatch):
    tenant, _ = kitchen
    on = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_PRF_BETA="0.5"))
    assert stage(on, "prf")["counts"]["rocchio"] > 0
    assert all(r.explanation["stages"]["prf"]["cosine_expanded"] is not None for r in on.results)
    off = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_PRF_BETA="0"))
    assert stage(off, "prf")["counts"]["rocchio"] == 0 and "Rocchio off" in stage(off, "prf")["notes"]["skipped"][0]
    named = "what did Note say about the French onion soup?"
    boosted = ask(engine, tenant, named, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_ENTITY_WEIGHT="0.5"))
    assert stage(boosted, "prf")["notes"]["entities"] == ["Note", "French"]
    assert stage(boosted, "prf")["counts"]["entity_boosted"] >= 1


def test_reranker_runs_with_a_real_cross_encoder(engine, kitchen, monkeypatch, cross_encoder):
    tenant, _ = kitchen
    cfg = env_settings(monkeypatch, ENGRAMLOG_RERANKER_MODEL=str(cross_encoder), ENGRAMLOG_RERANK_POOL="10")
    answer = ask(engine, tenant, QUERY, k=4, cfg=cfg)
    rr = stage(answer, "rerank")
    assert "skipped" not in rr and rr["counts"]["scored"] == 10
    assert 0 <= rr["notes"]["blend"] <= 1 and rr["config"]["model"] == str(cross_encoder)
    assert answer.results
    for r in answer.results:
        s = r.explanation["stages"]["rerank"]
        assert 0 <= s["ce"] <= 1 and "rerank_skipped" not in r.explanation
        assert s["score"] == pytest.approx(s["blend"] * s["ce"] + (1 - s["blend"]) * s["composite_normalised"],
                                           abs=1e-5)
    assert "cross_encoder" in stage(answer, "abstain")["notes"]["channels"]
    # A path that does not exist: skipped, logged, explained.
    missing = ask(engine, tenant, QUERY, k=3, cfg=env_settings(monkeypatch, ENGRAMLOG_RERANKER_MODEL="/nonexistent/ce"))
    assert "not found" in stage(missing, "rerank")["skipped"]
    assert all("not found" in r.explanation["rerank_skipped"] for r in missing.results)


def test_question_penalty_ranks_the_reply_above_the_question(engine, monkeypatch):
    """A memory that only asks shares the query's words and answers nothing: the composite multiplies it by
    1 − ENGRAMLOG_QUESTION_PENALTY × its question share, so the reply it got ranks first; 0 turns it off."""
    tenant = f"asked-{uuid.uuid4().hex[:8]}"
    asked, replied = remember_all(engine, tenant, [
        "Maya: Why did the team pick the Lisbon office for the spring offsite?",
        "Tom: The team picked the Lisbon office for the spring offsite because its flights were the cheapest.",
    ])
    query = "why did the team pick the Lisbon office for the spring offsite?"

    def by_id(cfg):
        answer = ask(engine, tenant, query, k=2, cfg=cfg)
        return answer, {r.memory_id: r.explanation["stages"]["composite"] for r in answer.results}

    off, off_stages = by_id(env_settings(monkeypatch, ENGRAMLOG_QUESTION_PENALTY="0"))
    assert [r.memory_id for r in off.results][0] == asked.memory_id  # the question shares every word of the query
    assert "question_share" not in off_stages[asked.memory_id]
    on, on_stages = by_id(env_settings(monkeypatch, ENGRAMLOG_QUESTION_PENALTY="0.5"))
    assert stage(on, "composite")["config"]["question_penalty"] == 0.5
    c = on_stages[asked.memory_id]
    assert c["question_share"] == pytest.approx(1.0)
    assert c["score"] == pytest.approx(c["relevance"] * c["quality"] * 0.5, abs=1e-5)
    assert "question_share" not in on_stages[replied.memory_id]
    assert [r.memory_id for r in on.results][0] == replied.memory_id


def test_question_penalty_is_a_share(monkeypatch):
    from infra.settings import Settings

    monkeypatch.setenv("ENGRAMLOG_QUESTION_PENALTY", "1.5")
    with pytest.raises(ValueError, match="ENGRAMLOG_QUESTION_PENALTY must be between 0 and 1"):
        Settings()
