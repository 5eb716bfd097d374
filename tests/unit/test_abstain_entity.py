"""The abstention gate's entity channel (recall/funnel/abstain.py), pure: judged on Items as the funnel hands
them over, ranked."""

from __future__ import annotations

import uuid

from infra.settings import Settings, replace
from recall.funnel.abstain import judge
from recall.funnel.types import Item, StageReport


def ranked(*contents: str) -> list[Item]:
    return [Item(uuid.uuid4(), bm25=1.0, cosine=0.7, content=c, calibrated=0.9) for c in contents]


def entity(query: str, items: list[Item], leading: int) -> tuple[dict | None, dict]:
    settings = replace(Settings(), abstain_entity_top=leading)
    report = StageReport("abstain")
    verdict = judge(query, items, False, settings, report)
    assert report.config["entity_top"] == leading  # the explanation names the knob it judged with
    return verdict, report.notes


# A speaker swap: the bowl is Melanie's; Caroline only praises it, further down.
SWAPPED = ranked("Melanie: Yeah, I made this bowl in my pottery class. It took some work!",
                 "Melanie: The black and white glaze on the bowl took three tries.",
                 "Caroline: That bowl is gorgeous. I made a black and white bowl once too, in school.")


def test_a_named_person_must_lead_the_top_when_asked():
    query = "Did Caroline make the black and white bowl?"
    assert entity(query, SWAPPED, leading=0)[0] is None  # Caroline's own bowl, third, answers the rest
    verdict, notes = entity(query, SWAPPED, leading=2)
    assert verdict is not None and not notes["channels"]["entity"]
    assert "none of the first 2 memories is about Caroline" in verdict["reason"]
    assert entity(query, SWAPPED, leading=3)[0] is None


def test_an_answer_about_the_named_person_first_passes_either_way():
    items = ranked("Caroline: I made this black and white bowl in my pottery class.",
                   "Melanie: That bowl is lovely!")
    for leading in (0, 1, 2):
        assert entity("Did Caroline make the black and white bowl?", items, leading)[0] is None
