"""The write path's pure rules: salience math and heuristics, the type classifier and routing, merge and confidence."""

from __future__ import annotations

import pytest

from domain.classify import classify, route
from domain.events import MEMORY_TYPES
from domain.governance import restates
from domain.novelty import unsaid_terms
from domain.reinforce import FEEDBACK_STEP, feedback_confidence, merge_content, reinforced_confidence
from domain.salience import (
    TYPE_BONUS,
    Signal,
    Thresholds,
    Weights,
    causal_heuristic,
    correction_signal,
    decision_heuristic,
    disposition,
    effort_heuristic,
    named_entities,
    resolve_signals,
    salience,
    surprise_heuristic,
)

ZERO = {"surprise": 0.0, "decision": 0.0, "causal": 0.0, "effort": 0.0}
ONE = {"surprise": 1.0, "decision": 1.0, "causal": 1.0, "effort": 1.0}


def producer(values: dict[str, float]) -> dict[str, Signal]:
    return resolve_signals("irrelevant text", values)


# ------------------------------------------------------------------------------------------------ salience


def test_salience_is_the_weighted_sum_plus_type_bonus():
    # 0.45·novelty + 0.15·surprise + 0.15·decision + 0.15·causal + 0.1·effort + bonus
    s = salience(0.8, producer({"surprise": 0.4, "decision": 0.2, "causal": 1.0, "effort": 0.5}), "decision")
    expected = 0.45 * 0.8 + 0.15 * 0.4 + 0.15 * 0.2 + 0.15 * 1.0 + 0.1 * 0.5 + 0.10
    assert s.score == pytest.approx(expected)
    assert s.novelty == pytest.approx(0.8) and s.type_bonus == 0.10
    assert s.disposition == "active"
    # Everything at its maximum, a model (no bonus): exactly 1.
    assert salience(1.0, producer(ONE), "model").score == pytest.approx(1.0)


def test_disposition_thresholds_are_inclusive_and_configurable():
    t = Thresholds()
    assert (t.active, t.staging) == (0.4, 0.2)
    assert [disposition(x, t) for x in (0.4, 0.3999, 0.2, 0.1999, 0.0)] == \
        ["active", "staging", "staging", "discard", "discard"]
    strict = Thresholds(active=0.9, staging=0.5)
    assert disposition(0.6, strict) == "staging" and disposition(0.45, strict) == "discard"
    with pytest.raises(ValueError):
        Thresholds(active=0.2, staging=0.4)


def test_a_fully_novel_plain_write_is_active_and_a_near_copy_without_signals_is_discarded():
    plain = salience(1.0, resolve_signals("ok", None), "model")
    assert plain.score >= 0.45 and plain.disposition == "active"
    near = salience(0.15, producer(ZERO), "model")  # 0.45 · 0.15
    assert near.score == pytest.approx(0.0675) and near.disposition == "discard"
    # The same near copy, typed as a correction, gets the bonus (0.15) and lands in staging.
    assert salience(0.15, producer(ZERO), "correction").disposition == "staging"


def test_weights_change_the_score():
    signals = producer({"surprise": 1.0, "decision": 0.0, "causal": 0.0, "effort": 0.0})
    default = salience(0.5, signals, "model").score
    heavier = salience(0.5, signals, "model", Weights(surprise=0.5)).score
    assert heavier - default == pytest.approx(0.35)


def test_type_bonus_table_covers_the_seven_types():
    assert set(TYPE_BONUS) == set(MEMORY_TYPES)
    assert TYPE_BONUS["correction"] > TYPE_BONUS["decision"] > TYPE_BONUS["guideline"] > TYPE_BONUS["model"] == 0


# ----------------------------------------------------------------------------------------------- heuristics


