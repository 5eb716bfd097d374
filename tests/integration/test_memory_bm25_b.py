"""The memories' keyword leg scores with their own Okapi b (ENGRAMLOG_MEMORY_BM25_B), the other domains with
ENGRAMLOG_BM25_B: a memory's length counts less against its terms than a document's."""

from __future__ import annotations

import uuid

import pytest
from funnel_support import COOKING, ask, remember_all, settings, stage

from domain.text import tokenize
from infra.db import read_only
from infra.embedding import get_embedder
from recall.funnel import candidates
from recall.keyword import bm25_top
from recall.scope import Scope

SHORT = "Saffron goes in the paella"
LONG = ("Saffron goes in the paella, and so do the rabbit, the green beans, the garrofó beans, the rosemary and a "
        "good olive oil, in a wide flat pan over an open fire, stirred once and then left alone to form the crust")
QUERY = "saffron paella"
STATUSES = ("active", "dormant")


@pytest.fixture(scope="module")
def paella(engine):
    tenant = f"bm25b-{uuid.uuid4().hex[:8]}"
    done = remember_all(engine, tenant, [*COOKING, SHORT, LONG])
    return tenant, done[-2].memory_id, done[-1].memory_id


@pytest.mark.parametrize("b", [None, 0.0, 0.9])
def test_the_memories_keyword_leg_scores_with_the_memories_b(engine, paella, b):
    tenant, _, _ = paella
    cfg = settings() if b is None else settings(memory_bm25_b=b)
    vector = get_embedder(cfg.embedding.embedding_model).query_vector(tenant, QUERY)
    with read_only(engine) as conn:
        legs = candidates.search_legs(conn, Scope(tenant), QUERY, vector, 10, STATUSES, cfg)
        own = bm25_top(conn, Scope(tenant), tokenize(QUERY), 10, cfg.keyword.bm25_k1, cfg.keyword.memory_bm25_b,
                       STATUSES)
    assert legs.bm25 == own and len(own) == 2


def test_a_memorys_length_counts_less_than_a_documents(engine, paella):
    tenant, short, long = paella
    cfg = settings()
    assert cfg.keyword.memory_bm25_b < cfg.keyword.bm25_b
    with read_only(engine) as conn:
        def ratio(b: float) -> float:
            scores = bm25_top(conn, Scope(tenant), tokenize(QUERY), 10, cfg.keyword.bm25_k1, b, STATUSES)
            return scores[short] / scores[long]

        as_memories, as_documents = ratio(cfg.keyword.memory_bm25_b), ratio(cfg.keyword.bm25_b)
    # Both memories hold both terms once: the shorter scores higher under any b > 0, by less under the memories'.
    assert 1 < as_memories < as_documents


def test_the_explanation_names_the_bm25_parameters_the_keyword_leg_used(engine, paella):
    tenant, _, _ = paella
    cfg = settings(memory_bm25_b=0.5)
    answer = ask(engine, tenant, QUERY, k=3, cfg=cfg)
    assert stage(answer, "candidates")["config"]["bm25"] == {"k1": cfg.keyword.bm25_k1, "b": 0.5}
