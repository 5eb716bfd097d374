"""The relevance scale (domain/relevance.py, recall/relevance.py): features, the logistic, the per-model table with
its keyword-only fallback, title-only sections, and the aggregator's fused list (recall/multi.py fused)."""

from __future__ import annotations

from domain.knowledge.sections import has_body, split_sections
from domain.relevance import FEATURES, Features, coverage, relevance
from recall.domains.base import DomainHit
from recall.multi import Bucket, fused
from recall.relevance import KEYWORD_CALIBRATION, scale
from recall.relevance_table import KEYWORD_ONLY, TABLE

DOMAINS = ("memories", "knowledge", "sessions", "transcripts", "code")


def test_features_in_the_table_order() -> None:
    f = Features(cosine=0.5, bm25=5.0, coverage=0.25, title_only=True)
    assert f.vector() == [1.0, 0.5, 1.0, 0.5, 0.25, 1.0]
    assert Features(None, None, 0.0).vector() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert list(f.as_dict()) == list(FEATURES[1:])


def test_relevance_is_a_probability_and_deterministic() -> None:
    w = [-2.0, 3.0, 0.5, 1.0, 4.0, -5.0]
    values = [relevance(w, Features(c, b, v, t)) for c in (None, 0.0, 0.9) for b in (None, 0.0, 30.0)
              for v in (0.0, 1.0) for t in (False, True)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert relevance(w, Features(0.9, 30.0, 1.0)) == relevance(w, Features(0.9, 30.0, 1.0))
    assert relevance([1000.0, 0, 0, 0, 0, 0], Features(None, None, 0.0)) == 1.0  # no overflow


def test_coverage_counts_distinct_query_terms() -> None:
    assert coverage(["roll", "back", "deploy", "deploy"], ["deploy", "roll"]) == 2 / 3
    assert coverage([], ["x"]) == 0.0


def test_every_domain_has_a_fit_for_the_default_model_and_a_keyword_only_one() -> None:
    for d in DOMAINS:
        assert len(TABLE["all-MiniLM-L6-v2"][d]) == len(FEATURES)
        assert len(KEYWORD_ONLY[d]) == len(FEATURES)
    assert scale("code", "all-MiniLM-L6-v2").calibration == "all-MiniLM-L6-v2"


def test_an_unknown_model_is_judged_on_words_alone() -> None:
    s = scale("knowledge", "some-other-model")
    assert s.calibration == KEYWORD_CALIBRATION
    with_cosine = s.features("roll back a deploy", "## Rollback\nroll back a deploy", 0.99, 12.0)
    assert with_cosine.cosine is None  # a cosine of another model means nothing on this scale
    assert s.explain(with_cosine)["calibration"] == KEYWORD_CALIBRATION


def test_the_fitted_scale_prefers_an_answer_to_a_title() -> None:
    s = scale("knowledge", "all-MiniLM-L6-v2")
    title = s.of(s.features("how do I roll back a deploy?", "# Deploys\n", None, 9.0, title_only=True))
    body = s.of(s.features("how do I roll back a deploy?", "## Rollback\nTo roll back a deploy, run x.\n", None, 6.0))
    assert body > title


def test_a_section_of_headings_only_has_no_body() -> None:
    doc = "# Deploys\n\n## Rollback\nRun `deployctl rollback`.\n## Empty\n\n```\n# not a heading\n```\n"
    bodies = {s.heading_path: has_body(s.text) for s in split_sections(doc)}
    assert bodies == {"": False, "Deploys > Rollback": True, "Deploys > Empty": True}
    assert not has_body("## Only\n\n### Sub\n")


def hit(name: str, relevance: float) -> DomainHit:
    return DomainHit(content=name, score=1.0, handle={"name": name}, relevance=relevance)


def test_the_fused_list_is_by_relevance_across_buckets() -> None:
    buckets = [Bucket("code", 2, [hit("c1", 0.1), hit("c2", 0.05)], None, {}),
               Bucket("memories", 2, [hit("m1", 0.9), hit("m2", 0.1)], None, {}),
               Bucket("knowledge", 2, [], "no match", {})]
    out = fused(buckets, 3)
    assert [(f.domain, f.rank, f.hit.content) for f in out] == [("memories", 1, "m1"), ("code", 1, "c1"),
                                                                ("memories", 2, "m2")]
