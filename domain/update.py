"""Whether a new memory states a new value for what an older memory says (an update), pure and deterministic.

The governor supersedes the older memory with the newer when this says so (domain/governance.py rule 3b).
A false supersede hides a true fact, so the rule is conservative: the two texts must say the same thing word
for word but for their values, and differ in one place only ("ZQ-2811 ships on Friday" / "ZQ-2940 ships on
Monday" changes the subject too).

Each text becomes a sequence of tokens: a value (a token with a digit, kept whole: "7-3-20-0", "10:00",
"555-1234"; a month or weekday, "Tuesdays" too; a number word; a capitalised word inside a sentence, i.e. a
name), a copula ("is", "are", "was", "were", "=") or a content stem (domain/text.tokenize; stop words and "now",
"currently", "new", "updated", "instead" dropped). The two sequences are aligned (difflib); it is an update when

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
  a name change without a copula ("the team tracks bugs in Linear instead"). "Now" is no such cue: "the app now
  supports offline mode" adds to "dark mode".
- or the new text reports the change (`_changed_to`): a change verb, and "to" before the new value ("We raised the
  API timeout to 60 seconds" after "The API timeout is 30 seconds", "The standup was moved to Thursday", "reduced
  from 30 to 14 days"), where it restates every content word and name of the old text but its values (the same
  subject and attribute, at least two of them), one or two old values are gone (or said after "from") and as many
  of the same kinds came, a number followed by the same word (its unit) in both, and no word is put before one the
  old text names ("my skip-level manager changed to …" is another manager); a date after the new value ("… in
  June") says when, not what.
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
_DROPPED = _set("now currently nowadays new updated changed actually instead")
# A word that says a value replaced another ("Omar commutes by bike instead"), when the old text does not hold it.
# Not "now" or "currently": they say what holds today, which may be an addition ("the app now supports offline
# mode" beside "dark mode"; measured on pairs written for this: docs/recall.md).
_CHANGE_CUES = _set("instead")
# Stems of verbs (and nouns) that name a one-valued attribute: a changed name after them replaces the old one.
# ("called" and "named" only after a copula, which decides alone: "I called Mum" / "I called Dad" are two calls.)
_SINGLE_VALUED = frozenset(tokenize("live lives moved move relocated works work based located renamed"))
# Stems before a word value that make it one of a kind: a preference names one choice.
_ONE_CHOICE = frozenset(tokenize("prefers preferred prefer favourite favorite"))
_RESCHEDULE = frozenset(tokenize("moved move rescheduled postponed changed delayed set scheduled due"))
# Verbs that report a value's change ("we raised the timeout to 60 seconds"), as written.
_CHANGE_VERBS = _set("raised increased bumped lowered reduced cut changed moved relocated rescheduled postponed "
                     "switched extended shortened renamed updated replaced pushed set went")
_VALUE_KINDS = frozenset(("number", "date", "name"))
# Words before a date that say when a change happened ("moved to Seville in June", "relocated last March").
_WHEN = re.compile(r"\b(?:in|on|since|during|last|this)\s+(?:the\s+)?$", re.IGNORECASE)
_SUBJECT_KINDS = frozenset(("stem", "name", "person"))  # what the shared context's subject and attribute are made of
# Who a first-person text is about: the speaker ("I", "my") or the speaker's group ("we", "our"), a subject as a
# name is (stop words otherwise, so "I live in Lisbon" named no subject).
_FIRST_PERSON = {**dict.fromkeys(("i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"), "i"),
                 **dict.fromkeys(("we", "us", "our", "ours", "ourselves", "we're", "we've"), "we")}
# Where someone lives, and the verbs that report a move: "Kofi moved to Nairobi" changes where Kofi lives.
_RESIDENCE = frozenset(tokenize("live lives living based located reside resides"))
_MOVE = frozenset(tokenize("moved relocated"))
_PAST = re.compile(r"^(?:[a-z]+ed|went|met|saw|had|made|took|gave|came|ran|flew|bought|got|won|lost)$")

COPULA = "="
MIN_SHARED_STEMS = 2
MAX_CHANGED_PLACES = 1
MAX_WORD_VALUE = 2  # words in a word value ("dark", "aisle seats")
MAX_PLACE = 8  # tokens one changed place may span, either side ("Tom Reyes" → "Ana Kim": 2)


@dataclass(frozen=True)
class Token:
    text: str  # the normalised form aligned on (a value lower-cased, a stem, or "=")
    kind: str  # number | date | name | copula | person | stem
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
        word = _EDGE.sub("", raw)
        word = re.sub(r"['’]s$", "", word)
        ends_sentence = raw.endswith((".", "!", "?"))
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
            for part in _WORD.findall(low):
                out.extend(Token(stem, "stem", raw, at) for stem in tokenize(part))
        sentence_start = ends_sentence
    return tuple(out)


def _values(ts: tuple[Token, ...]) -> bool:
    return bool(ts) and all(t.kind in _VALUE_KINDS for t in ts)


def _word_value(ts: tuple[Token, ...]) -> bool:
    return 0 < len(ts) <= MAX_WORD_VALUE and all(t.kind == "stem" for t in ts)


def _said(text: str) -> frozenset[str]:
    """The text's words as written, lower-cased (what the cue and change-verb lists are matched against)."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def _cued(new: str, old: str) -> bool:
    """Whether the new text says that something changed: a change cue the old text does not hold."""
    return bool(_said(new) & _CHANGE_CUES - _said(old))


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
    if not ((_values(was) and _values(now)) or (_word_value(was) and _word_value(now))):
        return None
    shared = a[:i1] + a[i2:]
    subject = {t.text for t in shared if t.kind in _SUBJECT_KINDS}  # names and persons in it name the subject
    if len(subject) < MIN_SHARED_STEMS:
        return None
    return _Place(shared, was, now, a[:i1], a[i2:])


