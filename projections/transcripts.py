"""Transcripts' read models: one row per transcript, its chunks, and BM25 postings over chunks.

Only applies events; decides nothing. A chunk is one row per (transcript, position, content): a re-put keeps the
rows (and postings) of the chunks it holds unchanged, inserts and indexes only the new ones, and marks 'replaced'
the ones it no longer holds (the grown last chunk of an append); one it holds again is active again. A chunk the
current version holds is active, dormant or archived (the decay sweep's decisions, kept across re-puts). Postings
are kept for every chunk ever put (recall filters by status), so an old handle still drills to its exact text.

| event               | effect                                                                                  |
| ------------------- | --------------------------------------------------------------------------------------- |
| TranscriptChunksPut | the transcript row (version = the event's stream version); its chunks placed in order:  |
|                     | one already held at that position with that text keeps its row (its counts of lines and |
|                     | turns; rewritten only when it moved or was replaced), a new one is parsed from its text |
|                     | (this event's, else an earlier event's in the log) and indexed                          |
| TranscriptChunkSta- | a chunk still in from_status moves to to_status, status_ref_count = the decision's      |
| tusChanged          | inputs.ref_count (the decay sweep's decision, workers/reference_decay.py)               |
| RecallServed        | each "transcripts" result's chunk: ref_count + 1, last_referenced_at = the event's time |
| ResultDrilled       | its "transcripts" chunk likewise                                                        |

After each of the first two, the transcript's (or the chunk's) changed chunks get a recorded-time version at the
event's position (transcript_chunk_versions: readmodels/unit_versions.py), what `as_of` reads.

An event whose chunks cannot all be found, or do not parse as whole turns (only a hand-appended one could), is
skipped with a warning by every run alike. Every time comes from the event, so a rebuild gives the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Connection, text

from domain.events import RecallServed, RecordedEvent, ResultDrilled, TranscriptChunksPut, TranscriptChunkStatusChanged
from domain.text import term_frequencies
from domain.transcripts.ids import chunk_id, transcript_stream
from domain.transcripts.parse import TranscriptError, Turn, parse_chunk, timestamp_of
from eventstore.stream import stream_pages
from projections.base import OneByOne, apply_in_order, types_of
from projections.postings import PostingsTables, index
from projections.references import ReferencedUnits
from projections.unit_status import status_changed
from readmodels.item_domains import CHUNKS

log = structlog.get_logger(__name__)

CHUNK_POSTINGS = PostingsTables(CHUNKS.postings)
CHUNK_REFERENCES = ReferencedUnits(CHUNKS)

_TRANSCRIPT = text("""
INSERT INTO transcripts (tenant, transcript_id, version, content_hash, format, chunks, lines, turns, bytes,
                         started_at, ended_at, updated_at, position)
VALUES (:tenant, :transcript_id, :version, :content_hash, :format, :chunks, :lines, :turns,
        (SELECT coalesce(sum(octet_length(c.text)), 0) FROM transcript_chunks c
         WHERE c.tenant = :tenant AND c.transcript_id = :transcript_id AND c.status <> 'replaced'),
        :started_at, :ended_at, :at, :position)
ON CONFLICT (tenant, transcript_id) DO UPDATE SET
    version = EXCLUDED.version, content_hash = EXCLUDED.content_hash, format = EXCLUDED.format,
    chunks = EXCLUDED.chunks, lines = EXCLUDED.lines, turns = EXCLUDED.turns, bytes = EXCLUDED.bytes,
    started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at, updated_at = EXCLUDED.updated_at,
    position = EXCLUDED.position
""")
_TEXTS = text("""
SELECT DISTINCT ON (content_hash) content_hash, text FROM transcript_chunks
WHERE tenant = :tenant AND transcript_id = :transcript_id AND content_hash = ANY(:hashes)
""")
_KNOWN = text("""
SELECT chunk_id, status, first_line, last_line, first_turn, last_turn, started_at, ended_at FROM transcript_chunks
WHERE tenant = :tenant AND chunk_id = ANY(CAST(:ids AS uuid[]))
""")
# The current version's chunks: every status but replaced (active, or dormant / archived by the decay sweep).
_CURRENT = text("""
SELECT chunk_id FROM transcript_chunks WHERE tenant = :tenant AND transcript_id = :transcript_id
  AND status <> 'replaced'
""")
_INSERT = text("""
INSERT INTO transcript_chunks (tenant, chunk_id, transcript_id, ord, content_hash, first_version, version, text,
                               length, first_line, last_line, first_turn, last_turn, started_at, ended_at, status,
                               created_at)
