"""Stage 6, cross-encoder rerank of a wide pool: the precision cut.

The best `rerank_pool` memories (0: max(k·4, 40)) go to a sentence-transformers CrossEncoder loaded from the
local path ENGRAMLOG_RERANKER_MODEL (nothing is ever downloaded: HF_HUB_OFFLINE and local_files_only). Its
scores for (query, memory) pairs are probabilities (the model's activation; sigmoid for one label). Adaptive
blend with the composite, normalised by the pool's best:

    final = λ·ce + (1 − λ)·composite / max(composite),
    λ = blend_min + (blend_max − blend_min) · min(1, spread / 0.5),  spread = max(ce) − min(ce) in the pool

so a reranker that separates the pool sharply decides, and one that cannot tell the memories apart (flat
scores) leaves the composite's order nearly as it was. With no model configured, or a path that does not
exist, the stage is skipped, logged, and every result's explanation says so; the pool is then ordered by the
composite alone. Either way the results come from the pool.

The model runs on ENGRAMLOG_INFERENCE_BACKEND: `onnx` (default) exports it once into data_dir/models and scores
with ONNX Runtime (checked to match sentence-transformers' scores within 1e-4; infra/onnx_models.py), falling back
to the torch CrossEncoder, logged, when the export cannot serve; `torch` is the CrossEncoder as is. With
ENGRAMLOG_RERANKER_QUANTIZE=int8 (the default; onnx only) the export's weights are quantized to int8 once,
checked within 0.02 of the fp32 scores: recall p50 142 -> 85 ms at 10k memories on 2 cores, not bit-identical
("none" keeps fp32). The stage's config names the backend that scored.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import structlog

from infra.onnx_models import load_onnx_cross_encoder
from infra.settings import Settings
from recall.funnel.types import Item, StageReport, rank

log = structlog.get_logger(__name__)
SPREAD_FULL = 0.5
_lock = threading.Lock()
_warned: set[str] = set()


def pool_size(k: int, settings: Settings) -> int:
    configured = settings.funnel.rerank_pool if settings.funnel.rerank_pool > 0 else max(k * 4, 40)
    return max(configured, k)


@lru_cache(maxsize=2)
def load_cross_encoder(path: str, max_length: int, backend: str = "torch", cache_root: Path | None = None,
                       quantize: str = "none", threads: int = 0) -> Any:
    """A model with CrossEncoder's `predict` (one score per pair) and a `backend` attribute: the ONNX one when
    asked and it can serve (int8 when `quantize` says so), else sentence-transformers' CrossEncoder."""
    if backend == "onnx":
        try:
            if cache_root is None:
                raise RuntimeError("no cache directory for the ONNX export")
            model = load_onnx_cross_encoder(path, max_length, cache_root, quantize, threads)
            if quantize == "int8":
                model.backend = "onnx-int8"
            log.info("recall.reranker_loaded", model=path, max_length=max_length, backend=model.backend)
            return model
        except Exception as exc:  # whatever broke, the torch CrossEncoder gives the same scores
            log.warning("recall.reranker_onnx_unavailable", model=path, fallback="torch",
                        reason=f"{type(exc).__name__}: {exc}")
    from sentence_transformers import CrossEncoder  # heavy: imported only when a reranker is configured

    model = CrossEncoder(path, device="cpu", local_files_only=True, max_length=max_length)
    log.info("recall.reranker_loaded", model=path, max_length=max_length, backend="torch")
    return model


def _model(settings: Settings) -> Any:
    return load_cross_encoder(settings.rerank.reranker_model, settings.rerank.reranker_max_length,
                              settings.embedding.inference_backend, settings.stack.data_dir / "models",
                              settings.rerank.reranker_quantize, settings.embedding.inference_threads)


def unavailable(settings: Settings) -> str | None:
    """Why the reranker cannot run (None when it can)."""
    if not settings.rerank.reranker_model:
        return "no cross-encoder configured (ENGRAMLOG_RERANKER_MODEL is unset): ordered by the composite alone"
    if not Path(settings.rerank.reranker_model).exists():
        return (f"cross-encoder {settings.rerank.reranker_model!r} not found (ENGRAMLOG_RERANKER_MODEL must be a local "
                "path): ordered by the composite alone")
    return None


def warm(settings: Settings) -> None:
    if unavailable(settings) is None:
        _model(settings).predict([("warm", "up")])


def rerank(query: str, ranked: list[Item], k: int, settings: Settings, report: StageReport) -> list[Item]:
    """The pool, reranked (or in composite order when the stage is skipped)."""
    size = pool_size(k, settings)
    pool = ranked[:size]
    report.config = {"rerank_pool": size, "model": settings.rerank.reranker_model or None,
                     "blend_min": settings.rerank.rerank_blend_min, "blend_max": settings.rerank.rerank_blend_max}
    report.counts = {"in": len(ranked), "pool": len(pool), "cut": len(ranked) - len(pool), "scored": 0}
    reason = unavailable(settings)
    if reason is not None:
        report.skipped = reason
        if reason not in _warned:
            _warned.add(reason)
            log.info("recall.rerank_skipped", reason=reason)
        log.debug("recall.rerank_skipped", reason=reason)
        for item in pool:
            item.stages["rerank"] = {"skipped": reason}
        return pool
    if not pool:
        return pool
    model = _model(settings)
    report.config["backend"] = getattr(model, "backend", "torch")
    with _lock:  # one forward pass at a time on a small machine
        ce = [float(x) for x in model.predict([(query, i.content) for i in pool], batch_size=64,
                                              show_progress_bar=False)]
    spread = max(ce) - min(ce)
    low, high = settings.rerank.rerank_blend_min, settings.rerank.rerank_blend_max
    lam = low + (high - low) * min(1.0, spread / SPREAD_FULL)
    best = max(i.score for i in pool) or 1.0
    for item, p in zip(pool, ce, strict=True):
        composite = item.score / best
        item.score = lam * p + (1 - lam) * composite
        item.stages["rerank"] = {"ce": round(p, 6), "composite_normalised": round(composite, 6),
                                 "blend": round(lam, 6), "score": round(item.score, 6)}
    report.counts["scored"] = len(pool)
    report.notes = {"blend": round(lam, 6), "ce_spread": round(spread, 6), "ce_max": round(max(ce), 6)}
    return rank(pool)
