"""The knowledge library's events refuse what the write path refuses, so the generic event API cannot bypass it."""

from __future__ import annotations

import pytest

from domain.errors import InvalidPayload
from domain.events import DocumentPut, DocumentRetired, document_stream, own_document_stream, validate_payload
from domain.text import content_hash


def put(**fields: object) -> dict:
    data = {"path": "ops/deploy.md", "content": "## A\nx\n", "content_hash": content_hash("## A\nx\n"), **fields}
    return validate_payload(DocumentPut, data)


def test_valid_put() -> None:
    assert put(tags=["ops"], title="Deploys")["path"] == "ops/deploy.md"


@pytest.mark.parametrize("path", ["../etc/passwd", "/abs.md", "a\\b.md", "a\x00b", "a//b", ""])
def test_bad_paths_refused(path: str) -> None:
    with pytest.raises(InvalidPayload, match="path"):
        put(path=path)
    with pytest.raises(InvalidPayload, match="path"):
        validate_payload(DocumentRetired, {"path": path})


def test_content_hash_must_match() -> None:
    with pytest.raises(InvalidPayload, match="content_hash"):
        put(content_hash="0" * 64)


def test_document_stream_is_per_project_and_path() -> None:
    assert document_stream(None, "a.md") == document_stream(None, "a.md")
    assert document_stream(None, "a.md") != document_stream("p", "a.md")
    assert document_stream("p", "a.md") != document_stream("p", "b.md")
    own = own_document_stream(DocumentPut.type_name(), {"path": "a.md", "project": "p"})
    assert own == document_stream("p", "a.md")
    assert own_document_stream("MemoryRecorded", {"path": "a.md"}) is None
