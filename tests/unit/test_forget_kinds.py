"""The forget plan's table (services/forget_plan.py) is whole and consistent with itself: every subject kind but an
entity finds streams through it, each by a field its put event has, and each kind of stream is named in the
hit-log one way, by its id or by a value its entity search reads too."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import get_args

import pytest

from domain.events import FORGET_KINDS, ForgetKind, code_file_stream, memory_stream, session_stream
from domain.transcripts.ids import transcript_stream
from services.forget_plan import ENTITY, FINDS, OWN_STREAMS, Find, OwnStreams, id_in


def test_every_subject_kind_finds_through_the_table() -> None:
    assert set(FINDS) | {ENTITY} == set(get_args(ForgetKind)) == set(FORGET_KINDS)
    assert ENTITY not in FINDS


def test_the_labels_are_the_receipts() -> None:
    """The plan's keys are public (POST /v1/forget's streams, `engramlog forget`): they do not change."""
    assert [k.label for k in OWN_STREAMS] == ["memories", "sessions", "transcripts", "documents", "code"]


@pytest.mark.parametrize("kind", OWN_STREAMS, ids=lambda k: k.label)
def test_a_kind_is_named_one_way(kind: OwnStreams) -> None:
    assert (kind.id_stream is None) != (kind.named_by is None)
    assert kind.named_in, "an entity is searched in every kind"
    if kind.named_by is not None:
        assert kind.named_by in kind.put.model_fields
        assert all(kind.named_by in sql.split(" FROM ")[0] for sql in kind.named_in)  # its rows hold the name


@pytest.mark.parametrize("find", [f for finds in FINDS.values() for f in finds],
                         ids=lambda f: f"{f.kind.label}-{f.field}")
def test_a_find_reads_a_field_its_event_has(find: Find) -> None:
    if find.field is None:
        assert find.kind.id_stream is not None  # the value is the stream's own id
    else:
        assert find.field in find.kind.put.model_fields
        assert find.kind.named_by in (None, find.field)  # the value that found them is what the hit-log says


def test_an_id_is_read_back_from_its_stream() -> None:
    memory = uuid.uuid4()
    assert OWN_STREAMS[0].id_stream is not None and OWN_STREAMS[1].id_stream is not None
    assert id_in(memory_stream(memory), OWN_STREAMS[0].id_stream) == str(memory)
    assert id_in(session_stream("s-1"), OWN_STREAMS[1].id_stream) == "s-1"


def test_a_row_names_its_stream() -> None:
    memories, sessions, transcripts, documents, code = OWN_STREAMS
    memory = uuid.uuid4()
    assert memories.stream_of(SimpleNamespace(memory_id=memory)) == memory_stream(memory)
    assert sessions.stream_of(SimpleNamespace(session_id="s-1")) == session_stream("s-1")
    assert transcripts.stream_of(SimpleNamespace(transcript_id="t-1")) == transcript_stream("t-1")
    assert documents.stream_of(SimpleNamespace(document_id="doc-x", path="a.md")) == "doc-x"
    assert code.stream_of(SimpleNamespace(repo="r", path="p.py")) == code_file_stream("r", "p.py")
