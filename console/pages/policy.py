"""GET /console/policy: the tenant's privacy policy in force; POST: an operator sets it (PUT /v1/policy/privacy's
route function: the same validation, in force from the next request)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from api.routes import policy as policy_routes
from api.schemas import PrivacyPolicyIn
from console.pages.common import Db, Posted, Refused, Who, api, back, build, form
from console.render import page

router = APIRouter(prefix="/console", include_in_schema=False)
LISTS = tuple(PrivacyPolicyIn.model_fields)  # exclude_paths, exclude_tags, ...


@router.get("/policy", response_class=HTMLResponse)
def policy(request: Request, who: Who, db: Db) -> HTMLResponse:
    found = api(policy_routes.get_privacy_policy, who, db)
    return page(request, "policy.html", who, "Privacy policy · Engramlog console", policy=found, lists=LISTS)


@router.post("/policy", dependencies=[Posted])
async def set_policy(request: Request, who: Who, db: Db) -> RedirectResponse:
    fields = await form(request)
    lists = {name: [line.strip() for line in fields.get(name, "").splitlines() if line.strip()] for name in LISTS}
    try:
        done = api(policy_routes.put_privacy_policy, build(PrivacyPolicyIn, **lists), who, db)
    except Refused as exc:
        return back("/console/policy", error=exc.detail)
    return back("/console/policy", done=f"policy set at position {done.position}")