SELECT :tenant, b.chunk_id, :transcript_id, b.ord, b.content_hash, :version, :version, b.text, b.length,
       b.first_line, b.last_line, b.first_turn, b.last_turn, b.started_at, b.ended_at, 'active', :at
FROM unnest(CAST(:ids AS uuid[]), CAST(:ords AS int[]), CAST(:hashes AS text[]), CAST(:texts AS text[]),
            CAST(:lengths AS int[]), CAST(:first_lines AS int[]), CAST(:last_lines AS int[]),
            CAST(:first_turns AS int[]), CAST(:last_turns AS int[]), CAST(:starts AS timestamptz[]),
            CAST(:ends AS timestamptz[]))
     AS b(chunk_id, ord, content_hash, text, length, first_line, last_line, first_turn, last_turn, started_at,
          ended_at)
""")
# Held again by the new version (at the same position, with the same text) after being replaced (active again), or
# moved (its decay status kept): its ranges follow the version, and `version` says which version placed it so.
_KEEP = text("""
UPDATE transcript_chunks c SET version = :version,
    status = CASE WHEN c.status = 'replaced' THEN 'active' ELSE c.status END, first_line = b.first_line,
    last_line = b.last_line, first_turn = b.first_turn, last_turn = b.last_turn
FROM unnest(CAST(:ids AS uuid[]), CAST(:first_lines AS int[]), CAST(:last_lines AS int[]),
            CAST(:first_turns AS int[]), CAST(:last_turns AS int[]))
     AS b(chunk_id, first_line, last_line, first_turn, last_turn)
