"""Information novelty (domain/novelty.py): pure, with a fixed calibration and the cosines MiniLM gives."""

from __future__ import annotations

import pytest

from domain.novelty import Calibration, Neighbour, calibrate, content_terms, is_filler, is_repeat, key_terms, novelty

CAL = Calibration("test-model", unrelated=0.41, paraphrase=0.95)


def one(text: str, neighbour: str, cosine: float):
    return novelty(text, [Neighbour("n1", cosine, neighbour)], CAL)


def test_an_empty_scope_is_fully_novel_and_filler_is_never_novel():
    assert novelty("Alice moved to Lisbon in May", [], CAL).value == 1.0
    for filler in ("ok", "Thanks!", "haha 😀", "Caroline: Haha yes!! 😀", "Thanks, Mel!", "hahaha lol", "👍"):
        n = novelty(filler, [], CAL)
        assert n.filler and n.value == 0.0, filler
    assert not is_filler("Caroline: I adopted a dog") and not is_filler("Call at 5")


@pytest.mark.parametrize(("before", "after", "cosine", "new_key"), [
    ("Ticket ZQ-4863 is about the login bug", "Ticket ZQ-2811 is about the billing bug", 0.70, "2811"),
    ("Bob's phone number is 555-1234", "Bob's phone number is 555-9876", 0.99, "9876"),
    ("Alice is allergic to peanuts", "Bob is allergic to peanuts", 0.75, "bob"),
    ("The meeting is on Tuesday", "The meeting is on Thursday", 0.90, "thursday"),
    ("Grace has a brother in Oslo", "Grace has a sister in Oslo", 0.93, "sister"),
])
def test_a_key_term_no_neighbour_carries_makes_a_write_novel_however_close(before, after, cosine, new_key):
    n = one(after, before, cosine)
    assert n.value == 1.0 and n.comparisons[0].new_key_terms == (new_key,)
    assert not is_repeat(n.comparisons[0], reinforce_threshold=0.92)  # never merged into the old fact


def test_a_repeat_and_a_paraphrase_are_not_novel_and_are_repeats():
    repeat = one("Alice moved to Lisbon in May", "Alice moved to Lisbon in May", 1.0)
    assert repeat.value == 0.0 and repeat.comparisons[0].covered and is_repeat(repeat.comparisons[0], 0.92)
    reordered = one("In May, Alice moved to Lisbon", "Alice moved to Lisbon in May", 0.99)
    assert reordered.value == 0.0 and is_repeat(reordered.comparisons[0], 0.92)
    paraphrase = one("Alice relocated to Lisbon in May", "Alice moved to Lisbon in May", 0.983)
    assert paraphrase.value < 0.4 and paraphrase.comparisons[0].new_terms == ("reloc",)
    assert is_repeat(paraphrase.comparisons[0], 0.92) and not is_repeat(paraphrase.comparisons[0], 0.99)
    # Numbers are one term whatever the spelling.
    floor = one("The coffee machine is on floor three", "The coffee machine is on the third floor", 0.9)
    assert floor.comparisons[0].new_key_terms == () and floor.comparisons[0].covered


def test_a_different_fact_about_the_same_subject_is_novel_by_the_calibrated_cosine():
    # MiniLM: "Alice moved to Lisbon in May" / "Alice is allergic to peanuts" 0.34, below where different facts fall.
    n = one("Alice is allergic to peanuts", "Alice moved to Lisbon in May", 0.34)
    assert n.value == 1.0 and n.comparisons[0].cosine_novelty == 1.0
    # One object word said in place of the neighbour's: another value, novel, never merged into the other.
    swapped = one("Alice is allergic to peanuts", "Alice is allergic to shellfish", 0.73)
    assert swapped.value == 1.0 and swapped.comparisons[0].replaced == ("shellfish",)
    assert not is_repeat(swapped.comparisons[0], 0.92)
    assert swapped.as_dict()["neighbours"][0]["replaced"] == ["shellfish"]
    # A word added to a close template: partly novel (both signals combined), not a repeat.
    close = one("Alice is allergic to peanuts and cashews", "Alice is allergic to peanuts", 0.86)
    assert 0.3 < close.value < 1.0 and not is_repeat(close.comparisons[0], 0.92)
    assert close.comparisons[0].replaced == ()


