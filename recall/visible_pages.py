"""A listing's page under the privacy gate when the gate is decided per row after the query (path globs): rows are
read on past the hidden ones until the page holds `limit` visible rows or the listing ends, and the cursor is the
last row answered, so a `next_after` never names a hidden item (nor tells that one lies beyond the page)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Row = TypeVar("Row")


def visible_page(read: Callable[[Any, int], Sequence[Row]], key: Callable[[Row], Any],
                 shown: Callable[[Row], bool], after: Any, limit: int) -> tuple[list[Row], Any | None]:
    """`read(after, n)`: up to n rows after the cursor, in cursor order. Answers the visible rows (at most
    `limit`) and the cursor to page on from (None: no more rows, visible or not)."""
    out: list[Row] = []
    while True:
        rows = read(after, limit + 1)
        for i, row in enumerate(rows[:limit]):
            if shown(row):
                out.append(row)
                if len(out) == limit:
                    more = i + 1 < len(rows)  # a row after it, visible or not
                    return out, key(row) if more else None
        if len(rows) <= limit:
            return out, None
        after = key(rows[limit - 1])


__all__ = ["visible_page"]
