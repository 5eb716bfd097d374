"""Event schemas: validation with clear errors, and the MemoryRecorded v1 → v2 upcaster."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from domain.errors import DomainError, InvalidPayload, UnknownEventType
from domain.events import (
    EVENT_TYPES,
    MAX_TAGS,
    MemoryRecorded,
    NewEvent,
    RecallServed,
    RecordedEvent,
    event_type,
    memory_stream,
    parse,
    validate_payload,
)

MID = uuid.UUID("00000000-0000-4000-8000-000000000001")


def test_unknown_event_type_names_the_type_and_the_known_ones():
    with pytest.raises(UnknownEventType) as err:
        validate_payload("MemoryForgotten", {"memory_id": str(MID)})
    message = str(err.value)
    assert "'MemoryForgotten'" in message
    assert "MemoryRecorded" in message and "RecallServed" in message
    assert err.value.status_code == 422 and isinstance(err.value, DomainError)
    with pytest.raises(UnknownEventType):
        event_type("")


def test_valid_payload_is_answered_in_current_json_form_with_defaults():
    data = validate_payload("MemoryRecorded", {"memory_id": str(MID), "content": "Alice moved to Lisbon"})
    assert data == {"memory_id": str(MID), "content": "Alice moved to Lisbon", "kind": "observation",
                    "agent_id": None, "project": None, "session_id": None, "tags": [], "metadata": {},
                    **GOVERNANCE_DEFAULTS}


def test_metadata_any_json_object_kept_verbatim():
    meta = {"dia_id": "D1:3", "nested": {"a": [1, 2.5, None, True]}, "ünï": "😀"}
    data = validate_payload("MemoryRecorded", {"memory_id": str(MID), "content": "x", "metadata": meta})
    assert data["metadata"] == meta


@pytest.mark.parametrize(("data", "fragment"), [
    ({"memory_id": str(MID)}, "content: Field required"),
    ({"memory_id": str(MID), "content": ""}, "content: String should have at least 1 character"),
    ({"memory_id": "not-a-uuid", "content": "x"}, "memory_id:"),
    ({"content": "x"}, "memory_id: Field required"),
    ({"memory_id": str(MID), "content": "x", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ({"memory_id": str(MID), "content": "x", "tags": "not-a-list"}, "tags:"),
    ({"memory_id": str(MID), "content": "x", "tags": ["t"] * (MAX_TAGS + 1)}, "tags:"),
    ({"memory_id": str(MID), "content": "x", "metadata": [1, 2]}, "metadata:"),
    ({"memory_id": str(MID), "content": 42}, "content:"),
])
def test_invalid_payload_is_refused_with_a_clear_message(data, fragment):
    with pytest.raises(InvalidPayload) as err:
        validate_payload("MemoryRecorded", data)
    message = str(err.value)
    assert message.startswith("MemoryRecorded: "), message
    assert fragment in message, message
    assert err.value.status_code == 422


def test_several_errors_are_all_reported():
    with pytest.raises(InvalidPayload) as err:
        validate_payload("MemoryRecorded", {"memory_id": "nope", "tags": 3})
    message = str(err.value)
    assert "memory_id:" in message and "content:" in message and "tags:" in message


@pytest.mark.parametrize("data", [None, [], "text", 3, ["memory_id"]])
def test_data_must_be_an_object(data):
    with pytest.raises(InvalidPayload, match="data must be a JSON object"):
        validate_payload("MemoryRecorded", data)


def test_recall_served_nested_results_are_validated():
    ok = {"recall_id": str(MID), "query": "q", "k": 5, "latency_ms": 1.5,
          "results": [{"memory_id": str(MID), "rank": 1, "score": 0.7}]}
    assert validate_payload("RecallServed", ok)["results"][0]["rank"] == 1
    bad = {**ok, "results": [{"memory_id": str(MID), "rank": "first", "score": 0.7}]}
    with pytest.raises(InvalidPayload) as err:
        validate_payload("RecallServed", bad)
    assert "results.0.rank" in str(err.value)


@pytest.mark.parametrize("version", [0, 3, -1, 99])
def test_unknown_schema_version_is_refused(version):
    with pytest.raises(InvalidPayload, match="no schema version"):
        validate_payload("MemoryRecorded", {"memory_id": str(MID), "content": "x"}, version)


def test_current_version_explicitly_is_accepted():
    assert event_type("MemoryRecorded").version == 2
    data = validate_payload("MemoryRecorded", {"memory_id": str(MID), "content": "x"}, 2)
    assert data["content"] == "x"


GOVERNANCE_DEFAULTS = {"must_keep": False, "signals": None, "supersedes": None, "reason": None}
V1 = {"memory_id": str(MID), "text": "Alice moved to Lisbon", "kind": "fact", "tags": ["move"],
      "scope": {"agent_id": "a1", "project": "p1", "session_id": "s1"}}


def test_upcast_memory_recorded_v1_to_v2():
    data = validate_payload("MemoryRecorded", V1, schema_version=1)
    assert data == {"memory_id": str(MID), "content": "Alice moved to Lisbon", "kind": "fact",
                    "agent_id": "a1", "project": "p1", "session_id": "s1", "tags": ["move"], "metadata": {},
                    **GOVERNANCE_DEFAULTS}
    assert "text" in V1 and "scope" in V1  # the stored payload is not mutated


def test_upcast_v1_without_scope_and_partial_scope():
    data = validate_payload("MemoryRecorded", {"memory_id": str(MID), "text": "x"}, 1)
    assert (data["agent_id"], data["project"], data["session_id"]) == (None, None, None)
    data = validate_payload("MemoryRecorded", {"memory_id": str(MID), "text": "x", "scope": {"project": "p"}}, 1)
    assert (data["agent_id"], data["project"], data["session_id"]) == (None, "p", None)


def test_upcast_v1_top_level_scope_field_wins_over_nested_scope():
    v1 = {"memory_id": str(MID), "text": "x", "agent_id": "top", "scope": {"agent_id": "nested"}}
    assert validate_payload("MemoryRecorded", v1, 1)["agent_id"] == "top"


@pytest.mark.parametrize(("data", "fragment"), [
    ({"memory_id": str(MID), "content": "written as v2 but labelled v1"}, "text"),
    ({"memory_id": str(MID), "text": "x", "scope": "agent-1"}, "scope"),
    ({"memory_id": str(MID), "text": "x", "scope": ["a"]}, "scope"),
])
def test_malformed_v1_payload_is_a_clear_invalid_payload_not_a_crash(data, fragment):
    with pytest.raises(InvalidPayload) as err:
        validate_payload("MemoryRecorded", data, 1)
    assert "MemoryRecorded" in str(err.value) and fragment in str(err.value)


def test_v1_payload_sent_as_v2_is_refused():
    with pytest.raises(InvalidPayload) as err:
        validate_payload("MemoryRecorded", V1)
    assert "content: Field required" in str(err.value)
    assert "text: Extra inputs are not permitted" in str(err.value)


def test_stored_v1_event_is_read_in_current_shape():
    now = datetime.now(UTC)
    event = RecordedEvent(position=1, event_id=uuid.uuid4(), tenant="t", stream_id=memory_stream(MID),
                          stream_version=1, type="MemoryRecorded", schema_version=1, data=dict(V1), metadata={},
                          occurred_at=now, recorded_at=now, tx_id=1)
    payload = event.payload()
    assert isinstance(payload, MemoryRecorded)
    assert payload.content == "Alice moved to Lisbon" and payload.agent_id == "a1" and payload.memory_id == MID
    assert isinstance(parse("RecallServed", 1, {"recall_id": str(MID), "query": "q", "k": 1, "latency_ms": 0}),
                      RecallServed)


def test_new_event_carries_the_current_schema_version():
    for name, etype in EVENT_TYPES.items():
        assert NewEvent(type=name, stream_id="s", data={}).schema_version == etype.version
    a, b = NewEvent(type="MemoryRecorded", stream_id="s", data={}), NewEvent(type="MemoryRecorded", stream_id="s",
                                                                             data={})
    assert a.event_id != b.event_id
    assert memory_stream(MID) == f"memory-{MID}"
