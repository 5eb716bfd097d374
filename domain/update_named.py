"""The old value named as the one replaced, for the update rule (domain/update.py): "Tom quit Acme and joined
Horizon Freight" after "Tom works at Acme Logistics", "We replaced Cisco AnyConnect with Tailscale for VPN access"
after "VPN access is provided by Cisco AnyConnect", "Sofia Ng replaced Martin Cole as CEO of Brightpath" after "The
CEO of Brightpath is Martin Cole". Pure and deterministic.

The new text names a value of the old one where a value is left (`_LEFT`: after "from … to", "replaced … with",
"left", "quit", "instead of"; `_LEFT_PASSIVE`: before "was replaced by"), and brings as many values of the same
kinds; every other value of the old text is said again (a memory of two values is not replaced by a change of
one: "tracks bugs in Jira and docs in Confluence"), and so is every other word of it but one that names no
attribute (its verb: "works" in "Tom works at Acme"): a recall asking by those words finds the newer ("Our team uses
Jira for tickets" is not replaced by "The team has switched from Jira to Linear", which a recall for "tickets" would
not find). The old text's subject (its first word, or the word after "my" / "our") is said again, not as the
owner of a thing or person the old text does not name ("Priya's husband left Deloitte for KPMG" is not Priya), and
no word is put before one the old text says ("the design team switched from Jira …" is another team).
Said in the other words ("retired", "stepped down", "took over") it is not read: those need a model of the sentence.
"""

from __future__ import annotations

import re

from domain.update_reported import another_thing, runs, undated
from domain.update_tokens import SUBJECT_KINDS, VALUE_KINDS, Token, Update, possessive, tokens

# Where the new text names what was left: the groups hold the old value's words.
_LEFT = re.compile(
    r"\bfrom\s+(?P<a>.+?)\s+(?:to|with|for|into|onto)\b"
    r"|\breplac(?:ed|es|ing)\s+(?!by\b)(?P<b>.+?)(?=\s+(?:with|as|by|for)\b|[.,;:!?]|$)"
    r"|\b(?:left|quit|ditched|dropped)\s+(?P<c>.+?)(?=\s+(?:and|for|to)\b|[.,;:!?]|$)"
    r"|\binstead\s+of\s+(?P<d>.+?)(?=[.,;:!?]|$)",
    re.IGNORECASE)
# "… was replaced by": the words before it (tried only where the text says it; the pattern starts at every word)
_LEFT_PASSIVE = re.compile(r"((?:\S+\s+){0,3}\S+)\s+(?:was|were|has\s+been|got)\s+replaced\s+by\b",
                           re.IGNORECASE)
# The words _LEFT needs, looked for first: the pattern is tried at every word of a long text otherwise.
_LEFT_WORDS = re.compile(r"\b(?:from|replac(?:ed|es|ing)|left|quit|ditched|dropped|instead)\b", re.IGNORECASE)


def _named_as_left(new: str) -> frozenset[str]:
    """The values the new text names where a value is left."""
    spans = [s for m in _LEFT.finditer(new) for s in m.groups() if s]
    if "replaced by" in new.lower():
        spans += [m.group(1) for m in _LEFT_PASSIVE.finditer(new)]
    # each read inside a sentence ("x " first): a name at a span's start is still a name
    return frozenset(t.text for s in spans for t in tokens("x " + s) if t.kind in VALUE_KINDS)


def _subject(a: tuple[Token, ...]) -> Token | None:
    """The old text's subject: its first word, or the one after a possessive ("Our team uses Jira" → team)."""
    words = [t for t in a if t.kind in SUBJECT_KINDS or t.kind in VALUE_KINDS]
    if not words:
        return None
    if words[0].kind == "person" and possessive(words[0]) and len(words) > 1:
        return words[1]
    return words[0]


def named_left(new: str, old: str) -> Update | None:
    """`new` names a value of `old` as the one replaced, and brings its replacement (see the module's rule)."""
    named = _named_as_left(new) if _LEFT_WORDS.search(new) else frozenset()
    if not named:
        return None
    a, b = tokens(old), tokens(new)
    a_texts, b_texts = {t.text for t in a}, {t.text for t in b}
    values = runs([i for i, t in enumerate(a) if t.kind in VALUE_KINDS])
    left = [r for r in values if any(a[i].text in named for i in r)]
    if not left or any(not all(a[i].text in b_texts for i in r) for r in values if r not in left):
        return None  # nothing named as left, or another value of the old text not said again
    came = undated([j for j, t in enumerate(b) if t.kind in VALUE_KINDS and t.text not in a_texts | named], b, new)
    gone = [i for r in left for i in r]
    if not came or len(runs(came)) != len(left) or {a[i].kind for i in gone} != {b[j].kind for j in came}:
        return None
    subject = _subject(a)
    if subject is None or subject.text not in b_texts or any(i == a.index(subject) for i in gone):
        return None
    if any(t.text == subject.text and possessive(t) and j + 1 < len(b) and b[j + 1].text not in a_texts
           for j, t in enumerate(b)):
        return None  # the subject's own thing or person: "Priya's husband left Deloitte", "My sister moved from …"
    restated = {t.text for t in a if t.kind in SUBJECT_KINDS and t.text in b_texts} - {a[i].text for i in gone}
    missing = [i for i, t in enumerate(a) if t.kind in SUBJECT_KINDS and i not in gone and t.text not in b_texts]
    if len(missing) > 1 or any(i + 1 < len(a) and a[i + 1].kind == "copula" for i in missing):
        return None  # the newer must say what the older said but its value, or recall asking for it finds neither
    if another_thing(b, restated, a_texts):
        return None  # "the design team switched from Jira …"
    return Update(tuple(sorted(restated)), tuple(a[i].said for i in gone), tuple(b[j].said for j in came),
                  tuple(sorted({a[i].kind for i in gone})))


__all__ = ["named_left"]
