"""What every command reaches the service through: the stack's settings, the API's client (the SDK), the
database engine for operators' commands, and the one way a failed API call is told to the user.

Commands call these through the module (`calls.client()`, not `from cli.calls import client`): tests and benches
swap `cli.calls.client` / `cli.calls.engine` for an in-process app or a test database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from cli.output import fail

if TYPE_CHECKING:
    from engramlog_client import Engramlog
    from sqlalchemy import Engine

    from infra.settings import Settings


LISTING_PAGE = 10_000  # items asked for per page of a listing route


class Refused(Exception):
    """An API call the server refused or that got no answer; str() is what to tell the user (refusal())."""


def settings() -> Settings:
    from infra.settings import get_settings
    from stack.state import stack_state_problem

    resolved = get_settings()
    problem = stack_state_problem(resolved.stack.data_dir)  # it names the API our key is sent to: trusted only if live
    if problem:
        fail(problem)
    return resolved


def engine() -> Engine:
    from infra.db import get_engine

    s = settings()
    if not s.stack.database_url:
        fail(f"no database: no stack is running on {s.stack.data_dir} and DATABASE_URL is not set")
    return get_engine()


def client() -> Engramlog:
    from engramlog_client import Engramlog  # the SDK (sdk/python)

    return Engramlog(settings().api_url(), api_key=os.environ.get("ENGRAMLOG_API_KEY"))


def refusal(exc: Exception) -> str:
    """What to say of a failed API call: the server's refusal (status, kind, reason), or, when no answer came at
    all (the SDK's status 0, or anything else that stopped the call), that the API is not reachable where the CLI
    looked for it."""
    from engramlog_client import EngramlogError

    if isinstance(exc, EngramlogError) and exc.status != 0:
        return str(exc)
    return f"cannot reach the API at {settings().api_url()}: {exc}"


@contextmanager
def api(*, stop: bool = True) -> Iterator[Engramlog]:
    """The API's client for the calls made inside the block. A refusal, or no answer, ends the command with its
    reason (exit 2); with stop=False it is raised as Refused instead, for a command that goes on with its other
    items and reports each refused one."""
    try:
        with client() as c:
            yield c
    except (typer.Exit, typer.Abort):  # a command already stopping (a stale stack state file): as it is
        raise
    except Exception as exc:
        if stop:
            fail(refusal(exc))
        raise Refused(refusal(exc)) from None


def call(method: str, path: str, *, stop: bool = True, **kwargs: Any) -> Any:
    """One request to any route (the SDK's `request`): its JSON answer, or its text when it is not JSON."""
    with api(stop=stop) as c:
        return c.request(method, path, **kwargs)


def paged(path: str, items: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every item of a listing route that pages by `next_after`: the `items` list of each page in turn (params
    that are None are left out)."""
    after: str | None = ""
    while after is not None:
        page = call("GET", path, params={**{k: v for k, v in params.items() if v is not None}, "after": after,
                                         "limit": LISTING_PAGE})
        yield from page[items]
        after = page["next_after"]


def batches(items: Sequence[dict[str, Any]], max_items: int, max_bytes: int) -> Iterator[list[dict[str, Any]]]:
    """`items` in order, cut into requests of at most `max_items` and, but for one larger item, `max_bytes` of
    content."""
    batch: list[dict[str, Any]] = []
    size = 0
    for item in items:
        n = len((item.get("content") or "").encode("utf-8"))
        if batch and (len(batch) >= max_items or size + n > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch
