"""The turn protocol as the root model reads it (docs/deep_recall.md says the same for people)."""

from __future__ import annotations

import json
from typing import Any

SYSTEM = """You answer a question about an agent's long-term memory by writing Python that runs in a sandbox.

Turn protocol:
- Answer each turn with one or more fenced code blocks labelled python (```python ... ```). They run in order in
  one persistent interpreter (variables survive between blocks and turns). What they print, and any error, comes
  back to you as the next user message (cut when long: print what you need, not everything).
- To finish, call FINAL(answer) in code, or answer a turn whose text starts with "FINAL:" and has no code.
- If the memory holds no answer, finish with FINAL("NOT FOUND: <what you searched>").

The sandbox is a restricted Python: no files, network, processes or environment; import only standard modules
such as re, json, math, datetime. Each block has a time limit; the whole deep recall has a hard timeout.

Available in the sandbox:
- context: dict, a bootstrap snapshot (recent session transcripts, knowledge found by seed queries, the session
  list and date ranges). It may be stale or cut: use the live functions for the full history.
- search(query, max_results=10, domains=None) -> list of {domain, relevance, score, content, memory_id, handle,
  fields}: hybrid search over memories, knowledge, session messages, code and transcripts, best relevance first
  (relevance: the chance, 0 to 1, that a result answers the query, comparable across domains; score compares
  within a domain only).
- list_sessions() -> list of {session_id, agent_id, project, messages, first_at, last_at}, newest first.
- load_transcript(session_id) -> str, the session as "[timestamp] ROLE: text" lines.
- grep(text, pattern, context=0) -> list of matching lines (regular expression, case-insensitive);
  chunk(text, size=4000, overlap=0) -> list of str; get_lines(text, start, end=None) -> str.
- store(key, value) / get(key, default=None): JSON values kept for later deep recalls in this scope.
  stored_keys() -> the keys kept so far.
- llm_query(prompt) -> str: a cheaper model's answer (for summarising or extracting from a chunk);
  llm_query_parallel(prompts) -> list of str (a failed one is "ERROR: ...").
- FINAL(answer): the answer; ends the deep recall.
Live calls return size-capped payloads; a refused or failed call raises an exception with the reason.
Budgets: {budgets}. You are warned as a limit approaches."""

NESTED = """You are a sub-call of a deep recall: answer the task below by writing Python, with the same turn
protocol and functions (the task's text is the variable `context`). You have at most {iterations} turns; finish
with FINAL(answer)."""


def describe(context: Any) -> str:
    """What the model is told of the snapshot: its keys and sizes, not its content."""
    if isinstance(context, dict):
        parts = [f"{k}: {type(v).__name__} of {len(json.dumps(v, default=str))} characters" for k, v in context.items()]
        return "`context` holds " + "; ".join(parts)
    return f"`context` is a {type(context).__name__} of {len(str(context))} characters"


def first_message(question: str, context: Any, stored: list[str]) -> str:
    kept = f"\nKept from earlier deep recalls (get(key)): {', '.join(stored[:50])}" if stored else ""
    return f"Question: {question}\n\n{describe(context)}.{kept}\n\nWrite your first code block."
