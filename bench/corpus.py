"""Synthetic but realistic memories for the benchmarks: short first-person sentences from word lists.

Deterministic for a seed. Nouns are drawn with Zipf-like weights so a few terms are common and most are rare,
as in real text (this is what the BM25 postings cost depends on). Texts average ~14 words, close to the
~18-word texts the building-block measurements used.

`memory_texts(n)` composes n distinct memories as "<speaker>: <sentence>" over a pool of distinct sentences
(5,000 by default), so that one real embedding per pool sentence can stand for all memories built on it
(see `seed_embedding_cache`): embedding 100k texts with MiniLM takes ~10 minutes on 2 cores, the pool ~30 s.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np


def _words(text: str) -> list[str]:
    return text.split()


NAMES = _words("""Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Karl Liam Mallory Nina Oscar Peggy Quinn Rita
Sam Trent Uma Victor Wendy Xavier Yara Zoe Aaron Bella Caleb Dina Elias Fiona Gus Hana Igor Jade Kofi Lena Milo
Nora Omar Pia Rafael Sofia Tomas Ursula Vera Walt Ximena Yusuf Zara Arjun Bea Chen Diego Eva Femi Gita Hugo""")
VERBS = _words("""bought fixed visited painted cooked planned cancelled booked repaired cleaned sold borrowed lost found
packed moved watched read wrote finished started ordered returned tried recommended photographed measured
tested installed upgraded reviewed discussed forgot remembered shared organised renovated delivered adopted
rented called emailed scheduled postponed rebuilt designed sketched baked grilled planted harvested trained
practised rehearsed recorded edited printed framed donated collected sorted labelled archived backed-up
migrated debugged deployed refactored benchmarked documented translated summarised""")
ADJECTIVES = _words("""old new red blue green small large quiet noisy cheap expensive broken shiny wooden metal vintage
modern tiny huge heavy light warm cold spicy sweet bitter fresh stale favourite local foreign handmade
second-hand electric manual digital analog rare common strange familiar dusty clean messy elegant simple
complicated fragile sturdy portable waterproof organic imported homemade secret public private weekly
yearly early late slow fast bright dark""")
NOUNS = _words("""car bike kitchen garden laptop phone camera guitar piano book novel recipe cake bread soup coffee tea
apartment house roof window door fence boat tent backpack jacket shoes watch ring necklace painting poster
lamp chair table sofa desk shelf bookcase printer router server database report invoice contract budget
spreadsheet presentation meeting interview exam course lecture workshop conference concert festival
wedding birthday party dinner lunch breakfast picnic holiday trip flight train ticket passport visa hotel
museum gallery library park beach mountain lake river forest island village city market bakery pharmacy
clinic dentist doctor vet gym pool stadium theatre cinema restaurant cafe bar pub shop mall office studio
garage basement attic balcony patio yard dog cat puppy kitten parrot horse rabbit hamster fish plant tree
rose tomato potato pepper lemon apple strawberry cheese wine beer juice pasta pizza salad sandwich curry
noodles rice chocolate cookie pie candle blanket pillow mattress carpet curtain mirror clock radio speaker
headphones keyboard monitor tablet drone telescope microscope bicycle scooter motorcycle van truck bus
sailboat kayak surfboard skateboard helmet glove scarf hat umbrella suitcase wallet key lock alarm
thermostat heater fan fridge oven microwave dishwasher kettle toaster blender vacuum drill hammer saw
ladder paint brush canvas sculpture pottery vase quilt sweater yarn fabric sewing-machine novelists poem
song album playlist podcast documentary series episode game puzzle chessboard deck marathon race match
tournament trophy medal certificate diploma thesis paper article blog newsletter website app feature
bug release deadline roadmap sprint ticket-queue dashboard pipeline cluster backup password account""")
PLACES = _words("""Lisbon Berlin Tokyo Nairobi Toronto Oslo Lima Cairo Seoul Dublin Prague Vienna Madrid Athens
Istanbul Mumbai Bangkok Sydney Auckland Denver Boston Chicago Montreal Vancouver Porto Lyon Milan Naples
Krakow Tallinn Riga Helsinki Stockholm Copenhagen Amsterdam Brussels Zurich Geneva Munich Hamburg Marseille
Seville Valencia Bologna Florence Edinburgh Glasgow Cardiff Belfast Reykjavik""")
TIMES = _words("""yesterday today last-week last-month last-year on-Monday on-Tuesday on-Wednesday on-Thursday
on-Friday on-Saturday on-Sunday this-morning this-evening in-January in-February in-March in-April in-May
in-June in-July in-August in-September in-October in-November in-December two-days-ago recently
over-the-weekend after-work""")
RELATIONS = _words("""my-sister my-brother my-mother my-father my-partner my-friend my-neighbour my-colleague
my-boss my-cousin my-grandmother my-uncle our-team the-landlord the-kids""")
TEMPLATES = (
    "I {verb} the {adj} {noun} {time} with {rel} in {place}.",
    "{rel} {verb} a {adj} {noun} for the {noun2} {time}.",
    "We {verb} the {noun} and the {adj} {noun2} near the {noun3} in {place}.",
    "I think the {adj} {noun} I {verb} {time} was better than the {noun2}.",
    "Remember that {rel} prefers the {adj} {noun} over the {noun2}.",
    "{time} I {verb} a {noun} at the {noun2} in {place} because the {noun3} was {adj}.",
    "The {adj} {noun} from {place} needs to be {verb} before the {noun2}.",
    "Note: {rel} {verb} the {noun} and wants a {adj} {noun2} next.",
    "I finally {verb} my {adj} {noun} after the {noun2} broke {time}.",
    "Plan to visit {place} again and see the {adj} {noun} with {rel}.",
)
QUESTION_TEMPLATES = (
    "What did I {verb} in {place}?",
    "When did {rel} buy the {adj} {noun}?",
    "Which {noun} does {rel} prefer?",
    "Where is the {adj} {noun}?",
    "what happened with the {noun} and the {noun2}",
    "{noun} {place} {time}",
    "Did I ever {verb} a {noun} with {rel}?",
    "Tell me about the {adj} {noun} from {place}",
)


def _zipf_weights(n: int, s: float = 0.9) -> list[float]:
    return [1.0 / (rank + 1) ** s for rank in range(n)]


class _Words:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        nouns = NOUNS[:]
        self.rng.shuffle(nouns)  # which nouns are frequent depends on the seed, not on the list's order
        self.nouns = nouns
        self.noun_weights = _zipf_weights(len(nouns))

    def noun(self) -> str:
        return self.rng.choices(self.nouns, self.noun_weights)[0]

    def fill(self, template: str) -> str:
        r = self.rng
        text = template.format(verb=r.choice(VERBS), adj=r.choice(ADJECTIVES), noun=self.noun(),
                               noun2=self.noun(), noun3=self.noun(), time=r.choice(TIMES),
                               rel=r.choice(RELATIONS), place=r.choice(PLACES))
        text = text.replace("-", " ")
        return text[0].upper() + text[1:]


def sentences(n: int, seed: int = 7) -> list[str]:
    """n distinct sentences."""
    words = _Words(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        s = words.fill(words.rng.choice(TEMPLATES))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def questions(n: int, seed: int = 11) -> list[str]:
    words = _Words(seed)
    return [words.fill(words.rng.choice(QUESTION_TEMPLATES)) for _ in range(n)]


def memory_texts(n: int, pool: Sequence[str]) -> tuple[list[str], list[int]]:
    """n distinct memory texts '<speaker>: <sentence>' and the pool index of each one's sentence."""
    p = len(pool)
    if n > p * len(NAMES):
        raise ValueError(f"{n} memories need a pool of at least {-(-n // len(NAMES))} sentences")
    texts, index = [], []
    for i in range(n):
        j, round_ = i % p, i // p
        texts.append(f"{NAMES[(round_ + j) % len(NAMES)]}: {pool[j]}")
        index.append(j)
    return texts, index


