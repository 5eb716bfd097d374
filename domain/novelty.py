"""Information novelty (the salience gate's novelty term): how much of an observation its nearest neighbours in
the scope do not already hold. Pure functions.

A raw `1 − cosine` is not that: a sentence embedding puts two different facts about one person at cosine
0.4–0.6 (all-MiniLM-L6-v2: "Alice moved to Lisbon in May" / "Alice likes jazz" 0.40), and two facts that
differ only by an identifier near 1.0 ("Bob's phone number is 555-1234" / "... 555-9876" 0.99). So, per
neighbour n (the NEAREST few by cosine):

    covered(n)   every content term of the observation is a term of n              → novelty(n) = 0
    new_key(n)   a key term of the observation that n does not carry                → novelty(n) = 1
    replaced(n)  the observation says what n says but, in one place, another value    → novelty(n) = 1
                 or word (domain/update.replaced: "Maria likes dogs" after "Maria likes cats"), at a cosine
                 below the paraphrases' (a synonym swapped keeps it above: "relocated" for "moved")
    otherwise    novelty(n) = 1 − (1 − calibrated cosine novelty)·(1 − share of content terms n does not hold)
                 (either signal alone can say "new": the sentence means something else, or says more)

and the observation's novelty is the lowest novelty(n) (the neighbour that holds most of it); with no
neighbour it is 1.0. Filler is not novel: 0.0, whatever its neighbours. An utterance is filler when its body
(after a speaker prefix, "Caroline: ...") has no content term but names (greetings, acknowledgements,
laughter, emoji, "ok", "thanks!", "Thanks, Mel!").

- Terms come from the one tokenizer (domain/text.tokenize: stop-worded, stemmed). Content terms are those
  terms minus FILLER (interjections, greetings, thanks, laughter).
- Key terms carry the information a similar sentence does not: names (the entity rule of domain/entities.py,
  sentence-initial capitalised words counted as names too: "Bob is allergic ..." names Bob), numbers and
  identifiers (any term with a digit: "ZQ-2811" → zq, 2811), dates (month and weekday names, "May" only
  capitalised), number words (quantities), and relation words (kinship and roles: sister, manager, ...).
- Calibrated cosine novelty = clamp((paraphrase − cosine) / (paraphrase − unrelated), 0, 1), where
  `unrelated` and `paraphrase` are the median cosines the configured model gives CALIBRATION_PAIRS (different
  facts about one subject; paraphrases of one fact), measured once per model (infra/calibration.py).
- A neighbour is a repeat (the governor reinforces it instead of adding the observation) when it is covered,
  or at cosine ≥ the reinforce threshold, and carries every key term: a new number is never merged away.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from domain.entities import entities, utterance_body
from domain.text import content_hash, tokenize
from domain.update import replaced

_FILLER_WORDS = """
ok okay okey k kk yes yeah yep yup ya yea no nope nah sure thanks thank thx ty cheers hi hello hey heya hiya
bye goodbye cya morning evening night good great nice cool awesome amazing wow whoa oh ah aw aww uh um umm hmm
lol lmao rofl omg yay welcome please sorry right alright fine gotcha noted indeed totally definitely absolutely
really much super lovely wonderful fantastic glad fun true exactly haha hehe
"""
_LAUGHTER = re.compile(r"^(?:a*(?:ha)+h?|(?:he)+|(?:hi)+|l+o+l+|x+d+|m+h?m+)$")
_MONTHS = "january february march april june july august september october november december"
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
_NUMBER_WORDS = "thirteen fourteen fifteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand " \
    "million billion dozen half twice"
# Small numbers and ordinals are one key term whatever the spelling: "floor three" = "third floor" = "3rd floor"
# ("one", "first" and "second" are left out: more often a pronoun, "at first" or "a second" than a quantity).
_NUMBERS = {word: str(i) for i, words in enumerate((
    "", "", "two", "three third", "four fourth", "five fifth", "six sixth", "seven seventh",
    "eight eighth", "nine ninth", "ten tenth", "eleven eleventh", "twelve twelfth")) for word in words.split()}
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_RELATION_WORDS = ("mother father mom dad mum parent sister brother sibling son daughter child kid wife husband "
                   "spouse partner boyfriend girlfriend fiance fiancee friend roommate neighbor neighbour cousin "
                   "aunt uncle niece nephew grandmother grandfather grandma grandpa grandparent grandson "
                   "granddaughter boss manager colleague coworker teammate mentor teacher student doctor "
                   "therapist owner landlord tenant client customer lead")
_CAPITALISED = re.compile(r"(?<![\w'’])[^\W\d_][\w'’-]*")

FILLER = frozenset(tokenize(_FILLER_WORDS))
_NUMBER_TERMS = {stem: _NUMBERS[word] for word in _NUMBERS for stem in tokenize(word)}
_DATE_TERMS = frozenset(tokenize(f"{_MONTHS} {_WEEKDAYS}")) | {"may"}
_QUANTITY_TERMS = frozenset(tokenize(_NUMBER_WORDS))
_RELATION_TERMS = frozenset(tokenize(_RELATION_WORDS))

# Different facts about one subject (where "unrelated" falls for a model), and paraphrases of one fact.
CALIBRATION_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "unrelated": (
        ("Alice moved to Lisbon in May.", "Alice likes jazz."),
        ("Bob works as a nurse at the city hospital.", "Bob has two cats."),
        ("The deploy pipeline runs on every merge to main.", "The deploy pipeline is owned by the platform team."),
        ("Maria is learning to play the violin.", "Maria visited her grandparents last weekend."),
        ("Our API returns errors as JSON.", "Our API is hosted in Frankfurt."),
        ("Tom prefers tea over coffee.", "Tom is training for a marathon."),
        ("The project uses PostgreSQL for storage.", "The project started three years ago."),
        ("Caroline went to a support group yesterday.", "Caroline is thinking about adopting a child."),
        ("The login page is slow on mobile.", "The login page was redesigned by an agency."),
        ("Sam painted a sunset over the lake.", "Sam's kids love going to the beach."),
        ("The invoice service sends reminders after 30 days.", "The invoice service is written in Go."),
        ("Priya is allergic to shellfish.", "Priya just bought a new bicycle."),
    ),
    "paraphrase": (
        ("Alice moved to Lisbon in May.", "In May, Alice relocated to Lisbon."),
        ("Bob works as a nurse at the city hospital.", "Bob is a nurse at the hospital in the city."),
        ("The deploy pipeline runs on every merge to main.", "Every merge into main triggers the deploy pipeline."),
        ("Maria is learning to play the violin.", "Maria is taking violin lessons."),
        ("Our API returns errors as JSON.", "Errors from our API come back as JSON."),
        ("Tom prefers tea over coffee.", "Tom likes tea better than coffee."),
        ("The project uses PostgreSQL for storage.", "The project stores its data in PostgreSQL."),
        ("Caroline went to a support group yesterday.", "Yesterday Caroline attended a support group."),
        ("The login page is slow on mobile.", "On mobile phones the login page loads slowly."),
        ("Sam painted a sunset over the lake.", "Sam made a painting of the sunset above the lake."),
        ("The invoice service sends reminders after 30 days.", "After 30 days the invoice service sends a reminder."),
        ("Priya is allergic to shellfish.", "Priya has a shellfish allergy."),
    ),
}
CALIBRATION_HASH = content_hash(repr(sorted(CALIBRATION_PAIRS.items())))


@dataclass(frozen=True)
class Calibration:
    """Median cosines a model gives CALIBRATION_PAIRS."""

    model: str
    unrelated: float
    paraphrase: float

    def cosine_novelty(self, cosine: float) -> float:
        span = max(1e-6, self.paraphrase - self.unrelated)
        return min(1.0, max(0.0, (self.paraphrase - cosine) / span))

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "unrelated": round(self.unrelated, 6), "paraphrase": round(self.paraphrase, 6)}


def calibrate(model: str, unrelated: list[float], paraphrase: list[float]) -> Calibration:
    """The calibration from the cosines of each kind of pair (medians: one odd pair moves nothing)."""
    low, high = statistics.median(unrelated), statistics.median(paraphrase)
    if high <= low:
        raise ValueError(f"model {model}: paraphrases ({high:.3f}) are not closer than different facts ({low:.3f})")
    return Calibration(model, low, high)


def terms_of(text: str) -> list[str]:
    """The tokenizer's terms, numbers in one spelling ("third", "three", "3rd" → "3"), without repeats."""
    out = []
    for t in tokenize(text):
        ordinal = _ORDINAL.match(t)
        out.append(_NUMBER_TERMS.get(t, ordinal.group(1) if ordinal else t))
    return list(dict.fromkeys(out))


