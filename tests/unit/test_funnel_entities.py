"""The funnel's pure parts: the entity and pronoun rules (coreference, entity boost, the abstention gate's
entity channel) and the LoCoMo attribution bookkeeping, on toy examples."""

from __future__ import annotations

from bench.locomo import attribute, attribution_totals, locate, summarise
from domain.entities import (
    addresses_other,
    entities,
    holds,
    mentions,
    most_salient,
    names_person,
    pronouns,
    question_share,
    replace_pronouns,
    resolvable,
    speaker,
    speakers_of,
    statements,
    words,
)


def test_entities_rule() -> None:
    assert entities("What did Caroline research?") == ["Caroline"]
    assert entities("When did Melanie's kids visit the New York museum in May?") == ["Melanie", "New York"]
    assert entities("Caroline: I went to the LGBTQ support group yesterday.") == ["Caroline", "LGBTQ"]
    # sentence-initial capitals are grammar, months and days are dates, "I" is no one
    assert entities("What is she doing now? Tomorrow I will ask on Monday.") == []
    assert entities("Bob, Alice and Tom Smith went.") == ["Alice", "Tom Smith"]
    # known names count at the start of a sentence too
    assert entities("Caroline adopted a kitten", names={"caroline"}) == ["Caroline"]
    assert entities("Knead the dough", names={"caroline"}) == []


def test_pronouns_and_resolution() -> None:
    assert pronouns("What did she say about her dog?") == ["she", "her"]
    resolved = replace_pronouns("What did she say about her dog?", "Caroline")
    assert resolved == "What did Caroline say about Caroline's dog?"
    recent = ["Caroline said the kitten sleeps on her keyboard", "Caroline adopted a kitten named Biscuit",
              "The budget review moved to Thursday"]
    assert most_salient(recent) == "Caroline"
    assert most_salient(["nothing named here", "still nothing"]) is None
    # one imperative at the start of one memory is not a name
    assert most_salient(["Marinate the chicken overnight", "the oven is hot"]) is None
    assert resolvable("what pet did she adopt for her kids?") == {"she", "her"}
    assert resolvable("Is it done yet?") == {"it"}
    assert resolvable("knead the dough and let it proof") == set()
    assert resolvable("bake the cookies until they brown, then ask him") == {"him"}
    assert replace_pronouns("bake them for him", "Bob", {"him"}) == "bake them for Bob"


def test_speaker_and_holding() -> None:
    assert speaker("Caroline: I researched adoption agencies") == "Caroline"
    assert speaker("Mary Ann: yes") == "Mary Ann"
    assert speaker("The time: 5 pm") is None and speaker("Alice moved to Lisbon") is None
    utterance = "Melanie: Thanks Caroline! After the race I realised self-care matters"
    assert holds(utterance, words(utterance), "Melanie") and not holds(utterance, words(utterance), "Caroline")
    # Whom it is about follows the grammatical person: the speaker in the first person, the addressee in the
    # second (named or not), whoever says it.
    about_you = "Caroline: Wow, your charity race sounds great! How did you feel after you finished?"
    assert addresses_other(about_you)
    assert holds(about_you, words(about_you), "Melanie") and not holds(about_you, words(about_you), "Caroline")
    about_me = "Caroline: Thanks, Melanie! You know, my grandma gave me this necklace"
    assert not addresses_other(about_me)
    assert holds(about_me, words(about_me), "Caroline") and not holds(about_me, words(about_me), "Melanie")
    assert holds(about_me, words(about_me), "Caro") and not holds(about_me, words(about_me), "Ca")
    assert names_person("Mel", "Melanie") and names_person("melanie", "Melanie") and not names_person("Jon", "John")
    # Given who speaks in the memories at hand, the utterance rule is for them; a pet is what mentions it.
    pet = "Melanie: Oliver hid his bone in my slipper once!"
    speakers = speakers_of([pet, about_me])
    assert speakers == {"Melanie", "Caroline"}
    assert holds(pet, words(pet), "Oliver", speakers) and not holds(pet, words(pet), "Oliver")
    assert not holds(pet, words(pet), "Caroline", speakers) and holds(pet, words(pet), "Mel", speakers)
    neutral = "Caroline: The necklace is from Sweden"
    assert holds(neutral, words(neutral), "Caroline") and not holds(neutral, words(neutral), "Melanie")
    assert statements("Caroline: The kids look cute, Mel! How did they handle the accident?") == \
        "The kids look cute, Mel!"
    assert statements("Where is it? It is in Lisbon. Ok") == "It is in Lisbon. Ok"
    assert question_share("Caroline: How did they handle the accident?") == 1.0
    assert question_share("Tom: The flights were cheapest.") == 0.0
    assert 0 < question_share("Tom: The flights were cheapest. Did you book yours yet?") < 1
    assert question_share("") == 0.0
    plain = "Alice moved to Lisbon with Bob's sister"
    assert holds(plain, words(plain), "Bob") and mentions(words(plain), "Alice")


def test_locate_and_attribute() -> None:
    trace = {"candidates": ["a", "b", "c", "d", "e"], "pool": ["a", "b", "c"], "ranked": ["a", "b"]}
    assert locate("a", trace, ["a", "b"]) == "found"
    assert locate("a", trace, []) == "abstained"
    assert locate("c", trace, ["a", "b"]) == "cut_at_rerank"
    assert locate("e", trace, ["a", "b"]) == "cut_by_composite"
    assert locate("z", trace, ["a", "b"]) == "never_candidate"
    assert locate(None, trace, ["a"]) == "not_kept"
    # a question goes to its best-placed gold memory
    assert attribute(["z", "c"], trace, ["a", "b"]) == ("cut_at_rerank", ["never_candidate", "cut_at_rerank"])
    assert attribute([], trace, ["a"]) == ("never_candidate", [])


def test_attribution_totals_and_abstention_summary() -> None:
    s = {"r@1": 0.0, "r@5": 0.0, "r@10": 0.0, "hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr@10": 0.0,
         "ndcg@10": 0.0}
    per_question = [
        {"category": 1, "returned": ["x"], "scores_returned": [0.5], "scores": s,
         "attribution": {"stage": "found", "gold_stages": ["found", "never_candidate"]}},
        {"category": 4, "returned": [], "scores_returned": [], "scores": s,
         "attribution": {"stage": "abstained", "gold_stages": ["abstained"]}},
        {"category": 5, "returned": [], "scores_returned": []},
        {"category": 5, "returned": ["y"], "scores_returned": [0.3]},
    ]
    totals = attribution_totals(per_question)
    assert totals["questions"] == 2 and totals["gold_memories"] == 3
    assert totals["by_question"]["found"] == 1 and totals["by_question"]["abstained"] == 1
    assert totals["by_gold_memory"]["never_candidate"] == 1
    assert totals["gold_candidate_share"] == 2 / 3 and totals["gold_reached_pool_share"] == 2 / 3
    summary = summarise(per_question)
    assert summary["answerable_abstained"]["abstained"] == 1 and summary["answerable_abstained"]["rate"] == 0.5
    assert summary["answerable_abstained"]["by_category"] == {"1": 0.0, "4": 1.0}
    assert summary["category_5"]["abstain_rate"] == 0.5
    assert summary["attribution"]["questions"] == 2