def occurred_at(i: int, n: int) -> datetime:
    """Spread over the year before 2026-01-01, in write order."""
    return datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=int(365 * 86400 * i / max(n, 1)))


# ---------------------------------------------------------------------------------------------------------
# Embeddings: a pool of real ones, computed once (and kept in a temp file between runs), then jittered copies.


def pool_embeddings(pool: Sequence[str], model: str) -> tuple[np.ndarray, float]:
    """Real embeddings of the pool sentences, and the seconds spent embedding (0 when read from the file)."""
    from infra.embedding import get_embedder

    digest = hashlib.sha256(("\n".join(pool) + model).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"engramlog-bench-pool-{digest}.npy"
    if path.exists():
        return np.load(path), 0.0
    started = time.perf_counter()
    vectors = get_embedder(model).encode(list(pool))
    seconds = time.perf_counter() - started
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors, seconds


def jittered(base: np.ndarray, seed: int, sigma: float = 0.01) -> np.ndarray:
    """Unit vectors near `base` rows (cosine ~0.98): distinct points for HNSW, same neighbourhoods."""
    rng = np.random.default_rng(seed)
    out = base + rng.normal(0.0, sigma, size=base.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def vector_literal(row: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in row.tolist()) + "]"


def seed_embedding_cache(engine: Any, tenant: str, model: str, texts: Sequence[str], pool_index: Sequence[int],
                         pool_vectors: np.ndarray, seed: int = 3, chunk: int = 2000) -> float:
    """Store, as each text's cached embedding, a jittered copy of its pool sentence's real embedding, so the
    vectors projector finds every text in the cache instead of running the model. Answers seconds taken."""
    from sqlalchemy import text

    from domain.text import content_hash

    store = text("""
    INSERT INTO embedding_cache (tenant, model, content_hash, embedding)
    SELECT :tenant, :model, h, CAST(e AS vector)
    FROM unnest(CAST(:hashes AS text[]), CAST(:embeddings AS text[])) AS t(h, e)
    ON CONFLICT DO NOTHING
    """)
    started = time.perf_counter()
    for start in range(0, len(texts), chunk):
        part = list(range(start, min(start + chunk, len(texts))))
        vectors = jittered(pool_vectors[[pool_index[i] for i in part]], seed + start)
        with engine.begin() as conn:
            conn.execute(store, {"tenant": tenant, "model": model, "hashes": [content_hash(texts[i]) for i in part],
                                 "embeddings": [vector_literal(v) for v in vectors]})
    return time.perf_counter() - started


# ---------------------------------------------------------------------------------------------------------
# Writing and projecting


def memory_event(text_: str, agent_id: str | None, when: datetime, i: int, key_prefix: str | None = None) -> Any:
    """A validated MemoryRecorded NewEvent, as the write path builds it."""
    import uuid

    from domain.events import NewEvent, memory_stream, validate_payload

    memory_id = uuid.uuid4()
    data = validate_payload("MemoryRecorded", {
        "memory_id": str(memory_id), "content": text_, "kind": "observation", "agent_id": agent_id,
        "tags": ["bench"], "metadata": {"source": "bench", "i": i}})
    return NewEvent("MemoryRecorded", memory_stream(memory_id), data, occurred_at=when, expected_version=0,
                    idempotency_key=f"{key_prefix}:{i}" if key_prefix else None)


def append_memories(engine: Any, tenant: str, texts: Sequence[str], agents: int, offset: int = 0,
                    total: int | None = None, batch: int = 1000, via: str = "service", must_keep: bool = True) -> float:
    """Append MemoryRecorded events for `texts` in batches of `batch`. Answers seconds taken.

    via="service": services.append_events, the write path the API runs (validation, and whatever the write path
    decides along with the write, in the same transaction); use it to build a corpus recall will search.
    `must_keep` (the default) bypasses the salience gate and the reinforcement check, as an import would: the
    corpus's memories are "<speaker>: <sentence>" over a pool of sentences, near-duplicates the governor would
    otherwise fold into one another, and a recall benchmark at N memories needs N recallable memories.
    via="log": eventstore.append alone, with the events prebuilt: the bare log, for measuring projectors without
    any work the write path may do (such as embedding at write time).
    """
    import uuid

    from eventstore.append import append
    from services.append_events import EventInput, append_events

    if via not in ("service", "log"):
        raise ValueError(f"via must be 'service' or 'log', not {via!r}")
    total = total or offset + len(texts)
    metadata = {"actor": "bench", "source": "bench"}
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        if via == "log":
            events = [memory_event(t, f"agent-{(offset + start + j) % agents}" if agents else None,
                                   occurred_at(offset + start + j, total), offset + start + j)
                      for j, t in enumerate(texts[start:start + batch])]
            with engine.begin() as conn:
                append(conn, tenant, events, metadata)
            continue
        items = []
        for j, t in enumerate(texts[start:start + batch]):
            i = offset + start + j
            items.append(EventInput(
                type="MemoryRecorded", occurred_at=occurred_at(i, total), idempotency_key=f"bench:{tenant}:{i}",
                data={"memory_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench:{tenant}:{i}")), "content": t,
                      "kind": "observation", "agent_id": f"agent-{i % agents}" if agents else None,
                      "must_keep": must_keep,
                      "tags": ["bench"], "metadata": {"source": "bench", "i": i}}))
        append_events(engine, tenant, items, metadata)
    return time.perf_counter() - started