def replaced(new: str, old: str) -> tuple[str, ...]:
    """What `old` says in the one place where `new`, alike in every other word about a shared subject, says another
    value or word ("cats" for "Maria likes dogs" after "Maria likes cats"), update or not; () when they are not
    so alike. The novelty rule reads it (domain/novelty.py): such a write says something its neighbour does not."""
    place = _place(new, old)
    return tuple(t.said for t in place.old) if place else ()


def _unit(ts: tuple[Token, ...], at: int) -> str | None:
    """What follows a value: its unit, when it has one ("30 seconds")."""
    return ts[at + 1].text if at + 1 < len(ts) else None


def _moved_from(a: tuple[Token, ...], b: tuple[Token, ...]) -> frozenset[str]:
    """Where the old text says someone lives, when the new one says that same subject moved: the residence stems it
    restates ("I live in Lisbon" / "I moved to Berlin"; not "My sister moved to Berlin")."""
    lives = next((i for i, t in enumerate(a) if t.text in _RESIDENCE), None)
    moved = next((i for i, t in enumerate(b) if t.text in _MOVE), None)
    if lives is None or moved is None:
        return frozenset()
    old_subject = [t.text for t in a[:lives] if t.kind != "copula"]
    if old_subject != [t.text for t in b[:moved] if t.kind != "copula"]:
        return frozenset()
    return frozenset(t.text for t in a if t.text in _RESIDENCE)


def _undated(came: list[int], b: tuple[Token, ...], new: str) -> list[int]:
    """The new values but the date a change is said to have happened, after the first ("moved to Seville in June",
    "raised to 60 seconds on May 3"): a date or year after "in", "on", "since", "last" ..., and the values that
    follow it. That date says when, not what: it replaces no value of the old text."""
    kept: list[int] = []
    dating = False
    for j in came:
        if kept and b[j].kind in ("date", "number"):
            dating = bool(_WHEN.search(new[:b[j].start])) or (dating and j - 1 in came)
            if dating:
                continue
        dating = False
        kept.append(j)
    return kept


