"""Whether a new memory states a new value for what an older memory says (an update), pure and deterministic.

The governor supersedes the older memory with the newer when this says so (domain/governance.py rule 3b).
A false supersede hides a true fact, so the rule is conservative: the two texts must say the same thing word
for word but for their values, and differ in one place only ("ZQ-2811 ships on Friday" / "ZQ-2940 ships on
Monday" changes the subject too).

Each text becomes a sequence of tokens: a value (a token with a digit, kept whole: "7-3-20-0", "10:00",
"555-1234"; a month or weekday; a number word; a capitalised word inside a sentence, i.e. a name), a copula
("is", "are", "was", "were", "=") or a content stem (domain/text.tokenize; stop words and "now", "currently",
"new", "updated" dropped). The two sequences are aligned (difflib); it is an update when

- they differ in one place, a replacement of values by values of the same kinds (a name never together with a
  number: "Python 3.11" / "Node 20" is another tool), and an old value is gone from the new text;
- the shared context holds at least two content stems or names (a subject and an attribute: "bob", "phone"); the
  new text adds or drops no content stem (a different attribute is a different fact: "badge" is not "phone");
- no copula follows a changed place (the value, not the subject, changed: "Bob's phone is 555" and
  "Alice's phone is 555" differ before "is");
- a change of names only needs a copula before it or a single-valued verb in the context ("lives in",
  "moved to", "works at"): "Ana manages Porto" and "Ana manages Lisbon" may both hold.
- a changed value in a past-tense sentence without a copula, a rescheduling or a single-valued verb is a
  second event ("visited Paris in May" / "in June", "in 2019" / "in 2022"), not an update.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from domain.memo import per_text
from domain.text import STOPWORDS, tokenize

_RAW = re.compile(r"\S+")
_EDGE = re.compile(r"^[^\w$€£]+|[^\w%]+$")
_WORD = re.compile(r"[^\W_]+")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_MONTHS = _set("january february march april june july august september october november december")
_WEEKDAYS = _set("monday tuesday wednesday thursday friday saturday sunday")
_NUMBER_WORDS = _set("two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
                     "hundred thousand million")
_COPULAS = _set("is are was were be =")
_DROPPED = _set("now currently new updated changed actually")
# Stems of verbs (and nouns) that name a one-valued attribute: a changed name after them replaces the old one.
_SINGLE_VALUED = frozenset(tokenize("live lives moved move relocated works work based located renamed called named"))
_RESCHEDULE = frozenset(tokenize("moved move rescheduled postponed changed delayed set scheduled due"))
_PAST = re.compile(r"^(?:[a-z]+ed|went|met|saw|had|made|took|gave|came|ran|flew|bought|got|won|lost)$")

COPULA = "="
MIN_SHARED_STEMS = 2
MAX_CHANGED_PLACES = 1


@dataclass(frozen=True)
class Token:
    text: str  # the normalised form aligned on (a value lower-cased, a stem, or "=")
    kind: str  # number | date | name | copula | stem
    raw: str


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
        word = _EDGE.sub("", raw)
        word = re.sub(r"['’]s$", "", word)
        ends_sentence = raw.endswith((".", "!", "?"))
        if not word:
            sentence_start = sentence_start or ends_sentence
            continue
        low = word.lower()
        if any(c.isdigit() for c in word):
            out.append(Token(low.lstrip("$€£"), "number", raw))
        elif low in _MONTHS or low in _WEEKDAYS or (word == "May" and not sentence_start):
            out.append(Token(low, "date", raw))
        elif low in _NUMBER_WORDS:
            out.append(Token(low, "number", raw))
        elif low in _COPULAS:
            out.append(Token(COPULA, "copula", raw))
        elif word[0].isupper() and not sentence_start and low not in STOPWORDS:
            out.append(Token(low, "name", raw))
        elif low not in _DROPPED:
            for part in _WORD.findall(low):
                out.extend(Token(stem, "stem", raw) for stem in tokenize(part))
        sentence_start = ends_sentence
    return tuple(out)


def _values(ts: tuple[Token, ...]) -> bool:
    return bool(ts) and all(t.kind in ("number", "date", "name") for t in ts)


def update_of(new: str, old: str) -> Update | None:
    """The evidence that `new` states a new value for what `old` says, or None (see the module's rule)."""
    a, b = tokens(old), tokens(new)
    matcher = difflib.SequenceMatcher(a=[t.text for t in a], b=[t.text for t in b], autojunk=False)
    places = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not places or len(places) > MAX_CHANGED_PLACES:
        return None
    shared = [t for op in matcher.get_opcodes() if op[0] == "equal" for t in a[op[1]:op[2]]]
    stems = [t.text for t in shared if t.kind == "stem"]
    subject = [t.text for t in shared if t.kind in ("stem", "name")]  # names in the shared context name the subject
    if len(set(subject)) < MIN_SHARED_STEMS:
        return None
    old_values: list[Token] = []
    new_values: list[Token] = []
    for _, i1, i2, j1, j2 in places:
        was, now = a[i1:i2], b[j1:j2]
        if not (_values(was) and _values(now)) or {t.kind for t in was} != {t.kind for t in now}:
            return None
        if any(t.kind == "copula" for t in a[i2:]):  # the subject changed, not the value
            return None
        changed = {t.kind for t in was}
        if "name" in changed and changed != {"name"}:  # a name and a value changed together: another thing's value
            return None
        if changed == {"name"}:
            before = {t.text for t in a[:i1]}
            if COPULA not in before and not before & _SINGLE_VALUED:
                return None
        old_values += was
        new_values += now
    if not {t.text for t in old_values} - {t.text for t in b}:
        return None  # nothing the old text said is gone: an addition, not a replacement
    kinds = sorted({t.kind for t in old_values})
    if COPULA not in {t.text for t in shared} and not set(stems) & (_RESCHEDULE | _SINGLE_VALUED) and any(
            _PAST.match(_EDGE.sub("", t.raw).lower()) for t in shared if t.kind == "stem"):
        return None
    return Update(tuple(dict.fromkeys(subject)), tuple(t.raw.strip(".,;:!?") for t in old_values),
                  tuple(t.raw.strip(".,;:!?") for t in new_values), tuple(kinds))


__all__ = ["Token", "Update", "tokens", "update_of"]
