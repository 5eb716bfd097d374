"""The query embedding is computed once per (tenant, model, text) and the cached vector is the one computing it
again gives (infra/embedding.py Embedder.query_vector)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from infra.embedding import Embedder, to_pgvector


class CountingEmbedder(Embedder):
    """A real Embedder whose model is a deterministic function of the text, counting the texts it encodes."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return np.asarray([np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:8] / 255.0
                           for t in texts], dtype=np.float32)


def test_a_repeated_query_is_embedded_once_and_answers_the_same_vector() -> None:
    embedder = CountingEmbedder("model-cache-test-a")
    first = embedder.query_vector("t1", "where is the door code")
    again = embedder.query_vector("t1", "where is the door code")
    assert again == first == to_pgvector(embedder.encode_one("where is the door code"))
    assert embedder.encoded.count("where is the door code") == 2  # the query_vector pair once, encode_one once


def test_the_cache_is_per_tenant_model_and_text() -> None:
    a, b = CountingEmbedder("model-cache-test-b"), CountingEmbedder("model-cache-test-c")
    a.query_vector("t1", "q")
    a.query_vector("t2", "q")  # another tenant: computed again (a hit's speed must not tell what t1 asked)
    a.query_vector("t1", "q ")  # another text
    b.query_vector("t1", "q")  # another model
    assert a.encoded == ["q", "q", "q "]
    assert b.encoded == ["q"]
