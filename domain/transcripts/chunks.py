"""Turn-aligned chunks of a transcript: each chunk an exact slice of whole turns' lines, cut so that appending turns
changes only the last chunk(s).

Cut greedily from the start: a chunk takes turns until it holds TURNS_PER_CHUNK of them, or the next turn would
take it past MAX_CHUNK_CHARS (a chunk holds at least one turn, however long). Each cut depends only on the turns
before it and the one after, so a transcript with turns appended keeps every chunk but its last (which grows, or
gets its missing final newline), and adds new ones. A chunk's content hash is the sha256 of its exact text;
`"".join(c.text for c in chunks)` is the transcript. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.text import content_hash
from domain.transcripts.parse import Transcript, Turn

TURNS_PER_CHUNK = 8
MAX_CHUNK_CHARS = 6000


@dataclass(frozen=True)
class Chunk:
    ord: int  # 0-based position in the transcript
    text: str  # the exact slice: whole lines of whole turns
    content_hash: str
    first_line: int  # 1-based, inclusive
    last_line: int
    first_turn: int  # 0-based turn indexes, inclusive
    last_turn: int
    turns: tuple[Turn, ...]

    @property
    def index_text(self) -> str:
        """What BM25 and the embedder read: each turn's role and text (not its JSON or its timestamp)."""
        return "\n".join(t.rendered() for t in self.turns)


def _text(transcript: Transcript, turns: list[Turn]) -> str:
    return "".join(transcript.lines[turns[0].first_line - 1:turns[-1].last_line])


def chunk_transcript(transcript: Transcript, turns_per_chunk: int = TURNS_PER_CHUNK,
                     max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    groups: list[list[Turn]] = []
    size = 0
    for turn in transcript.turns:
        n = sum(len(line) for line in transcript.lines[turn.first_line - 1:turn.last_line])
        if groups and len(groups[-1]) < turns_per_chunk and size + n <= max_chars:
            groups[-1].append(turn)
            size += n
        else:
            groups.append([turn])
            size = n
    chunks = []
    for i, group in enumerate(groups):
        text = _text(transcript, group)
        chunks.append(Chunk(i, text, content_hash(text), group[0].first_line, group[-1].last_line, group[0].index,
                            group[-1].index, tuple(group)))
    return chunks


__all__ = ["MAX_CHUNK_CHARS", "TURNS_PER_CHUNK", "Chunk", "chunk_transcript"]
