"""The recall domains, in their default activation order. Adding a domain: its folder, and one line here."""

from __future__ import annotations

from recall.domains.base import RecallDomain
from recall.domains.code import CodeDomain
from recall.domains.knowledge import KnowledgeDomain
from recall.domains.memories import MemoryDomain
from recall.domains.sessions import SessionsDomain
from recall.domains.transcripts import TranscriptsDomain

DOMAINS: dict[str, RecallDomain] = {d.name: d for d in (MemoryDomain(), KnowledgeDomain(), SessionsDomain(),
                                                         CodeDomain())}
DOMAINS[TranscriptsDomain.name] = TranscriptsDomain()  # transcripts (recall/domains/transcripts.py)


def get_domain(name: str) -> RecallDomain:
    return DOMAINS[name]


__all__ = ["DOMAINS", "get_domain"]
