"""A change reported in words, for the update rule (domain/update.py): "We raised the API timeout to 60 seconds"
after "The API timeout is 30 seconds", or "Ivy is not vegetarian anymore" after "Ivy is vegetarian". Pure and
deterministic.

`changed_to`: a change verb, and "to" before the new value (or "with" after "replaced"; up to three words between
that the old text says: "rescheduled to depart at 9:40", "moved to room 6A"). The new text restates every content
word and name of the old text but its values (the same subject and attribute, at least two of them); the verb that
tied the old value to its subject may give way to the change verb ("The free trial lasts 14 days" / "Marketing
extended the free trial to 30 days"), when nothing new is said between the subject and the new value and that
verb did not name an attribute (a word before a copula does: "Bob's phone is …"). One or two old values (a value
of several words, "Tom Reyes", is one) are gone, or said after "from", and as many of the same kinds came; a number
followed by a unit is followed by the same unit in both; no word is put before one the old text names ("my
skip-level manager changed to …" is another manager); a date after the new value ("… in June") says when, not
what. A word value is reported the same way when the old text ends on it after a copula and the new ends on its
own after "to" ("The default branch is master" / "We renamed the default branch to main").

`negated`: the new text says the old one in the same words with a negation and "anymore" or "no longer".
"""

from __future__ import annotations

import re

from domain.text import tokenize
from domain.update_tokens import (
    MIN_SHARED_STEMS,
    SUBJECT_KINDS,
    VALUE_KINDS,
    Token,
    Update,
    said,
    tokens,
    word_set,
)

# Verbs that report a value's change ("we raised the timeout to 60 seconds"), as written.
_CHANGE_VERBS = word_set("raised increased bumped lowered reduced cut changed moved relocated rescheduled postponed "
                     "switched extended shortened renamed updated replaced pushed set went upgraded downgraded "
                     "migrated transferred scaled swapped decreased dropped doubled halved adjusted revised "
                     "reassigned")
