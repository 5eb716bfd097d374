"""The console's router on the API (api/app.py mounts it): the pages, the login form that puts an API key in the
console's cookie, the stylesheet, and the refusals shown as pages."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.context import Caller
from console.auth import COOKIE, LoginNeeded, OperatorOnly
from console.pages import events, home, library, lifecycle, memories, policy, projections, recalls, sources
from console.pages.common import Posted, Refused, form
from console.render import page

STATIC = Path(__file__).resolve().parent / "static"
_NOBODY = Caller("", "anonymous", "", None)  # the login and refusal pages name no tenant

router = APIRouter(prefix="/console", include_in_schema=False)  # its own routes; the pages carry the prefix too


@router.get("/static/console.css")
def stylesheet() -> Response:
    return Response((STATIC / "console.css").read_text(), media_type="text/css",
                    headers={"Cache-Control": "max-age=300"})


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/console") -> HTMLResponse:
    return page(request, "login.html", _NOBODY, "Sign in · Engramlog console", next=_local(next),
                reason=request.query_params.get("reason"))


@router.post("/login", dependencies=[Posted])
async def login(request: Request) -> RedirectResponse:
    fields = await form(request)
    response = RedirectResponse(_local(fields.get("next", "/console")), status_code=303)
    # The key itself: the API resolves it on each page exactly as a bearer header (no second credential to keep).
    response.set_cookie(COOKIE, fields.get("key", ""), httponly=True, samesite="strict", path="/console",
                        secure=request.url.scheme == "https")
    return response


@router.post("/logout", dependencies=[Posted])
def logout() -> RedirectResponse:
    response = RedirectResponse("/console/login", status_code=303)
    response.delete_cookie(COOKIE, path="/console")
    return response


def _local(url: str) -> str:
    """Only a console page is a place to go after login (never another site)."""
    return url if url.startswith("/console") and not url.startswith("//") else "/console"


def mount(app: FastAPI) -> None:
    app.include_router(router)
    for module in (home, projections, events, memories, recalls, lifecycle, library, sources, policy):
        app.include_router(module.router)

    @app.exception_handler(LoginNeeded)
    async def login_needed(request: Request, exc: LoginNeeded) -> Response:
        return RedirectResponse(f"/console/login?next={exc.next_url}&reason={quote(exc.reason)}", status_code=303)

    @app.exception_handler(OperatorOnly)
    async def operator_only(request: Request, exc: OperatorOnly) -> Response:
        return page(request, "refused.html", _NOBODY, "Operators only · Engramlog console", status_code=403,
                    status=403, detail=str(exc))

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        return page(request, "refused.html", _NOBODY, f"{exc.status} · Engramlog console", status_code=exc.status,
                    status=exc.status, detail=exc.detail)
