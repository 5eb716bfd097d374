"""The one tokenizer, used when indexing and when querying.

English words are lower-cased, stop-worded and Snowball-stemmed; runs of CJK characters (Chinese,
Japanese kana, Korean) are split into overlapping character bigrams, because those scripts do not
separate words with spaces.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from functools import lru_cache

import Stemmer

_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being below
between both but by can did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with you your
yours yourself yourselves s t don d ll m o re ve y
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
MAX_TOKEN_CHARS = 64


def has_nul(value: object) -> bool:
    """True when a string anywhere in `value` (keys included) holds NUL, which PostgreSQL text and jsonb refuse."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_nul(v) for v in value)
    return False


def word_pattern(*alternatives: str) -> re.Pattern[str]:
    """A case-insensitive pattern matching any of `alternatives` (regex fragments) as whole words or phrases."""
    return re.compile(r"(?<![\w'])(" + "|".join(alternatives) + r")(?![\w'])", re.IGNORECASE)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Terms of a text, in order, with repeats."""
    text = unicodedata.normalize("NFKC", text).lower()
    terms: list[str] = []
    latin: list[int] = []  # indexes in `terms` of words still to be stemmed (in one call, at the end)
    for match in _WORD.finditer(text):
        token = match.group()
        pos = 0
        for cjk in _CJK.finditer(token):
            for word in _split_latin(token[pos:cjk.start()]):
                latin.append(len(terms))
                terms.append(word)
            terms.extend(_cjk_bigrams(cjk.group()))
            pos = cjk.end()
        for word in _split_latin(token[pos:]):
            latin.append(len(terms))
            terms.append(word)
    if latin:
        for i, stem in zip(latin, _stemmer().stemWords([terms[i] for i in latin]), strict=True):
            terms[i] = stem
    return terms


def _split_latin(token: str) -> list[str]:
    if not token or token in STOPWORDS or len(token) > MAX_TOKEN_CHARS:
        return []
    return [token]


def term_frequencies(text: str) -> Counter[str]:
    return Counter(tokenize(text))


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
