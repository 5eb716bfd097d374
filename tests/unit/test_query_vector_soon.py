"""Embedder.query_vector_soon: a query's vector computed while its searches run their keyword legs. The LRU's
vector is answered at once; otherwise a function that answers the same literal as query_vector, once asked."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest

from infra.embedding import Embedder, to_pgvector


def _embedder(calls: list[list[str]], gate: threading.Event | None = None) -> Embedder:
    embedder = Embedder(f"model-{uuid.uuid4().hex[:8]}")  # its own key in the process-wide LRU

    def encode(texts: list[str]) -> np.ndarray:
        if gate is not None:
            gate.wait(10)
        calls.append(texts)
        if texts == ["broken"]:
            raise RuntimeError("the model failed")
        return np.full((len(texts), 3), 0.5, dtype=np.float32)

    embedder._encode = encode  # the model, as _resolve would have loaded it
    return embedder


def test_the_vector_is_computed_meanwhile_and_answered_once_asked() -> None:
    calls: list[list[str]] = []
    gate = threading.Event()
    embedder = _embedder(calls, gate)
    soon = embedder.query_vector_soon("t", "where is the door code?")
    assert callable(soon) and calls == []  # the caller goes on while the model waits
    gate.set()
    assert soon() == to_pgvector(np.full(3, 0.5, dtype=np.float32))
    assert calls == [["where is the door code?"]]


def test_a_kept_vector_is_answered_at_once_and_the_model_not_run() -> None:
    calls: list[list[str]] = []
    embedder = _embedder(calls)
    literal = embedder.query_vector("t", "the same question")
    assert embedder.query_vector_soon("t", "the same question") == literal
    assert len(calls) == 1
    later = embedder.query_vector_soon("another tenant", "the same question")  # kept per tenant
    assert callable(later) and later() == literal and len(calls) == 2


def test_a_failed_embedding_raises_where_the_vector_is_asked_for() -> None:
    soon = _embedder([]).query_vector_soon("t", "broken")
    assert callable(soon)
    with pytest.raises(RuntimeError, match="the model failed"):
        soon()
