"""The entity rule is linear and bounded, with the behaviour it had: a run of capitalised words longer than a name
is no entity (it once made a memory_entities key over the btree limit), the sentence test reads only the text
between two words, and the entities projector takes a memory's agent from the log, not from `memories`."""

from __future__ import annotations

import json
import random
import re
import uuid

from sqlalchemy import text

from domain.entities import MAX_ENTITY_CHARS, MAX_ENTITY_WORDS, _ends_sentence, entities
from projections.entities import EntitiesProjector, talks_about
from projections.runner import catch_up

# The rule's sentence end as it was written: a regex over the whole text before a word (quadratic).
OLD_SENTENCE_END = re.compile(r"[.!?\n]\s*[\"'“‘(]*$")


def test_the_linear_sentence_test_agrees_with_the_regex():
    rng = random.Random(7)
    alphabet = [".", "!", "?", "\n", " ", "\t", '"', "'", "“", "‘", "(", ",", ";", "-", "1", ")", "’"]
    for _ in range(20_000):
        gap = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert _ends_sentence(gap) == bool(OLD_SENTENCE_END.search("word" + gap)), repr(gap)


def test_a_run_longer_than_a_name_is_no_entity():
    words = " ".join(f"Word{chr(65 + i % 26)}" for i in range(3000))
    assert entities(f"we saw {words} there") == []
    name = " ".join(["Grand"] * MAX_ENTITY_WORDS)
    assert entities(f"we saw {name} there") == [name]
    assert entities(f"we saw {name} Extra there") == []
    assert entities(f"we met {'A' + 'b' * MAX_ENTITY_CHARS} there") == []
    # Names keep working around such runs.
    assert entities(f"Then {words}. Later we met Alice in New York.") == ["Alice", "New York"]


def test_a_32kb_memory_yields_bounded_entities():
    rng = random.Random(3)
    sentence = "Alice met Bob in Lisbon. she said the harbour was lovely and New York is far. Caroline:"
    vocabulary = sentence.split(" ")
    content = " ".join(rng.choice(vocabulary) for _ in range(6000))[:32768]
    found = talks_about(content)
    assert found and all(len(e) <= MAX_ENTITY_CHARS and len(e.split()) <= MAX_ENTITY_WORDS for e in found)


def test_entities_of_a_reinforced_memory_keep_the_agent_recorded_in_the_log(engine, tenant):
    memory_id = uuid.uuid4()
    events = [
        ("MemoryRecorded", 1, {"memory_id": str(memory_id), "content": "nothing named here", "agent_id": "ag-1"}),
        ("MemoryReinforced", 2, {"memory_id": str(memory_id), "observation_id": str(uuid.uuid4()),
                                 "similarity": 0.95, "merged_content": "we visited Lisbon with Alice",
                                 "confidence": 0.6}),
    ]
    with engine.begin() as conn:
        for type_, version, data in events:
            conn.execute(text("""
                INSERT INTO events (event_id, tenant, stream_id, stream_version, type, schema_version, data,
                                    metadata, occurred_at)
                VALUES (gen_random_uuid(), :t, :s, :v, :type, :sv, CAST(:d AS jsonb), '{"actor": "system:test"}',
                        now())"""), {"t": tenant, "s": f"memory-{memory_id}", "v": version, "type": type_,
                                     "sv": 2 if type_ == "MemoryRecorded" else 1, "d": json.dumps(data)})
    catch_up(engine, EntitiesProjector(), 500)  # the memories projection has not applied them (not run here)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT entity, agent_id FROM memory_entities WHERE tenant = :t ORDER BY entity"),
                            {"t": tenant}).all()
    assert [tuple(r) for r in rows] == [("alice", "ag-1"), ("lisbon", "ag-1")]
