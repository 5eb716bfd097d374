"""`as_of` (recorded time) in the code domain: a file re-put with a renamed function answers, as of the first
position, the old function and not the new (POST /v1/recall/multi, the symbol search and the symbol drill), and now
the new and not the old; a removed file's symbols are absent now and present as of before; a file put again with an
earlier text holds its symbols again. A rebuild gives the same rows (the kept symbols, their versions, the texts)."""

from __future__ import annotations

import pytest
from funnel_support import project
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

V1 = 'def harbour_lantern(wick):\n    """Light the harbour lantern."""\n    return wick + 1\n'
V2 = 'def quay_beacon(wick):\n    """Light the quay beacon."""\n    return wick + 2\n'
ROPE = 'def ferry_rope(knots):\n    """Coil the ferry rope."""\n    return knots * 3\n'


def _put(client, engine, files: list[dict]) -> int:
    r = client.post("/v1/code/harbour/files", json={"files": files})
    assert r.status_code == 200, r.text
    position = r.json()["position"]
    project(engine, position)
    return position


def _symbols(client, query: str, **more) -> list[str]:
    r = client.post("/v1/recall/multi", json={"query": query, "domains": ["code"], **more})
    assert r.status_code == 200, r.text
    [bucket] = r.json()["buckets"]
    return [h["fields"]["symbol"] for h in bucket["results"]]


def _searched(client, query: str, **more) -> list[str]:
    r = client.get("/v1/code/harbour/symbols", params={"q": query, **more})
    assert r.status_code == 200, r.text
    return [s["symbol"] for s in r.json()["symbols"]]


def test_code_answers_as_of_a_position(client, engine, tenant):
    first = _put(client, engine, [{"path": "light.py", "content": V1}])
    second = _put(client, engine, [{"path": "light.py", "content": V2}])

    # As of the first put: the old function, not the new.
    assert "light.harbour_lantern" in _symbols(client, "harbour lantern", as_of=first)
    assert "light.quay_beacon" not in _symbols(client, "quay beacon", as_of=first)
    assert "light.harbour_lantern" in _searched(client, "harbour lantern", as_of=first)
    # Now: the new, not the old (a replaced symbol is kept for as_of, never answered now).
    assert "light.quay_beacon" in _symbols(client, "quay beacon")
    assert "light.harbour_lantern" not in _symbols(client, "harbour lantern")
    assert "light.harbour_lantern" not in _searched(client, "harbour lantern")
    assert "light.harbour_lantern" not in _symbols(client, "harbour lantern", as_of=second)

    # The drill as of the first put: its source is the slice of the text the file had then; no call edges.
    then = client.get("/v1/code/harbour/symbols/light.harbour_lantern", params={"as_of": first})
    assert then.status_code == 200, then.text
    body = then.json()
    assert "return wick + 1" in body["source"] and body["edges"] is False and body["callers"] == [], body
    assert client.get("/v1/code/harbour/symbols/light.harbour_lantern").status_code == 404
    assert client.get("/v1/code/harbour/symbols/light.quay_beacon", params={"as_of": first}).status_code == 404
    now = client.get("/v1/code/harbour/symbols/light.quay_beacon").json()
    assert "return wick + 2" in now["source"] and now["edges"] is True, now

    # A removed file: absent now, present as of before its removal.
    held = _put(client, engine, [{"path": "rope.py", "content": ROPE}])
    _put(client, engine, [{"path": "rope.py", "remove": True}])
    assert "rope.ferry_rope" not in _symbols(client, "ferry rope")
    assert "rope.ferry_rope" in _symbols(client, "ferry rope", as_of=held)
    assert client.get("/v1/code/harbour/symbols/rope.ferry_rope").status_code == 404
    gone = client.get("/v1/code/harbour/symbols/rope.ferry_rope", params={"as_of": held})
    assert gone.status_code == 200 and "knots * 3" in gone.json()["source"], gone.text
    assert "rope.py" not in [f["path"] for f in client.get("/v1/code/harbour/files").json()["files"]]

    # The first text put again: its symbol (the same id) is held again, with its postings kept.
    _put(client, engine, [{"path": "light.py", "content": V1}])
    assert "light.harbour_lantern" in _symbols(client, "harbour lantern")
    assert "light.quay_beacon" not in _symbols(client, "quay beacon")
    assert "light.quay_beacon" in _symbols(client, "quay beacon", as_of=second)
    with engine.connect() as conn:
        statuses = dict(conn.execute(text("SELECT qualified_name, status FROM code_symbols WHERE tenant = :t"
                                          " AND repo = 'harbour'"), {"t": tenant}).all())
        df = dict(conn.execute(text("SELECT term, df FROM code_terms WHERE tenant = :t"), {"t": tenant}).all())
        counted = dict(conn.execute(text("SELECT term, count(*) FROM code_postings WHERE tenant = :t GROUP BY term"),
                                    {"t": tenant}).all())
    assert statuses == {"light.harbour_lantern": "active", "light.quay_beacon": "replaced",
                        "rope.ferry_rope": "removed"}, statuses
    assert df == counted

    from projections.rebuild import verify
    from projections.registry import PROJECTORS

    report = verify(engine, PROJECTORS["code"])
    assert report.identical, report


def test_as_of_before_the_repository_existed_is_a_404(client, engine, tenant):
    before = _put(client, engine, [{"path": "early.py", "content": "def early_tide():\n    return 0\n"}])
    later = _put(client, engine, [{"path": "late.py", "content": "def late_tide():\n    return 0\n"}])
    assert client.get("/v1/code/harbour/symbols/late.late_tide", params={"as_of": before}).status_code == 404
    assert client.get("/v1/code/harbour/symbols/late.late_tide", params={"as_of": later}).status_code == 200
    assert client.get("/v1/code/harbour/symbols/late.late_tide", params={"as_of": "soon"}).status_code == 422
