"""Embedder.warm loads and runs the model once: the vector projectors call it before every batch (a forward pass
each time would cost every recall's hit-log event a needless embedding in the worker)."""

from __future__ import annotations

import numpy as np

from infra.embedding import Embedder


def test_warm_runs_the_model_once_per_embedder() -> None:
    embedder = Embedder("a-model")
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.zeros((len(texts), 3), dtype=np.float32)

    embedder._encode = encode  # the model, as _resolve would have loaded it
    for _ in range(5):
        embedder.warm()
    assert len(calls) == 1
    embedder.encode_one("a real text")  # a real encode still runs the model
    assert len(calls) == 2
