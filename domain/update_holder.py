"""A new holder of a role, for the update rule (domain/update.py): "Marcus Lee is now the engineering manager for
the payments team" after "Priya Shah is the engineering manager for the payments team", "Tom is my new boss" after
"My boss is Dana". Pure and deterministic.

Both texts say, with one copula, that a name holds a role, either way round ("Our point of contact at Umbrella Corp
is now Kevin Walsh" after "Laura Chen is our point of contact at Umbrella Corp"); the role is the same words in
both (two at least) and one of a kind: "the" before it, or a possessive ("my", "our", "Acme's") before a role that
is not one of many (a friend, a colleague, a sister may be many: `_MANY`); the holders share no name; and the new
text says what holds now ("now", "new", "currently", "these days", absent from the old). "Bob is now a manager at
Acme" (one of many) or "Jim is my new friend" is no update.
"""

from __future__ import annotations

import re

from domain.text import tokenize
from domain.update_tokens import TITLES, TODAY, Token, Update, possessive, tokens

# Roles a person holds many of: after a possessive they name one of several ("my friend", "our client").
_MANY = frozenset(tokenize(
    "friend friends colleague coworker co-worker neighbour neighbor cousin client customer teammate classmate "
    "roommate student child kid son daughter brother sister sibling aunt uncle nephew niece grandchild grandson "
    "granddaughter employee engineer developer member volunteer patient pet dog cat fan follower mentee intern "
    "report guest user partner supplier vendor investor"))
_NEW = re.compile(r"\bnew\b", re.IGNORECASE)
_THE = re.compile(r"\bthe\s+$", re.IGNORECASE)
MIN_ROLE = 2  # words of a role ("engineering manager", "my boss")
MAX_NAME = 3  # words of a holder's name ("Dr. Ana Kim")


def _a_name(side: tuple[Token, ...]) -> bool:
    """Whether one side of the copula is a name alone (its first word may open the text, where no name is read)."""
    return (0 < len(side) <= MAX_NAME and all(t.kind == "name" or (i == 0 and t.start == 0 and t.raw[:1].isupper())
                                              for i, t in enumerate(side)))


def _one_of_a_kind(role: tuple[Token, ...], text: str) -> bool:
    """Whether the role is one of a kind: "the" before it, or a possessive before a role not one of many."""
    if _THE.search(text[:role[0].start]):
        return True
    return possessive(role[0]) and not {t.text for t in role} & _MANY


def _holder(text: str) -> tuple[frozenset[str], tuple[str, ...]] | None:
    """(the holder's name, the role's words) when `text` says with one copula that a name holds a role of one of a
    kind; None otherwise."""
    ts = tokens(text)
    copulas = [i for i, t in enumerate(ts) if t.kind == "copula"]
    if len(copulas) != 1:
        return None
    left, right = ts[:copulas[0]], ts[copulas[0] + 1:]
    for name, role in ((left, right), (right, left)):
        if (_a_name(name) and len(role) >= MIN_ROLE and all(t.kind in ("stem", "person", "name") for t in role)
                and _one_of_a_kind(role, text)):
            return frozenset(t.text for t in name if t.raw.lower() not in TITLES), tuple(t.text for t in role)
    return None


def new_holder(new: str, old: str) -> Update | None:
    """`new` names another holder of the one role `old` names a holder of (see the module's rule)."""
    said_now = bool(TODAY.search(new) or _NEW.search(new))
    if not said_now or TODAY.search(old) or _NEW.search(old):
        return None
    was, now = _holder(old), _holder(new)
    if was is None or now is None or was[1] != now[1] or was[0] & now[0]:
        return None
    return Update(tuple(dict.fromkeys(was[1])), tuple(sorted(was[0])), tuple(sorted(now[0])), ("name",))


__all__ = ["new_holder"]
