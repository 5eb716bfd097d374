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
_BY_CLASS: dict[type[RecallDomain], RecallDomain] = {type(d): d for d in DOMAINS.values()}


def get_domain(name: str) -> RecallDomain:
    """A domain by its name: for names that come from outside (a request's domains)."""
    return DOMAINS[name]


def domain_of(cls: type[RecallDomain]) -> RecallDomain:
    """A domain by its class: how code names one (a route's `reads(SessionsDomain)`), so a misspelt domain is an
    import error, not a KeyError at run time; KeyError for a class not registered here."""
    return _BY_CLASS[cls]


__all__ = ["DOMAINS", "domain_of", "get_domain"]
