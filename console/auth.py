"""Who is looking: the API's own keys, carried by a cookie since a browser's page loads send no bearer header.

A key is entered once on /console/login; the cookie (HttpOnly, SameSite=Strict) holds it and every page resolves it
with api.context.caller, so a tenant key sees its tenant and an operator key also the operator pages. No keys
configured: open from loopback, as the API is (its loopback middleware already refused anything else)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Cookie, HTTPException, Request

from api.context import Caller, caller

COOKIE = "engramlog_console_key"


class LoginNeeded(Exception):
    """No key or an unknown one: the page answers a redirect to the login form (console/routes.py)."""

    def __init__(self, next_url: str, reason: str) -> None:
        super().__init__(reason)
        self.next_url, self.reason = next_url, reason


class OperatorOnly(Exception):
    """A tenant key on an operator page: 403, shown as a page."""


def console_caller(request: Request, key: Annotated[str | None, Cookie(alias=COOKIE)] = None) -> Caller:
    try:
        return caller(request, f"Bearer {key}" if key else None, None)
    except HTTPException as exc:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginNeeded(quote(target, safe="/?=&"), str(exc.detail)) from None


def operator(who: Caller) -> Caller:
    if not who.operator:
        raise OperatorOnly("this page is for operator keys (ENGRAMLOG_OPERATOR_KEYS)")
    return who


def same_origin(request: Request) -> None:
    """A form post comes from the console itself: its Origin (when the browser sends one) is this host. With the
    SameSite=Strict cookie this keeps other sites from posting actions with an operator's key."""
    origin = request.headers.get("origin")
    if origin and origin not in ("null",) and origin.split("://", 1)[-1] != request.headers.get("host"):
        raise HTTPException(403, "a console action must come from the console's own pages")
