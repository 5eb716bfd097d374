"""The ONNX Runtime path of the query-time models: the embedder (infra/embedding.py) and the recall reranker
(recall/funnel/rerank.py), chosen by ENGRAMLOG_INFERENCE_BACKEND=onnx (the default).

The model's transformer is exported once with torch.onnx into data_dir/models/<kind>-<name>-<key>/ (key: the
model files' paths, sizes and mtimes, and the library versions), checked there against sentence-transformers on
probe texts (cosine >= 0.9999 for embeddings, |score difference| <= 1e-4 for cross-encoder scores), and then run
by ONNX Runtime on CPU. Tokenization is the model's own tokenizer (saved with the export) with
sentence-transformers' settings (padding, longest-first truncation at the model's max_seq_length); pooling,
normalisation and the cross-encoder activation are the few numpy lines the model's sentence-transformers modules
amount to. A model whose modules this path does not reproduce (anything but Transformer -> Pooling(mean|cls|max)
[-> Normalize]; a cross-encoder other than one sequence-classification head with sigmoid or identity), a failed
export or check, or a missing onnxruntime raises, and the caller falls back to torch, logged. A cross-encoder
may also run with int8 weights (`quantize_int8`).

Why not sentence-transformers' own `backend="onnx"`: it needs optimum-onnx, whose releases pin
transformers < 4.58, and this stack runs transformers 5. Measured on 2 cores (bench/embedding.py): a single query
6.8 -> 4.5 ms idle, and 24-55 -> 5.5-11 ms with a core held by other work; batches and the 40-pair cross-encoder
within +-10% of torch idle, 2.5-3x faster than torch under that contention.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import structlog

log = structlog.get_logger(__name__)

Kind = Literal["embedding", "cross-encoder"]
EXPORT_FORMAT = 1  # bump when the export or its manifest changes: older exports are then ignored
MIN_COSINE = 0.9999  # an ONNX embedding must match sentence-transformers' this closely on every probe
MAX_SCORE_DIFF = 1e-4  # and a cross-encoder score this closely
# Probes for the export check: plain English, CJK, emoji and accents, an empty text, and one past the
# max_seq_length so truncation is compared too.
PROBES = ["warm up", "The user prefers dark mode in every editor and terminal they use.",
          "東京で食べたラーメンが美味しかった 🍜🎉", "emoji 😀👍🏽 and accents: café, naïve, Zürich", "",
          "deploy the service to staging before friday " * 60]


class OnnxUnavailable(RuntimeError):
    """The ONNX path cannot serve this model; the message says why."""


def _versions() -> dict[str, str]:
    """The libraries that shape an export or its check (read from package metadata: importing them is slow)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "missing"
    return found


def export_dir(kind: Kind, source: str, cache_root: Path) -> Path:
    """Where the ONNX export of `source` lives: a new key (so a new export) whenever a model file or a library
    that shapes the export or the check changes."""
    root = Path(source)
    files = ([[str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns]
              for p in sorted(root.rglob("*")) if p.is_file()] if root.is_dir() else [])
    blob = json.dumps({"format": EXPORT_FORMAT, "kind": kind, "source": str(root.resolve()) if root.exists()
                       else source, "files": files, "versions": _versions()}, sort_keys=True)
    return cache_root / f"{_export_prefix(kind, source)}{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def _export_prefix(kind: Kind, source: str) -> str:
    """What every export of this one model's directory name starts with (its source path's hash included: two
    models may both be called `model`)."""
    root = Path(source)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", root.name or source)[-48:]
    where = hashlib.sha256((str(root.resolve()) if root.exists() else source).encode()).hexdigest()[:8]
    return f"{kind}-{name}-{where}-"


