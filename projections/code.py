"""Code intelligence's read models: files, their symbols and call edges, and BM25 postings over symbols.

Only applies events; decides nothing (the parse is a pure function of the file's text, domain/code/symbols.py).

| event           | effect                                                                                        |
| --------------- | --------------------------------------------------------------------------------------------- |
| CodeFilePut     | the file row and its text (code_file_texts, by content hash); its held symbols become          |
|                 | 'replaced' (kept, with their postings) and the new parse's are held (unchanged content: only   |
|                 | its version); its calls replaced; a symbol keeps the reference count, creation time and decay  |
|                 | status (with its reactivation) its qualified name had (a new name: 0, the event's time,        |
|                 | active); a symbol id held before (the file put again with an earlier text) is held again       |
| CodeFileRemoved | the file row and its calls deleted; its held symbols become 'removed' (kept)                   |
| CodeSymbolSta-  | the file's symbols of that qualified name still in from_status move to to_status,              |
| tusChanged      | status_ref_count = the decision's inputs.ref_count (workers/reference_decay.py)                |
| RecallServed    | each "code" result's held symbol: ref_count + 1, last_referenced_at = the event's time         |
| ResultDrilled   | its "code" symbol likewise                                                                    |

Dropped symbols are kept in code_symbols (knowledge's model for its sections), not copied into a history table:
the as-of search then needs no second set of postings, and a read as of a position is the current read with each
symbol's status taken from code_symbol_versions (readmodels/item_domains.py SYMBOLS.versions: every file
event snapshots the symbols it ended or held). The price: every current read of code_symbols leaves 'replaced' and
'removed' out (domain/code/status.py held_sql), and the BM25 statistics count the kept symbols, as knowledge's
count its replaced sections.

Calls are resolved (domain/code/resolve.py) at the end of each batch, for every call whose target name is one a
changed file defined, defines or calls: a call's resolution depends only on the repository's symbols of that
name, so each call is resolved against the repository as it stands after the batch, however batches are cut,
and a rebuild gives the same rows.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import structlog
from sqlalchemy import Connection, text

from domain.code.resolve import CallSite, SymbolRef, resolve, target_name
from domain.code.status import held_sql
from domain.code.symbols import parse_file
from domain.code.terms import symbol_terms
from domain.events import (
    CodeFilePut,
    CodeFileRemoved,
    CodeSymbolStatusChanged,
    EventSchema,
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    code_file_stream,
)
from projections.base import OneByOne, apply_in_order, types_of
from projections.postings import PostingsTables, index
from projections.references import ReferencedUnits
from projections.unit_status import status_changed
from readmodels.item_domains import SYMBOLS

log = structlog.get_logger(__name__)
_NAMESPACE = uuid.UUID("5d7b1f0e-2c4a-4e8b-b1d3-7f9a0c6e4b21")

SYMBOL_POSTINGS = PostingsTables(SYMBOLS.postings)
SYMBOL_REFERENCES = ReferencedUnits(SYMBOLS)
_HELD = held_sql("code_symbols")

_FILE = text("SELECT content_hash FROM code_files WHERE tenant = :tenant AND repo = :repo AND path = :path")
_UPSERT_FILE = text("""
INSERT INTO code_files (tenant, repo, path, language, module, content, content_hash, version, symbols, calls,
                        parse_errors, first_error_line, updated_at, position)
VALUES (:tenant, :repo, :path, :language, :module, :content, :content_hash, :version, :symbols, :calls,
        :parse_errors, :first_error_line, :at, :position)
ON CONFLICT (tenant, repo, path) DO UPDATE SET
    language = EXCLUDED.language, module = EXCLUDED.module, content = EXCLUDED.content,
    content_hash = EXCLUDED.content_hash, version = EXCLUDED.version, symbols = EXCLUDED.symbols,
    calls = EXCLUDED.calls, parse_errors = EXCLUDED.parse_errors, first_error_line = EXCLUDED.first_error_line,
    updated_at = EXCLUDED.updated_at, position = EXCLUDED.position
""")
_TOUCH_FILE = text("""
UPDATE code_files SET version = :version, updated_at = :at, position = :position
WHERE tenant = :tenant AND repo = :repo AND path = :path
""")
_OLD_SYMBOLS = text(f"""
SELECT symbol_id, name, qualified_name, length, ref_count, last_referenced_at, created_at, status, status_ref_count,
       last_reactivated_at
