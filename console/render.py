"""The one Jinja2 environment of the console and the page response: every page extends base.html and is given the
caller (tenant, operator) and a flash message from the action that redirected here."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from api.context import Caller

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _when(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):  # an ISO time as some statuses carry it
        try:
            return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:
            return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def _score(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


ENV = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]), trim_blocks=True,
                  lstrip_blocks=True)
ENV.filters.update(when=_when, pretty=_pretty, score=_score)


def svg(markup: str) -> Markup:
    """An SVG the console drew itself (console/charts.py escapes every text it puts in)."""
    return Markup(markup)


def page(request: Request, template: str, who: Caller, title: str, status_code: int = 200,
         **context: Any) -> HTMLResponse:
    body = ENV.get_template(template).render(
        request=request, who=who, title=title, flash=request.query_params.get("done"),
        problem=request.query_params.get("error"), path=request.url.path, **context)
    return HTMLResponse(body, status_code=status_code)