class _OnnxTransformer:
    """The exported transformer in an ONNX Runtime session, with the tokenizer saved beside it."""

    def __init__(self, directory: Path, model_file: str = "model.onnx", threads: int = 0) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        self.manifest: dict[str, Any] = json.loads((directory / "manifest.json").read_text())
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle worker threads must not spin: on a 2-core machine that steals the CPU PostgreSQL and the other
        # model need (measured: slower under load with spinning on).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # `threads` 0: the runtime's default (one per physical core); ENGRAMLOG_INFERENCE_THREADS says when 1 pays
        # (infra/settings/service.py).
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(directory / model_file), options,
                                            providers=["CPUExecutionProvider"])
        self.tokenizer = AutoTokenizer.from_pretrained(str(directory))
        self.inputs: list[str] = self.manifest["inputs"]

    def run(self, first: list[str], second: list[str] | None, max_length: int) -> tuple[np.ndarray, np.ndarray]:
        """The model's output and the attention mask, for texts (or text pairs) tokenized as sentence-transformers
        does it."""
        if self.manifest.get("do_lower_case"):
            first = [t.lower() for t in first]
            second = [t.lower() for t in second] if second is not None else None
        encoded = self.tokenizer(first, second, padding=True, truncation="longest_first", max_length=max_length,
                                 return_tensors="np")
        output = self.session.run(None, {n: encoded[n].astype(np.int64) for n in self.inputs})[0]
        return output, encoded["attention_mask"]


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers' Pooling, for the modes the ONNX path supports."""
    if mode == "cls":
        return hidden[:, 0]
    expanded = mask[..., None].astype(hidden.dtype)
    if mode == "max":
        return np.where(expanded > 0, hidden, np.float32(-1e9)).max(axis=1)
    return (hidden * expanded).sum(axis=1) / np.clip(expanded.sum(axis=1), 1e-9, None)


def _length_order(lengths: Sequence[int]) -> list[int]:
    # Longest first, as sentence-transformers batches: inputs of similar length share a batch, so less padding.
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


class OnnxSentenceModel:
    """A sentence-transformers embedding model's forward pass in ONNX Runtime; vectors are always L2-normalised."""

    backend = "onnx"

    def __init__(self, directory: Path, threads: int = 0) -> None:
        self.model = _OnnxTransformer(directory, threads=threads)
        self.pooling: str = self.model.manifest["pooling"]
        self.max_length: int = self.model.manifest["max_length"]

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.model.manifest["dim"]), dtype=np.float32)
        order = _length_order([len(t) for t in texts])
        parts = []
        for start in range(0, len(order), batch_size):
            hidden, mask = self.model.run([texts[i] for i in order[start:start + batch_size]], None,
                                          self.max_length)
            parts.append(_pool(hidden, mask, self.pooling))
        vectors = np.concatenate(parts)[np.argsort(order)]
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors.astype(np.float32, copy=False)


class OnnxCrossEncoder:
    """A sentence-transformers CrossEncoder's `predict` (one label: an array of scores) in ONNX Runtime."""

    backend = "onnx"

    def __init__(self, directory: Path, max_length: int, model_file: str = "model.onnx", threads: int = 0) -> None:
        self.model = _OnnxTransformer(directory, model_file, threads)
        self.max_length = max_length
        self.activation: str = self.model.manifest["activation"]

    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, show_progress_bar: bool = False,
                **_: Any) -> np.ndarray:
        pairs = list(pairs)
        if not pairs:
            return np.zeros((0,), dtype=np.float32)
        order = _length_order([len(a) + len(b) for a, b in pairs])
        parts = []
        for start in range(0, len(order), batch_size):
            chunk = [pairs[i] for i in order[start:start + batch_size]]
            logits = self.model.run([a for a, _ in chunk], [b for _, b in chunk], self.max_length)[0]
            parts.append(logits[:, 0])
        scores = np.concatenate(parts)[np.argsort(order)].astype(np.float32)
        return 1 / (1 + np.exp(-scores)) if self.activation == "sigmoid" else scores


def _export_transformer(hf_model: Any, tokenizer: Any, path: Path, output: str, pair: bool) -> list[str]:
    """Trace the Hugging Face model to ONNX with dynamic batch and sequence axes. Answers the input names."""
    import torch

    sample = tokenizer(["a short text", "a somewhat longer text so that the batch is padded"],
                       ["first", "the second one"] if pair else None, padding=True, return_tensors="pt")
    inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = hf_model

        def forward(self, *args: Any) -> Any:
            return getattr(self.model(**dict(zip(inputs, args, strict=True))), output)

    axes = {n: {0: "batch", 1: "sequence"} for n in inputs}
    axes[output] = {0: "batch", 1: "sequence"} if output == "last_hidden_state" else {0: "batch"}
    # The TorchScript exporter (dynamo=False): it handles these encoders in seconds with nothing but `onnx`;
    # its tracer warns about shape-dependent branches, which is why every export is checked on probes.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Forward().eval(), tuple(sample[n] for n in inputs), str(path), input_names=inputs,
                          output_names=[output], dynamic_axes=axes, opset_version=17, dynamo=False)
    return inputs


