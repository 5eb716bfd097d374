"""LoCoMo's data as the evaluation reads it (bench/locomo.py): conversations and their questions, session dates,
the protocol's memory text for a turn and the gold evidence normalised to the conversation's dia_ids. Pure apart
from reading the file; unit-tested in tests/unit/test_bench_locomo.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCORED_CATEGORIES = (1, 2, 3, 4)
ABSTAIN_CATEGORY = 5
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC (LoCoMo gives no zone; UTC keeps it stable)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(turn: dict[str, Any]) -> str:
    """The protocol's memory text for a turn: '<speaker>: <text>'."""
    return f"{turn['speaker']}: {turn['text']}"


def normalise_evidence(evidence: Iterable[str], known: set[str] | frozenset[str]) -> list[str]:
    """Gold dia_ids in canonical form, in order, without repeats, keeping only ids present in the conversation.

    Entries holding several ids are split ('D8:6; D9:17'); a stray colon is dropped ('D:11:26' -> 'D11:26');
    leading zeros are dropped ('D30:05' -> 'D30:5'); anything else that is not a known id ('D') is dropped.
    """
    out: list[str] = []
    for entry in evidence:
        for part in re.split(r"[;,\s]+", str(entry)):
            match = _EVIDENCE_ID.fullmatch(part.strip())
            if not match:
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return out



@dataclass(frozen=True)
class Question:
    index: int  # position in the conversation's qa list
    category: int
    question: str
    evidence: tuple[str, ...]  # normalised


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]]  # {dia_id, content, occurred_at, session}
    questions: list[Question]


def load_conversations(data: Path, wanted: Sequence[str] = ()) -> list[Conversation]:
    raw = json.loads(data.read_text())
    by_id = {c["sample_id"]: c for c in raw}
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        raise ValueError(f"unknown sample ids {unknown}; the file holds {sorted(by_id)}")
    out = []
    for sample in raw:
        if wanted and sample["sample_id"] not in wanted:
            continue
        conv = sample["conversation"]
        sessions = sorted((int(m[1]), key) for key in conv if (m := _SESSION.fullmatch(key)))
        turns = []
        for number, key in sessions:
            when = parse_session_date(conv[f"{key}_date_time"])
            for turn in conv[key]:
                turns.append({"dia_id": turn["dia_id"], "content": turn_content(turn), "occurred_at": when,
                              "session": number})
        known = frozenset(t["dia_id"] for t in turns)
        questions = [Question(i, int(q["category"]), q["question"],
                              tuple(normalise_evidence(q.get("evidence") or [], known)))
                     for i, q in enumerate(sample["qa"])]
        out.append(Conversation(sample["sample_id"], turns, questions))
    return out

