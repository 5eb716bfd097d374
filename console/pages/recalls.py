"""GET /console/recalls/{id}: GET /v1/recalls/{id} drawn (per bucket, per result, per stage; the abstention
channels; what the privacy gate removed, as counts); GET/POST /console/recalls: a box that runs a recall or a
recall/multi through the API's routes and opens its explanation."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from api.recall_schemas import MultiRecallIn
from api.routes import recall as recall_routes
from api.schemas import RecallIn
from console.pages.common import Db, Posted, Refused, Who, api, back, build, form, refusal
from console.render import page
from domain.errors import DomainError

router = APIRouter(prefix="/console", include_in_schema=False)


def _buckets(record: Any) -> list[tuple[str, list[Any]]]:
    """The results by domain, in the order the recall asked the domains."""
    order = list(record.domains) + [r.domain for r in record.results if r.domain not in record.domains]
    return [(d, [r for r in record.results if r.domain == d]) for d in dict.fromkeys(order)]


def _privacy_counts(explanation: dict[str, Any]) -> dict[str, int]:
    """How many results the privacy gate removed, per place the explanation says (numbers only, never items)."""
    counts: dict[str, int] = {}

    def walk(where: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "privacy" and isinstance(v, dict):
                    counts.update({f"{where}{name}": n for name, n in v.items() if isinstance(n, int)})
                else:
                    walk(f"{where}{k}.", v)

    walk("", explanation)
    return counts


@router.get("/recalls", response_class=HTMLResponse)
def recall_box(request: Request, who: Who) -> HTMLResponse:
    return page(request, "recall_box.html", who, "Recall · Engramlog console")


@router.post("/recalls", dependencies=[Posted])
async def run_recall(request: Request, who: Who, db: Db) -> RedirectResponse:
    fields = await form(request)
    try:
        k = int(fields.get("k") or 5)
        if fields.get("mode") == "multi":
            multi = build(MultiRecallIn, query=fields.get("query", ""), k=k)
            answer: Any = await recall_routes.post_recall_multi(multi, who, db)
        else:
            one = build(RecallIn, query=fields.get("query", ""), k=k)
            answer = await recall_routes.post_recall(one, who, db)
    except Refused as exc:
        return back("/console/recalls", error=exc.detail)
    except ValueError:
        return back("/console/recalls", error="k: a whole number")
    except (DomainError, HTTPException) as exc:  # the recall route's own refusals (bad query, read-your-writes)
        return back("/console/recalls", error=refusal(exc).detail)
    return back(f"/console/recalls/{answer.recall_id}")


@router.get("/recalls/{recall_id}", response_class=HTMLResponse)
def recall(request: Request, recall_id: uuid.UUID, who: Who, db: Db) -> HTMLResponse:
    record = api(recall_routes.get_recall_record, recall_id, who, db)
    return page(request, "recall.html", who, f"Recall {str(recall_id)[:8]} · Engramlog console", record=record,
                buckets=_buckets(record), privacy=_privacy_counts(record.explanation),
                stages=[s for s in record.explanation.get("stages") or [] if isinstance(s, dict)])
