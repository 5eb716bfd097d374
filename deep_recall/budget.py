"""Budgets and cost: one deep recall's limits (iterations, sub-calls, dollars, the hard deadline), what it has
spent so far, and the warnings the model gets as a limit approaches. Sub-calls may run in parallel threads, so
the tracker is locked. Nested mini-loops charge the same tracker as their parent."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from deep_recall.deadline import left_s
from domain.errors import InvalidPayload
from infra.settings import Settings

WARN_SHARE = 0.8  # warn once this share of a limit is spent


@dataclass(frozen=True)
class Limits:
    iterations: int
    sub_calls: int
    cost_usd: float
    timeout_s: float

    @classmethod
    def of(cls, settings: Settings, iterations: int | None = None, sub_calls: int | None = None,
           cost_usd: float | None = None, timeout_s: float | None = None) -> Limits:
        """The settings' defaults, each overridden by the request's value within the operator's maximum."""
        def pick(name: str, value: float | None, default: float, cap: float) -> float:
            if value is None:
                return default
            if not 0 < value <= cap:
                raise InvalidPayload(f"budgets.{name} must be > 0 and at most {cap} (the operator's maximum)")
            return value

        deep = settings.deep
        return cls(int(pick("iterations", iterations, deep.deep_max_iterations, deep.deep_cap_iterations)),
                   int(pick("sub_calls", sub_calls, deep.deep_max_sub_calls, deep.deep_cap_sub_calls)),
                   pick("cost_usd", cost_usd, deep.deep_max_cost_usd, deep.deep_cap_cost_usd),
                   pick("timeout_s", timeout_s, deep.deep_timeout_s, deep.deep_timeout_s))


class Prices:
    """USD per million tokens by model ({"model": [input, output]}, "*" for any other)."""

    def __init__(self, raw: str) -> None:
        try:
            table = json.loads(raw)
            self.table = {str(k): (float(v[0]), float(v[1])) for k, v in table.items()}
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            raise ValueError(f"ENGRAMLOG_LLM_PRICES={raw!r} is not {{\"model\": [input, output]}}") from None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        inp, out = self.table.get(model) or self.table.get("*") or (0.0, 0.0)
        return (input_tokens * inp + output_tokens * out) / 1_000_000


class BudgetSpent(Exception):
    """A limit is reached: the loop stops (iterations, dollars) or the sub-call is refused (sub-calls)."""


@dataclass
class Tracker:
    limits: Limits
    prices: Prices
    started: float = field(default_factory=time.monotonic)
    iterations: int = 0
    sub_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def deadline(self) -> float:
        return self.started + self.limits.timeout_s

    def remaining_s(self) -> float:
        return left_s(self.deadline)  # none once the API is stopping

    def charge(self, model: str, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.cost_usd += self.prices.cost(model, input_tokens, output_tokens)

    def over_cost(self) -> bool:
        return self.cost_usd >= self.limits.cost_usd

    def take_sub_call(self) -> int:
        """Count one sub-call, or refuse it when the sub-call or dollar budget is spent."""
        with self._lock:
            if self.sub_calls >= self.limits.sub_calls:
                raise BudgetSpent(f"sub-call budget spent ({self.limits.sub_calls} sub-calls): call FINAL now")
            if self.cost_usd >= self.limits.cost_usd:
                raise BudgetSpent(f"dollar budget spent (${self.limits.cost_usd:.2f}): call FINAL now")
            self.sub_calls += 1
            return self.sub_calls

    def warnings(self) -> list[str]:
        """What the model is told before its next turn when a limit is near."""
        out = []
        left = self.limits.iterations - self.iterations
        if left <= max(1, round(self.limits.iterations * (1 - WARN_SHARE))):
            out.append(f"{left} iteration(s) left: call FINAL(answer) soon")
        if self.sub_calls >= self.limits.sub_calls * WARN_SHARE:
            out.append(f"{self.limits.sub_calls - self.sub_calls} sub-call(s) left")
        if self.cost_usd >= self.limits.cost_usd * WARN_SHARE:
            out.append(f"${self.limits.cost_usd - self.cost_usd:.4f} of ${self.limits.cost_usd:.2f} left")
        if self.remaining_s() <= self.limits.timeout_s * (1 - WARN_SHARE):
            out.append(f"{max(0.0, self.remaining_s()):.0f}s left before the hard timeout")
        return out

    def tokens(self) -> dict[str, int]:
        return {"input": self.input_tokens, "output": self.output_tokens,
                "total": self.input_tokens + self.output_tokens}


__all__ = ["BudgetSpent", "Limits", "Prices", "Tracker"]
