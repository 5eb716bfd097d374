"""Typed request and response bodies, by area of the API."""

from engramlog_client.models.code import (
    CodeFile,
    CodeFileIn,
    CodeFilesList,
    CodeFilesWritten,
    CodeFileWritten,
    CodeRepo,
    CodeRepos,
    Symbol,
    SymbolCallee,
    SymbolCaller,
    SymbolHit,
    SymbolLocation,
    SymbolSearch,
)
from engramlog_client.models.deep_recall import BlindSpot, BlindSpots, Budgets, DeepRecalled, DeepRecallIn
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
from engramlog_client.models.operations import (
    DeadLetter,
    DeadLetterResolved,
    DeadLetters,
    Health,
    IngestDeadLetter,
    IngestDeadLetterResolved,
    IngestDeadLetters,
    ProjectionStatus,
    Rebuilt,
)
from engramlog_client.models.policy import PrivacyPolicy, PrivacyPolicyIn
from engramlog_client.models.recall import (
    Bucket,
    DomainResult,
    FeedbackGiven,
    FusedResult,
    MultiRecalled,
    PositionState,
    Recalled,
    RecalledItem,
    RecallRecord,
    RecallResult,
)
from engramlog_client.models.sessions import (
    ChatMessage,
    MarkedSent,
    MessagesAppended,
    MessagesPage,
    ResumeContext,
    SessionListed,
    SessionMessage,
    SessionsPage,
)
from engramlog_client.models.transcripts import (
    ChunkDrilled,
    TranscriptChunk,
    TranscriptLines,
    TranscriptListed,
    TranscriptsList,
    TranscriptText,
    TranscriptWritten,
)

__all__ = ["BatchDocumentIn", "BlindSpot", "BlindSpots", "Bucket", "Budgets", "ChatMessage", "ChunkDrilled",
           "CodeFile", "CodeFileIn", "CodeFileWritten", "CodeFilesList", "CodeFilesWritten", "CodeRepo", "CodeRepos",
           "DeadLetter",
           "DeadLetterResolved", "DeadLetters", "DeepRecallIn", "DeepRecalled", "Document", "DocumentIn",
           "DocumentListed", "DocumentWritten", "DocumentsList", "DomainResult", "Drilled", "Event", "EventIn",
           "EventsPage", "FeedbackGiven", "FusedResult", "Health", "History", "HistoryMemory", "HistoryStep",
           "IngestDeadLetter", "IngestDeadLetterResolved", "IngestDeadLetters", "MarkedSent", "Memory", "MemoryIn",
           "MessagesAppended",
           "MessagesPage", "MultiRecalled", "PositionState", "Positions", "PrivacyPolicy", "PrivacyPolicyIn",
           "ProjectionStatus", "Rebuilt", "RecallRecord", "RecallResult", "Recalled", "RecalledItem", "Remembered",
           "ResumeContext", "Section", "SessionListed", "SessionMessage", "SessionsPage", "Signals", "SupersedeIn",
           "Superseded", "Symbol", "SymbolCallee", "SymbolCaller", "SymbolHit", "SymbolLocation", "SymbolSearch",
           "TranscriptChunk", "TranscriptLines", "TranscriptListed", "TranscriptText", "TranscriptWritten",
           "TranscriptsList"]
