"""Domain errors: each maps to one clear client-facing reason."""


class DomainError(Exception):
    """Base: bad input or a rule the request broke. Nothing is written when one is raised."""

    status_code = 422


class UnknownEventType(DomainError):
    status_code = 422


class InvalidPayload(DomainError):
    status_code = 422


class ConcurrencyConflict(DomainError):
    status_code = 409
    # True when the same request may pass if sent again (it lost a race); False when it never will.
    retryable = False


class RetryableConflict(ConcurrencyConflict):
    """A concurrent append won a race: the request, sent again, is decided against the new state."""

    retryable = True


class NotFound(DomainError):
    status_code = 404


class NotCaughtUp(DomainError):
    """Read-your-writes could not be honoured in the allowed wait."""

    status_code = 503


class Busy(DomainError):
    """What the request needs is held by other work (a governed scope's lock) longer than it may wait: retry."""

    status_code = 503


class ContentTooLarge(DomainError):
    status_code = 413


class AlreadySuperseded(DomainError):
    """A memory is superseded once: its successor is the one to supersede now."""

    status_code = 409


class FeedbackAlreadyGiven(DomainError):
    """A memory of a recall was already judged with another verdict: feedback counts once per (recall, memory)."""

    status_code = 409


class TooManyRequests(DomainError):
    """The caller already runs as much of this kind of work at once as it may: retry when some has answered."""

    status_code = 429
