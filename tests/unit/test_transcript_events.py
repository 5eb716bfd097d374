"""TranscriptChunksPut's schema: hashes checked against the texts, each carried chunk once and named by the
version's chunk list, a valid transcript id."""

from __future__ import annotations

import pytest

from domain.errors import InvalidPayload
from domain.events import TranscriptChunksPut, is_system_event, validate_payload
from domain.text import content_hash

A, B = "[1] USER: a\n", "[2] ASSISTANT: b\n"


def _payload(**over: object) -> dict[str, object]:
    return {"transcript_id": "s1", "format": "text", "content_hash": content_hash(A + B),
            "chunk_hashes": [content_hash(A), content_hash(B)],
            "chunks": [{"content_hash": content_hash(B), "text": B}], **over}


def test_a_put_carrying_only_new_chunks_is_valid() -> None:
    data = validate_payload(TranscriptChunksPut, _payload())
    assert data["chunks"] == [{"content_hash": content_hash(B), "text": B}]
    assert not is_system_event(TranscriptChunksPut.type_name())


@pytest.mark.parametrize(("over", "reason"), [
    ({"chunks": [{"content_hash": content_hash(A), "text": B}]}, "sha256 of text"),
    ({"chunks": [{"content_hash": content_hash(B), "text": B}] * 2}, "carried twice"),
    ({"chunks": [{"content_hash": content_hash("x"), "text": "x"}]}, "not in chunk_hashes"),
    ({"chunk_hashes": []}, "chunk_hashes"),
    ({"content_hash": "short"}, "sha256 hex"),
    ({"transcript_id": "a/b"}, "transcript id"),
    ({"format": "xml"}, "format"),
])
def test_inconsistent_puts_are_refused(over: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidPayload, match=reason):
        validate_payload(TranscriptChunksPut, _payload(**over))