def content_terms(text: str) -> list[str]:
    """The observation's terms that carry content: its terms less filler, laughter included."""
    return [t for t in terms_of(text) if t not in FILLER and not _LAUGHTER.match(t)]


def key_terms(text: str, terms: list[str]) -> list[str]:
    """The content terms that name who, what, when or how many (see the module's list)."""
    capitalised = {m.group().lower() for m in _CAPITALISED.finditer(text)}
    names = {t for phrase in entities(text, names=capitalised) for t in terms_of(phrase)}
    keys = []
    for t in terms:
        date = t in _DATE_TERMS and (t != "may" or "May" in text)  # "may" the verb is no date
        if t in names or date or any(c.isdigit() for c in t) or t in _QUANTITY_TERMS or t in _RELATION_TERMS:
            keys.append(t)
    return keys


def unsaid_terms(old: str, new: str) -> list[str]:
    """The content terms of `old` that `new` does not carry: what superseding `old` by `new` would stop saying.
    Content terms, not only key terms: code identifiers (`idx_shipments_carrier_eta`) are lower-case words."""
    held = set(terms_of(new))
    return [t for t in content_terms(old) if t not in held]


def is_filler(text: str) -> bool:
    """No content in the utterance's body but filler and names (a name addressed is no information)."""
    body = utterance_body(text)
    terms = content_terms(body)
    return not terms or set(terms) <= set(key_terms(body, terms)) - _QUANTITY_TERMS - _RELATION_TERMS - {
        t for t in terms if any(c.isdigit() for c in t)} - _DATE_TERMS