def memory_statuses(engine: Any, tenant: str) -> dict[str, int]:
    """How many memories of the tenant are in each status (the write path may stage or discard some)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        rows = conn.execute(text("SELECT status, count(*) FROM memories WHERE tenant = :t GROUP BY status"),
                            {"t": tenant}).all()
    return {status: count for status, count in rows}


def project(engine: Any, name: str, batch_size: int | None = None) -> tuple[int, float]:
    """Catch a projection up to the head of the log. Answers (events applied, seconds)."""
    from infra.settings import get_settings
    from projections.registry import get_projector
    from projections.runner import catch_up

    started = time.perf_counter()
    applied = catch_up(engine, get_projector(name), batch_size or get_settings().projections.projection_batch_size,
                       max_seconds=24 * 3600)
    return applied, time.perf_counter() - started


def hnsw_indexdef(engine: Any) -> str | None:
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND "
                                 "indexname = 'memory_vectors_hnsw'")).scalar()


def drop_hnsw(engine: Any) -> str:
    """Drop the vectors HNSW index for a bulk load; answers its exact definition to recreate it."""
    from sqlalchemy import text

    indexdef = hnsw_indexdef(engine)
    if not indexdef:
        raise RuntimeError("no memory_vectors_hnsw index")
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX memory_vectors_hnsw"))
    return indexdef


def create_hnsw(engine: Any, indexdef: str, maintenance_work_mem: str = "1GB") -> float:
    from sqlalchemy import text

    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text(f"SET LOCAL maintenance_work_mem = '{maintenance_work_mem}'"))
        conn.execute(text("SET LOCAL statement_timeout = 0"))  # minutes at 50k+ on a loaded machine
        conn.execute(text(indexdef))
    return time.perf_counter() - started


def analyze(engine: Any) -> None:
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))


def projector_names() -> list[str]:
    """Every registered projection, in the registry's order (memories, keyword, vectors, then any later ones)."""
    from projections.registry import PROJECTORS

    return list(PROJECTORS)