_AUXILIARIES = word_set("got get gets getting been")  # a passive's auxiliary, as a copula: "got postponed to July"
_REPLACED_WITH = word_set("replaced swapped")  # "… replaced the door code with 9052": "with" leads in the new value
_LEAD_IN = re.compile(r"\b(to|with)\b((?:\W+[\w'’.:-]+){0,3}?)\W*$", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+(.+?)\s+(?:to|with)\b", re.IGNORECASE)
_CLOCK = word_set("am pm")  # after a time, not a unit: "11 am" and "1 pm" are the same kind of value
# A statement that the old text holds no longer: a negation, and "anymore" or "no longer" ("Leila doesn't eat
# meat anymore"); the stems they leave in a text's tokens.
_NEGATION = re.compile(r"\b(?:not|never|no\s+longer)\b|n['’]t\b", re.IGNORECASE)
_NO_MORE = re.compile(r"\b(?:anymore|any\s+more|no\s+longer)\b", re.IGNORECASE)
_NEGATION_STEMS = frozenset(tokenize("anymore longer never")) | word_set("doesn isn aren wasn weren don didn t")
# Words before a date that say when a change happened ("moved to Seville in June", "relocated last March").
_WHEN = re.compile(r"\b(?:in|on|since|during|last|this)\s+(?:the\s+)?$", re.IGNORECASE)
# Where someone lives, and the verbs that report a move: "Kofi moved to Nairobi" changes where Kofi lives.
_RESIDENCE = frozenset(tokenize("live lives living based located reside resides"))
_MOVE = frozenset(tokenize("moved relocated"))


def _unit(ts: tuple[Token, ...], at: int) -> str | None:
    """What follows a value: its unit, when it has one ("30 seconds"; a date or a clock's "pm" is none)."""
    nxt = ts[at + 1] if at + 1 < len(ts) else None
    return nxt.text if nxt is not None and nxt.kind == "stem" and nxt.text not in _CLOCK else None


def runs(at: list[int]) -> list[list[int]]:
    """Token indexes grouped where they follow one another: "Tom Reyes" or "Epson EX5" is one value."""
    runs: list[list[int]] = []
    for i in at:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


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


def undated(came: list[int], b: tuple[Token, ...], new: str) -> list[int]:
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


def _from_values(new: str) -> frozenset[str]:
    """The values the new text says it changed from: "changed from Tom Reyes to Ana Kim" → {tom, reyes}."""
    m = _FROM.search(new)
    # read inside its sentence, as written there: "Tom" at a sentence's start would be no name
    return frozenset(t.text for t in tokens(m.group(0)) if t.kind in VALUE_KINDS) if m else frozenset()


def _led_in(new: str, value: Token, a_texts: set[str]) -> bool:
    """Whether "to" comes before the new value (or "with" after "replaced"), with at most three words between, each
    a stop word or one the old text says: "rescheduled to depart at 9:40", "moved to room 6A", "to June 9"."""
    m = _LEAD_IN.search(new[:value.start])
    if m is None or (m.group(1).lower() == "with" and not said(new) & _REPLACED_WITH):
        return False
    return all({t.text for t in tokens(w)} <= a_texts for w in m.group(2).split())


def _only_restated(b: tuple[Token, ...], until: int, restated: set[str], a_texts: set[str]) -> bool:
    """Whether every word the new text says from the subject it restates to its new value (token index `until`) is
    one the old text says, a copula or a change verb: "Marketing extended the free trial to 30 days", not "… was
    rescheduled to land at 9:40" or "The batch job's timeout was extended to 4 hours" (another attribute)."""
    first = next((i for i, t in enumerate(b) if t.text in restated), until)
    return all(t.text in a_texts or t.kind == "copula" or t.raw.lower() in _CHANGE_VERBS | _AUXILIARIES
               for t in b[first:until])


def _word_values(a: tuple[Token, ...], b: tuple[Token, ...], new: str) -> tuple[list[int], list[int]]:
    """A word value the old text ends on after a copula, and the one the new ends on after "to" ("The default branch
    is master" / "We renamed the default branch to main"): their indexes, or nothing."""
    if len(a) < 3 or len(b) < 2 or a[-2].kind != "copula" or a[-1].kind != "stem" or b[-1].kind != "stem":
        return [], []
    if a[-1].text in {t.text for t in b} or b[-1].text in {t.text for t in a}:
        return [], []
    if not re.search(rf"\bto\s+{re.escape(b[-1].said)}\W*$", new, re.I):
        return [], []
    return [len(a) - 1], [len(b) - 1]


def another_thing(b: tuple[Token, ...], restated: set[str], a_texts: set[str]) -> bool:
    """Whether the new text puts a word the old one does not say (a change verb aside) before one it restates: a
    word put before what the old text names makes it another thing ("my skip-level manager", "the design team")."""
    return any(b[j].kind == "stem" and b[j].text not in a_texts and b[j].raw.lower() not in _CHANGE_VERBS
               and b[j + 1].text in restated for j in range(len(b) - 1))


def changed_to(new: str, old: str) -> Update | None:
    """`new` reports with a change verb that what `old` states has a new value (see the module's rule)."""
    if not said(new) & _CHANGE_VERBS:
        return None
    a, b = tokens(old), tokens(new)
    a_texts, b_texts = {t.text for t in a}, {t.text for t in b}
    was = _from_values(new)
    gone = [i for i, t in enumerate(a) if t.kind in VALUE_KINDS and (t.text not in b_texts or t.text in was)]
    came = undated([j for j, t in enumerate(b) if t.kind in VALUE_KINDS and t.text not in a_texts], b, new)
    if not gone and not came:
        gone, came = _word_values(a, b, new)
    kinds = {a[i].kind for i in gone}
    old_runs, new_runs = runs(gone), runs(came)
    if not gone or len(old_runs) != len(new_runs) or len(old_runs) > 2 or kinds != {b[j].kind for j in came}:
        return None
    restated = {t.text for i, t in enumerate(a) if t.kind in SUBJECT_KINDS and i not in gone}
    missing = restated - b_texts - _moved_from(a, b)
    if missing:
        # The verb that tied the old value to its subject may give way to the change verb ("The free trial lasts
        # 14 days" / "Marketing extended the free trial to 30 days"): one word, before the old value and not
        # before a copula (an attribute's name is: "Bob's phone is …"), every other word of the old restated,
        # and nothing new said between the change verb and the new value.
        at = next(i for i, t in enumerate(a) if t.text in missing)
        restated -= missing
        if (len(missing) > 1 or a[at].kind != "stem" or at > gone[0] or a[at + 1].kind == "copula"
                or not _only_restated(b, came[0], restated, a_texts)):
            return None
    if len(restated) < MIN_SHARED_STEMS:
        return None  # another subject or attribute, or one the new text does not name
    if not _led_in(new, b[came[0]], a_texts):
        return None  # the change is not to the new value ("moved the retro to Friday, the standup stays at 9")
    if kinds == {"stem"} and not _only_restated(b, came[0], restated, a_texts):
        return None  # a word value: "We changed the office dog's food to kibble" is not the dog
    if another_thing(b, restated, a_texts):
        return None  # "my skip-level manager changed to …" is another manager
    if any(a[r[-1]].kind == "number" and _unit(a, r[-1]) is not None and _unit(a, r[-1]) != _unit(b, q[-1])
           for r, q in zip(old_runs, new_runs, strict=True)):
        return None  # another unit: "30 seconds" is not "200 requests"
    return Update(tuple(sorted(restated)), tuple(a[i].said for i in gone), tuple(b[j].said for j in came),
                  tuple(sorted(kinds)))


def negated(new: str, old: str) -> Update | None:
    """`new` says that what `old` says holds no longer, in the same words ("Ivy is vegetarian" / "Ivy is not
    vegetarian anymore", "Leila doesn't eat meat anymore"): the older is no longer true."""
    if not (_NEGATION.search(new) and _NO_MORE.search(new)) or _NEGATION.search(old) or _NO_MORE.search(old):
        return None
    a = tokens(old)
    b = tuple(t for t in tokens(new) if t.text not in _NEGATION_STEMS)
    subject = [t.text for t in a if t.kind in SUBJECT_KINDS]
    said = [t.text for t in a if t.kind != "copula"]  # "isn't" holds its copula
    if said != [t.text for t in b if t.kind != "copula"] or len(set(subject)) < MIN_SHARED_STEMS:
        return None
    return Update(tuple(dict.fromkeys(subject)), (old.strip(),), (new.strip(),), ("negation",))


__all__ = ["another_thing", "changed_to", "negated", "runs", "undated"]
