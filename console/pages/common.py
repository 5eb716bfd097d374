"""What every page shares: the caller and engine dependencies, the API's refusals shown as a page, the redirect an
action answers (POST, then GET the page again with what happened)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import urlencode

from fastapi import Depends, HTTPException, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine

from api.context import Caller, engine
from console.auth import console_caller, same_origin
from domain.errors import DomainError

T = TypeVar("T")
Who = Annotated[Caller, Depends(console_caller)]
Db = Annotated[Engine, Depends(engine)]
Posted = Depends(same_origin)


class Refused(Exception):
    """The API refused what a page asked (404, 403, 409, 422): shown as a page with its status and reason."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def refusal(exc: Exception) -> Refused:
    if isinstance(exc, DomainError):
        return Refused(exc.status_code, str(exc))
    if isinstance(exc, HTTPException):
        return Refused(exc.status_code, str(exc.detail))
    if isinstance(exc, ValidationError):
        return Refused(422, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    raise exc


def api(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """An API route function called as the API calls it; its refusal becomes the page's."""
    try:
        return call(*args, **kwargs)
    except (DomainError, HTTPException, ValidationError) as exc:
        raise refusal(exc) from None


def back(url: str, **query: str) -> RedirectResponse:
    """303 to the page, with done=/error= for its flash line."""
    sep = "&" if "?" in url else "?"
    return RedirectResponse(url + (sep + urlencode(query) if query else ""), status_code=303)


def build(model: type[BaseModel], **fields: Any) -> Any:
    """A request body built as the API would parse it (its validation is the API's)."""
    return api(model.model_validate, fields)


async def form(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the console posts only those; no multipart parser needed)."""
    from urllib.parse import parse_qsl

    body = (await request.body()).decode("utf-8", "replace")
    return dict(parse_qsl(body, keep_blank_values=True))
