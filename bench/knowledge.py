"""Knowledge library: lazy against eager section embedding on the same corpus and queries, and recall latency.

Two tenants hold the same library: `lazy` (the default ENGRAMLOG_KNOWLEDGE_EMBEDDING=lazy: a section gets a
vector when a recall returns it or a drill fetches it, projections/section_vectors.py) and `eager` (every section
embedded when put). Each then answers the same query sequence through recall.multi.recall_multi (what POST
/v1/recall/multi runs: query embedding, BM25 + vector legs, fusion, the RecallServed append), domain knowledge,
k = 10, the section-vectors projector caught up after every query (as the worker does after each hit-log append).

The library: the markdown and package METADATA (long descriptions) of the installed dependencies under the
venv's site-packages (real text, as noise), plus generated documents whose `##` sections each talk about 4
concepts drawn from a fixed list of everyday English words (CONCEPTS), so each query has a known answer.
Queries, each made from one generated section (its target):
- `shared`: 3 of the target's concept words as written in the library (BM25 can find it);
- `paraphrase`: a synonym of each of the same 3 concepts, words that appear in no generated section (checked,
  after stemming; the real documents may hold them): only the vector leg can find the target.
Relevant = every generated section holding all 3 concepts (the target, and the rare section sharing them).
Figures: R@10 per mode and query kind; coverage (share of sections with a vector) after N queries; embedding
work (texts embedded, seconds of the section-vectors projector) per mode; then, at each size (sections per
tenant), knowledge recall p50/p95 per mode and recall/multi p50 with memories + knowledge present (lazy tenant).
The sections grown for the latency steps (and the memories) are embedded from a seeded cache: each text's cached
embedding is a jittered copy of a real section vector (as bench/recall.py does), so the eager projector inserts
10k vectors without running the model; R@10, coverage and embedding time come from real embeddings only.

    python -m bench.knowledge [--sections 3000] [--queries 400] [--sizes 10000] [--memories 2000] [--output F]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import latency_stats, machine, machine_line, save_result, start_stack, wide

META = {"actor": "bench", "source": "bench"}
SECTIONS_PER_DOC = 10
# (the word documents use, a synonym queries use instead)
CONCEPTS = [
    ("car", "automobile"), ("buy", "purchase"), ("big", "enormous"), ("fast", "rapid"), ("begin", "commence"),
    ("doctor", "physician"), ("house", "dwelling"), ("child", "youngster"), ("money", "cash"),
    ("error", "mistake"), ("help", "assist"), ("answer", "reply"), ("shop", "store"), ("road", "highway"),
    ("boat", "ship"), ("plane", "aircraft"), ("film", "movie"), ("song", "melody"), ("rubbish", "garbage"),
    ("sofa", "couch"), ("jacket", "coat"), ("student", "pupil"), ("teacher", "instructor"),
    ("illness", "disease"), ("forest", "woods"), ("river", "stream"), ("ocean", "sea"), ("hill", "mountain"),
    ("rain", "drizzle"), ("storm", "tempest"), ("fire", "blaze"), ("kitchen", "cookery"), ("dinner", "supper"),
    ("bread", "loaf"), ("coffee", "espresso"), ("wine", "champagne"), ("dog", "puppy"), ("cat", "kitten"),
    ("horse", "pony"), ("bird", "sparrow"), ("fish", "salmon"), ("garden", "yard"), ("flower", "blossom"),
    ("tree", "oak"), ("phone", "telephone"), ("letter", "mail"), ("book", "novel"), ("newspaper", "journal"),
    ("clock", "watch"), ("lamp", "lantern"), ("door", "gate"), ("window", "pane"), ("chair", "stool"),
    ("table", "desk"), ("bed", "mattress"), ("shirt", "blouse"), ("shoe", "boot"), ("hat", "cap"),
    ("king", "monarch"), ("soldier", "warrior"), ("war", "battle"), ("peace", "harmony"), ("law", "statute"),
    ("judge", "magistrate"), ("police", "cops"), ("thief", "burglar"), ("prison", "jail"), ("city", "metropolis"),
    ("village", "hamlet"), ("country", "nation"), ("farm", "ranch"), ("farmer", "grower"), ("cow", "cattle"),
    ("pig", "hog"), ("sheep", "lamb"), ("egg", "omelette"), ("milk", "dairy"), ("cheese", "cheddar"),
    ("apple", "pear"), ("sugar", "sweetener"), ("salt", "sodium"), ("soup", "broth"), ("meat", "beef"),
    ("lawyer", "attorney"), ("hospital", "infirmary"), ("medicine", "drug"), ("pain", "ache"),
    ("sleep", "slumber"), ("dream", "nightmare"), ("happy", "joyful"), ("sad", "unhappy"), ("angry", "furious"),
    ("afraid", "scared"), ("clever", "intelligent"), ("stupid", "foolish"), ("rich", "wealthy"),
    ("poor", "impoverished"), ("old", "elderly"), ("young", "youthful"), ("small", "tiny"), ("quiet", "silent"),
    ("loud", "noisy"), ("cold", "freezing"), ("hot", "scorching"), ("wet", "soaked"), ("dry", "arid"),
    ("friend", "pal"), ("enemy", "foe"), ("wife", "spouse"), ("job", "occupation"), ("boss", "manager"),
    ("worker", "employee"), ("factory", "plant"), ("machine", "engine"), ("computer", "laptop"),
    ("picture", "photograph"), ("painter", "artist"), ("music", "tune"), ("dance", "ballet"),
    ("game", "match"), ("football", "soccer"), ("holiday", "vacation"), ("journey", "trip"), ("hotel", "inn"),
]
FILLER = ["Notes on the {a} and the {b}, with the {c} close to the {d}.",
          "When the {a} meets the {b}, the {c} follows and the {d} waits.",
          "Everyone remembers the {a}; few forget the {b}, the {c} or the {d}.",
          "A short account of a {a}, a {b}, a {c} and a {d}."]


def generated_library(n_sections: int, seed: int, prefix: str) -> tuple[list[tuple[str, str]], list[tuple]]:
    """(path, content) documents and, per section, (path, heading, concept indexes)."""
    rng = random.Random(seed)
    docs, sections = [], []
    for d in range(n_sections // SECTIONS_PER_DOC):
        path = f"{prefix}/doc-{d:06d}.md"
        parts = [f"# Document {d}\n\n"]
        for s in range(SECTIONS_PER_DOC):
            cs = rng.sample(range(len(CONCEPTS)), 4)
            words = [CONCEPTS[c][0] for c in cs]
            heading = f"Part {s}: {words[0]} and {words[1]}"
            body = " ".join(f.format(a=words[i % 4], b=words[(i + 1) % 4], c=words[(i + 2) % 4], d=words[(i + 3) % 4])
                            for i, f in enumerate(rng.sample(FILLER, 3)))
            parts.append(f"## {heading}\n{body} (entry {d}.{s})\n\n")
            sections.append((path, f"Document {d} > {heading}", tuple(cs)))
        docs.append((path, "".join(parts)))
    return docs, sections


def real_documents(limit: int) -> list[tuple[str, str]]:
    """The installed dependencies' *.md files and METADATA long descriptions (UTF-8, < 1 MiB), sorted by path."""
    import site

    root = Path(site.getsitepackages()[0])
    out = []
    for f in sorted([*root.rglob("*.md"), *root.glob("*.dist-info/METADATA")]):
        try:
            raw = f.read_bytes()
            content = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if 200 < len(raw) < 1 << 20 and "\x00" not in content:
            out.append((f"deps/{f.relative_to(root).as_posix()}", content))
    return out[:limit]