def _check_embedding(model: Any, onnx_dir: Path) -> dict[str, float]:
    onnx = OnnxSentenceModel(onnx_dir)
    reference = np.asarray(model.encode(PROBES, normalize_embeddings=True, convert_to_numpy=True,
                                        show_progress_bar=False), dtype=np.float32)
    batched = onnx.encode(PROBES)
    single = np.concatenate([onnx.encode([p]) for p in PROBES])
    cosine = float(min((reference * batched).sum(axis=1).min(), (reference * single).sum(axis=1).min()))
    if cosine < MIN_COSINE:
        raise OnnxUnavailable(f"ONNX embeddings differ from sentence-transformers' (min cosine {cosine:.6f})")
    return {"min_cosine": round(cosine, 7)}


def _check_cross_encoder(model: Any, onnx_dir: Path) -> dict[str, float]:
    onnx = OnnxCrossEncoder(onnx_dir, int(model.max_seq_length))
    pairs = [(a, b) for a in PROBES[:4] for b in PROBES]
    reference = np.asarray(model.predict(pairs, show_progress_bar=False), dtype=np.float32).reshape(-1)
    diff = max(float(np.abs(reference - onnx.predict(pairs)).max()),
               float(np.abs(reference[:1] - onnx.predict(pairs[:1])).max()))
    if diff > MAX_SCORE_DIFF:
        raise OnnxUnavailable(f"ONNX cross-encoder scores differ from sentence-transformers' (max |Δ| {diff:.2e})")
    return {"max_abs_diff": diff}


def _export(kind: Kind, source: str, directory: Path) -> dict[str, Any]:
    """Export `source` into `directory` (model.onnx, tokenizer files, manifest.json) and check it against
    sentence-transformers. Answers the manifest."""
    manifest: dict[str, Any] = {"format": EXPORT_FORMAT, "kind": kind, "source": source, "versions": _versions()}
    if kind == "embedding":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(source, device="cpu")
        layout = [type(m).__name__ for m in model]
        if layout not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            raise OnnxUnavailable(f"module layout {layout} is not one the ONNX path reproduces")
        mode = getattr(model[1], "pooling_mode", None)
        # A Pooling module of an older sentence-transformers names its mode only through this method.
        mode = mode if isinstance(mode, str) else model[1].get_pooling_mode_str()  # type: ignore[operator]
        if mode not in ("mean", "cls", "max"):
            raise OnnxUnavailable(f"pooling {mode!r} is not one the ONNX path reproduces")
        if model.max_seq_length is None:
            raise OnnxUnavailable("the model has no max_seq_length to export its inputs with")
        manifest.update(pooling=mode, max_length=int(model.max_seq_length),
                        dim=int(np.asarray(model.encode(["dimension"])).shape[1]),
                        do_lower_case=bool(getattr(model[0], "do_lower_case", False)))
        output, pair, check = "last_hidden_state", False, _check_embedding
    else:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(source, device="cpu", local_files_only=True)
        layout = [type(m).__name__ for m in model]
        activation = {"Sigmoid": "sigmoid", "Identity": "identity"}.get(type(model.activation_fn).__name__)
        if layout != ["Transformer"] or model.config.num_labels != 1 or activation is None:
            raise OnnxUnavailable(f"cross-encoder {layout}, {model.config.num_labels} labels, activation "
                                  f"{type(model.activation_fn).__name__} is not one the ONNX path reproduces")
        manifest.update(activation=activation, max_length=int(model.max_seq_length),
                        do_lower_case=bool(getattr(model[0], "do_lower_case", False)))
        output, pair, check = "logits", True, _check_cross_encoder
    manifest["inputs"] = _export_transformer(model[0].auto_model, model.tokenizer, directory / "model.onnx", output,
                                             pair)
    model.tokenizer.save_pretrained(str(directory))
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1))  # the check loads the export
    manifest["check"] = check(model, directory)
    return manifest


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One exporter per model across processes (the API and the workers warm their models at the same start)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: concurrent exporters each write a private temp dir, the first rename wins
        yield
        return
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_export(kind: Kind, source: str, cache_root: Path) -> Path:
    """The checked ONNX export of `source`, exporting it first when there is none. A failed export or check is
    recorded (manifest ok: false) so later starts fall back at once instead of exporting again."""
    directory = export_dir(kind, source, cache_root)
    if not (directory / "manifest.json").exists():
        cache_root.mkdir(parents=True, exist_ok=True)
        with _exclusive(cache_root / f".{directory.name}.lock"):
            if not (directory / "manifest.json").exists():
                for stale in cache_root.glob(f".{directory.name}.*.tmp"):  # left by an exporter that died
                    shutil.rmtree(stale, ignore_errors=True)
                scratch = cache_root / f".{directory.name}.{os.getpid()}.tmp"
                scratch.mkdir()
                started = time.perf_counter()
                try:
                    manifest = {**_export(kind, source, scratch), "ok": True}
                except (ImportError, OSError):
                    shutil.rmtree(scratch, ignore_errors=True)
                    raise  # the environment, not the model: try again next start
                except Exception as exc:  # any exporter or check failure means "use torch"
                    shutil.rmtree(scratch, ignore_errors=True)
                    scratch.mkdir()
                    manifest = {"format": EXPORT_FORMAT, "kind": kind, "source": source, "ok": False,
                                "reason": f"{type(exc).__name__}: {exc}"}
                manifest["export_s"] = round(time.perf_counter() - started, 2)
                (scratch / "manifest.json").write_text(json.dumps(manifest, indent=1))
                scratch.rename(directory)
                # Earlier exports of the same model (older files or libraries) are dead weight, ~90 MB each; a
                # process still using one has it in memory already.
                for old in cache_root.glob(f"{_export_prefix(kind, source)}*"):
                    if old != directory:
                        shutil.rmtree(old, ignore_errors=True)
                log.info("inference.onnx_exported", kind=kind, model=source, directory=str(directory),
                         ok=manifest["ok"], seconds=manifest["export_s"], check=manifest.get("check"),
                         reason=manifest.get("reason"))
    manifest = json.loads((directory / "manifest.json").read_text())
    if not manifest.get("ok"):
        raise OnnxUnavailable(f"{manifest.get('reason')} (recorded in {directory}; delete it to retry)")
    return directory