def build_corpus(engine: Any, tenant: str, texts: Sequence[str], pool_index: Sequence[int], pool_vectors: np.ndarray,
                 start: int, end: int, agents: int, total: int, bulk_index: bool) -> dict[str, Any]:
    """Write memories texts[start:end] and project them into every read model. Answers seconds per phase
    and the memories' statuses.

    Vectors come from the embedding cache, seeded with jittered copies of the pool's real embeddings (see
    `seed_embedding_cache`); the vectors projector itself runs unchanged. With `bulk_index`, the HNSW index is
    dropped during the load and recreated from its exact definition afterwards (one index build instead of
    `end - start` incremental inserts); only do that on a database of the benchmark's own.
    """
    from infra.settings import get_settings

    model = get_settings().embedding.embedding_model
    phases: dict[str, float] = {}
    phases["seed_embedding_cache_s"] = seed_embedding_cache(engine, tenant, model, texts[start:end],
                                                            pool_index[start:end], pool_vectors, seed=start)
    phases["append_s"] = append_memories(engine, tenant, texts[start:end], agents, offset=start, total=total)
    for name in projector_names():
        if name != "vectors":
            _, phases[f"project_{name}_s"] = project(engine, name)
            continue
        indexdef = drop_hnsw(engine) if bulk_index else None
        _, phases["project_vectors_s"] = project(engine, "vectors")
        if indexdef:
            phases["build_hnsw_s"] = create_hnsw(engine, indexdef)
    started = time.perf_counter()
    analyze(engine)
    phases["analyze_s"] = time.perf_counter() - started
    return {**{k: round(v, 3) for k, v in phases.items()}, "statuses": memory_statuses(engine, tenant)}
