"""bench/soak_report.py: the soak's per-minute windows and RSS slopes."""

from __future__ import annotations

import math

from bench.soak_report import Call, Sample, minutes, rss_slopes, slope_per_min


def test_slope_per_minute_of_a_line_and_of_too_few_points() -> None:
    assert math.isclose(slope_per_min([(0, 10), (30, 11), (60, 12), (120, 14)]), 2.0)
    assert slope_per_min([(5, 1.0)]) == 0.0
    assert slope_per_min([(5, 1.0), (5, 3.0)]) == 0.0


def test_minutes_count_only_2xx_in_rates_and_percentiles_and_keep_the_last_sample() -> None:
    calls = [Call("write", 1, 10, 201), Call("write", 2, 30, 201), Call("write", 3, 999, 500),
             Call("recall", 61, 40, 200), Call("write", 70, 20, 0)]
    samples = [Sample(0, 5, 0.1, {"api": 100}, 50), Sample(30, 9, 0.4, {"api": 101}, 51),
               Sample(65, 0, 0.0, {"api": 102}, 52)]
    first, second = minutes(calls, samples, 90)
    assert first["write"] == {"rate_per_s": round(2 / 60, 2), "p50_ms": 20.0, "p95_ms": 29.0, "ok": 2, "errors": 1}
    assert first["lag_events_max"] == 9 and first["rss_mib"] == {"api": 101} and first["db_mib"] == 51
    assert second["seconds"] == 30 and second["write"]["errors"] == 1 and second["write"]["ok"] == 0
    assert second["recall"]["rate_per_s"] == round(1 / 30, 2)


def test_rss_slopes_leave_out_the_warm_up() -> None:
    samples = [Sample(0, 0, 0, {"api": 50, "redis": 5}, 1), Sample(60, 0, 0, {"api": 100, "redis": 5}, 1),
               Sample(120, 0, 0, {"api": 100, "redis": 5}, 1), Sample(180, 0, 0, {"api": 100, "redis": 5}, 1)]
    assert rss_slopes(samples, warmup_s=60) == {"api": 0.0, "redis": 0.0}
    assert rss_slopes(samples, warmup_s=0)["api"] > 0


def test_a_run_overshooting_its_minutes_by_a_second_gets_no_extra_window() -> None:
    rows = minutes([Call("recall", 120.5, 10, 200)], [], 120.6)
    assert len(rows) == 2 and rows[-1]["recall"]["ok"] == 1 and rows[-1]["seconds"] == 60


def test_minutes_keep_the_most_and_the_last_wake_ups_queued() -> None:
    samples = [Sample(0, 0, 0, {}, 1, 3), Sample(30, 0, 0, {}, 1, 40), Sample(55, 0, 0, {}, 1, 12),
               Sample(70, 0, 0, {}, 1)]  # a sample from before the queue was recorded: -1
    first, second = minutes([], samples, 90)
    assert (first["wake_queue_max"], first["wake_queue_last"]) == (40, 12)
    assert (second["wake_queue_max"], second["wake_queue_last"]) == (-1, -1)
