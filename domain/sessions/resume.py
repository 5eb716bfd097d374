"""The resume context: a session's own messages, extracted mechanically for resuming it. Pure and deterministic.

Only sent messages are used (a pending one is never injected). Sections, in this order:
1. Checkpoint: the latest message marked `checkpoint` (it stands for everything before it).
2. Conclusions: between the checkpoint and the last turns, the assistant's last non-empty message before each
   user message (what the assistant concluded before the user spoke again).
3. Key tool results: in that same span, the last result (role=tool) of each tool (by tool_name; results without
   a tool name count as one tool), in session order.
4. The last N turns (N = ENGRAMLOG_RESUME_TURNS, 30): every message from the N-th last user message on (a turn is
   a user message and all that follows it until the next); with fewer than N user messages, the whole session.
   The checkpoint is not repeated there.

Each item (the checkpoint; one conclusion; one tool result; one whole turn) is rendered whole. Token estimate:
ceil(characters / 4) of the rendered text (Python code points, headers included). Over the budget, whole items are
dropped oldest first (by their first message's seq), the checkpoint last; a message is never cut. The same log
gives the same bytes: nothing here reads a clock, a model or another store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from domain.sessions.messages import SessionLine, SessionLog

SECTIONS = ("checkpoint", "conclusions", "tool_results", "turns")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _headers(turns: int) -> dict[str, str]:
    return {"checkpoint": "\n## Checkpoint\n", "conclusions": "\n## Conclusions\n",
            "tool_results": "\n## Key tool results\n", "turns": f"\n## Last {turns} turns\n"}


def render_line(line: SessionLine) -> str:
    head = f"[#{line.seq} {line.role}" + (f" · {line.tool_name}" if line.tool_name else "")
    head += f" · {line.created_at.isoformat()}]"
    body = [head, line.text] if line.text else [head]
    body += [f"→ call {c}" for c in line.tool_calls]
    return "\n".join(body) + "\n"


@dataclass(frozen=True)
class Item:
    section: str
    first_seq: int
    text: str


@dataclass(frozen=True)
class ResumeContext:
    text: str
    tokens: int
    budget_tokens: int
    items: dict[str, int]  # kept, per section
    dropped: int  # items dropped for the budget


def _items(lines: Sequence[SessionLine], turns_wanted: int) -> list[Item]:
    visible = [line for line in lines if line.sent]
    cp = max((i for i, line in enumerate(visible) if line.checkpoint), default=-1)
    users = [i for i, line in enumerate(visible) if line.role == "user"]
    start = users[-turns_wanted] if len(users) >= turns_wanted else 0
    items: list[Item] = []
    if cp >= 0:
        items.append(Item("checkpoint", visible[cp].seq, render_line(visible[cp])))
    last_assistant: SessionLine | None = None
    tools: dict[str, SessionLine] = {}
    for i in range(cp + 1, start + 1 if start > cp else cp + 1):
        line = visible[i]
        if line.role == "user":
            if last_assistant is not None:
                items.append(Item("conclusions", last_assistant.seq, render_line(last_assistant)))
            last_assistant = None
        elif i < start and line.role == "assistant" and line.text.strip():
            last_assistant = line
        if i < start and line.role == "tool":
            tools[line.tool_name or ""] = line
    for line in sorted(tools.values(), key=lambda t: t.seq):
        items.append(Item("tool_results", line.seq, render_line(line)))
    turn: list[SessionLine] = []
    for i in range(start, len(visible)):
        line = visible[i]
        if line.role == "user" and turn:
            items.append(Item("turns", turn[0].seq, "".join(render_line(t) for t in turn)))
            turn = []
        if i != cp:
            turn.append(line)
    if turn:
        items.append(Item("turns", turn[0].seq, "".join(render_line(t) for t in turn)))
    return items


def build_resume(log: SessionLog, budget_tokens: int, turns_wanted: int) -> ResumeContext:
    """The resume context of a session within `budget_tokens` (see the module's docstring)."""
    header = f"# Resume context · session {log.session_id}\n"
    headers = _headers(turns_wanted)
    items = _items(log.lines, turns_wanted)
    kept = [True] * len(items)
    per_section = {s: sum(1 for it in items if it.section == s) for s in SECTIONS}
    size = len(header) + sum(len(headers[s]) for s in SECTIONS if per_section[s]) + sum(len(it.text) for it in items)
    limit = budget_tokens * 4  # ceil(size / 4) <= budget  <=>  size <= 4 * budget
    drop_order = sorted(range(len(items)), key=lambda i: (items[i].section == "checkpoint", items[i].first_seq))
    dropped = 0
    for i in drop_order:
        if size <= limit:
            break
        kept[i] = False
        dropped += 1
        size -= len(items[i].text)
        per_section[items[i].section] -= 1
        if per_section[items[i].section] == 0:
            size -= len(headers[items[i].section])
    parts = [header]
    for s in SECTIONS:
        chosen = [it.text for it, k in zip(items, kept, strict=True) if k and it.section == s]
        if chosen:
            parts.append(headers[s])
            parts.extend(chosen)
    text = "".join(parts)
    return ResumeContext(text, estimate_tokens(text), budget_tokens, per_section, dropped)


__all__ = ["SECTIONS", "ResumeContext", "build_resume", "estimate_tokens", "render_line"]
