"""The terms a symbol is found by: its name split on case and underscores (`getUserName` → get user name,
`parse_http_url` → parse http url, `HTTPServer` → http server), its signature and its docstring, all through
the one tokenizer (domain/text.py). A query is split the same way, so `getUserName` finds `get_user_name`."""

from __future__ import annotations

import re
from collections import Counter

from domain.text import tokenize

_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
NAME_WEIGHT = 2  # a symbol's own name counts twice: a match on the name beats one in a docstring


def split_identifiers(text: str) -> str:
    """`text` with camelCase and PascalCase words split and underscores made spaces."""
    return _CASE.sub(" ", text).replace("_", " ")


def query_terms(query: str) -> list[str]:
    return tokenize(split_identifiers(query))


def symbol_terms(qualified_name: str, signature: str, doc: str) -> Counter[str]:
    name = tokenize(split_identifiers(qualified_name.rsplit(".", 1)[-1]))
    rest = tokenize(split_identifiers(" ".join((qualified_name.replace(".", " "), signature, doc))))
    return Counter(name * (NAME_WEIGHT - 1) + rest)


__all__ = ["NAME_WEIGHT", "query_terms", "split_identifiers", "symbol_terms"]
