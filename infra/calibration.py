"""The novelty calibration of an embedding model (domain/novelty.py), measured once and kept with its name.

The first governed write under a model embeds CALIBRATION_PAIRS and stores the medians in
`embedding_calibration`; every later write (any process) reads them back, so all decisions under one model use
the same values, and each decision records them. A changed pair list (its hash) is measured again.
"""

from __future__ import annotations

import threading

import numpy as np
import structlog
from sqlalchemy import Engine, text

from domain.novelty import CALIBRATION_HASH, CALIBRATION_PAIRS, Calibration, calibrate
from infra.embedding import Embedder

log = structlog.get_logger(__name__)
_memo: dict[str, Calibration] = {}
_lock = threading.Lock()

_READ = text("""
SELECT unrelated_cosine, paraphrase_cosine FROM embedding_calibration WHERE model = :model AND pairs_hash = :hash
""")
_STORE = text("""
INSERT INTO embedding_calibration (model, pairs_hash, unrelated_cosine, paraphrase_cosine, pairs)
VALUES (:model, :hash, :unrelated, :paraphrase, :pairs)
ON CONFLICT (model) DO UPDATE SET pairs_hash = excluded.pairs_hash, unrelated_cosine = excluded.unrelated_cosine,
    paraphrase_cosine = excluded.paraphrase_cosine, pairs = excluded.pairs, measured_at = now()
WHERE embedding_calibration.pairs_hash <> excluded.pairs_hash
""")


def measure(embedder: Embedder) -> Calibration:
    """Embed the calibration pairs with `embedder` and take each kind's median cosine."""
    cosines: dict[str, list[float]] = {}
    for kind, pairs in CALIBRATION_PAIRS.items():
        vectors = embedder.encode([s for pair in pairs for s in pair])
        cosines[kind] = [float(np.dot(vectors[2 * i], vectors[2 * i + 1])) for i in range(len(pairs))]
    return calibrate(embedder.model, cosines["unrelated"], cosines["paraphrase"])


def calibration_for(engine: Engine, embedder: Embedder) -> Calibration:
    """The stored calibration of the embedder's model, measured and stored first if there is none."""
    with _lock:
        known = _memo.get(embedder.model)
        if known is not None:
            return known
        with engine.connect() as conn:
            row = conn.execute(_READ, {"model": embedder.model, "hash": CALIBRATION_HASH}).first()
        if row is None:
            measured = measure(embedder)
            with engine.begin() as conn:
                conn.execute(_STORE, {"model": embedder.model, "hash": CALIBRATION_HASH,
                                      "unrelated": measured.unrelated, "paraphrase": measured.paraphrase,
                                      "pairs": sum(len(p) for p in CALIBRATION_PAIRS.values())})
                row = conn.execute(_READ, {"model": embedder.model, "hash": CALIBRATION_HASH}).one()
            log.info("embedding.calibrated", model=embedder.model, unrelated=round(row.unrelated_cosine, 4),
                     paraphrase=round(row.paraphrase_cosine, 4))
        _memo[embedder.model] = Calibration(embedder.model, row.unrelated_cosine, row.paraphrase_cosine)
        return _memo[embedder.model]


__all__ = ["calibration_for", "measure"]