def test_surprise_heuristic_counts_contrast_negation_numbers_and_entities():
    assert surprise_heuristic("the cache is warm").value == 0
    s = surprise_heuristic("Surprisingly the build did not finish in 3 minutes for Alice and Bob")
    assert s.value == pytest.approx(1.0)
    assert {"contrast:surprisingly", "negation:not", "number", "entity:Alice", "entity:Bob"} <= set(s.evidence)
    assert surprise_heuristic("It ran 3 times").value == pytest.approx(0.2)
    one_entity = surprise_heuristic("we met Alice")
    assert one_entity.value == pytest.approx(0.1) and one_entity.evidence == ("entity:Alice",)
    # A capitalised word that opens a sentence is not an entity, nor is "I".
    assert named_entities("The build broke. Then I fixed it") == ()
    assert surprise_heuristic("The build won't start").evidence == ("negation:n't",)


def test_decision_heuristic_strong_and_weak_markers():
    assert decision_heuristic("the sky is blue").value == 0
    assert decision_heuristic("We decided to ship on Friday").value == pytest.approx(0.7)
    assert decision_heuristic("I will look at it").value == pytest.approx(0.3)
    both = decision_heuristic("We chose Redis and will revisit in May")
    assert both.value == pytest.approx(1.0) and "strong:chose" in both.evidence


def test_causal_heuristic_first_and_second_marker():
    assert causal_heuristic("the door is red").value == 0
    assert causal_heuristic("It failed because the disk was full").value == pytest.approx(0.6)
    two = causal_heuristic("It failed because the disk was full, therefore we added alerts")
    assert two.value == pytest.approx(1.0) and two.evidence == ("because", "therefore")


def test_effort_heuristic_grows_with_length_and_structure():
    short = effort_heuristic("ok")
    assert short.value == pytest.approx(0.8 / 40)
    long = effort_heuristic(" ".join(["word"] * 40))
    assert long.value == pytest.approx(0.8)
    detailed = effort_heuristic("Run the migration first. Then restart `api` from src/app/main.py")
    assert "structure" in detailed.evidence and detailed.value > 0.2


def test_producer_signals_replace_heuristics_one_by_one():
    text = "We decided this because it was surprising"
    signals = resolve_signals(text, {"decision": 0.1, "surprise": None})
    assert signals["decision"] == Signal(0.1, "producer")
    assert signals["surprise"].source == "heuristic" and signals["surprise"].value > 0
    assert signals["causal"].source == "heuristic" and signals["causal"].value == pytest.approx(0.6)


def test_correction_signal_from_text_or_producer():
    assert correction_signal("The deploy window is Monday", None).value is False
    for text in ("Actually the deploy window is Friday", "Correction: it is Friday", "Update: Friday now",
                 "The API no longer accepts XML", "Bob was wrong about the port", "Use pnpm instead of npm"):
        c = correction_signal(text, None)
        assert c.value and c.source == "heuristic" and c.evidence, text
    assert correction_signal("The API timeout is now 60 seconds", None).evidence == ("is now",)
    # "is now" beside a word that adds says what holds besides, not instead (blind probe, session 26)
    assert correction_signal("Lucy is now also allergic to shellfish", None).value is False
    assert correction_signal("Actually, Lucy is also allergic to shellfish", None).evidence == ("actually",)
    # The producer's word wins both ways.
    assert correction_signal("Actually, hello", {"correction": False}).value is False
    forced = correction_signal("plain words", {"correction": True})
    assert forced.value and forced.source == "producer"


# ------------------------------------------------------------------------------------- classifier and route


@pytest.mark.parametrize(("text", "expected"), [
    ("Actually the cache TTL is 10 minutes, not 5", "correction"),
    ("Avoid calling fsync in the request path", "pitfall"),
    ("Never run migrations by hand on production", "pitfall"),
    ("We decided to move the queue to Redis streams", "decision"),
    ("To release: first tag the commit, then run `make publish`", "process"),
    ("1. build the image\n2. push it", "process"),
    ("Commit messages should use the imperative mood", "guideline"),
    ("In general, precision matters more than recall for agents", "principle"),
    ("The scheduler holds a PostgreSQL advisory lock per job", "model"),
])
def test_classifier_rules(text: str, expected: str):
    c = classify(text, "observation")
    assert c.memory_type == expected and c.source == "rule", c
    assert c.rule.startswith(expected + ":")


