"""Named entities and pronouns, by a documented surface rule (pure functions; no NER model).

Rule. An entity is a run of capitalised words (first letter upper-case, e.g. "Caroline", "New York") that
- is not at the start of a sentence, unless it is immediately followed by ":" (a speaker prefix such as
  "Caroline: ...") or by a possessive ("Caroline's ...") — a sentence-initial capital is usually grammar;
  over a collection of texts (coreference's recent memories) a sentence-initial word also counts when at
  least two texts start a sentence with it and none writes it in lower case ("Caroline adopted ...",
  "Caroline said ...", never "caroline");
- is not a common word: stop-words, question words and auxiliaries, "I", pronouns, month and weekday names
  (dates are not who or what a question is about).
Possessives are stripped ("Melanie's" -> "Melanie"). A text mentions an entity when every word of the entity
appears in it as a word, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from domain.memo import per_text
from domain.text import STOPWORDS, tokenize

# Pronoun -> the form the resolved entity takes in its place ("{}" is the entity).
PRONOUNS: dict[str, str] = {
    "he": "{}", "she": "{}", "they": "{}", "it": "{}", "him": "{}", "them": "{}",
    "his": "{}'s", "her": "{}'s", "hers": "{}'s", "their": "{}'s", "theirs": "{}'s", "its": "{}'s",
    "himself": "{}", "herself": "{}", "themselves": "{}", "itself": "{}",
}
_COMMON = """
i im i'm ive i've id i'd ill i'll would could might may must shall tell give list name describe explain please
also yes no ok okay hi hello hey thanks thank wow oh well so yeah sure great nice cool good
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow
"""
_NOT_ENTITIES = STOPWORDS | frozenset(_COMMON.split()) | frozenset(PRONOUNS)

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)


# Bounds: a run of capitalised words longer than this is not a name (a heading, shouting), and a bounded entity
# fits every index it is stored in.
MAX_ENTITY_WORDS = 6
MAX_ENTITY_CHARS = 100
_QUOTES = "\"'“‘("


def _strip_possessive(word: str) -> str:
    if word.endswith(("'s", "’s", "'S", "’S")):
        return word[:-2]
    return word[:-1] if word.endswith(("'", "’")) else word


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper()


def _ends_sentence(gap: str) -> bool:
    r"""Whether the text between two words ends a sentence: [.!?] or a newline, then spaces, then opening quotes
    or brackets (the same as matching `[.!?\n]\s*["'“‘(]*$`, read from the end, so linear in the gap)."""
    unquoted = gap.rstrip(_QUOTES)
    bare = unquoted.rstrip()
    return "\n" in unquoted[len(bare):] or bare[-1:] in (".", "!", "?")


def _starts_sentence(gap: str, first: bool) -> bool:
    """Whether a word starts a sentence, from the text between it and the previous word (`first`: no previous
    word, the gap is the text before it): the text's start, or after a sentence end."""
    return (first and not gap.strip()) or _ends_sentence(gap)




def entities(text: str, names: set[str] | None = None) -> list[str]:
    """Entities in `text`, in order of first appearance, without repeats (see the module's rule). A
    sentence-initial capitalised word in `names` (known names, lower-cased) counts too. Linear in the text: each
    word is looked at once, with the text between it and the previous word."""
    found: dict[str, None] = {}
    run: list[str] = []
    run_chars = 0

    def close() -> None:
        nonlocal run_chars
        if run and len(run) <= MAX_ENTITY_WORDS and run_chars + len(run) - 1 <= MAX_ENTITY_CHARS:
            found.setdefault(" ".join(run))
        run.clear()
        run_chars = 0

    previous_end = -1  # end of the previous word; -1 before the first
    for match in _WORD.finditer(text):
        word = match.group()
        bare = _strip_possessive(word)
        if run and text[previous_end:match.start()] != " ":  # words of one entity: one space apart
            close()
        before = previous_end
        previous_end = match.end()
        if not bare or not _is_capitalised(bare) or bare.lower() in _NOT_ENTITIES:
            close()
            continue
        after = text[match.end():match.end() + 1]
        possessive = bare != word
        # Whether it starts a sentence, looked at only for a word it decides (most words are not capitalised).
        if not run and not (after == ":" or possessive) and bare.lower() not in (names or ()) \
                and _starts_sentence(text[max(before, 0):match.start()], before < 0):
            continue
        if len(run) <= MAX_ENTITY_WORDS:  # a longer run is dropped when it ends: hold no more than that
            run.append(bare)
            run_chars += len(bare)
        if possessive:
            close()
    close()
    return list(found)