FROM code_symbols
WHERE tenant = :tenant AND repo = :repo AND path = :path AND {_HELD} ORDER BY ordinal
""")
_END_SYMBOLS = text(f"""
UPDATE code_symbols SET status = :status WHERE tenant = :tenant AND repo = :repo AND path = :path AND {_HELD}
""")
_KNOWN = text("SELECT symbol_id FROM code_symbols WHERE tenant = :tenant AND symbol_id = ANY(CAST(:ids AS uuid[]))")
_TEXT = text("""
INSERT INTO code_file_texts (tenant, repo, path, content_hash, content)
VALUES (:tenant, :repo, :path, :content_hash, :content) ON CONFLICT DO NOTHING
""")
_DELETE_CALLS = text("DELETE FROM code_calls WHERE tenant = :tenant AND repo = :repo AND path = :path")
_DELETE_FILE = text("DELETE FROM code_files WHERE tenant = :tenant AND repo = :repo AND path = :path")
_INSERT_SYMBOLS = text("""
INSERT INTO code_symbols (tenant, symbol_id, repo, path, ordinal, qualified_name, name, kind, parent, signature, doc,
                          start_line, end_line, content_hash, length, ref_count, last_referenced_at, created_at,
                          status, status_ref_count, last_reactivated_at)
SELECT :tenant, b.id, :repo, :path, b.ordinal, b.qn, b.name, b.kind, b.parent, b.signature, b.doc, b.start_line,
       b.end_line, :content_hash, b.length, b.refs, b.last_ref, b.created, b.status, b.status_refs, b.reactivated
FROM unnest(CAST(:ids AS uuid[]), CAST(:ordinals AS int[]), CAST(:qns AS text[]), CAST(:names AS text[]),
            CAST(:kinds AS text[]), CAST(:parents AS text[]), CAST(:signatures AS text[]), CAST(:docs AS text[]),
            CAST(:starts AS int[]), CAST(:ends AS int[]), CAST(:lengths AS int[]), CAST(:refs AS int[]),
            CAST(:last_refs AS timestamptz[]), CAST(:created AS timestamptz[]), CAST(:statuses AS text[]),
            CAST(:status_refs AS int[]), CAST(:reactivated AS timestamptz[]))
     AS b(id, ordinal, qn, name, kind, parent, signature, doc, start_line, end_line, length, refs, last_ref, created,
          status, status_refs, reactivated)
ON CONFLICT (tenant, symbol_id) DO UPDATE SET
    ordinal = EXCLUDED.ordinal, qualified_name = EXCLUDED.qualified_name, name = EXCLUDED.name, kind = EXCLUDED.kind,
    parent = EXCLUDED.parent, signature = EXCLUDED.signature, doc = EXCLUDED.doc, start_line = EXCLUDED.start_line,
    end_line = EXCLUDED.end_line, length = EXCLUDED.length, ref_count = EXCLUDED.ref_count,
    last_referenced_at = EXCLUDED.last_referenced_at, created_at = EXCLUDED.created_at, status = EXCLUDED.status,
    status_ref_count = EXCLUDED.status_ref_count, last_reactivated_at = EXCLUDED.last_reactivated_at
""")
_INSERT_CALLS = text("""
INSERT INTO code_calls (tenant, repo, path, ordinal, caller, caller_class, callee, qualifier, line, import_target,
                        target_name)
SELECT :tenant, :repo, :path, * FROM unnest(CAST(:ordinals AS int[]), CAST(:callers AS text[]),
       CAST(:classes AS text[]), CAST(:callees AS text[]), CAST(:qualifiers AS text[]), CAST(:lines AS int[]),
       CAST(:targets AS text[]), CAST(:target_names AS text[]))
""")
_CALLS_TO = text("""
SELECT path, ordinal, caller_class, callee, qualifier, import_target FROM code_calls
WHERE tenant = :tenant AND repo = :repo AND target_name = ANY(:names)
""")
_SYMBOLS_NAMED = text(f"""
SELECT qualified_name, name, path, parent FROM code_symbols
WHERE tenant = :tenant AND repo = :repo AND name = ANY(:names) AND {_HELD}
""")
_RESOLVE = text("""
UPDATE code_calls c SET resolved_name = b.rn, resolved_path = b.rp, candidates = b.n, how = b.how
FROM unnest(CAST(:paths AS text[]), CAST(:ordinals AS int[]), CAST(:rns AS text[]), CAST(:rps AS text[]),
            CAST(:ns AS int[]), CAST(:hows AS text[])) AS b(path, ordinal, rn, rp, n, how)
