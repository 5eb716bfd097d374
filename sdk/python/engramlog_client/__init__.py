"""The Python client of the Engramlog memory service: `Engramlog` (sync) and `AsyncEngramlog` (async), typed
pydantic request and response models, retries with backoff (idempotent writes), read-your-writes.

    from engramlog_client import Engramlog
    with Engramlog("http://127.0.0.1:8000", api_key="...") as memory:
        memory.remember("Alice moved to Lisbon in May", agent_id="assistant")
        answer = memory.recall("where does Alice live?", agent_id="assistant")  # sees the client's own writes
        print(answer.results[0].content)
"""

from engramlog_client.aio import AsyncEngramlog
from engramlog_client.errors import (
    AuthError,
    ConflictError,
    EngramlogConnectionError,
    EngramlogError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    UnavailableError,
)
from engramlog_client.retry import NO_RETRY, Retry
from engramlog_client.sync import Engramlog

__version__ = "0.1.0"
__all__ = ["AsyncEngramlog", "AuthError", "ConflictError", "Engramlog", "EngramlogConnectionError",
           "EngramlogError", "InvalidRequestError", "NO_RETRY", "NotFoundError", "PayloadTooLargeError", "Retry",
           "UnavailableError", "__version__"]
