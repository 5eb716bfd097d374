"""Time in the query: the span of time a query's date words name, read against a clock handed in (pure).

    resolve("What did Jolene do last Tuesday?", now)        → that Tuesday (one day)
    resolve("Where was Jolene in the summer of 2022?", now) → 1 June – 1 September 2022

Read, most specific first (the first kind that matches wins, its leftmost match):
- a day: "2023-02-09", "9 February, 2023", "February 9th, 2023"; without a year ("on 9 February") the latest such
  day not after the clock;
- a part of a month: "early/the beginning of/mid/late/the end of January 2023" (days 1-10, 11-20, 21-end), "the
  first/last week of January 2023" (its first/last 7 days);
- a month: "January 2023"; without a year only after a preposition ("in May", "during May": "May" alone is a
  verb) — the latest such month not after the clock (this month when the clock is in it);
- a season of a year: "summer 2022", "the summer of 2022" (northern seasons: winter Y is December Y – February Y+1);
- a year: "in 2010", "during 2019", "since 2020" (the year after a preposition);
- words relative to the clock's day: today, yesterday, the day before yesterday; "N days/weeks/months/years ago"
  (N a digit or a word: a, one … twelve, a couple of, a few); last/this week|weekend|month|year (calendar:
  weeks start on Monday); "last Tuesday" and "on Tuesday" (the latest Tuesday before the clock's day);
- "the day/week/month before" any of these: the unit just before it ("the week before 16 November 2023").
Nothing else is guessed ("recently", "soon": no span). Spans are [start, end), in the clock's time zone.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

_MONTH_NAMES = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december"]
_MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES)} | {
    name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)} | {"sept": 9}
_WEEKDAYS = {name: i for i, name in enumerate(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}

_M = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_Y = r"(?P<year>(?:19|20)\d{2})"
_PREP = r"(?:in|during|since|by|of|from|until|throughout)"
_N = r"(?P<n>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(r"\b" + pattern + r"\b", re.IGNORECASE)


_ISO = _rx(r"(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})")
_DAY_MONTH_YEAR = _rx(_D + r"\s+(?:of\s+)?" + _M + r",?\s+" + _Y)
_MONTH_DAY_YEAR = _rx(_M + r"\s+" + _D + r",?\s+" + _Y)
_PART_MONTH_YEAR = _rx(r"(?P<part>(?:the\s+)?(?:first|last)\s+week\s+of|early|(?:the\s+)?beginning\s+of|"
                       r"(?:the\s+)?start\s+of|mid-?|(?:the\s+)?middle\s+of|late|(?:the\s+)?end\s+of)\s*"
                       + _M + r",?\s+" + _Y)
_MONTH_YEAR = _rx(_M + r",?\s+(?:of\s+)?" + _Y)
_SEASON_YEAR = _rx(r"(?P<season>spring|summer|autumn|fall|winter)\s+(?:of\s+)?" + _Y)
_DAY_MONTH = _rx(r"(?:on\s+)?(?:the\s+)?" + _D + r"\s+(?:of\s+)?" + _M)
_MONTH_DAY = _rx(r"(?:on\s+)?" + _M + r"\s+" + _D)
_PREP_MONTH = _rx(_PREP + r"\s+(?:the\s+month\s+of\s+)?(?:early\s+|late\s+|mid-?)?" + _M)
_PREP_YEAR = _rx(_PREP + r"\s+(?:the\s+year\s+)?" + _Y)
_DAY_WORDS = _rx(r"(?P<word>the\s+day\s+before\s+yesterday|yesterday|today|tonight|this\s+morning)")
_AGO = _rx(_N + r"\s+(?P<unit>day|week|month|year)s?\s+ago")
_LAST_UNIT = _rx(r"(?P<which>last|past|previous|this)\s+(?P<unit>week|weekend|month|year)")
_LAST_WEEKDAY = _rx(r"(?:last|past|previous|on)\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")")


@dataclass(frozen=True)
class TimeTarget:
    """The span a query names: [start, end), and the words that named it."""

    phrase: str
    start: datetime
    end: datetime

    def distance_days(self, when: datetime) -> float:
        """0 inside the span, else the days from `when` to its nearer edge."""
        if when < self.start:
            return (self.start - when).total_seconds() / 86400
        if when >= self.end:
            return (when - self.end).total_seconds() / 86400
        return 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "start": self.start.isoformat(), "end": self.end.isoformat()}


def _day(now: datetime, year: int, month: int, day: int) -> datetime | None:
    try:
        return now.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:  # 31 February: no such day
        return None


def _month_span(now: datetime, year: int, month: int) -> tuple[datetime, datetime]:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    return start, _add_months(start, 1)


def _add_months(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    year, month = divmod(index, 12)
    return when.replace(year=year, month=month + 1, day=min(when.day, calendar.monthrange(year, month + 1)[1]))


def _target(match: re.Match[str], start: datetime | None, end: datetime | None) -> TimeTarget | None:
    if start is None or end is None:
        return None
    return TimeTarget(" ".join(match.group(0).split()), start, end)


def _explicit(query: str, now: datetime) -> TimeTarget | None:
    for rx in (_ISO, _DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        for hit in rx.finditer(query):
            month = int(hit["month"]) if hit["month"].isdigit() else _MONTHS[hit["month"].lower()]
            if 1 <= month <= 12 and (day := _day(now, int(hit["year"]), month, int(hit["day"]))):
                return _target(hit, day, day + timedelta(days=1))
    if m := _PART_MONTH_YEAR.search(query):
        start, end = _month_span(now, int(m["year"]), _MONTHS[m["month"].lower()])
        part = m["part"].lower()
        if "week" in part:
            return _target(m, start, start + timedelta(days=7)) if "first" in part else \
                _target(m, end - timedelta(days=7), end)
        if "early" in part or "beginning" in part or "start" in part:
            return _target(m, start, start + timedelta(days=10))
        if "mid" in part:
            return _target(m, start + timedelta(days=10), start + timedelta(days=20))
        return _target(m, start + timedelta(days=20), end)
    if m := _MONTH_YEAR.search(query):
        return _target(m, *_month_span(now, int(m["year"]), _MONTHS[m["month"].lower()]))
    if m := _SEASON_YEAR.search(query):
        first, length = _SEASONS[m["season"].lower()]
        start = _month_span(now, int(m["year"]), first)[0]
        return _target(m, start, _add_months(start, length))
    return None


def _latest_day(now: datetime, month: int, day: int) -> datetime | None:
    """The latest `day` of `month` not after the clock's day."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for year in (now.year, now.year - 1, now.year - 4):  # 29 February: back to a leap year
        found = _day(now, year, month, day)
        if found is not None and found <= today:
            return found
    return None