WHERE c.tenant = :tenant AND c.repo = :repo AND c.path = b.path AND c.ordinal = b.ordinal
""")

Dirty = dict[tuple[str, str], set[str]]  # (tenant, repo) → names whose calls are to be resolved again


def symbol_id(tenant: str, repo: str, path: str, content_hash: str, ordinal: int) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, "\x00".join((tenant, repo, path, content_hash, str(ordinal))))


def _on_own_stream(event: RecordedEvent, repo: str, path: str) -> bool:
    """The write path puts a file's events on its own stream; one elsewhere is ignored by every run alike."""
    if event.stream_id == code_file_stream(repo, path):
        return True
    log.warning("code.event_off_stream", position=event.position, stream_id=event.stream_id)
    return False


def _drop(conn: Connection, tenant: str, repo: str, path: str, status: str) -> Sequence[Any]:
    """End a file's held symbols (kept, with their postings, in `status`) and delete its calls; answers the
    symbols' rows as they were."""
    key = {"tenant": tenant, "repo": repo, "path": path}
    old = conn.execute(_OLD_SYMBOLS, key).all()
    if old:
        conn.execute(_END_SYMBOLS, {**key, "status": status})
    conn.execute(_DELETE_CALLS, key)
    return old


def _snapshot(conn: Connection, event: RecordedEvent, repo: str, path: str, ids: Sequence[Any]) -> None:
    """A version for each of the file's symbols the event ended or held (`ids`): only those can have changed, so a
    file put many times is not rescanned whole."""
    if ids:
        SYMBOLS.versions.snapshot(conn, event.tenant, event.position,
                                      "u.repo = :repo AND u.path = :path AND u.symbol_id = ANY(CAST(:ids AS uuid[]))",
                                      {"repo": repo, "path": path, "ids": sorted(str(i) for i in ids)})


def _put(conn: Connection, event: RecordedEvent, p: CodeFilePut, dirty: Dirty) -> None:
    if not _on_own_stream(event, p.repo, p.path):
        return
    tenant = event.tenant
    key = {"tenant": tenant, "repo": p.repo, "path": p.path, "version": event.stream_version,
           "at": event.recorded_at, "position": event.position}
    if conn.execute(_FILE, key).scalar() == p.content_hash:
        conn.execute(_TOUCH_FILE, key)
        return
    old = _drop(conn, tenant, p.repo, p.path, "replaced")
    conn.execute(_TEXT, {**key, "content_hash": p.content_hash, "content": p.content})
    carried: dict[str, Any] = {}
    for r in old:
        carried.setdefault(r.qualified_name, r)
    parsed = parse_file(p.path, p.content, p.language)
    ids = [symbol_id(tenant, p.repo, p.path, p.content_hash, i) for i in range(len(parsed.symbols))]
    tfs = [symbol_terms(s.qualified_name, s.signature, s.doc) for s in parsed.symbols]
    if parsed.symbols:
        ss = parsed.symbols
        known = set(conn.execute(_KNOWN, {"tenant": tenant, "ids": [str(i) for i in ids]}).scalars())
        conn.execute(_INSERT_SYMBOLS, {
            **key, "content_hash": p.content_hash, "ids": ids, "ordinals": list(range(len(ss))),
            "qns": [s.qualified_name for s in ss], "names": [s.name for s in ss], "kinds": [s.kind for s in ss],
            "parents": [s.parent for s in ss], "signatures": [s.signature for s in ss], "docs": [s.doc for s in ss],
            "starts": [s.start_line for s in ss], "ends": [s.end_line for s in ss],
            "lengths": [sum(t.values()) for t in tfs],
            **_carried_columns([carried.get(s.qualified_name) for s in ss], event.recorded_at)})
        # A symbol held before (an earlier text put again) kept its postings.
        index(conn, SYMBOL_POSTINGS, tenant, [(i, t) for i, t in zip(ids, tfs, strict=True) if i not in known])
    if parsed.calls:
        cs = parsed.calls
        sites = [CallSite(p.path, c.caller_class, c.callee, c.qualifier, c.import_target) for c in cs]
        conn.execute(_INSERT_CALLS, {
            **key, "ordinals": list(range(len(cs))), "callers": [c.caller for c in cs],
            "classes": [c.caller_class for c in cs], "callees": [c.callee for c in cs],
            "qualifiers": [c.qualifier for c in cs], "lines": [c.line for c in cs],
            "targets": [c.import_target for c in cs], "target_names": [target_name(s) for s in sites]})
        dirty[(tenant, p.repo)].update(target_name(s) for s in sites)
    dirty[(tenant, p.repo)].update({r.name for r in old} | {s.name for s in parsed.symbols})
    conn.execute(_UPSERT_FILE, {**key, "language": p.language, "module": parsed.module, "content": p.content,
                                "content_hash": p.content_hash, "symbols": len(parsed.symbols),
                                "calls": len(parsed.calls), "parse_errors": parsed.errors,
                                "first_error_line": parsed.first_error_line})
    _snapshot(conn, event, p.repo, p.path, [r.symbol_id for r in old] + ids)


