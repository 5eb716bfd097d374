"""Time in the query (domain/temporal.py → recall/funnel/composite.py): a query naming a span of time lifts the
memories whose occurred_at lies in it; the span is read against the request's reference_time and named in the
explanation; a query naming no time gets no time signal (no recency weight)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from funnel_support import ask, project, stage

TEXT = "Jolene: we went hiking by the lake and watched the sunset"
FEBRUARY = datetime(2023, 2, 9, 14, 0, tzinfo=UTC)  # a Thursday
MAY = datetime(2023, 5, 20, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def hikes(engine):
    """The same words said on two days: only the day can tell them apart."""
    from services.remember import MemoryInput, remember

    tenant = f"time-{uuid.uuid4().hex[:8]}"
    filler = [MemoryInput(content=f"Deborah: the bakery on street {i} sells rye bread", must_keep=True,
                          occurred_at=datetime(2023, 3, 1 + i, tzinfo=UTC)) for i in range(8)]
    done = remember(engine, tenant, [MemoryInput(content=TEXT, must_keep=True, occurred_at=FEBRUARY),
                                     MemoryInput(content=TEXT, must_keep=True, occurred_at=MAY), *filler],
                    {"source": "test", "actor": "test"})
    project(engine, max(d.position for d in done))
    return tenant, done[0].memory_id, done[1].memory_id


def test_a_named_day_lifts_the_memory_of_that_day(engine, hikes):
    tenant, february, may = hikes
    for query, first in (("Where did Jolene go hiking on 9 February, 2023?", february),
                         ("Where did Jolene go hiking in May 2023?", may)):
        answer = ask(engine, tenant, query, k=5)
        assert answer.results[0].memory_id == first, query
        assert answer.results[0].score > answer.results[1].score
        composite = stage(answer, "composite")
        assert composite["config"]["weights"]["time"] > 0 and "time" in composite["config"]
        signals = answer.results[0].explanation["stages"]["composite"]["signals"]
        assert signals["time"] == 1.0  # inside the span
        assert answer.results[1].explanation["stages"]["composite"]["signals"]["time"] < 0.01  # months away


def test_relative_words_are_read_against_the_reference_time_and_explained(engine, hikes):
    tenant, february, may = hikes
    reference = datetime(2023, 2, 14, 12, 0, tzinfo=UTC)  # a Tuesday: "last Thursday" is 9 February
    answer = ask(engine, tenant, "Where did Jolene go hiking last Thursday?", k=5, reference_time=reference)
    assert answer.results[0].memory_id == february
    query = answer.explanation["query"]
    assert query["time"] == {"phrase": "last Thursday", "start": "2023-02-09T00:00:00+00:00",
                             "end": "2023-02-10T00:00:00+00:00"}
    assert query["reference_time"] == reference.isoformat()
    later = ask(engine, tenant, "Where did Jolene go hiking last Saturday?", k=5,
                reference_time=datetime(2023, 5, 24, tzinfo=UTC))
    assert later.results[0].memory_id == may


def test_a_query_naming_no_time_has_no_time_signal(engine, hikes):
    tenant, february, may = hikes
    answer = ask(engine, tenant, "Where did Jolene go hiking?", k=5)
    assert answer.explanation["query"]["time"] is None
    assert "time" not in stage(answer, "composite")["config"]["weights"]
    assert {r.memory_id for r in answer.results[:2]} == {february, may}
    assert answer.results[0].score == answer.results[1].score  # the same words: no recency weight parts them
    assert all("time" not in r.explanation["stages"]["composite"]["signals"] for r in answer.results)
