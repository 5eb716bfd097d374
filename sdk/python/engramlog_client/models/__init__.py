"""Typed request and response bodies, by area of the API."""

from engramlog_client.models.events import Event, EventIn, EventsPage, Positions
from engramlog_client.models.knowledge import (
    BatchDocumentIn,
    Document,
    DocumentIn,
    DocumentListed,
    DocumentsList,
    DocumentWritten,
    Drilled,
    Section,
)
from engramlog_client.models.memories import (
    History,
    HistoryMemory,
    HistoryStep,
    Memory,
    MemoryIn,
    Remembered,
    Signals,
    Superseded,
    SupersedeIn,
)
from engramlog_client.models.operations import Health, ProjectionStatus
from engramlog_client.models.policy import PrivacyPolicy, PrivacyPolicyIn
from engramlog_client.models.recall import (
    Bucket,
    DomainResult,
    FeedbackGiven,
    MultiRecalled,
    PositionState,
    Recalled,
    RecalledItem,
    RecallRecord,
    RecallResult,
)

__all__ = ["BatchDocumentIn", "Bucket", "Document", "DocumentIn", "DocumentListed", "DocumentWritten",
           "DocumentsList", "DomainResult", "Drilled", "Event", "EventIn", "EventsPage", "FeedbackGiven", "Health",
           "History", "HistoryMemory", "HistoryStep", "Memory", "MemoryIn", "MultiRecalled", "PositionState",
           "Positions", "PrivacyPolicy", "PrivacyPolicyIn", "ProjectionStatus", "RecallRecord", "RecallResult",
           "Recalled", "RecalledItem", "Remembered", "Section", "Signals", "SupersedeIn", "Superseded"]
