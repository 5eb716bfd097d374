"""The root loop: the model's turns, their code blocks run in the sandbox, what they printed sent back, until
FINAL, a spent budget, the hard timeout or a model error. A sub-call (llm_query) is a plain completion on the
sub-model, or at max_depth >= 2 a nested mini-loop of its own (deep_nested_iterations turns) on the sub-model,
charged to the same budget. The hard timeout stops whatever runs when it passes: a model call is waited for at
most until the deadline, and a block still running then is stopped (deep_recall/deadline.py)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import structlog

from deep_recall.budget import BudgetSpent, Tracker
from deep_recall.capacity import Reservation
from deep_recall.deadline import HardTimeout, call_within
from deep_recall.live import LiveAPIs, short
from deep_recall.models import ChatModel, Completion, Message, ModelError
from deep_recall.prompts import NESTED, SYSTEM, first_message
from deep_recall.sandbox import Sandbox
from deep_recall.store import Store
from infra.settings import Settings

log = structlog.get_logger(__name__)
CODE_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)
PARALLEL = 4  # sub-calls of one llm_query_parallel at a time
NO_CODE = ("Your turn had no ```python block and did not start with FINAL:. Answer with code, "
           "or with a turn starting with FINAL: and no code.")
OPEN_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n")
# A turn cut at max_tokens inside a block: the block is not run (it ends mid-statement); the model is told why.
CUT_BLOCK = ("Your turn was cut off at the output token limit before its ```python block was closed, so it did "
             "not run. Write shorter code (one step per turn), or answer with FINAL:.")


@dataclass
class Env:
    """What every loop of one deep recall shares: the live APIs, the store, the budget, the sub-model."""

    settings: Settings
    live: LiveAPIs
    store: Store | None
    tracker: Tracker
    sub_model: ChatModel
    reservation: Reservation  # the sandbox workers reserved for this deep recall, one per nesting level
    sub_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Outcome:
    answer: str | None
    stopped: str  # final | budget | timeout | error
    reason: str | None
    iterations: list[dict[str, Any]]
    cost_usd: float = 0.0


def code_blocks(text: str) -> list[str]:
    return [b for b in CODE_BLOCK.findall(text) if b.strip()]


def text_final(text: str) -> str | None:
    stripped = text.strip()
    return stripped[len("FINAL:"):].strip() if stripped.startswith("FINAL:") else None


def _answer_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class Loop:
    def __init__(self, env: Env, model: ChatModel, depth: int, max_iterations: int, nested: bool,
                 level: int = 0) -> None:
        self.env, self.model, self.depth, self.level = env, model, depth, level  # level: how deep it is nested
        self.max_iterations, self.nested = max_iterations, nested
        self.final: str | None = None
        self.cost_usd = 0.0

    # -- model calls, charged -------------------------------------------------------------------------------
    def _complete(self, model: ChatModel, messages: list[Message]) -> Completion:
        tracker = self.env.tracker
        remaining = tracker.remaining_s()
        if remaining <= 0:
            raise TimeoutError("hard timeout")
        # The client's timeout bounds each read; the deadline bounds the whole call (a reply that trickles in).
        completion = call_within(tracker.deadline, lambda: model.complete(messages, remaining), "model call")
        tracker.charge(completion.model, completion.input_tokens, completion.output_tokens)
        self.cost_usd += tracker.prices.cost(completion.model, completion.input_tokens, completion.output_tokens)
        return completion

    # -- the sandbox's functions ----------------------------------------------------------------------------
    def _final(self, answer: Any) -> None:
        self.final = _answer_text(answer)

    def llm_query(self, prompt: Any) -> str:
        if not isinstance(prompt, str):
            raise TypeError("llm_query() takes a prompt string")
        self.env.live.check_time()
        try:
            n = self.env.tracker.take_sub_call()
        except BudgetSpent as exc:
            raise RuntimeError(str(exc)) from None
        record: dict[str, Any] = {"n": n, "depth": self.depth, "prompt": short(prompt)}
        try:
            if self.depth >= 2:  # a nested mini-loop on the sub-model, its own sub-calls one level shallower
                inner = Loop(self.env, self.env.sub_model, self.depth - 1,
                             self.env.settings.deep.deep_nested_iterations, nested=True, level=self.level + 1)
                outcome = inner.run(prompt, prompt)
                record.update(kind="loop", iterations=len(outcome.iterations), stopped=outcome.stopped,
                              cost_usd=round(outcome.cost_usd, 6), trace=outcome.iterations)
                self.cost_usd += outcome.cost_usd
                if outcome.answer is None:
                    raise RuntimeError(f"the sub-call stopped without an answer ({outcome.stopped}: {outcome.reason})")
                answer = outcome.answer
            else:
                before = self.cost_usd
                completion = self._complete(self.env.sub_model, [{"role": "user", "content": prompt}])
                record.update(kind="completion", tokens={"input": completion.input_tokens,
                                                         "output": completion.output_tokens},
                              cost_usd=round(self.cost_usd - before, 6))
                answer = completion.text
        except (ModelError, TimeoutError) as exc:
            record["error"] = str(exc)
            self.env.sub_calls.append(record)
            raise RuntimeError(f"llm_query failed: {exc}") from None
        except RuntimeError as exc:
            record["error"] = str(exc)
            self.env.sub_calls.append(record)
            raise
        record["answer"] = short(answer)
        self.env.sub_calls.append(record)
        return answer

    def llm_query_parallel(self, prompts: Any) -> list[str]:
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise TypeError("llm_query_parallel() takes a list of prompt strings")

        def one(prompt: str) -> str:
            try:
                return self.llm_query(prompt)
            except Exception as exc:  # one failed prompt is data in the answer list, not a failed call
                return f"ERROR: {exc}"

        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            return list(pool.map(one, prompts))

    def externals(self) -> dict[str, Any]:
        live, store = self.env.live, self.env.store

        def refused(*_: Any, **__: Any) -> None:
            raise RuntimeError("store() is not available in a sub-call")

        return {"search": live.search, "list_sessions": live.list_sessions, "load_transcript": live.load_transcript,
                "store": store.store if store and not self.nested else refused,
                "get": store.get if store else (lambda key, default=None: default),
                "stored_keys": store.keys if store else list,
                "llm_query": self.llm_query, "llm_query_parallel": self.llm_query_parallel, "FINAL": self._final}

    # -- the turns ------------------------------------------------------------------------------------------
    def _feedback(self, results: list[tuple[str, str | None]]) -> str:
        limit = self.env.settings.deep.deep_output_chars
        share = max(200, limit // max(1, len(results)) - 100)  # each block its share: one loud block hides no error

        def cut(value: str) -> str:
            return value if len(value) <= share else value[:share] + f"\n[... {len(value) - share} more characters cut]"

        parts = []
        for i, (output, error) in enumerate(results, 1):
            parts.append(f"[block {i} output]\n{cut(output) if output else '(no output)'}")
            if error:
                parts.append(f"[block {i} error]\n{cut(error)}")
        text = "\n".join(parts)
        if len(text) > limit:
            text = text[:limit] + f"\n[... {len(text) - limit} more characters cut: print less]"
        if not self.nested:
            warnings = self.env.tracker.warnings()
            if warnings:
                text += "\nBUDGET WARNING: " + "; ".join(warnings)
        return text

    def run(self, question: str, context: Any) -> Outcome:
        settings, tracker = self.env.settings, self.env.tracker
        budgets = (f"{tracker.limits.iterations} iterations, {tracker.limits.sub_calls} sub-calls, "
                   f"${tracker.limits.cost_usd:.2f}, {tracker.limits.timeout_s:.0f}s")
        system = NESTED.format(iterations=self.max_iterations) + "\n\n" + SYSTEM if self.nested else SYSTEM
        stored = self.env.store.keys() if self.env.store else []
        messages: list[Message] = [{"role": "system", "content": system.replace("{budgets}", budgets)},
                                   {"role": "user", "content": first_message(question, context, stored)}]
        audit: list[dict[str, Any]] = []
        block_timeout = min(settings.deep.deep_block_timeout_s, tracker.limits.timeout_s)

        def outcome(answer: str | None, stopped: str, reason: str | None) -> Outcome:
            return Outcome(answer, stopped, reason, audit, self.cost_usd)

        try:
            with self.env.reservation.slot(self.level), \
                    Sandbox(settings, {"context": context}, self.externals(), block_timeout) as sandbox:
                return self._turns(sandbox, messages, audit, outcome)
        except HardTimeout as exc:  # no worker free for it before the deadline
            return outcome(None, "timeout", str(exc))

    def _turns(self, sandbox: Sandbox, messages: list[Message], audit: list[dict[str, Any]],
               outcome: Callable[[str | None, str, str | None], Outcome]) -> Outcome:
        tracker = self.env.tracker
        turns = 0
        while True:
            if turns >= self.max_iterations:
                return outcome(None, "budget", f"iteration budget spent ({self.max_iterations})")
            if tracker.over_cost():
                return outcome(None, "budget", f"dollar budget spent (${tracker.limits.cost_usd:.2f})")
            asked = time.perf_counter()
            try:
                completion = self._complete(self.model, messages)
            except TimeoutError:
                return outcome(None, "timeout", f"hard timeout ({tracker.limits.timeout_s:.0f}s)")
            except ModelError as exc:
                if tracker.remaining_s() <= 0:
                    return outcome(None, "timeout", f"hard timeout ({tracker.limits.timeout_s:.0f}s)")
                return outcome(None, "error", f"model error: {exc}")
            turns += 1
            if not self.nested:
                tracker.iterations += 1
            blocks = code_blocks(completion.text)
            turn: dict[str, Any] = {"turn": turns, "tokens": {"input": completion.input_tokens,
                                                              "output": completion.output_tokens},
                                    "model_ms": round((time.perf_counter() - asked) * 1000, 2), "blocks": []}
            audit.append(turn)
            if not blocks:
                final = text_final(completion.text)
                if final is not None:
                    turn["final"] = short(final)
                    return outcome(final, "final", None)
                turn["text"] = short(completion.text)
                cut = completion.truncated and OPEN_BLOCK.search(completion.text) is not None
                if cut:
                    turn["truncated"] = True
                messages += [{"role": "assistant", "content": completion.text},
                             {"role": "user", "content": CUT_BLOCK if cut else NO_CODE}]
                continue
            results: list[tuple[str, str | None]] = []
            for code in blocks:
                live, saved = self.env.live, self.env.live.calls
                calls: list[dict[str, Any]] = []
                live.calls = calls  # this block's live calls (a nested loop keeps its own, then restores)
                ran = time.perf_counter()
                try:
                    result = sandbox.run(code, tracker.deadline)
                finally:
                    live.calls = saved
                results.append((result.output, result.error))
                turn["blocks"].append({"code": short(code), "output": short(result.output),
                                       "error": result.error and short(result.error), "live_calls": calls,
                                       "ms": round((time.perf_counter() - ran) * 1000, 2),
                                       **({"stopped": "timeout"} if result.at_deadline else {})})
                if self.final is not None or tracker.remaining_s() <= 0:
                    break
            if self.final is not None:
                turn["final"] = short(self.final)
                return outcome(self.final, "final", None)
            if tracker.remaining_s() <= 0:
                return outcome(None, "timeout", f"hard timeout ({tracker.limits.timeout_s:.0f}s)")
            messages += [{"role": "assistant", "content": completion.text},
                         {"role": "user", "content": self._feedback(results)}]


__all__ = ["Env", "Loop", "Outcome", "code_blocks", "text_final"]
