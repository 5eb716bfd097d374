"""POST /v1/forget: crypto-shredding a subject (docs/forget.md).

One transaction, under the tenant's forget lock: the plan (services/forget_plan.py), the embeddings of what is
forgotten out of the embedding cache, the dead letters that held its events, its data keys destroyed, and a
SubjectForgotten appended. From that commit on, every read of the log (eventstore/codec.py) answers the
subject's sealed events as forgotten, in this database and in every backup of its log. Then what was derived
from them goes: the deep-recall cache and the process's deep-recall store, and the read models the forgotten
events fed are rebuilt from the log (projections/rebuild.py), which now skips them, so the read models are
exactly what a rebuild gives (architecture rule 1), and the answer comes once they are.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, text

from domain.errors import NotFound
from domain.events import NewEvent, SubjectForgotten, TranscriptChunksPut, forget_stream, subject_digest
from eventstore import subjects
from eventstore.append import append
from eventstore.codec import SEALED
from eventstore.stream import read_streams
from infra.wake import appended
from projections.base import Projector
from projections.rebuild import ProjectionBusy, rebuild
from projections.registry import PROJECTORS
from services.forget_plan import Plan, Subject, resolve

log = structlog.get_logger(__name__)

_LOCK = text("SELECT pg_advisory_xact_lock(hashtext('engramlog.forget.' || :tenant))")
# A forgotten text's vector leaves the embedding cache with it: by the text's hash, and by the exact vector the
# read models hold for a forgotten item (what a section or a chunk was embedded from is the projector's choice).
_UNCACHE_HASHES = text("""
DELETE FROM embedding_cache WHERE tenant = :tenant AND content_hash = ANY(:hashes)
""")
_UNCACHE_VECTORS = (
    "DELETE FROM embedding_cache c USING memory_vectors v WHERE c.tenant = :tenant AND v.tenant = :tenant"
    " AND c.model = v.model AND c.embedding = v.embedding AND 'memory-' || v.memory_id = ANY(:streams)",
    "DELETE FROM embedding_cache c USING knowledge_section_vectors v JOIN knowledge_sections s"
    " ON s.tenant = v.tenant AND s.section_id = v.section_id WHERE c.tenant = :tenant AND v.tenant = :tenant"
    " AND c.model = v.model AND c.embedding = v.embedding AND s.document_id = ANY(:streams)",
    "DELETE FROM embedding_cache c USING transcript_chunk_vectors v JOIN transcript_chunks s"
    " ON s.tenant = v.tenant AND s.chunk_id = v.chunk_id WHERE c.tenant = :tenant AND v.tenant = :tenant"
    " AND c.model = v.model AND c.embedding = v.embedding AND s.transcript_id = ANY(:transcripts)",
)
_DEAD_LETTERS = text("DELETE FROM projection_dead_letters WHERE tenant = :tenant AND position = ANY(:positions)")
_INGEST_DEAD_LETTERS = text("""
DELETE FROM ingest_dead_letters WHERE tenant = :tenant AND message LIKE ANY(:patterns)
""")


@dataclass
class Receipt:
    forget_id: str | None
    position: int | None
    dry_run: bool
    kind: str
    streams: dict[str, int]
    dependent_streams: int
    events: int
    sealed_events: int
    unsealed_events: int
    keys: int
    stream_ids: list[str] = field(default_factory=list)
    projections: list[str] = field(default_factory=list)
    embeddings_uncached: int = 0
    dead_letters: int = 0
    seconds: float = 0.0
    shred_seconds: float = 0.0  # the transaction: plan, uncache, keys destroyed, SubjectForgotten

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _texts(conn: Connection, tenant: str, streams: list[str]) -> list[str]:
    """The forgotten events' texts that may have been embedded (while their keys still open them)."""
    texts: list[str] = []
    for e in read_streams(conn, tenant, streams):  # opened by the codec
        d = e.data
        for name in ("content", "merged_content", "query", "question"):
            if isinstance(d.get(name), str):
                texts.append(d[name])
        texts += [c["text"] for c in d.get("chunks") or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
        texts += [m["content"] for m in d.get("messages") or []
                  if isinstance(m, dict) and isinstance(m.get("content"), str)]
    return texts


def _uncache(conn: Connection, tenant: str, plan: Plan) -> int:
    from domain.text import content_hash

    streams = plan.every_stream
    hashes = sorted({content_hash(t) for t in _texts(conn, tenant, streams)})
    gone = conn.execute(_UNCACHE_HASHES, {"tenant": tenant, "hashes": hashes}).rowcount
    transcripts = subjects.field_values(conn, tenant, streams, TranscriptChunksPut.type_name(), "transcript_id")
    for sql in _UNCACHE_VECTORS:
        gone += conn.execute(text(sql), {"tenant": tenant, "streams": streams, "transcripts": transcripts}).rowcount
    return int(gone)


def _ingest_patterns(plan: Plan) -> list[str]:
    """A parked producer message naming the subject (its ids, an entity's name), as its ASCII JSON spells them."""
    values = plan.values + ([plan.subject.value] if plan.subject.kind == "entity" else [])
    spelled = (json.dumps(v)[1:-1] for v in values)
    return ["%" + v.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for v in spelled]


def _affected(plan_types: set[str]) -> list[Projector]:
    """The projectors that applied any of the forgotten events' types: the read models to rebuild."""
    return [p for p in PROJECTORS.values() if plan_types & set(p.types)]


def _receipt(plan: Plan, dry_run: bool, **more: Any) -> Receipt:
    return Receipt(None, None, dry_run, plan.subject.kind, {k: len(v) for k, v in plan.streams.items() if v},
                   len(plan.dependent), plan.events, plan.sealed_events, plan.unsealed_events, plan.keys,
                   stream_ids=plan.own, **more)


def forget(engine: Engine, tenant: str, subject: Subject, metadata: dict[str, Any], reason: str | None = None,
           dry_run: bool = False) -> Receipt:
    """Forget `subject` in `tenant` (or, `dry_run`, say what that would erase). NotFound when the tenant's log has
    no stream of it."""
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(_LOCK, {"tenant": tenant})
        plan = resolve(conn, tenant, subject)
        if not plan.found:
            raise NotFound(f"no {subject.kind} {subject.value!r} in this tenant's log")
        types = subjects.types_in(conn, tenant, plan.every_stream)
        projectors = _affected(types & set(SEALED))
        if dry_run:
            return _receipt(plan, True, projections=[p.name for p in projectors],
                            seconds=round(time.perf_counter() - started, 3))
        uncached = _uncache(conn, tenant, plan)
        positions = subjects.positions_in(conn, tenant, plan.every_stream)
        dead = conn.execute(_DEAD_LETTERS, {"tenant": tenant, "positions": positions}).rowcount
        dead += conn.execute(_INGEST_DEAD_LETTERS, {"tenant": tenant, "patterns": _ingest_patterns(plan)}).rowcount
        keys = subjects.destroy_keys(conn, tenant, plan.every_stream)
        forget_id = uuid.uuid4()
        event = SubjectForgotten(forget_id=forget_id, kind=subject.kind,
                                 subject_digest=subject_digest(tenant, subject.kind, subject.value), reason=reason,
                                 streams=len(plan.own), dependent_streams=len(plan.dependent),
                                 events=plan.sealed_events, keys=keys, projections=[p.name for p in projectors])
        [position] = append(conn, tenant, [NewEvent.of(event, forget_stream(forget_id))], metadata)
    appended(1)
    shredded = time.perf_counter() - started
    _drop_deep_recall_state(tenant)
    rebuilt = _rebuild(engine, projectors)
    receipt = _receipt(plan, False, projections=rebuilt, embeddings_uncached=uncached, dead_letters=int(dead),
                       seconds=round(time.perf_counter() - started, 3), shred_seconds=round(shredded, 3))
    receipt.forget_id, receipt.position, receipt.keys = str(forget_id), position, int(keys)
    log.info("forget.done", tenant=tenant, kind=subject.kind, streams=len(plan.own), dependent=len(plan.dependent),
             events=plan.sealed_events, keys=keys, projections=rebuilt, seconds=receipt.seconds)
    return receipt


def _drop_deep_recall_state(tenant: str) -> None:
    """The deep-recall answers cached in Redis and the scopes' store kept in this process: built from what was
    just forgotten, they go whole for the tenant (both are caches: rebuilt from the read models on demand)."""
    from deep_recall.cache import drop_tenant
    from deep_recall.store import forget_tenant_state
    from infra.settings import get_settings

    drop_tenant(get_settings(), tenant)
    forget_tenant_state(tenant)


def _rebuild(engine: Engine, projectors: list[Projector], attempts: int = 20) -> list[str]:
    """Rebuild each read model the forgotten events fed; one already being rebuilt is waited for and rebuilt
    again (the running one may have read the events before their keys went)."""
    done: list[str] = []
    for projector in projectors:
        for attempt in range(attempts):
            try:
                rebuild(engine, projector)
                done.append(projector.name)
                break
            except ProjectionBusy:
                time.sleep(min(0.2 * (attempt + 1), 2.0))
        else:
            log.warning("forget.rebuild_busy", projection=projector.name)
    return done


__all__ = ["Receipt", "Subject", "forget"]