WHERE c.tenant = :tenant AND c.chunk_id = b.chunk_id
""")
_REPLACED = text("""
UPDATE transcript_chunks SET status = 'replaced' WHERE tenant = :tenant AND chunk_id = ANY(CAST(:ids AS uuid[]))
""")


def chunk_texts(conn: Connection, event: RecordedEvent, p: TranscriptChunksPut, hashes: set[str]) -> dict[str, str]:
    """The text of each of `hashes` (of the version's chunks): carried by the event, else held by this transcript's
    rows, else carried by an earlier event of its stream (a chunk dropped by one version and held again later)."""
    texts = {c.content_hash: c.text for c in p.chunks if c.content_hash in hashes}
    missing = sorted(hashes - set(texts))
    if missing:
        texts.update(dict(conn.execute(_TEXTS, {"tenant": event.tenant, "transcript_id": p.transcript_id,
                                                "hashes": missing}).all()))
        missing = [h for h in missing if h not in texts]
    wanted = set(missing)
    # Page by page, oldest first (the first carrying a hash gives its text), no further than this event and only
    # until every hash is found: a page is held, not the stream.
    for page in (stream_pages(conn, event.tenant, event.stream_id, [TranscriptChunksPut]) if wanted else ()):
        for earlier in page:
            if earlier.stream_version >= event.stream_version:
                return texts
            for c in earlier.data.get("chunks", ()):
                if c["content_hash"] in wanted:
                    texts.setdefault(c["content_hash"], c["text"])
        wanted -= set(texts)
        if not wanted:
            break
    return texts


def _ends(turns: list[Turn]) -> tuple[datetime | None, datetime | None]:
    stamps = [s for s in (timestamp_of(t.timestamp) for t in turns) if s is not None]
    return (stamps[0], stamps[-1]) if stamps else (None, None)


_RANGES = ("first_line", "last_line", "first_turn", "last_turn")


def _placed(conn: Connection, event: RecordedEvent, p: TranscriptChunksPut) -> list[dict[str, Any]] | None:
    """Each chunk of the version at its place: line and turn ranges counted from the start. A chunk this
    transcript already holds at that position with that text keeps its row's counts (nothing parsed); the others
    are parsed from their text. None (logged) when a text is not in the log or is not whole turns."""
    tenant, tid = event.tenant, p.transcript_id
    ids = [chunk_id(tenant, tid, o, h) for o, h in enumerate(p.chunk_hashes)]
    known = {r.chunk_id: r for r in conn.execute(_KNOWN, {"tenant": tenant, "ids": [str(i) for i in ids]})}
    texts = chunk_texts(conn, event, p, {h for i, h in zip(ids, p.chunk_hashes, strict=True) if i not in known})
    rows: list[dict[str, Any]] = []
    line = turn = 0
    for ord_, (cid, hash_) in enumerate(zip(ids, p.chunk_hashes, strict=True)):
        row = known.get(cid)
        if row is not None:
            n_lines, n_turns = row.last_line - row.first_line + 1, row.last_turn - row.first_turn + 1
            placed = {"id": cid, "ord": ord_, "hash": hash_, "known": row, "start": row.started_at,
                      "end": row.ended_at, "first_line": line + 1, "last_line": line + n_lines,
                      "first_turn": turn, "last_turn": turn + n_turns - 1}
        elif hash_ not in texts:
            log.warning("transcripts.chunk_not_in_log", position=event.position, transcript_id=tid, ord=ord_)
            return None
        else:
            try:
                turns = parse_chunk(texts[hash_], p.format, line, turn)
            except TranscriptError as exc:
                log.warning("transcripts.chunk_unparseable", position=event.position, transcript_id=tid, ord=ord_,
                            error=str(exc))
                return None
            started, ended = _ends(turns)
            placed = {"id": cid, "ord": ord_, "hash": hash_, "known": None, "text": texts[hash_], "start": started,
                      "end": ended, "first_line": turns[0].first_line, "last_line": turns[-1].last_line,
                      "first_turn": turns[0].index, "last_turn": turns[-1].index,
                      "index_text": "\n".join(t.rendered() for t in turns)}
        rows.append(placed)
        line, turn = placed["last_line"], placed["last_turn"] + 1
    return rows


def _put(conn: Connection, event: RecordedEvent, p: TranscriptChunksPut) -> None:
    tenant, version, tid = event.tenant, event.stream_version, p.transcript_id
    if event.stream_id != transcript_stream(tid):
        log.warning("transcripts.event_off_stream", position=event.position, stream_id=event.stream_id)
        return
    rows = _placed(conn, event, p)
    if rows is None:
        return
    base = {"tenant": tenant, "transcript_id": tid, "version": version, "at": event.recorded_at}
    current = set(conn.execute(_CURRENT, base).scalars())
    new = [r for r in rows if r["known"] is None]
    # Rewritten only when placed anew: held again (replaced before) or moved (an earlier chunk's size changed).
    moved = [r for r in rows if r["known"] is not None and (r["known"].status == "replaced" or any(
        getattr(r["known"], k) != r[k] for k in _RANGES))]
    dropped = sorted(str(i) for i in current - {r["id"] for r in rows})
    if dropped:
        conn.execute(_REPLACED, {"tenant": tenant, "ids": dropped})
    if moved:
        conn.execute(_KEEP, {**base, "ids": [r["id"] for r in moved],
                             **{f"{k}s": [r[k] for r in moved] for k in _RANGES}})
    if new:
        tfs = [term_frequencies(r["index_text"]) for r in new]
        conn.execute(_INSERT, {**base, "ids": [r["id"] for r in new], "ords": [r["ord"] for r in new],
                               "hashes": [r["hash"] for r in new], "texts": [r["text"] for r in new],
                               "lengths": [sum(t.values()) for t in tfs], "starts": [r["start"] for r in new],
                               "ends": [r["end"] for r in new], **{f"{k}s": [r[k] for r in new] for k in _RANGES}})
        index(conn, CHUNK_POSTINGS, tenant, [(r["id"], t) for r, t in zip(new, tfs, strict=True)])
    starts = [r["start"] for r in rows if r["start"] is not None]
    ends = [r["end"] for r in rows if r["end"] is not None]
    conn.execute(_TRANSCRIPT, {**base, "content_hash": p.content_hash, "format": p.format, "chunks": len(rows),
                               "lines": rows[-1]["last_line"], "turns": rows[-1]["last_turn"] + 1,
                               "started_at": starts[0] if starts else None,
                               "ended_at": ends[-1] if ends else None, "position": event.position})
    CHUNKS.versions.snapshot(conn, tenant, event.position, "u.transcript_id = :transcript_id", {"transcript_id": tid})


_ONE_BY_ONE: OneByOne = {TranscriptChunksPut: _put, TranscriptChunkStatusChanged: status_changed(CHUNKS),
                         RecallServed: CHUNK_REFERENCES.served, ResultDrilled: CHUNK_REFERENCES.drilled}


class TranscriptsProjector:
    name = CHUNKS.projection
    tables = ("transcripts", "transcript_chunks", *CHUNKS.postings.tables, "transcript_chunk_versions")
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE)


__all__ = ["TranscriptsProjector", "chunk_texts"]
