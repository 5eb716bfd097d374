"""Crypto-shredding at the log's edge (docs/forget.md): the one place event content is sealed and opened.

At append, the content fields of a content-bearing event (SEALED: the text a producer wrote, a recall's query, a
deep recall's answer, ...) are encrypted with AES-256-GCM under the data key of the event's (tenant, stream), kept in
subject_keys; the rest of the payload (ids, scope, hashes, statuses) stays plain, so the log's SQL and the
privacy gate read it as before. `_sealed` in a stored payload marks it: an event without it (every event written
before this codec) reads as it was stored.

On read, a sealed event whose key exists is opened back to the payload it was appended with. One whose key was
destroyed (POST /v1/forget) is forgotten: a projector's feed (`keep_forgotten`) gets a ContentForgotten in its
place, which keeps its position and which no handler applies, so a rebuild skips it; a stream read leaves it out,
as if it had never been written.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, text

from domain.events import (
    BlindSpotRegistered,
    CodeFilePut,
    ContentForgotten,
    DeepRecallServed,
    DeepRecallStored,
    DocumentPut,
    EventSchema,
    MemoriesMerged,
    MemoryAdmitted,
    MemoryRecorded,
    MemoryReinforced,
    MemorySuperseded,
    NewEvent,
    RecallServed,
    RecordedEvent,
    ResultDrilled,
    SessionMessagesAppended,
    TranscriptChunksPut,
)

SEAL = "_sealed"  # the stored payload's marker: {"key": key_id, "nonce": b64, "ct": b64}
# Per type, the fields that carry what someone wrote or asked (content, free text, producer metadata); ids,
# scope, hashes and numbers stay plain. One line a content-bearing type.
_SEALED: dict[type[EventSchema], tuple[str, ...]] = {
    MemoryRecorded: ("content", "tags", "metadata", "reason"),
    MemoryAdmitted: ("reason", "inputs"),
    MemoryReinforced: ("merged_content",),
    MemorySuperseded: ("reason",),
    MemoriesMerged: ("merged_content",),
    SessionMessagesAppended: ("messages",),
    DocumentPut: ("content", "title", "tags", "metadata"),
    TranscriptChunksPut: ("chunks", "metadata"),
    CodeFilePut: ("content",),
    RecallServed: ("query", "explanation", "results"),  # a result's handle may quote (a section's heading)
    ResultDrilled: ("handle",),
    DeepRecallServed: ("question", "answer", "reason", "iterations", "sub_calls", "shortcut_results"),
    DeepRecallStored: ("key", "value"),
    BlindSpotRegistered: ("question", "reason"),
}
SEALED: dict[str, tuple[str, ...]] = {cls.type_name(): fields for cls, fields in _SEALED.items()}
FORGOTTEN = ContentForgotten.type_name()

# Get or create each stream's key in force in one statement: the keys it made, and those that were there before it
# (its snapshot does not see its own inserts, so none is answered twice). A stream whose key a concurrent append
# created first is in neither (that snapshot did not see it either): it is read back after.
_ENSURE_KEYS = text("""
WITH made AS (
    INSERT INTO subject_keys (key_id, tenant, stream_id, key)
    SELECT w.key_id, :tenant, w.stream_id, w.key
    FROM unnest(CAST(:key_ids AS uuid[]), CAST(:streams AS text[]), CAST(:keys AS bytea[])) AS w(key_id, stream_id, key)
    ON CONFLICT (tenant, stream_id) DO NOTHING
    RETURNING stream_id, key_id, key
)
SELECT stream_id, key_id, key FROM made
UNION ALL
SELECT stream_id, key_id, key FROM subject_keys WHERE tenant = :tenant AND stream_id = ANY(:streams)
""")
_KEYS_OF_STREAMS = text("""
SELECT stream_id, key_id, key FROM subject_keys WHERE tenant = :tenant AND stream_id = ANY(:streams)
""")
_KEYS_BY_ID = text("""
SELECT key_id::text AS key_id, tenant, key FROM subject_keys WHERE key_id = ANY(CAST(:ids AS uuid[]))
""")


def _aad(tenant: str, stream_id: str, type_name: str) -> bytes:
    # Bound to where the event lives: a sealed payload copied to another tenant, stream or type does not open.
    return json.dumps([tenant, stream_id, type_name]).encode()


def _stream_keys(conn: Connection, tenant: str, streams: set[str]) -> dict[str, tuple[uuid.UUID, bytes]]:
    if not streams:
        return {}
    asked = sorted(streams)
    found = {r.stream_id: (r.key_id, bytes(r.key)) for r in conn.execute(
        _ENSURE_KEYS, {"tenant": tenant, "streams": asked, "key_ids": [uuid.uuid4() for _ in asked],
                       "keys": [AESGCM.generate_key(bit_length=256) for _ in asked]})}
    missing = [s for s in asked if s not in found]
    if missing:  # created by a concurrent append since this statement's snapshot
        found.update({r.stream_id: (r.key_id, bytes(r.key)) for r in conn.execute(
            _KEYS_OF_STREAMS, {"tenant": tenant, "streams": missing})})
    return found


def _sealable(type_name: str, data: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(f for f in SEALED.get(type_name, ()) if f in data)


def seal(conn: Connection, tenant: str, events: Sequence[NewEvent]) -> list[dict[str, Any]]:
    """The payloads to store for `events` (in the caller's transaction): content fields sealed under the stream's
    key, which is created with the stream's first content-bearing event."""
    streams = {e.stream_id for e in events if _sealable(e.type, e.data)}
    keys = _stream_keys(conn, tenant, streams)
    stored: list[dict[str, Any]] = []
    for e in events:
        fields = _sealable(e.type, e.data)
        if not fields:
            stored.append(e.data)
            continue
        key_id, key = keys[e.stream_id]
        inner = json.dumps({f: e.data[f] for f in fields}, separators=(",", ":")).encode()
        nonce = os.urandom(12)
        sealed = AESGCM(key).encrypt(nonce, inner, _aad(tenant, e.stream_id, e.type))
        outer = {k: v for k, v in e.data.items() if k not in fields}
        outer[SEAL] = {"key": str(key_id), "nonce": base64.b64encode(nonce).decode(),
                       "ct": base64.b64encode(sealed).decode()}
        stored.append(outer)
    return stored


class KeyRing:
    """Data keys looked up by id, a batch at a time, remembered for one read (a forget in between is seen by the
    next read: nothing outlives the call that made it)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._keys: dict[str, tuple[str, bytes] | None] = {}

    def load(self, datas: Iterable[Mapping[str, Any]]) -> None:
        ids = {d[SEAL]["key"] for d in datas if SEAL in d} - self._keys.keys()
        if not ids:
            return
        self._keys.update(dict.fromkeys(ids))
        for r in self._conn.execute(_KEYS_BY_ID, {"ids": sorted(ids)}):
            self._keys[r.key_id] = (r.tenant, bytes(r.key))

    def open(self, tenant: str, stream_id: str, type_name: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """The payload as appended, or None when its key is gone (forgotten). Call `load` first."""
        envelope = data.get(SEAL)
        if not isinstance(envelope, dict):
            return data
        self.load([data])
        held = self._keys.get(envelope.get("key", ""))
        if held is None or held[0] != tenant:
            return None
        try:
            inner = AESGCM(held[1]).decrypt(base64.b64decode(envelope["nonce"]), base64.b64decode(envelope["ct"]),
                                            _aad(tenant, stream_id, type_name))
        except (InvalidTag, KeyError, ValueError):
            return None
        return {**{k: v for k, v in data.items() if k != SEAL}, **json.loads(inner)}


def open_events(conn: Connection, events: Sequence[RecordedEvent], *,
                keep_forgotten: bool) -> list[RecordedEvent]:
    """`events` as appended. A forgotten one becomes a ContentForgotten (`keep_forgotten`: a projector's feed or an
    export, which page on by position) or is left out (a stream read)."""
    if not any(SEAL in e.data for e in events):
        return list(events)
    ring = KeyRing(conn)
    ring.load(e.data for e in events)
    opened: list[RecordedEvent] = []
    for e in events:
        data = ring.open(e.tenant, e.stream_id, e.type, e.data)
        if data is not None:
            opened.append(e if data is e.data else replace(e, data=data))
        elif keep_forgotten:
            opened.append(replace(e, type=FORGOTTEN, schema_version=1, data={"original_type": e.type}))
    return opened


__all__ = ["FORGOTTEN", "SEAL", "SEALED", "KeyRing", "open_events", "seal"]
