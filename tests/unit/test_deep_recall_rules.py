"""Deep recall's pure rules: the turn protocol's parsing, budgets within the operator's maxima, prices, warnings,
payload caps."""

from __future__ import annotations

import pytest

from deep_recall.budget import BudgetSpent, Limits, Prices, Tracker
from deep_recall.live import cap
from deep_recall.loop import code_blocks, text_final
from domain.errors import InvalidPayload
from infra.settings import Settings, replace


def test_code_blocks_run_in_order_and_final_text_only_without_code() -> None:
    turn = "first\n```python\na = 1\n```\nthen\n```py\nprint(a)\n```\n```json\n{}\n```"
    assert code_blocks(turn) == ["a = 1\n", "print(a)\n"]
    assert text_final("  FINAL: the answer\nmore") == "the answer\nmore"
    assert text_final("The FINAL: is not at the start") is None


def test_budgets_default_and_override_within_the_operator_maxima() -> None:
    settings = replace(Settings(), deep_cap_iterations=30)
    assert Limits.of(settings) == Limits(15, 20, 0.5, settings.deep.deep_timeout_s)
    assert Limits.of(settings, iterations=30, cost_usd=1.0).iterations == 30
    for bad in ({"iterations": 31}, {"iterations": 0}, {"cost_usd": 100.0}, {"timeout_s": 10_000.0}):
        with pytest.raises(InvalidPayload):
            Limits.of(settings, **bad)  # type: ignore[arg-type]


def test_prices_per_model_with_a_fallback() -> None:
    prices = Prices('{"small": [0.15, 0.6], "*": [3, 15]}')
    assert prices.cost("small", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert prices.cost("other", 1000, 100) == pytest.approx(0.0045)
    with pytest.raises(ValueError):
        Prices("[1, 2]")


def test_the_tracker_warns_near_a_limit_and_refuses_spent_sub_calls() -> None:
    tracker = Tracker(Limits(10, 2, 1.0, 300), Prices('{"*": [0, 0]}'))
    assert tracker.warnings() == []
    tracker.iterations = 8
    assert any("iteration" in w for w in tracker.warnings())
    tracker.take_sub_call()
    tracker.take_sub_call()
    with pytest.raises(BudgetSpent, match="sub-call budget spent"):
        tracker.take_sub_call()


def test_payloads_are_capped_with_a_marker() -> None:
    assert cap("x" * 50, 10).startswith("x" * 10) and "40 more characters cut" in cap("x" * 50, 10)
    items = cap([{"content": "y" * 100}] * 10, 400)
    assert len(items) < 10 and "more items cut" in items[-1]["truncated"]
    assert cap([1, 2], 400) == [1, 2]