def load_onnx_embedder(source: str, cache_root: Path, threads: int = 0) -> OnnxSentenceModel:
    """The checked ONNX export of the sentence-transformers model at `source` (a local directory), run on `threads`
    intra-op threads (0: the runtime's default)."""
    return OnnxSentenceModel(ensure_export("embedding", source, cache_root), threads)


MAX_INT8_SCORE_DIFF = 0.02  # int8 weights move cross-encoder scores by ~3e-3 (measured); more means a bad model


def quantize_int8(directory: Path) -> str:
    """The int8 (dynamic, weights only) version of an export, made once beside it and checked against it: ~2×
    faster cross-encoder scoring on 2 cores, scores within MAX_INT8_SCORE_DIFF. Answers its file name."""
    name = "model.int8.onnx"
    if not (directory / name).exists():
        with _exclusive(directory.parent / f".{directory.name}.int8.lock"):
            if not (directory / name).exists():
                from onnxruntime.quantization import QuantType, quantize_dynamic

                scratch = directory / f".model.int8.{os.getpid()}.tmp.onnx"
                quantize_dynamic(str(directory / "model.onnx"), str(scratch), weight_type=QuantType.QInt8)
                pairs = [(a, b) for a in PROBES[:4] for b in PROBES]
                reference = OnnxCrossEncoder(directory, 256).predict(pairs)
                diff = float(np.abs(reference - OnnxCrossEncoder(directory, 256, scratch.name).predict(pairs)).max())
                if diff > MAX_INT8_SCORE_DIFF:
                    scratch.unlink()
                    raise OnnxUnavailable(f"int8 cross-encoder scores differ from fp32 by {diff:.2e}")
                scratch.rename(directory / name)
                log.info("inference.int8_quantized", directory=str(directory), max_abs_diff=diff)
    return name


def load_onnx_cross_encoder(path: str, max_length: int, cache_root: Path,
                            quantize: str = "none", threads: int = 0) -> OnnxCrossEncoder:
    directory = ensure_export("cross-encoder", path, cache_root)
    return OnnxCrossEncoder(directory, max_length, quantize_int8(directory) if quantize == "int8" else "model.onnx",
                            threads)