def _changed_to(new: str, old: str) -> Update | None:
    """`new` reports with a change verb that what `old` states has a new value (see the module's rule)."""
    if not _said(new) & _CHANGE_VERBS:
        return None
    a, b = tokens(old), tokens(new)
    a_texts, b_texts = {t.text for t in a}, {t.text for t in b}
    gone = [i for i, t in enumerate(a) if t.kind in _VALUE_KINDS
            and (t.text not in b_texts or re.search(rf"\bfrom\s+{re.escape(t.said)}", new, re.I))]
    came = _undated([j for j, t in enumerate(b) if t.kind in _VALUE_KINDS and t.text not in a_texts], b, new)
    kinds = {a[i].kind for i in gone}
    if not gone or len(gone) != len(came) or len(gone) > 2 or kinds != {b[j].kind for j in came}:
        return None
    restated = {t.text for i, t in enumerate(a) if t.kind in _SUBJECT_KINDS and i not in gone}
    if len(restated) < MIN_SHARED_STEMS or not restated <= b_texts | _moved_from(a, b):
        return None  # another subject or attribute, or one the new text does not name
    if not re.search(rf"\bto\s+{re.escape(b[came[0]].said)}", new, re.I):
        return None  # the change is not to the new value ("moved the retro to Friday, the standup stays at 9")
    if any(b[j].kind == "stem" and b[j].text not in a_texts and b[j].raw.lower() not in _CHANGE_VERBS
           and b[j + 1].text in restated for j in range(len(b) - 1)):
        return None  # a word put before what the old text names makes it another thing: "skip-level manager"
    if any(a[i].kind == "number" and _unit(a, i) is not None and _unit(a, i) != _unit(b, j)
           for i, j in zip(gone, came, strict=True)):
        return None  # another unit: "30 seconds" is not "200 requests"
    return Update(tuple(sorted(restated)), tuple(a[i].said for i in gone), tuple(b[j].said for j in came),
                  tuple(sorted(kinds)))


def update_of(new: str, old: str) -> Update | None:
    """The evidence that `new` states a new value for what `old` says, or None (see the module's rule)."""
    place = _place(new, old)
    if place is None:
        return _changed_to(new, old)
    shared, was, now = place.shared, place.old, place.new
    stems = [t.text for t in shared if t.kind == "stem"]
    subject = [t.text for t in shared if t.kind in _SUBJECT_KINDS]
    if {t.kind for t in was} != {t.kind for t in now}:
        return None
    if any(t.kind == "copula" for t in place.after):  # the subject changed, not the value
        return None
    changed = {t.kind for t in was}
    if "name" in changed and changed != {"name"}:  # a name and a value changed together: another thing's value
        return None
    before = {t.text for t in place.before}
    cued = _cued(new, old)
    if changed == {"name"} and COPULA not in before and not before & _SINGLE_VALUED and not cued:
        return None
    if changed == {"stem"} and not (cued or before & (_SINGLE_VALUED | _ONE_CHOICE)
                                    or (place.before and place.before[-1].kind == "copula")):
        return None  # a word after a relation ("allergic to", "likes"): both may hold
    if not {t.text for t in was} - {t.text for t in tokens(new)}:
        return None  # nothing the old text said is gone: an addition, not a replacement
    if COPULA not in {t.text for t in shared} and not set(stems) & (_RESCHEDULE | _SINGLE_VALUED) and any(
            _PAST.match(_EDGE.sub("", t.raw).lower()) for t in shared if t.kind == "stem"):
        return None
    return Update(tuple(dict.fromkeys(subject)), tuple(t.said for t in was), tuple(t.said for t in now),
                  tuple(sorted(changed)))


__all__ = ["Token", "Update", "replaced", "tokens", "update_of"]