def _carried_columns(previous: list[Any], at: Any) -> dict[str, list[Any]]:
    """Per new symbol, what its qualified name's previous row in the file carries over (a reference count, when
    it came, its decay status), or a new symbol's start (none, `at`, active)."""
    return {"refs": [r.ref_count if r else 0 for r in previous],
            "last_refs": [r.last_referenced_at if r else None for r in previous],
            "created": [r.created_at if r else at for r in previous],
            "statuses": [r.status if r else "active" for r in previous],
            "status_refs": [r.status_ref_count if r else None for r in previous],
            "reactivated": [r.last_reactivated_at if r else None for r in previous]}


def _removed(conn: Connection, event: RecordedEvent, p: CodeFileRemoved, dirty: Dirty) -> None:
    if not _on_own_stream(event, p.repo, p.path):
        return
    old = _drop(conn, event.tenant, p.repo, p.path, "removed")
    conn.execute(_DELETE_FILE, {"tenant": event.tenant, "repo": p.repo, "path": p.path})
    _snapshot(conn, event, p.repo, p.path, [r.symbol_id for r in old])
    dirty[(event.tenant, p.repo)].update(r.name for r in old)


def _resolve(conn: Connection, dirty: Dirty) -> None:
    for (tenant, repo), names in sorted(dirty.items()):
        if not names:
            continue
        key = {"tenant": tenant, "repo": repo, "names": sorted(names)}
        by_name: dict[str, list[SymbolRef]] = defaultdict(list)
        for r in conn.execute(_SYMBOLS_NAMED, key):
            by_name[r.name].append(SymbolRef(r.qualified_name, r.name, r.path, r.parent))
        out: dict[str, list[Any]] = {k: [] for k in ("paths", "ordinals", "rns", "rps", "ns", "hows")}
        for c in conn.execute(_CALLS_TO, key):
            site = CallSite(c.path, c.caller_class, c.callee, c.qualifier, c.import_target)
            res = resolve(site, by_name.get(target_name(site), []))
            for k, v in (("paths", c.path), ("ordinals", c.ordinal), ("rns", res.qualified_name),
                         ("rps", res.file), ("ns", res.candidates), ("hows", res.how)):
                out[k].append(v)
        if out["paths"]:
            conn.execute(_RESOLVE, {"tenant": tenant, "repo": repo, **out})


# The file handlers take the batch's Dirty as a keyword too (bound in apply).
_FILE_HANDLERS: dict[type[EventSchema], Callable[..., None]] = {
    CodeFilePut: _put, CodeFileRemoved: _removed}
_HANDLERS: dict[type[EventSchema], Callable[..., None]] = {
    **_FILE_HANDLERS, CodeSymbolStatusChanged: status_changed(SYMBOLS), RecallServed: SYMBOL_REFERENCES.served,
    ResultDrilled: SYMBOL_REFERENCES.drilled}


class CodeProjector:
    name = SYMBOLS.projection
    tables = ("code_files", "code_symbols", "code_calls", *SYMBOLS.postings.tables, "code_symbol_versions",
              "code_file_texts")
    handlers = _HANDLERS
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        dirty: Dirty = defaultdict(set)
        one_by_one: OneByOne = {**_HANDLERS, **{cls: partial(h, dirty=dirty) for cls, h in _FILE_HANDLERS.items()}}
        apply_in_order(conn, events, one_by_one)
        _resolve(conn, dirty)


__all__ = ["CodeProjector", "symbol_id"]