@dataclass(frozen=True)
class Neighbour:
    memory_id: str
    cosine: float
    content: str


@dataclass(frozen=True)
class Comparison:
    """The observation against one neighbour."""

    memory_id: str
    cosine: float
    cosine_novelty: float
    new_terms: tuple[str, ...]
    new_key_terms: tuple[str, ...]
    covered: bool
    novelty: float
    replaced: tuple[str, ...] = ()  # what the neighbour says in the one place the observation says otherwise

    def as_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "cosine": round(self.cosine, 6),
                "cosine_novelty": round(self.cosine_novelty, 6), "new_terms": list(self.new_terms),
                "new_key_terms": list(self.new_key_terms), "covered": self.covered,
                "novelty": round(self.novelty, 6), **({"replaced": list(self.replaced)} if self.replaced else {})}


@dataclass(frozen=True)
class Novelty:
    value: float
    filler: bool
    terms: tuple[str, ...]
    key_terms: tuple[str, ...]
    calibration: Calibration
    comparisons: tuple[Comparison, ...] = field(default_factory=tuple)
    holder: str | None = None  # the neighbour holding most of the observation (lowest novelty)

    def as_dict(self) -> dict[str, Any]:
        return {"value": round(self.value, 6), "filler": self.filler, "terms": list(self.terms),
                "key_terms": list(self.key_terms), "calibration": self.calibration.as_dict(),
                "holder": self.holder, "neighbours": [c.as_dict() for c in self.comparisons]}


def compare(text: str, terms: list[str], keys: list[str], neighbour: Neighbour,
            calibration: Calibration) -> Comparison:
    """The observation (its text, content terms and key terms) against one neighbour."""
    held = set(terms_of(neighbour.content))
    new = tuple(t for t in terms if t not in held)
    new_keys = tuple(t for t in keys if t not in held)
    cosine_novelty = calibration.cosine_novelty(neighbour.cosine)
    swapped = replaced(text, neighbour.content) if new and cosine_novelty > 0 else ()
    if not new:
        value = 0.0
    elif new_keys or swapped:
        value = 1.0
    else:
        value = 1.0 - (1.0 - cosine_novelty) * (1.0 - len(new) / len(terms))
    return Comparison(neighbour.memory_id, neighbour.cosine, cosine_novelty, new, new_keys, not new, value, swapped)


def novelty(text: str, neighbours: list[Neighbour], calibration: Calibration) -> Novelty:
    """The observation's information novelty against its nearest neighbours (see the module's rule)."""
    terms = content_terms(text)
    keys = key_terms(text, terms)
    if is_filler(text):
        return Novelty(0.0, True, tuple(terms), tuple(keys), calibration)
    comparisons = tuple(compare(text, terms, keys, n, calibration) for n in neighbours)
    if not comparisons:
        return Novelty(1.0, False, tuple(terms), tuple(keys), calibration)
    holder = min(comparisons, key=lambda c: (c.novelty, -c.cosine, c.memory_id))
    return Novelty(holder.novelty, False, tuple(terms), tuple(keys), calibration, comparisons, holder.memory_id)


def is_repeat(comparison: Comparison, reinforce_threshold: float) -> bool:
    """Whether the neighbour already holds the observation: reinforce it rather than add a memory."""
    return not comparison.new_key_terms and (comparison.covered or comparison.cosine >= reinforce_threshold)


__all__ = ["CALIBRATION_HASH", "CALIBRATION_PAIRS", "Calibration", "Comparison", "FILLER", "Neighbour", "Novelty",
           "calibrate", "compare", "content_terms", "is_filler", "is_repeat", "key_terms", "novelty", "unsaid_terms"]
