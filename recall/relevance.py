"""The calibrated relevance of a result (domain/relevance.py), as each recall domain computes it.

A domain names its features (cosine, BM25, the query's terms and the item's text); `scale(domain, model)` picks
the coefficients fitted for the configured embedding model (recall/relevance_table.py, written by
`python -m bench.relevance_calibration`). A model the table does not know gets the keyword-only fit (the cosine
features left out), so its relevance still means the same chance, judged on the words alone. Every result's
explanation says which calibration scored it and its features: the hit-log records them with the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.code.terms import query_terms
from domain.memo import per_text
from domain.relevance import Features, coverage, relevance
from domain.text import tokenize
from readmodels.item_domains import SYMBOLS
from recall.funnel.types import Item
from recall.relevance_table import KEYWORD_ONLY, TABLE

KEYWORD_CALIBRATION = "keyword-only"


@per_text()
def text_terms(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


@per_text()
def code_terms(text: str) -> frozenset[str]:
    return frozenset(query_terms(text))


@dataclass(frozen=True)
class Scale:
    domain: str
    calibration: str  # the model its coefficients were fitted for, or KEYWORD_CALIBRATION
    coefficients: tuple[float, ...]

    def features(self, query: str, content: str, cosine: float | None, bm25: float | None,
                 title_only: bool = False) -> Features:
        if self.calibration == KEYWORD_CALIBRATION:
            cosine = None
        terms = code_terms if self.domain == SYMBOLS.name else text_terms
        return Features(cosine, bm25, coverage(terms(query), terms(content)), title_only)

    def of(self, features: Features) -> float:
        return relevance(self.coefficients, features)

    def explain(self, features: Features) -> dict[str, Any]:
        return {"calibration": self.calibration, "features": features.as_dict()}


def grade_items(query: str, items: list[Item], model: str) -> None:
    """The memories funnel's top items graded (Item.calibrated, and its inputs under stages["calibrated"]): the
    abstention gate and the results read it."""
    grade = scale("memories", model)
    for item in items:
        features = grade.features(query, item.content, item.cosine, item.bm25)
        item.calibrated = grade.of(features)
        item.stages["calibrated"] = {**grade.explain(features), "relevance": item.calibrated}


def scale(domain: str, model: str) -> Scale:
    fitted = TABLE.get(model, {}).get(domain)
    if fitted is not None:
        return Scale(domain, model, tuple(fitted))
    return Scale(domain, KEYWORD_CALIBRATION, tuple(KEYWORD_ONLY[domain]))


__all__ = ["KEYWORD_CALIBRATION", "Scale", "code_terms", "grade_items", "scale", "text_terms"]
