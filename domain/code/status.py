"""A code symbol's lifecycle statuses beyond the decay sweep's (active, dormant, archived).

A symbol its file no longer defines after a re-put is 'replaced'; a removed file's symbols are 'removed'. Both
rows stay in code_symbols with their postings, so a search as of an earlier position finds them (code_symbol_versions,
projections/code.py); every current read of the symbols leaves them out (`held_sql`).
"""

from __future__ import annotations

GONE = ("replaced", "removed")


def held_sql(alias: str) -> str:
    """SQL on `alias` (a code_symbols row): the symbol is one its file defines now."""
    return f"{alias}.status NOT IN ('replaced', 'removed')"


__all__ = ["GONE", "held_sql"]
