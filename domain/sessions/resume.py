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

The plan (plan_resume) needs only each message's shape (LineShape: role, flags, rendered length), not its text, so
the service reads the text of the kept messages alone (services/sessions.py); build_resume is plan + render over a
whole fold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from domain.sessions.messages import SessionLine, SessionLog

SECTIONS = ("checkpoint", "conclusions", "tool_results", "turns")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _headers(turns: int) -> dict[str, str]:
    return {"checkpoint": "\n## Checkpoint\n", "conclusions": "\n## Conclusions\n",
            "tool_results": "\n## Key tool results\n", "turns": f"\n## Last {turns} turns\n"}


def _head(seq: int, role: str, tool_name: str | None, created_at: datetime) -> str:
    return f"[#{seq} {role}" + (f" · {tool_name}" if tool_name else "") + f" · {created_at.isoformat()}]"


def render_line(line: SessionLine) -> str:
    body = [_head(line.seq, line.role, line.tool_name, line.created_at)]
    body += [line.text] if line.text else []
    body += [f"→ call {c}" for c in line.tool_calls]
    return "\n".join(body) + "\n"


@dataclass(frozen=True)
class LineShape:
    """A message as the plan needs it, without its text: the fold's line less what the rendering alone reads, and
    where the log holds it (so the text is read only for the messages the plan keeps)."""
    seq: int
    message_id: str
    role: str
    tool_name: str | None
    sent: bool
    checkpoint: bool
    has_text: bool  # text.strip() is not empty (a conclusion needs one)
    chars: int  # len(render_line(line))
    version: int  # the stream version of the event that listed it first

    def numbered(self, seq: int) -> LineShape:
        return replace(self, seq=seq, chars=self.chars - len(str(self.seq)) + len(str(seq)))

    def marked_sent(self) -> LineShape:
        return replace(self, sent=True)


def shape_of(line: SessionLine, version: int) -> LineShape:
    return LineShape(line.seq, line.message_id, line.role, line.tool_name, line.sent, line.checkpoint,
                     bool(line.text.strip()), len(render_line(line)), version)


@dataclass(frozen=True)
class Item:
    section: str
    first_seq: int
    seqs: tuple[int, ...]  # its messages, in session order
    chars: int  # of its rendered text


@dataclass(frozen=True)
class ResumeContext:
    text: str
    tokens: int
    budget_tokens: int
    items: dict[str, int]  # kept, per section
    dropped: int  # items dropped for the budget


@dataclass(frozen=True)
class ResumePlan:
    """The items kept within the budget, in the order they are rendered, and how many were dropped."""
    kept: tuple[Item, ...]
    items: dict[str, int]  # kept, per section
    dropped: int

    @property
    def seqs(self) -> set[int]:
        """The messages whose text the context holds."""
        return {seq for it in self.kept for seq in it.seqs}


def _item(section: str, turn: Sequence[LineShape]) -> Item:
    return Item(section, turn[0].seq, tuple(t.seq for t in turn), sum(t.chars for t in turn))


def _items(lines: Sequence[LineShape], turns_wanted: int) -> list[Item]:
    visible = [line for line in lines if line.sent]
    if not visible:  # every message pending: nothing to resume from
        return []
    cp = max((i for i, line in enumerate(visible) if line.checkpoint), default=-1)
    users = [i for i, line in enumerate(visible) if line.role == "user"]
    start = users[-turns_wanted] if len(users) >= turns_wanted else 0
    items: list[Item] = []
    if cp >= 0:
        items.append(_item("checkpoint", [visible[cp]]))
    last_assistant: LineShape | None = None
    tools: dict[str, LineShape] = {}
    for i in range(cp + 1, start + 1 if start > cp else cp + 1):
        line = visible[i]
        if line.role == "user":
            if last_assistant is not None:
                items.append(_item("conclusions", [last_assistant]))
            last_assistant = None
        elif i < start and line.role == "assistant" and line.has_text:
            last_assistant = line
        if i < start and line.role == "tool":
            tools[line.tool_name or ""] = line
    for line in sorted(tools.values(), key=lambda t: t.seq):
        items.append(_item("tool_results", [line]))
    turn: list[LineShape] = []
    for i in range(start, len(visible)):
        line = visible[i]
        if line.role == "user" and turn:
            items.append(_item("turns", turn))
            turn = []
        if i != cp:
            turn.append(line)
    if turn:
        items.append(_item("turns", turn))
    return items


def _header(session_id: str) -> str:
    return f"# Resume context · session {session_id}\n"


def plan_resume(session_id: str, lines: Sequence[LineShape], budget_tokens: int, turns_wanted: int) -> ResumePlan:
    """Which items the context of a session within `budget_tokens` keeps (see the module's docstring), from the
    messages' shapes alone."""
    headers = _headers(turns_wanted)
    items = _items(lines, turns_wanted)
    kept = [True] * len(items)
    per_section = {s: sum(1 for it in items if it.section == s) for s in SECTIONS}
    size = (len(_header(session_id)) + sum(len(headers[s]) for s in SECTIONS if per_section[s])
            + sum(it.chars for it in items))
    limit = budget_tokens * 4  # ceil(size / 4) <= budget  <=>  size <= 4 * budget
    drop_order = sorted(range(len(items)), key=lambda i: (items[i].section == "checkpoint", items[i].first_seq))
    dropped = 0
    for i in drop_order:
        if size <= limit:
            break
        kept[i] = False
        dropped += 1
        size -= items[i].chars
        per_section[items[i].section] -= 1
        if per_section[items[i].section] == 0:
            size -= len(headers[items[i].section])
    chosen = tuple(it for s in SECTIONS for it, k in zip(items, kept, strict=True) if k and it.section == s)
    return ResumePlan(chosen, per_section, dropped)


def render_resume(session_id: str, plan: ResumePlan, lines: Mapping[int, SessionLine], budget_tokens: int,
                  turns_wanted: int) -> ResumeContext:
    """The plan's text from its messages (`lines`: by seq, at least those of plan.seqs)."""
    headers = _headers(turns_wanted)
    parts = [_header(session_id)]
    section = None
    for it in plan.kept:
        if it.section != section:
            section = it.section
            parts.append(headers[section])
        parts.extend(render_line(lines[seq]) for seq in it.seqs)
    text = "".join(parts)
    return ResumeContext(text, estimate_tokens(text), budget_tokens, plan.items, plan.dropped)


def build_resume(log: SessionLog[SessionLine], budget_tokens: int, turns_wanted: int) -> ResumeContext:
    """The resume context of a session within `budget_tokens` (see the module's docstring), from its whole log."""
    plan = plan_resume(log.session_id, [shape_of(line, 0) for line in log.lines], budget_tokens, turns_wanted)
    return render_resume(log.session_id, plan, {line.seq: line for line in log.lines}, budget_tokens, turns_wanted)


__all__ = ["SECTIONS", "LineShape", "ResumeContext", "ResumePlan", "build_resume", "estimate_tokens", "plan_resume",
           "render_line", "render_resume", "shape_of"]