_SPEAKER = re.compile(r"\s*([^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,3})\s*:\s", re.UNICODE)


def speaker(text: str) -> str | None:
    """The speaker of an utterance-style memory ("Caroline: I went ..."): a capitalised name before a colon at
    the start; None for any other text."""
    match = _SPEAKER.match(text)
    if not match or not all(_is_capitalised(w) for w in match.group(1).split()):
        return None
    return match.group(1)


def utterance_body(text: str) -> str:
    """What an utterance says, without its speaker prefix; any other text whole."""
    return text[len(match.group(0)):] if speaker(text) and (match := _SPEAKER.match(text)) else text


# Grammatical person: whom an utterance is about. "I loved the race" is about its speaker; "your race sounded
# great, how did you feel?" is about the one spoken to, though the speaker said it.
FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves",
                          "i'm", "i've", "i'd", "i'll", "im", "ive"])
SECOND_PERSON = frozenset(["you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'd",
                           "you'll", "youre"])


@per_text()  # recall asks it of the same memories on every query; it reads the whole text
def addresses_other(utterance: str) -> bool:
    """Whether an utterance speaks more in the second person than in the first: its subject is the one it
    addresses, not its speaker."""
    tokens = [w.lower().replace("’", "'") for w in _WORD.findall(utterance_body(utterance))]
    first = sum(t in FIRST_PERSON for t in tokens)
    second = sum(t in SECOND_PERSON for t in tokens)
    return second > first


_SENTENCE = re.compile(r"[^.!?]*[.!?]+|[^.!?]+$")


def statements(text: str) -> str:
    """The text without its questions (and an utterance without its speaker prefix): what it asserts. A
    question does not answer a question: "How did they handle the accident?" shares the query's words and
    says nothing about the accident."""
    return " ".join(s.strip() for s in _SENTENCE.findall(utterance_body(text)) if not s.strip().endswith("?"))


def question_share(text: str) -> float:
    """How much of a text asks rather than says: the share of its terms (an utterance's body's) that are in its
    questions. 0 for a text that only asserts, 1 for one that only asks; the composite ranks a question below
    an answer (recall/funnel/composite.py), as statements() leaves it out of the abstention gate's reading."""
    return _asked_share(text) if "?" in text else 0.0  # most memories ask nothing: not even a digest for them


@per_text()  # the composite asks it of every candidate, query after query
def _asked_share(text: str) -> float:
    said = len(tokenize(utterance_body(text)))
    return 1 - len(tokenize(statements(text))) / said if said else 0.0


def holds(text: str, text_words: AbstractSet[str], entity: str, speakers: Iterable[str] | None = None) -> bool:
    """Whether a memory is about `entity`. An utterance ("Caroline: ...") is about its speaker, unless it speaks
    mostly in the second person: then it is about the one addressed, who is not the speaker (a vocative name
    may be absent, and in a group it may be anyone else). Any other text is about every entity it mentions.

    With `speakers` (the speakers of the memories at hand), the utterance rule applies only to an entity that
    is one of them: a pet or a place that never speaks is what an utterance is about when it mentions it."""
    who = speaker(text)
    if who is not None and (speakers is None or any(names_person(entity, s) for s in speakers)):
        return names_person(entity, who) != addresses_other(text)
    return mentions(text_words, entity)


