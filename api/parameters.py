"""Path and query parameters must be text PostgreSQL and a reply can carry: no NUL, valid UTF-8 (no lone
surrogate, no stray byte). Checked once for every route, before routing (api/app.py), so no handler ever passes
one to a query (PostgreSQL refuses NUL in text: that was a 500 on every route that filtered by such a parameter).
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import Scope


def _problem(raw: bytes) -> str | None:
    if b"\x00" in raw:
        return "must not contain NUL (%00)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "must be valid UTF-8 text (no lone surrogate or stray byte)"
    return None


def parameter_problem(scope: Scope) -> str | None:
    """Why the request's path or query string is not plain text, or None when it is."""
    raw_path = scope.get("raw_path") or str(scope.get("path", "")).encode("utf-8", "surrogateescape")
    if (problem := _problem(unquote_to_bytes(raw_path.split(b"?", 1)[0]))) is not None:
        return f"path: {problem}"
    query = scope.get("query_string") or b""
    for pair in query.split(b"&"):
        name, _, value = pair.partition(b"=")
        name_text = unquote_to_bytes(name.replace(b"+", b" "))
        if (problem := _problem(name_text)) is not None:
            return f"query parameter name: {problem}"
        if (problem := _problem(unquote_to_bytes(value.replace(b"+", b" ")))) is not None:
            return f"query parameter {name_text.decode('utf-8')!r}: {problem}"
    return None


__all__ = ["parameter_problem"]