def _without_year(query: str, now: datetime) -> TimeTarget | None:
    for rx in (_DAY_MONTH, _MONTH_DAY):
        for hit in rx.finditer(query):
            if hit["month"].lower() == "may" and not re.match(r"(?i)on\b|the\b|\d", hit.group(0)):
                continue  # "May 3 people come?": only a day with "on"/"the" or a leading day is a date
            if (day := _latest_day(now, _MONTHS[hit["month"].lower()], int(hit["day"]))) is not None:
                return _target(hit, day, day + timedelta(days=1))
    if m := _PREP_MONTH.search(query):
        month = _MONTHS[m["month"].lower()]
        year = now.year if month <= now.month else now.year - 1
        return _target(m, *_month_span(now, year, month))
    if m := _PREP_YEAR.search(query):
        start = now.replace(year=int(m["year"]), month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        return _target(m, start, start.replace(year=start.year + 1))
    return None


def _relative(query: str, now: datetime) -> TimeTarget | None:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if m := _DAY_WORDS.search(query):
        word = m["word"].lower()
        back = 2 if "before" in word else 1 if word == "yesterday" else 0
        day = today - timedelta(days=back)
        return _target(m, day, day + timedelta(days=1))
    if m := _AGO.search(query):
        n_text = " ".join(m["n"].lower().split())
        n = int(n_text) if n_text.isdigit() else _NUMBERS[n_text]
        unit = m["unit"].lower()
        if unit == "day":
            day = today - timedelta(days=n)
            return _target(m, day, day + timedelta(days=1))
        if unit == "week":  # the week centred on the day n weeks back
            centre = today - timedelta(weeks=n)
            return _target(m, centre - timedelta(days=3), centre + timedelta(days=4))
        if unit == "month":
            centre = _add_months(today, -n)
            return _target(m, centre - timedelta(days=15), centre + timedelta(days=16))
        return _target(m, *_year_span(today, today.year - n))
    if m := _LAST_UNIT.search(query):
        this = m["which"].lower() == "this"
        unit = m["unit"].lower()
        monday = today - timedelta(days=today.weekday())
        if unit == "week":
            start = monday if this else monday - timedelta(weeks=1)
            return _target(m, start, start + timedelta(weeks=1))
        if unit == "weekend":  # this weekend: the coming (or current) one; last: the one before this week
            saturday = monday + timedelta(days=5) - (timedelta(0) if this else timedelta(weeks=1))
            return _target(m, saturday, saturday + timedelta(days=2))
        if unit == "month":
            start = today.replace(day=1)
            start = start if this else _add_months(start, -1)
            return _target(m, start, _add_months(start, 1))
        return _target(m, *_year_span(today, today.year if this else today.year - 1))
    if m := _LAST_WEEKDAY.search(query):
        back = (today.weekday() - _WEEKDAYS[m["weekday"].lower()]) % 7 or 7
        day = today - timedelta(days=back)
        return _target(m, day, day + timedelta(days=1))
    return None


def _year_span(today: datetime, year: int) -> tuple[datetime, datetime]:
    start = today.replace(year=year, month=1, day=1)
    return start, start.replace(year=year + 1)


_BEFORE = re.compile(r"(?:the|a|last)\s+(?P<unit>day|week|month)\s+before\s+(?:the\s+)?$", re.IGNORECASE)


def _before(query: str, target: TimeTarget) -> TimeTarget:
    """"the week before 16 November 2023": the unit just before the span named."""
    at = query.find(target.phrase)
    m = _BEFORE.search(query[:at]) if at > 0 else None
    if m is None:
        return target
    length = {"day": timedelta(days=1), "week": timedelta(weeks=1)}.get(m["unit"].lower())
    start = target.start - length if length else _add_months(target.start, -1)
    return TimeTarget(f"{m.group(0)}{target.phrase}", start, target.start)


def resolve(query: str, now: datetime) -> TimeTarget | None:
    """The span of time the query names, read against `now`; None when it names none."""
    target = _explicit(query, now) or _without_year(query, now) or _relative(query, now)
    return None if target is None else _before(" ".join(query.split()), target)
