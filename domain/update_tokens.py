"""The words of the update rule (domain/update.py): a text as values, copulas and content stems, and the evidence
an update carries. Pure and deterministic.

A value is a token with a digit, kept whole ("7-3-20-0", "10:00", "555-1234"); a month or weekday ("Tuesdays" too);
a number word; an identifier without a digit (an email, a handle or channel, a URL); a capitalised word inside a
sentence, i.e. a name ("Dr. Okafor": a title's period ends no sentence). A copula is "is", "are", "was", "were" or
"="; the speaker ("I", "my") and the speaker's group ("we", "our") are a subject as a name is; every other word is
a content stem (domain/text.tokenize; stop words and "now", "currently", "new", "updated", "instead" dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from domain.memo import per_text
from domain.text import STOPWORDS, tokenize

_RAW = re.compile(r"\S+")
EDGE = re.compile(r"^[^\w$€£]+|[^\w%]+$")
WORD = re.compile(r"[^\W_]+")


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_MONTHS = word_set("january february march april june july august september october november december")
_WEEKDAYS = word_set("monday tuesday wednesday thursday friday saturday sunday")
_NUMBER_WORDS = word_set("two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
                         "hundred thousand million")
_COPULAS = word_set("is are was were be =")
_DROPPED = word_set("now currently nowadays new updated changed actually instead also")
TITLES = word_set("mr. mrs. ms. dr. prof. st.")  # a period that ends no sentence: "Dr. Okafor" is a name
VALUE_KINDS = frozenset(("number", "date", "name", "id"))
# An identifier written without a digit is a value too: an email, a handle or channel, a URL ("ana@mail.com",
# "#design", "@ana", "https://…").
_IDENTIFIER = re.compile(r"^[#@][^\W_][\w.-]*$|^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$|://|^www\.", re.IGNORECASE)
SUBJECT_KINDS = frozenset(("stem", "name", "person"))  # what the shared context's subject and attribute are made of
# Who a first-person text is about: the speaker ("I", "my") or the speaker's group ("we", "our"), a subject as a
# name is (stop words otherwise, so "I live in Lisbon" named no subject).
_FIRST_PERSON = {**dict.fromkeys(("i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"), "i"),
                 **dict.fromkeys(("we", "us", "our", "ours", "ourselves", "we're", "we've"), "we")}

# Words that say what holds today, a cue of a change where the old text does not say them (domain/update.py,
# update_holder.py).
TODAY = re.compile(r"\b(?:now|nowadays|these\s+days|currently)\b", re.IGNORECASE)
COPULA = "="
MIN_SHARED_STEMS = 2
_POSSESSIVES = frozenset(("my", "our", "his", "her", "their", "its", "your"))


@dataclass(frozen=True)
class Token:
    text: str  # the normalised form aligned on (a value lower-cased, a stem, or "=")
    kind: str  # number | date | name | id | copula | person | stem
    raw: str
    start: int = 0  # where its word starts in the text

    @property
    def said(self) -> str:
        """The token as written, without the punctuation around it."""
        return self.raw.strip(".,;:!?")


@dataclass(frozen=True)
class Update:
    """The evidence of an update: what both say (subject and attribute stems), the old and new values."""

    shared: tuple[str, ...]
    old_values: tuple[str, ...]
    new_values: tuple[str, ...]
    kinds: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"shared_terms": list(self.shared), "old_values": list(self.old_values),
                "new_values": list(self.new_values), "value_kinds": list(self.kinds)}


# Kept by the text's digest: the governor reads a write's nearest memories against it, the same texts write after
# write (and the write's own text once per neighbour); tokenizing them was a tenth of a governed write's CPU.
@per_text()
def tokens(text: str) -> tuple[Token, ...]:
    """The text as values, copulas and content stems, in order."""
    out: list[Token] = []
    sentence_start = True
    for m in _RAW.finditer(text):
        raw = m.group()
        bare = raw.rstrip(".,;:!?)\"'’")
        if _IDENTIFIER.search(bare):
            out.append(Token(bare.lower(), "id", raw, m.start()))
            sentence_start = raw.endswith((".", "!", "?"))
            continue
        word = EDGE.sub("", raw)
        word = re.sub(r"['’]s$", "", word)
        ends_sentence = raw.endswith((".", "!", "?")) and raw.lower() not in TITLES
        if not word:
            sentence_start = sentence_start or ends_sentence
            continue
        low, at = word.lower(), m.start()
        person = _FIRST_PERSON.get(low.replace("’", "'"))
        if any(c.isdigit() for c in word):
            out.append(Token(low.lstrip("$€£"), "number", raw, at))
        elif low in _MONTHS or low in _WEEKDAYS or low[:-1] in _WEEKDAYS or (word == "May" and not sentence_start):
            out.append(Token(low, "date", raw, at))
        elif low in _NUMBER_WORDS:
            out.append(Token(low, "number", raw, at))
        elif low in _COPULAS:
            out.append(Token(COPULA, "copula", raw, at))
        elif person:
            out.append(Token(person, "person", raw, at))
        elif word[0].isupper() and not sentence_start and low not in STOPWORDS:
            out.append(Token(low, "name", raw, at))
        elif low not in _DROPPED:
            for part in WORD.findall(low):
                out.extend(Token(stem, "stem", raw, at) for stem in tokenize(part))
        sentence_start = ends_sentence
    return tuple(out)


def possessive(t: Token) -> bool:
    """Whether a word owns the next one: "Priya's", "my", "our"."""
    raw = t.raw.lower().strip(".,;:!?")
    return raw.endswith(("'s", "’s")) or raw in _POSSESSIVES


def said(text: str) -> frozenset[str]:
    """The text's words as written, lower-cased (what the cue and change-verb lists are matched against)."""
    return frozenset(w.lower() for w in WORD.findall(text))


__all__ = ["COPULA", "EDGE", "MIN_SHARED_STEMS", "SUBJECT_KINDS", "TITLES", "TODAY", "VALUE_KINDS", "WORD", "Token",
           "Update", "possessive", "said", "tokens", "word_set"]
