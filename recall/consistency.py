"""Read-your-writes, the read side's part: the read models recall waits for, and the refusal of a position the log
has not reached. The wait itself (whether the read models a read depends on have applied a position, bounded)
is api/read_your_writes.py's: it asks the projections' checkpoints, which the read side does not import.

Recall waits for `memories` (status, scope) and `keyword` (BM25 postings) only. A memory whose vector is not
projected yet is scored on its keyword leg renormalised to weight 1 (domain/ranking.py) and its result says so,
so the first recall after a large import never waits on the embedder.
"""

from __future__ import annotations

from sqlalchemy import Engine

from domain.errors import InvalidPayload
from eventstore.read import head_position
from infra.db import reading

READ_MODELS = ("memories", "keyword")


def refuse_beyond_head(engine: Engine, position: int, name: str = "position", tenant: str | None = None) -> None:
    """A position the log has not reached was never answered by a write: InvalidPayload (422) now, no wait. With
    `tenant` (every tenant key's read), the log is that tenant's: its head decides and is the one named, so a key
    never learns how far other tenants have written."""
    with reading(engine) as conn:
        head = head_position(conn, tenant)
    if position > head:
        raise InvalidPayload(f"{name} {position} is beyond the log's head ({head}): nothing was written there yet")


__all__ = ["READ_MODELS", "refuse_beyond_head"]
