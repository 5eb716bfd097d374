"""Whether a new memory states a new value for what an older memory says (an update), pure and deterministic.

The governor supersedes the older memory with the newer when this says so (domain/governance.py rule 3b).
A false supersede hides a true fact, so the rule is conservative: the two texts must say the same thing word
for word but for their values, and differ in one place only ("ZQ-2811 ships on Friday" / "ZQ-2940 ships on
Monday" changes the subject too).

Each text becomes a sequence of values, copulas and content stems (domain/update_tokens.py). The two sequences are
aligned (difflib); it is an update when

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
- a value may also be an ordinary word or two (a colour, a seat, a mode: "Alice's favourite colour is blue" /
  "green"), replaced by a word or two, when the old text states it right after a copula (the attribute's value,
  not a relation: "Priya is allergic to peanuts" / "to shellfish" may both hold), after a single-valued or
  preference verb ("prefers window seats" / "aisle seats"), or when the new text says it replaces the old
  ("instead", absent from the old): "Omar commutes by train" / "Omar commutes by bike instead". That cue also lets
  a name change without a copula ("the team tracks bugs in Linear instead"). "Now" is no such cue for an object
  ("the app now supports offline mode" adds to "dark mode"), but it is one for where or how something is done,
  after a preposition of place or means ("Omar commutes by bike now", "Mia now volunteers at the library"), unless
  the new text says it adds ("also", "another").
- or, when the texts differ in more than one place, the new text reports the change in words
  (domain/update_reported.py): with a change verb ("We raised the API timeout to 60 seconds" after "The API timeout
  is 30 seconds", "Marketing extended the free trial to 30 days" after "The free trial lasts 14 days"), or by
  saying the old holds no longer ("Ivy is not vegetarian anymore"), or names a new holder of a role of one
  (domain/update_holder.py: "Tom is my new boss" after "My boss is Dana"), or names the old value as the one left
  (domain/update_named.py: "Tom quit Acme and joined Horizon Freight" after "Tom works at Acme Logistics").
- never when the new text says it adds ("also", "too", "as well", "another").
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from domain.text import tokenize
from domain.update_holder import new_holder
from domain.update_named import named_left
from domain.update_reported import changed_to, negated
from domain.update_tokens import (
    COPULA,
    EDGE,
    MIN_SHARED_STEMS,
    SUBJECT_KINDS,
    TODAY,
    VALUE_KINDS,
    Token,
    Update,
    said,
    tokens,
    word_set,
)

# A word that says a value replaced another ("Omar commutes by bike instead"), when the old text does not hold it.
# Not "now" or "currently": they say what holds today, which may be an addition ("the app now supports offline
# mode" beside "dark mode"; measured on pairs written for this: docs/recall.md).
_CHANGE_CUES = word_set("instead")
# A text that says it adds is no update of any kind ("I work from home on Mondays too now" beside "on Fridays").
_ADDED = re.compile(r"\b(?:also|too|as\s+well|another|second|additional|more)\b", re.IGNORECASE)
# "Now" does cue a replacement where the value is where or how something is done, after a preposition of place or
# means ("Book club meets at the library now", "Omar commutes by bike these days"): one place, one means at a time,
# where an object may be one of many ("the app now supports offline mode").
_WHERE_OR_HOW = re.compile(r"\b(?:at|in|on|from|by|via|behind|beside|near|inside|outside|under)\s+"
                           r"(?:(?:the|a|an|my|our|his|her|their|its)\s+)?$", re.IGNORECASE)
# Stems of verbs (and nouns) that name a one-valued attribute: a changed name after them replaces the old one.
# ("called" and "named" only after a copula, which decides alone: "I called Mum" / "I called Dad" are two calls.)
_SINGLE_VALUED = frozenset(tokenize("live lives moved move relocated works work based located renamed"))
# Stems before a word value that make it one of a kind: a preference names one choice.
_ONE_CHOICE = frozenset(tokenize("prefers preferred prefer favourite favorite"))
_RESCHEDULE = frozenset(tokenize("moved move rescheduled postponed changed delayed set scheduled due"))
_PAST = re.compile(r"^(?:[a-z]+ed|went|met|saw|had|made|took|gave|came|ran|flew|bought|got|won|lost)$")


_ADJACENT = re.compile(r"[\s-]+")  # between the two words of one word value: nothing but a space or a hyphen
# Between a copula and its value: articles, a cue, a preposition of place ("is in the hallway"; not "is out of toner").
_COPULA_TO_VALUE = re.compile(r"\s+(?:(?:a|an|the|now|currently|at|in|on|inside|behind|beside|near|under)\s+)*",
                       re.IGNORECASE)

MAX_CHANGED_PLACES = 1
MAX_WORD_VALUE = 2  # words in a word value ("dark", "aisle seats")
MAX_PLACE = 8  # tokens one changed place may span, either side ("Tom Reyes" → "Ana Kim": 2)


def _values(ts: tuple[Token, ...]) -> bool:
    return bool(ts) and all(t.kind in VALUE_KINDS for t in ts)


def _word_value(ts: tuple[Token, ...], text: str | None = None) -> bool:
    """A word or two; of `text` when given, next to each other there (the old value: "aisle seats", not "tea in the
    morning", a value and when)."""
    return (0 < len(ts) <= MAX_WORD_VALUE and all(t.kind == "stem" for t in ts)
            and (text is None or all(_ADJACENT.fullmatch(text[x.start + len(x.raw):y.start])
                                     for x, y in zip(ts, ts[1:], strict=False))))


def _after_copula(place: _Place, old: str) -> bool:
    """Whether the old text states its word value right after a copula ("colour is blue", "is a vegan", "is in the
    hallway"), the attribute's value, not after a relation it goes on to ("is out of toner")."""
    copula = place.before[-1] if place.before else None
    return (copula is not None and copula.kind == "copula"
            and bool(_COPULA_TO_VALUE.fullmatch(old[copula.start + len(copula.raw):place.old[0].start])))


def _cued(new: str, old: str) -> bool:
    """Whether the new text says that something changed: a change cue the old text does not hold."""
    return bool(said(new) & _CHANGE_CUES - said(old))


def _moved_now(new: str, old: str, place: _Place) -> bool:
    """Whether the new text says that where or how something is done is another now (TODAY, _WHERE_OR_HOW)."""
    return (bool(TODAY.search(new)) and not TODAY.search(old)
            and bool(_WHERE_OR_HOW.search(old[:place.old[0].start])))


@dataclass(frozen=True)
class _Place:
    """Two texts alike but for one place: what the old says there, what the new says, and what they share."""

    shared: tuple[Token, ...]
    old: tuple[Token, ...]
    new: tuple[Token, ...]
    before: tuple[Token, ...]  # the old text before the place
    after: tuple[Token, ...]  # and after it


def _place(new: str, old: str) -> _Place | None:
    """`new` says what `old` says but for one place, where a value or a word or two is replaced by another (no
    copula in it), about a shared subject of at least two stems or names; None otherwise."""
    a, b = tokens(old), tokens(new)
    # Only what lies between the texts' common start and common end can differ: aligned alone, it is all a long
    # text's alignment costs (a 900-word message against its neighbour: ~5 ms whole), and when it is longer than any
    # one place can be, the texts differ in more than one place (or are not alike at all) and nothing is aligned.
    start = 0
    while start < min(len(a), len(b)) and a[start].text == b[start].text:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end].text == b[-1 - end].text:
        end += 1
    if max(len(a), len(b)) - start - end > MAX_PLACE:
        return None
    middle_a, middle_b = a[start:len(a) - end], b[start:len(b) - end]
    matcher = difflib.SequenceMatcher(a=[t.text for t in middle_a], b=[t.text for t in middle_b], autojunk=False)
    places = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(places) != MAX_CHANGED_PLACES or places[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = places[0]
    was, now = middle_a[i1:i2], middle_b[j1:j2]
    i1, i2 = start + i1, start + i2
    if not ((_values(was) and _values(now)) or (_word_value(was, old) and _word_value(now))):
        return None
    shared = a[:i1] + a[i2:]
    subject = {t.text for t in shared if t.kind in SUBJECT_KINDS}  # names and persons in it name the subject
    if len(subject) < MIN_SHARED_STEMS:
        return None
    return _Place(shared, was, now, a[:i1], a[i2:])


def replaced(new: str, old: str) -> tuple[str, ...]:
    """What `old` says in the one place where `new`, alike in every other word about a shared subject, says another
    value or word ("cats" for "Maria likes dogs" after "Maria likes cats"), update or not; () when they are not
    so alike. The novelty rule reads it (domain/novelty.py): such a write says something its neighbour does not."""
    place = _place(new, old)
    return tuple(t.said for t in place.old) if place else ()


def update_of(new: str, old: str) -> Update | None:
    """The evidence that `new` states a new value for what `old` says, or None (see the module's rule)."""
    found = _update_of(new, old)
    if found is not None and _ADDED.search(new) and not _ADDED.search(old):
        return None  # it says it adds: "I work from home on Mondays too now" beside "on Fridays"
    return found


def _update_of(new: str, old: str) -> Update | None:
    """update_of before its "adds" guard: alike in one place, else reported in other words."""
    place = _place(new, old)
    if place is None:
        return changed_to(new, old) or negated(new, old) or new_holder(new, old) or named_left(new, old)
    shared, was, now = place.shared, place.old, place.new
    stems = [t.text for t in shared if t.kind == "stem"]
    subject = [t.text for t in shared if t.kind in SUBJECT_KINDS]
    if {t.kind for t in was} != {t.kind for t in now}:
        return None
    if any(t.kind == "copula" for t in place.after):  # the subject changed, not the value
        return None
    changed = {t.kind for t in was}
    if "name" in changed and changed != {"name"}:  # a name and a value changed together: another thing's value
        return None
    before = {t.text for t in place.before}
    cued = _cued(new, old) or _moved_now(new, old, place)
    if changed == {"name"} and COPULA not in before and not before & _SINGLE_VALUED and not cued:
        return None
    if changed == {"stem"} and not (cued or before & (_SINGLE_VALUED | _ONE_CHOICE) or _after_copula(place, old)):
        return None  # a word after a relation ("allergic to", "likes"): both may hold
    if not {t.text for t in was} - {t.text for t in tokens(new)}:
        return None  # nothing the old text said is gone: an addition, not a replacement
    if COPULA not in {t.text for t in shared} and not set(stems) & (_RESCHEDULE | _SINGLE_VALUED) and any(
            _PAST.match(EDGE.sub("", t.raw).lower()) for t in shared if t.kind == "stem"):
        return None
    return Update(tuple(dict.fromkeys(subject)), tuple(t.said for t in was), tuple(t.said for t in now),
                  tuple(sorted(changed)))


__all__ = ["Token", "Update", "replaced", "tokens", "update_of"]