def make_queries(sections: list[tuple], n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    by_concepts: dict[int, set[int]] = {}
    for i, (_, _, cs) in enumerate(sections):
        for c in cs:
            by_concepts.setdefault(c, set()).add(i)
    out = []
    for q in range(n):
        target = rng.randrange(len(sections))
        cs = rng.sample(sections[target][2], 3)
        relevant = set.intersection(*(by_concepts[c] for c in cs))
        kind = "shared" if q % 2 == 0 else "paraphrase"
        words = [CONCEPTS[c][0 if kind == "shared" else 1] for c in cs]
        out.append({"kind": kind, "query": " ".join(words), "relevant": relevant, "target": target})
    return out


def _check_paraphrases_unseen(docs: list[tuple[str, str]]) -> None:
    from domain.text import tokenize

    seen = set()
    for _, content in docs:
        seen.update(tokenize(content))
    shared = sorted({t for _, syn in CONCEPTS for t in tokenize(syn)} & seen)
    if shared:
        raise SystemExit(f"paraphrase words found in the library (pick others): {shared}")


def _put(engine: Any, tenant: str, docs: list[tuple[str, str]]) -> float:
    from services.knowledge import DocumentInput, put_documents

    started = time.perf_counter()
    for i in range(0, len(docs), 200):
        put_documents(engine, tenant, [DocumentInput(p, c) for p, c in docs[i:i + 200]], META)
    return time.perf_counter() - started


def _project(engine: Any, name: str) -> float:
    from bench.corpus import project

    return project(engine, name)[1]


def _count(engine: Any, sql: str, tenant: str) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        return conn.execute(text(sql), {"t": tenant}).scalar_one()


def _sections(engine: Any, tenant: str) -> int:
    return _count(engine, "SELECT count(*) FROM knowledge_sections WHERE tenant = :t", tenant)


def _vectors(engine: Any, tenant: str) -> int:
    return _count(engine, "SELECT count(*) FROM knowledge_section_vectors WHERE tenant = :t", tenant)


class Modes:
    """Switches the section-vectors projector of this process between lazy and eager (its one setting)."""

    def __init__(self) -> None:
        import projections.section_vectors as sv
        from infra.settings import get_settings, replace

        self.module, self.settings = sv, {m: replace(get_settings(), knowledge_embedding=m) for m in ("lazy", "eager")}

    def use(self, mode: str) -> None:
        self.module.get_settings = lambda: self.settings[mode]  # type: ignore[assignment]  # a bench-time patch


def _pool(engine: Any, tenant: str) -> Any:
    """The tenant's real section vectors, as rows of a matrix."""
    import numpy as np
    from sqlalchemy import text

    from infra.embedding import from_pgvector

    with engine.connect() as conn:
        rows = conn.execute(text("SELECT embedding::text FROM knowledge_section_vectors WHERE tenant = :t "
                                 "ORDER BY section_id"), {"t": tenant}).scalars().all()
    return np.stack([from_pgvector(r) for r in rows])


def seed_cache(engine: Any, tenant: str, texts: list[str], seed: int) -> float:
    """Each text's cached embedding set to a jittered copy of one of the tenant's real section vectors (the 2-core
    machine embeds ~10 texts/s under its shared load: the latency steps measure search, not the model)."""
    from bench.corpus import seed_embedding_cache
    from infra.settings import get_settings

    pool = _pool(engine, tenant)
    rng = random.Random(seed)
    return seed_embedding_cache(engine, tenant, get_settings().embedding.embedding_model, texts,
                                [rng.randrange(len(pool)) for _ in texts], pool, seed)


def load(engine: Any, modes: Modes, docs: list[tuple[str, str]], seeded: bool = False) -> dict[str, Any]:
    """The same documents into both tenants; eager's put embeds all, lazy's nothing (`seeded`: eager's embeddings
    come from the cache, seeded with jittered real vectors). Answers the work done."""
    from domain.knowledge.sections import split_sections

    work: dict[str, Any] = {}
    for tenant in ("eager", "lazy"):  # one after the other: the projector's mode applies to what it reads next
        if seeded and tenant == "eager":
            seed_cache(engine, tenant, [s.text for _, c in docs for s in split_sections(c)], len(docs))
        put_s = _put(engine, tenant, docs)
        knowledge_s = _project(engine, "knowledge")
        modes.use(tenant)
        vectors_s = _project(engine, "section_vectors")
        modes.use("lazy")
        work[tenant] = {"put_s": round(put_s, 1), "knowledge_projection_s": round(knowledge_s, 1),
                        "section_vectors_s": round(vectors_s, 1)}
    return work


def _multi(engine: Any, tenant: str, query: str, domains: tuple[str, ...] = ("knowledge",)) -> Any:
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.multi import MultiRequest, recall_multi
    from recall.scope import Scope

    settings = get_settings()
    return recall_multi(engine, get_embedder(settings.embedding.embedding_model), settings,
                        MultiRequest(Scope(tenant), query, domains, 10 if domains == ("knowledge",) else None), META)


def quality(engine: Any, queries: list[dict[str, Any]], ids: dict[str, list[Any]], total: dict[str, int],
            checkpoints: list[int]) -> dict[str, Any]:
    from domain.knowledge.handles import handle_section

    out: dict[str, Any] = {}
    for tenant in ("lazy", "eager"):
        hits: dict[str, list[int]] = {"shared": [], "paraphrase": []}
        coverage, vector_s = {}, 0.0
        for n, q in enumerate(queries, 1):
            answer = _multi(engine, tenant, q["query"])
            got = {handle_section(tenant, h.handle) for h in answer.buckets[0].results}
            hits[q["kind"]].append(int(bool(got & {ids[tenant][i] for i in q["relevant"]})))
            t0 = time.perf_counter()
            _project(engine, "section_vectors")  # the worker's turn: embeds what this recall returned (lazy)
            vector_s += time.perf_counter() - t0
            if n in checkpoints:
                coverage[n] = round(_vectors(engine, tenant) / total[tenant], 4)
        out[tenant] = {"recall_at_10": {k: round(sum(v) / len(v), 3) for k, v in hits.items()},
                       "queries": {k: len(v) for k, v in hits.items()}, "coverage_after": coverage,
                       "section_vectors_s_during_queries": round(vector_s, 1),
                       "vectors": _vectors(engine, tenant), "sections": total[tenant]}
    return out


def latency(engine: Any, tenant: str, queries: list[dict[str, Any]], domains: tuple[str, ...] = ("knowledge",),
            warmup: int = 10) -> dict[str, Any]:
    wall, served = [], []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        answer = _multi(engine, tenant, q["query"], domains)
        if i >= warmup:
            wall.append((time.perf_counter() - t0) * 1000)
            served.append(answer.latency_ms)
    return {"queries": len(wall), "wall_ms": latency_stats(wall), "served_ms": latency_stats(served)}


def run(n_sections: int, n_queries: int, sizes: list[int], n_memories: int, real_limit: int,
        console: Console | None = None, output: Path | None = None) -> dict[str, Any]:
    console = wide(console or Console())
    info = machine()
    console.print(f"[bold]knowledge[/bold]: lazy vs eager, {n_sections:,} generated sections + real docs, "
                  f"{n_queries} queries; latency at {sizes}")
    console.print(machine_line(info))
    docs, sections = generated_library(n_sections, 1, "gen")
    real = real_documents(real_limit)
    _check_paraphrases_unseen(docs)
    queries = make_queries(sections, n_queries, 2)
    with start_stack() as stack:
        from domain.events import section_id
        from domain.knowledge.sections import split_sections
        from infra.db import get_engine
        from infra.embedding import get_embedder
        from infra.settings import get_settings

        engine = get_engine()
        get_embedder(get_settings().embedding.embedding_model).warm()
        modes = Modes()
        work = load(engine, modes, real + docs)
        total = {t: _sections(engine, t) for t in ("lazy", "eager")}
        console.print(f"  library: {len(real)} real documents + {len(docs)} generated, {total['lazy']:,} sections "
                      f"per tenant; load {work}")
        heading_hash = {}
        for path, content in docs:
            for s in split_sections(content):
                heading_hash[(path, s.heading_path)] = s.content_hash
        ids = {t: [section_id(t, None, p, h, heading_hash[(p, h)]) for p, h, _ in sections] for t in ("lazy", "eager")}
        checkpoints = sorted({n for n in (10, 50, 100, 200, 400, 800, n_queries) if n <= n_queries})
        q = quality(engine, queries, ids, total, checkpoints)
        for tenant in ("lazy", "eager"):
            console.print(f"  {tenant}: R@10 {q[tenant]['recall_at_10']}, coverage {q[tenant]['coverage_after']}")
        embedded = {t: _count(engine, "SELECT count(*) FROM embedding_cache WHERE tenant = :t", t)
                    for t in ("lazy", "eager")}
        eager_s = work["eager"]["section_vectors_s"] + q["eager"]["section_vectors_s_during_queries"]
        lazy_s = work["lazy"]["section_vectors_s"] + q["lazy"]["section_vectors_s_during_queries"]
        saved = {"texts_embedded": embedded, "section_vectors_s": {"eager": round(eager_s, 1),
                                                                   "lazy": round(lazy_s, 1)},
                 "seconds_saved_by_lazy": round(eager_s - lazy_s, 1),
                 "texts_saved_by_lazy": embedded["eager"] - embedded["lazy"]}
        console.print(f"  embedding work: {saved}")

        steps = []
        grown = n_sections
        lat_queries = make_queries(sections, 110, 3)
        for size in sizes:
            extra = max(0, size - total["lazy"])
            if extra:
                more, _ = generated_library(extra + SECTIONS_PER_DOC, 100 + size, f"grow-{size}")
                t0 = time.perf_counter()
                work_more = load(engine, modes, more, seeded=True)
                console.print(f"  grew by {len(more) * SECTIONS_PER_DOC:,} sections in {time.perf_counter() - t0:.0f}s:"
                              f" {work_more}")
                grown += len(more) * SECTIONS_PER_DOC
            step: dict[str, Any] = {"sections": {t: _sections(engine, t) for t in ("lazy", "eager")},
                                    "vectors": {t: _vectors(engine, t) for t in ("lazy", "eager")}}
            for tenant in ("lazy", "eager"):
                step[tenant] = latency(engine, tenant, lat_queries)
            steps.append(step)
            console.print(f"  {step['sections']['lazy']:,} sections: lazy p50 {step['lazy']['wall_ms']['p50']} ms "
                          f"p95 {step['lazy']['wall_ms']['p95']} ms; eager p50 {step['eager']['wall_ms']['p50']} "
                          f"ms p95 {step['eager']['wall_ms']['p95']} ms")

        multi: dict[str, Any] = {}
        if n_memories:
            from bench.corpus import append_memories, sentences

            texts = [f"lazy: {t}" for t in sentences(n_memories)]
            seed_cache(engine, "lazy", texts, 5)  # jittered section vectors: a latency figure, not a quality one
            append_memories(engine, "lazy", texts, agents=10)
            for name in ("memories", "keyword", "vectors", "activity", "edges", "entities"):
                _project(engine, name)
            multi = latency(engine, "lazy", lat_queries, domains=())
            multi["memories"] = n_memories
            multi["sections"] = _sections(engine, "lazy")
            console.print(f"  recall/multi (memories + knowledge, lazy): p50 {multi['wall_ms']['p50']} ms "
                          f"p95 {multi['wall_ms']['p95']} ms")

    table = Table(title="Knowledge: lazy vs eager (recall_multi, domain knowledge, k = 10)")
    for col in ("mode", "R@10 shared", "R@10 paraphrase", "coverage after N queries", "texts embedded",
                "section-vector s"):
        table.add_column(col)
    for tenant in ("lazy", "eager"):
        table.add_row(tenant, str(q[tenant]["recall_at_10"]["shared"]), str(q[tenant]["recall_at_10"]["paraphrase"]),
                      ", ".join(f"{n}: {c:.1%}" for n, c in q[tenant]["coverage_after"].items()),
                      f"{embedded[tenant]:,}", str(saved["section_vectors_s"][tenant]))
    console.print(table)
    result = {"bench": "knowledge", "machine": info, "database": stack["database"],
              "library": {"generated_sections": n_sections, "real_documents": len(real),
                          "sections_per_tenant": total["lazy"], "concepts": len(CONCEPTS)},
              "queries": n_queries, "load": work, "quality": q, "embedding": saved, "latency": steps,
              "recall_multi_with_memories": multi,
              "command": f"python -m bench.knowledge --sections {n_sections} --queries {n_queries} --sizes "
                         f"{' '.join(map(str, sizes))} --memories {n_memories} --real {real_limit}"}
    saved_to = save_result("knowledge", result, output)
    console.print(f"saved {saved_to}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=int, default=3000, help="generated sections (the queries' targets)")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000], help="sections per tenant for latency")
    parser.add_argument("--memories", type=int, default=2000, help="memories for the recall/multi figure (0: none)")
    parser.add_argument("--real", type=int, default=1000, help="at most this many real dependency documents")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    run(args.sections, args.queries, args.sizes, args.memories, args.real, output=args.output)


if __name__ == "__main__":
    main()
