"""Long technical messages on the default write path (no must_keep: the governor decides each write), recalled
by the memories funnel (issue 15 item 3; measured by bench/coding_chat_eval.py).

Coding chats repeat their shape: the lock-timeout answer for one service reads like the one for another, both say
"instead of", and the embedding puts them close. The governor's correction rule (a correction phrase and a
nearest memory over the supersede threshold) took the second for a correction of the first and hid it, so the
answer to "where did we see error code QE-PW-118?" was gone from recall while BM25 ranked it first. A correction
restates what it corrects with a value or two changed; a memory saying more that the write does not
repeat stays.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from funnel_support import ask, project
from sqlalchemy import text

from bench.coding_fixture import VALUES, Fixture, lock_timeout, ports
from domain.novelty import unsaid_terms
from tests.log_support import opened_events

AGENT = "dev"
# Each message is a governed write (embedded on the write path) of a few KB, then every projector: on 2 shared cores
# the module's one chat takes minutes.
pytestmark = pytest.mark.timeout(900)


def write_chat(engine: Any, tenant: str) -> dict[str, Any]:
    """Two services' lock-timeout threads and a compose file, one governed write each, in chat order."""
    from services.remember import MemoryInput, remember

    fx = Fixture()
    rng = random.Random(7)
    lock_timeout(fx, rng, VALUES["lock_timeout"][1], "lock0")
    ports(fx, rng, VALUES["ports"][0], "ports0")
    lock_timeout(fx, rng, VALUES["lock_timeout"][2], "lock1")
    start = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    done = {}
    for i, m in enumerate(fx.messages):
        [d] = remember(engine, tenant, [MemoryInput(content=m.text, agent_id=AGENT,
                                                    occurred_at=start + timedelta(minutes=5 * i))],
                       {"source": "test", "actor": "test"})
        done[m.key] = d
    project(engine, max(d.position for d in done.values()))
    return done


@pytest.fixture(scope="module")
def chat(engine: Any) -> tuple[str, dict[str, Any]]:
    tenant = f"coding-{uuid.uuid4().hex[:8]}"
    return tenant, write_chat(engine, tenant)


def statuses(engine: Any, tenant: str) -> dict[Any, str]:
    with engine.connect() as conn:
        return {r.memory_id: r.status for r in conn.execute(
            text("SELECT memory_id, status FROM memories WHERE tenant = :t"), {"t": tenant})}


def test_a_correction_phrase_in_another_services_message_supersedes_nothing(engine, chat) -> None:
    tenant, done = chat
    status = statuses(engine, tenant)
    assert all(status[d.memory_id] == "active" for d in done.values()), {k: status[d.memory_id]
                                                                          for k, d in done.items()}
    # The second answer says "instead of" and is near the first; the governor recorded what it would have hidden.
    with engine.connect() as conn:
        [admitted] = opened_events(conn, "tenant = :t AND type = 'MemoryAdmitted' AND data->>'memory_id' = :m",
                                   {"t": tenant, "m": str(done["lock1.answer"].memory_id)})
    inputs = admitted.data["inputs"]  # sealed content: read through the log
    assert inputs["correction"]["value"] is True
    assert len(inputs["correction"]["nearest_unsaid_terms"]) > 3


def test_a_rare_identifier_deep_in_a_stack_trace_is_recalled_in_the_top_5(engine, chat) -> None:
    tenant, done = chat
    v = VALUES["lock_timeout"][1]  # fleet-tracker: the first thread written, the one a later one hid
    report, answer = done["lock0.report"].memory_id, done["lock0.answer"].memory_id
    got = ask(engine, tenant, f"where did we see error code {v['code']}?", k=5, agent_id=AGENT)
    assert got.abstained is None, got.abstained
    assert {report, answer} & {r.memory_id for r in got.results}
    got = ask(engine, tenant, f"how did we fix the {v['exc']} in {v['svc']}?", k=5, agent_id=AGENT)
    assert answer in [r.memory_id for r in got.results]


def test_a_short_correction_leaves_only_the_replaced_value_unsaid() -> None:
    # What rule 3 reads: the nearest memory's content terms the correction does not repeat.
    assert unsaid_terms("The deploy window is Monday at 10:00", "Correction: the deploy window is Friday at 10:00") \
        == ["monday"]
    assert unsaid_terms("The build cache lives on the NFS share", "The build cache lives on local SSD") \
        == ["nfs", "share"]
    # Another index on another table, "instead of" in both: more unsaid than a correction leaves.
    assert len(unsaid_terms("Create idx_shipments_carrier_eta on shipments: 12 ms instead of 4000 ms",
                            "Create ix_payout_events_merchant on payout_events: 9 ms instead of 2500 ms")) > 3
