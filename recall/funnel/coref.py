"""Stage 1, coreference: pronouns in the query resolved to an entity from the scope's recent memories.

Rule (documented, deterministic): when the query contains a third-person pronoun that may point outside it
and names no entity of its own, the entity named most often in the scope's `coref_recent` most recent
recallable memories (by occurred_at, then log position; ties go to the most recent mention) replaces those
pronouns ("her" -> "<entity>'s"). Personal pronouns (he, she, him, her, his, ...) may always point outside
the query; "it" and "they" (its, them, their, ...) only when no content word precedes them ("knead the dough
and let it proof" names its "it"). A query that names an entity is left as it is: its pronouns most likely
refer to that entity, which the legs already search for. Entities
follow the surface rule of domain.entities (capitalised words, not sentence-initial grammar).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from domain.entities import entities, most_salient, pronouns, replace_pronouns, resolvable
from domain.memo import Memo
from recall.funnel.types import StageReport
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame

# The most salient entity of a set of recent memories, kept by their contents' digest: pronoun queries read the
# same recent memories until the next write, and the entity rule over 20 long texts costs tens of milliseconds.
_SALIENT: Memo[str | None] = Memo(1024, max_chars=50_000_000)  # values are one name


def resolve(conn: Connection, scope: Scope, query: str, statuses: tuple[str, ...], recent: int,
            report: StageReport, frame: TimeFrame = NOW) -> str:
    """The query with its pronouns resolved (or unchanged), recording what was done in `report`; the recent
    memories are those `frame` holds (recall/timeframe.py)."""
    found = pronouns(query)
    report.config = {"recent": recent}
    report.counts = {"pronouns": len(found), "resolved": 0}
    if not found:
        report.skipped = "no pronoun in the query"
        return query
    named = entities(query)
    if named:
        report.skipped = f"the query names {', '.join(named)}"
        return query
    which = resolvable(query)
    if not which:
        report.skipped = "the words before the pronoun may be what it refers to"
        return query
    where, params = scope.where("m")
    rows = conn.execute(text(f"""
        SELECT content FROM {frame.memories()} m WHERE {where} AND m.status = ANY(:statuses)
            {frame.valid_sql("m.occurred_at")}
        ORDER BY m.occurred_at DESC, m.position DESC LIMIT :n"""),
        {**params, **frame.params(), "statuses": list(statuses), "n": recent}).scalars().all()
    entity = _SALIENT.get(rows, lambda: most_salient(rows))
    report.counts["recent_memories"] = len(rows)
    if entity is None:
        report.skipped = "no entity in the scope's recent memories"
        return query
    resolved = replace_pronouns(query, entity, which)
    report.counts["resolved"] = sum(1 for p in found if p in which)
    report.notes = {"entity": entity, "pronouns": sorted(which), "query": resolved}
    return resolved
