"""The one lazy-vector projector: a recalled item (a knowledge section, a transcript chunk) gets its vector the first
time the hit-log shows it was used, never by a sweep over its domain. Each surface is one `LazySurface`: its
domain's declaration (readmodels/item_domains.py: the vector table, the hit-log domain whose results name its
items), how a handle names an item, and how an item's text is read from the log (never from another projection's
tables).

| event         | effect: the surface's items without a vector of the configured model get one          |
| ------------- | ------------------------------------------------------------------------------------- |
| RecallServed  | each of the surface's results' item                                                    |
| ResultDrilled | its item, when the drill is the surface's                                             |

A handle naming no item, or without an integer version (the version whose log holds its text), is skipped (logged),
by every run alike, as is an item whose text the log does not hold; so which items have vectors follows from the
events alone and a rebuild reproduces the set. A surface may add its own handlers that know an item's text at
once (knowledge's eager puts: `Wanted.add_text`). Embeddings go through the embedding cache (tenant, model,
content hash), so a rebuild computes nothing already computed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import structlog
from sqlalchemy import Connection, TextClause, text

from domain.events import EventSchema, RecallServed, RecordedEvent, ResultDrilled
from infra.embedding import embed_cached, get_embedder
from infra.settings import get_settings
from projections.base import apply_in_order, types_of
from readmodels.item_domains import ItemDomain

log = structlog.get_logger(__name__)
EMBED_CHUNK = 256  # texts per embed_cached call: one cache lookup and a few forward passes each

Handle = dict[str, Any]


@dataclass(frozen=True)
class LazySurface:
    name: str  # the projector's name, also its log events' prefix
    of: ItemDomain  # its vectors table (tenant, <id column>, model, embedding), id column and hit-log domain
    item_of: Callable[[str, Handle | None], uuid.UUID | None]  # (tenant, handle) → the item, or None
    texts_from_log: Callable[[Connection, str, dict[uuid.UUID, Handle]], dict[uuid.UUID, str]]

    @property
    def table(self) -> str:
        if self.of.vectors is None:
            raise ValueError(f"{self.of.name} declares no vectors table")
        return self.of.vectors

    @property
    def id_column(self) -> str:
        return self.of.versions.key

    @property
    def domain(self) -> str:
        return self.of.name

    @cached_property
    def have(self) -> TextClause:
        return text(f"SELECT {self.id_column} FROM {self.table}"
                    f" WHERE tenant = :tenant AND model = :model AND {self.id_column} = ANY(CAST(:ids AS uuid[]))")

    @cached_property
    def insert(self) -> TextClause:
        return text(f"""
        INSERT INTO {self.table} (tenant, {self.id_column}, model, embedding)
        SELECT :tenant, b.i, :model, CAST(b.e AS vector)
        FROM unnest(CAST(:ids AS uuid[]), CAST(:embeddings AS text[])) AS b(i, e)
        ON CONFLICT DO NOTHING
        """)


class Wanted:
    """Items asked for by consecutive events, embedded and inserted in bulk (the set does not depend on the order or
    the batching of the events that ask)."""

    def __init__(self, surface: LazySurface) -> None:
        self.surface = surface
        self.texts: dict[tuple[str, uuid.UUID], str] = {}  # known text
        self.handles: dict[tuple[str, uuid.UUID], Handle] = {}  # text to be read from the log

    def add_text(self, tenant: str, item: uuid.UUID, text_: str) -> None:
        self.texts[(tenant, item)] = text_

    def add_served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        for r in p.results:
            if r.domain == self.surface.domain:
                self._add_handle(event.tenant, r.handle)

    def add_drilled(self, conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
        if p.domain == self.surface.domain:
            self._add_handle(event.tenant, p.handle)

    def _add_handle(self, tenant: str, handle: Handle | None) -> None:
        item = self.surface.item_of(tenant, handle)
        if item is None or handle is None or not isinstance(handle.get("version"), int):
            log.warning(f"{self.surface.name}.bad_handle", tenant=tenant, handle=str(handle)[:300])
            return
        self.handles.setdefault((tenant, item), handle)

    def flush(self, conn: Connection) -> None:
        texts, handles = self.texts, self.handles
        self.texts, self.handles = {}, {}
        if not texts and not handles:
            return
        s = self.surface
        model = get_embedder(get_settings().embedding.embedding_model).model
        by_tenant: dict[str, set[uuid.UUID]] = {}
        for tenant, item in [*texts, *handles]:
            by_tenant.setdefault(tenant, set()).add(item)
        for tenant in sorted(by_tenant):
            ids = sorted(by_tenant[tenant], key=str)
            have = set(conn.execute(s.have, {"tenant": tenant, "model": model, "ids": ids}).scalars())
            todo = [i for i in ids if i not in have]
            known = {i: texts[(tenant, i)] for i in todo if (tenant, i) in texts}
            known.update(s.texts_from_log(conn, tenant, {i: handles[(tenant, i)] for i in todo if i not in known}))
            _embed(conn, s, tenant, model, [(i, known[i]) for i in todo if i in known])


def _embed(conn: Connection, surface: LazySurface, tenant: str, model: str,
           items: list[tuple[uuid.UUID, str]]) -> None:
    embedder = get_embedder(get_settings().embedding.embedding_model)
    for start in range(0, len(items), EMBED_CHUNK):
        part = items[start:start + EMBED_CHUNK]
        embeddings = embed_cached(conn, embedder, tenant, [t for _, t in part])
        conn.execute(surface.insert, {"tenant": tenant, "model": model, "ids": [i for i, _ in part],
                                      "embeddings": embeddings})


InRun = Mapping[type[EventSchema], Callable[[Wanted, Connection, RecordedEvent, Any], None]]
HIT_LOG: InRun = {RecallServed: Wanted.add_served, ResultDrilled: Wanted.add_drilled}


class LazyVectorsProjector:
    """A surface's projector: a subclass names its surface and handlers (HIT_LOG, and its own); its name, tables
    and types follow from them."""

    surface: ClassVar[LazySurface]
    handlers: ClassVar[InRun]
    name: ClassVar[str]
    tables: ClassVar[tuple[str, ...]]
    types: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.tables, cls.types = cls.surface.name, (cls.surface.table,), types_of(cls.handlers)

    def prepare(self) -> None:
        """Load the embedding model before a batch is applied, outside its time limit (projections/runner.py):
        a cold start (the first ONNX export) is no event's fault."""
        get_embedder(get_settings().embedding.embedding_model).warm()

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, {}, self.handlers, Wanted(self.surface))


__all__ = ["EMBED_CHUNK", "HIT_LOG", "LazySurface", "LazyVectorsProjector", "Wanted"]