def test_a_word_swapped_at_a_paraphrase_cosine_is_a_paraphrase():
    # A synonym keeps the cosine at the paraphrases' (CAL's 0.95): a repeat, as before the replaced rule.
    paraphrase = one("Alice relocated to Lisbon in May", "Alice moved to Lisbon in May", 0.983)
    assert paraphrase.comparisons[0].replaced == () and paraphrase.value < 0.4
    # The same swap further apart in meaning says another value.
    moved = one("Maria likes dogs", "Maria likes cats", 0.80)
    assert moved.value == 1.0 and moved.comparisons[0].replaced == ("cats",)
    # "also" says it adds: one word said in place of another still (a second allergy is news, kept active)
    added = one("Lucy is now also allergic to shellfish", "Lucy is allergic to penicillin", 0.80)
    assert added.value == 1.0 and added.comparisons[0].replaced == ("penicillin",)


def test_the_neighbour_that_holds_most_decides_and_is_named():
    n = novelty("Alice moved to Lisbon", [Neighbour("bob", 0.8, "Bob moved to Lisbon"),
                                          Neighbour("alice", 0.95, "Alice moved to Lisbon last spring")], CAL)
    assert n.holder == "alice" and n.value == 0.0
    # Each neighbour lacks a key term of the write: none holds it, so it is novel.
    split = novelty("Alice moved to Lisbon", [Neighbour("bob", 0.8, "Bob moved to Lisbon"),
                                              Neighbour("porto", 0.7, "Alice moved to Porto")], CAL)
    assert split.value == 1.0
    evidence = split.as_dict()
    assert evidence["calibration"] == {"model": "test-model", "unrelated": 0.41, "paraphrase": 0.95}
    assert {c["memory_id"]: c["new_key_terms"] for c in evidence["neighbours"]} == {"bob": ["alic"],
                                                                                    "porto": ["lisbon"]}


def test_terms_and_key_terms():
    terms = content_terms("Thanks! Ticket ZQ-2811 is about the billing bug in March")
    assert "thank" not in terms and {"zq", "2811", "bill", "bug", "march"} <= set(terms)
    keys = key_terms("Ticket ZQ-2811 is about the billing bug in March", terms)
    assert {"2811", "march"} <= set(keys) and "bug" not in keys
    assert "may" not in key_terms("we may go", content_terms("we may go"))  # the verb is no date


def test_calibration_is_the_medians_and_refuses_a_model_that_cannot_tell_paraphrases():
    c = calibrate("m", [0.3, 0.4, 0.9], [0.8, 0.95, 0.97])
    assert (c.unrelated, c.paraphrase) == (0.4, 0.95)
    assert c.cosine_novelty(0.4) == 1.0 and c.cosine_novelty(0.95) == 0.0
    assert c.cosine_novelty(0.675) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        calibrate("m", [0.9], [0.5])


def test_batch_vectors_answer_the_nearest_and_forget_withdrawn_ones():
    import uuid

    import numpy as np

    from domain.governance import BatchVectors

    ids = [uuid.UUID(int=i) for i in range(40)]
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    batch = BatchVectors(dim_hint=8)
    for i, v in zip(ids, vectors, strict=True):  # grows past its first capacity (16)
        batch.put(i, v)
    query = vectors[7]
    [(first, cosine), *_] = batch.nearest(query, 3)
    assert first == ids[7] and cosine == pytest.approx(1.0, abs=1e-5)
    expected = sorted(range(40), key=lambda i: -float(vectors[i] @ query))[:3]
    assert [i for i, _ in batch.nearest(query, 3)] == [ids[i] for i in expected]
    batch.put(ids[7], None)  # superseded in the batch: never a neighbour again
    assert ids[7] not in [i for i, _ in batch.nearest(query, 40)]
    batch.put(ids[7], vectors[7])  # and back (a reinforcement re-embedded it)
    assert batch.nearest(query, 1)[0][0] == ids[7]