def speakers_of(texts: Iterable[str]) -> set[str]:
    return {who for text in texts if (who := speaker(text)) is not None}


def names_person(entity: str, name: str) -> bool:
    """Whether `entity` names the person called `name`: the same name, or a short form of it of three letters
    or more ("Mel" for "Melanie", "Sam" for "Samantha")."""
    entity, name = entity.lower(), name.lower()
    return entity == name or (len(entity) >= 3 and " " not in entity and name.split()[0].startswith(entity))


@per_text()  # recall asks it of the same memories on every query; it reads the whole text
def words(text: str) -> frozenset[str]:
    """The lower-cased words of a text, possessives stripped (what `mentions` matches against)."""
    return frozenset(map(str.lower, map(_strip_possessive, set(_WORD.findall(text)))))  # each distinct word once


def mentions(text_words: AbstractSet[str], entity: str) -> bool:
    return all(part.lower() in text_words for part in entity.split())


def pronouns(query: str) -> list[str]:
    """The pronouns of `query`, lower-cased, in order (repeats kept)."""
    return [w.lower() for w in _WORD.findall(query) if w.lower() in PRONOUNS]


def replace_pronouns(query: str, entity: str, which: set[str] | None = None) -> str:
    """`query` with each pronoun (of `which`, when given) replaced by `entity` (possessives by "<entity>'s")."""

    def sub(match: re.Match[str]) -> str:
        word = match.group().lower()
        form = PRONOUNS.get(word)
        return form.format(entity) if form and (which is None or word in which) else match.group()

    return _WORD.sub(sub, query)


def _capitalised_sentence_initial(text: str) -> list[str]:
    """The capitalised words of `text` that start a sentence, possessives stripped (only a capitalised word's
    gap to the previous word is looked at)."""
    out: list[str] = []
    previous_end = -1
    for match in _WORD.finditer(text):
        word = match.group()
        if _is_capitalised(word) and _starts_sentence(text[max(previous_end, 0):match.start()], previous_end < 0):
            out.append(_strip_possessive(word))
        previous_end = match.end()
    return out


def most_salient(texts: Iterable[str]) -> str | None:
    """The entity named most often across `texts` (most recent first); ties go to the most recent mention.
    A sentence-initial capitalised word counts as a name when at least two of the texts start a sentence with
    it and none writes it in lower case ("Caroline adopted ...", "Caroline said ..."; never "caroline")."""
    texts = list(texts)
    lower = {_strip_possessive(w) for text in texts for w in _WORD.findall(text) if w[:1].islower()}
    initial: dict[str, int] = {}
    for text in texts:
        for word in set(_capitalised_sentence_initial(text)):
            if word.lower() not in _NOT_ENTITIES and word.lower() not in lower:
                initial[word.lower()] = initial.get(word.lower(), 0) + 1
    names = {w for w, n in initial.items() if n >= 2}
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for i, text in enumerate(texts):
        for entity in entities(text, names):
            counts[entity] = counts.get(entity, 0) + 1
            first_seen.setdefault(entity, i)
    if not counts:
        return None
    return min(counts, key=lambda e: (-counts[e], first_seen[e], e))


PERSONAL = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})


def resolvable(query: str) -> set[str]:
    """The query's pronouns that may point outside it. Personal ones (he, she, her, ...) always may; "it" and
    "they" (and their forms) only when no content word precedes them — "knead the dough and let it proof"
    or "bake the cookies until they brown" name what the pronoun means themselves."""
    out: set[str] = set()
    content_before = False
    for match in _WORD.finditer(query):
        word = match.group().lower()
        if word in PRONOUNS:
            if word in PERSONAL or not content_before:
                out.add(word)
        elif word not in _NOT_ENTITIES:
            content_before = True
    return out