def test_classifier_keeps_a_producer_type_and_classifies_other_kinds():
    assert classify("Avoid globals", "principle").memory_type == "principle"
    assert classify("Avoid globals", "principle").source == "producer"
    assert classify("Avoid globals", "fact").memory_type == "pitfall"
    assert classify("", "message").memory_type == "model"
    for t in MEMORY_TYPES:
        assert classify("anything at all", t).memory_type == t


def test_route_answers_would_this_hold_in_another_project():
    assert route("The retry logic lives in services/append_events.py", "model", "observation", None).route == "project"
    assert route("In this repo the tests need Docker", "guideline", "observation", None).route == "project"
    assert route("atlas uses port 7000 for its admin API", "model", "observation", "atlas").route == "project"
    assert route("We decided to drop Python 3.10", "decision", "observation", "atlas").route == "project"
    assert route("We decided to drop Python 3.10", "decision", "observation", None).route == "agent"
    assert route("Water boils at 100 °C at sea level", "model", "fact", "atlas").route == "knowledge"
    assert route("HTTP 409 means a conflict with the current state", "model", "observation", None).route == \
        "knowledge"
    assert route("Always write tests before fixing a bug", "guideline", "observation", None).route == "agent"
    assert route("I met my sister in Lisbon", "model", "message", None).route == "agent"


# ---------------------------------------------------------------------------------------- merge, confidence


def test_merge_content_policy():
    memory = "Alice moved to Lisbon."
    assert merge_content(memory, "alice moved to lisbon", 1000) == memory  # says nothing new
    assert merge_content(memory, "Lisbon: Alice moved", 1000) == memory  # no new term
    assert merge_content(memory, "Alice moved to Lisbon in 2021 with her dog.", 1000) == \
        "Alice moved to Lisbon in 2021 with her dog."  # the same and more
    assert merge_content(memory, "Alice moved to Lisbon. She loves the trams.", 1000) == \
        "Alice moved to Lisbon. She loves the trams."
    assert merge_content("Alice moved to Lisbon", "Alice relocated to Lisbon", 1000) == \
        "Alice moved to Lisbon. Alice relocated to Lisbon"
    # The content limit holds: what does not fit is left to the log (the observation stays there).
    assert merge_content(memory, "Alice moved to Lisbon. She loves the trams.", len(memory) + 5) == memory
    assert merge_content(memory, "Alice moved to Lisbon in 2021 with her dog.", len(memory) + 5) == memory


def test_confidence_rules_stay_in_bounds():
    assert reinforced_confidence(0.5, 0.1) == pytest.approx(0.55)
    assert reinforced_confidence(1.0, 0.5) == 1.0 and reinforced_confidence(0.0, 1.0) == 1.0
    assert feedback_confidence(0.5, "used") == pytest.approx(0.5 + FEEDBACK_STEP * 0.5)
    assert feedback_confidence(0.5, "not_useful") == pytest.approx(0.5 - FEEDBACK_STEP * 0.5)
    c = 0.5
    for _ in range(200):
        c = feedback_confidence(c, "used")
    assert 0.99 < c <= 1.0
    for _ in range(400):
        c = feedback_confidence(c, "not_useful")
    assert 0.0 <= c < 0.01
    with pytest.raises(ValueError):
        feedback_confidence(0.5, "maybe")


def test_a_correction_phrase_restates_what_it_would_supersede():
    def supersedes(new: str, old: str, producer: dict | None = None) -> bool:
        return restates(correction_signal(new, producer), unsaid_terms(old, new), old)

    assert supersedes("The API timeout is now 60 seconds", "The API timeout is 30 seconds")
    assert supersedes("Actually the deploy window is Friday", "The deploy window is Monday")
    # most of a short memory unsaid: another fact near it, not its correction (blind probe, session 26)
    assert not supersedes("Mom is now a volunteer at the library", "Mom is a retired teacher")
    assert not supersedes("Yep! I actually just submitted a few more last week!", "Definitely keeping you posted!")
    # the producer's own signal is taken at its word
    assert supersedes("Mom is now a volunteer at the library", "Mom is a retired teacher", {"correction": True})
