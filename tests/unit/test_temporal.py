"""domain/temporal.py: the span of time a query's date words name, read against the clock handed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.temporal import TimeTarget, resolve

NOW = datetime(2023, 10, 19, 15, 30, tzinfo=UTC)  # a Thursday


def span(query: str, now: datetime = NOW) -> tuple[str, str] | None:
    target = resolve(query, now)
    return None if target is None else (target.start.date().isoformat(), target.end.date().isoformat())


@pytest.mark.parametrize(("query", "expected"), [
    ("What did Jolene do yesterday?", ("2023-10-18", "2023-10-19")),
    ("what did I cook today", ("2023-10-19", "2023-10-20")),
    ("the day before yesterday", ("2023-10-17", "2023-10-18")),
    ("What did Jolene do last Tuesday?", ("2023-10-17", "2023-10-18")),
    ("what happened last Thursday", ("2023-10-12", "2023-10-13")),  # today is Thursday: the one before
    ("what happened on Sunday", ("2023-10-15", "2023-10-16")),
    ("three days ago", ("2023-10-16", "2023-10-17")),
    ("two weeks ago", ("2023-10-02", "2023-10-09")),  # the week centred on 5 October
    ("a couple of months ago", ("2023-08-04", "2023-09-04")),
    ("What did we plan last week?", ("2023-10-09", "2023-10-16")),  # the calendar week before (Monday first)
    ("this week", ("2023-10-16", "2023-10-23")),
    ("last weekend", ("2023-10-14", "2023-10-16")),
    ("last month", ("2023-09-01", "2023-10-01")),
    ("Where did she travel last year?", ("2022-01-01", "2023-01-01")),
])
def test_relative_words_are_read_against_the_clock(query: str, expected: tuple[str, str]) -> None:
    assert span(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("What did Jolene finish on 9 February, 2023?", ("2023-02-09", "2023-02-10")),
    ("Why did she reschedule on September 8, 2023?", ("2023-09-08", "2023-09-09")),
    ("what changed on 2023-03-05", ("2023-03-05", "2023-03-06")),
    ("the 3rd of March 2022", ("2022-03-03", "2022-03-04")),
    ("What is Jolene doing in June 2023?", ("2023-06-01", "2023-07-01")),
    ("a project in the beginning of January 2023", ("2023-01-01", "2023-01-11")),
    ("late March 2022", ("2022-03-21", "2022-04-01")),
    ("during the last week of August 2023", ("2023-08-25", "2023-09-01")),
    ("In what country was Jolene during summer 2022?", ("2022-06-01", "2022-09-01")),
    ("Which country were they visiting in 2010?", ("2010-01-01", "2011-01-01")),
])
def test_explicit_dates_need_no_clock_but_its_zone(query: str, expected: tuple[str, str]) -> None:
    assert span(query) == expected
    assert span(query, NOW.replace(year=2030)) == expected


def test_a_month_or_day_without_a_year_is_the_latest_not_after_the_clock() -> None:
    assert span("what did we do in May") == ("2023-05-01", "2023-06-01")
    assert span("what did we do in December") == ("2022-12-01", "2023-01-01")  # December 2023 is still to come
    assert span("what did we do in October") == ("2023-10-01", "2023-11-01")  # the clock's own month
    assert span("what happened on 25 December") == ("2022-12-25", "2022-12-26")
    assert span("on March 3") == ("2023-03-03", "2023-03-04")


def test_words_that_name_no_time_resolve_to_nothing() -> None:
    for query in ("When did Caroline go to the LGBTQ support group?", "May I ask what Bob likes?",
                  "what did she do recently", ""):
        assert resolve(query, NOW) is None, query
    assert span("the 31 February 2023 party") == ("2023-02-01", "2023-03-01")  # no such day: its month


def test_the_most_specific_phrase_wins_and_is_named() -> None:
    target = resolve("What did Jolene finish on 23 January, 2023 and last week?", NOW)
    assert target is not None and target.phrase == "23 January, 2023"
    assert target.as_dict() == {"phrase": "23 January, 2023", "start": "2023-01-23T00:00:00+00:00",
                                "end": "2023-01-24T00:00:00+00:00"}


def test_the_unit_before_a_named_span() -> None:
    assert span("Where was Tim in the week before 16 November 2023?") == ("2023-11-09", "2023-11-16")
    assert span("What project did Jolene finish last week before 23 January, 2023?") == ("2023-01-16", "2023-01-23")
    assert span("the day before yesterday") == ("2023-10-17", "2023-10-18")  # a phrase of its own
    assert span("the month before June 2023") == ("2023-05-01", "2023-06-01")
    target = resolve("Where was Tim in the week before 16 November 2023?", NOW)
    assert target is not None and target.phrase == "the week before 16 November 2023"


def test_distance_is_zero_inside_the_span_and_days_outside() -> None:
    day = datetime(2023, 2, 9, tzinfo=UTC)
    target = TimeTarget("9 February, 2023", day, day + timedelta(days=1))
    assert target.distance_days(day + timedelta(hours=13)) == 0.0
    assert target.distance_days(day - timedelta(days=2)) == 2.0
    assert target.distance_days(day + timedelta(days=4)) == 3.0


def test_the_clock_zone_is_kept() -> None:
    from zoneinfo import ZoneInfo

    now = datetime(2023, 10, 19, 1, 0, tzinfo=ZoneInfo("Europe/Lisbon"))
    target = resolve("yesterday", now)
    assert target is not None and target.start.tzinfo == now.tzinfo and target.start.day == 18
