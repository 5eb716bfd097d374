"""The one settings object in its groups: each knob is read from its own variable into its group, `replace` finds a
knob's group by the knob's name, and a knob's name is in one group only."""

from __future__ import annotations

import dataclasses

import pytest

from infra.settings import GROUP_OF_KNOB, Settings, replace


def test_every_knob_is_in_one_group() -> None:
    s = Settings()
    groups = [g.name for g in dataclasses.fields(s)]
    knobs = [k.name for g in groups for k in dataclasses.fields(getattr(s, g))]
    assert len(knobs) == len(set(knobs)) == len(GROUP_OF_KNOB)
    assert set(GROUP_OF_KNOB.values()) == set(groups)


@pytest.mark.parametrize("env, value, group, knob, expected", [
    ("DATABASE_URL", "postgresql://x/y", "stack", "database_url", "postgresql://x/y"),
    ("ENGRAMLOG_API_KEYS", "k:t", "api", "api_keys", {"k": "t"}),
    ("ENGRAMLOG_PROJECTION_BATCH", "7", "projections", "projection_batch_size", 7),
    ("ENGRAMLOG_WORKERS", "3", "workers", "projection_partitions", 3),  # unset partitions follow the workers
    ("ENGRAMLOG_GATE_ACTIVE", "0.5", "governance", "gate_active", 0.5),
    ("ENGRAMLOG_CONSOLIDATION_MAX_CLUSTER", "4", "consolidation", "consolidation_max_cluster", 4),
    ("ENGRAMLOG_TOPN_MULT", "3", "funnel", "topn_mult", 3),
    ("ENGRAMLOG_MEMORY_BM25_B", "0.5", "keyword", "memory_bm25_b", 0.5),
    ("ENGRAMLOG_GRAPH_KINDS", "semantic, entity", "graph", "graph_kinds", ("semantic", "entity")),
    ("ENGRAMLOG_ABSTAIN_VETO", "", "abstention", "abstain_veto", ()),
    ("ENGRAMLOG_SESSION_WINDOW", "4", "sessions", "session_window", 4),
    ("ENGRAMLOG_LLM_STREAM", "yes", "llm", "llm_stream", True),
    ("ENGRAMLOG_DEEP_CAP_ITERATIONS", "9", "deep", "deep_cap_iterations", 9),
])
def test_a_knob_is_read_from_its_variable_into_its_group(monkeypatch, env, value, group, knob, expected) -> None:
    monkeypatch.setenv(env, value)
    assert getattr(getattr(Settings(), group), knob) == expected


@pytest.mark.parametrize("env, value, message", [
    ("ENGRAMLOG_WORKERS", "0", "ENGRAMLOG_WORKERS must be > 0"),
    ("ENGRAMLOG_DEEP_SANDBOX_WORKERS", "2", "ENGRAMLOG_DEEP_SANDBOX_WORKERS must be at least 3"),
    ("ENGRAMLOG_BROKER", "kafka", "is not one of redis, rabbitmq"),
    ("ENGRAMLOG_API_KEYS", "nocolon", "is not 'key:tenant'"),
    ("ENGRAMLOG_MEMORY_BM25_B", "1.5", "ENGRAMLOG_MEMORY_BM25_B must be between 0 and 1"),
    ("ENGRAMLOG_BM25_B", "-0.1", "ENGRAMLOG_BM25_B must be between 0 and 1"),
    ("ENGRAMLOG_MEMORY_BM25_B", "short", "is not a number"),
])
def test_a_bad_value_is_still_refused(monkeypatch, env, value, message) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ValueError, match=message):
        Settings()


def test_replace_changes_each_knob_in_its_own_group_only() -> None:
    s = Settings()
    changed = replace(s, topn_mult=2, api_keys={"k": "t"}, deep_cap_iterations=30)
    assert (changed.funnel.topn_mult, changed.api.api_keys, changed.deep.deep_cap_iterations) == (2, {"k": "t"}, 30)
    assert changed.funnel.rerank_pool == s.funnel.rerank_pool and changed.graph is s.graph
    assert s.deep.deep_cap_iterations == Settings().deep.deep_cap_iterations  # the original is left as it was
    with pytest.raises(TypeError, match="no knob 'topn'"):
        replace(s, topn=2)
