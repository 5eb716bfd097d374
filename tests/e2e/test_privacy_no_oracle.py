"""No oracle on an excluded item: a listing's cursor (`next_after`) never names one, DELETE of an excluded
document, a drill into it (or into an excluded transcript's chunk) and a PUT to an excluded transcript id answer
exactly as for an unknown one (nothing written), and a tenant key's 422 "beyond the log's head (N)" names its
tenant's head, never the whole log's."""

from __future__ import annotations

import re

from funnel_support import project
from privacy_support import privacy_clients, put_policy
from sqlalchemy import text

HIDDEN = {"exclude_paths": ["hr/**", "eng/hr/**"], "exclude_sessions": ["t-hidden", "t-never"]}


def _ok(r):
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.json()


def _count(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def _pages(client, route: str, key: str, field: str, limit: int) -> tuple[list[str], list[str]]:
    """Every item a listing pages through, and every cursor it answered."""
    items, cursors, after = [], [], ""
    for _ in range(50):
        page = _ok(client.get(route, params={"after": after, "limit": limit}))
        items += [x[field] for x in page[key]]
        if page["next_after"] is None:
            return items, cursors
        cursors.append(page["next_after"])
        after = page["next_after"]
    raise AssertionError("the listing never ended")


def test_no_cursor_delete_drill_or_put_tells_of_an_excluded_item(app, tenant, engine, monkeypatch):
    w = privacy_clients(app, tenant, monkeypatch)
    r = w.reader
    for path in ("a.md", "hr/1.md", "hr/2.md", "hr/3.md", "z.md"):
        _ok(r.put(f"/v1/knowledge/{path}", json={"content": f"# T\n\n## S\nbody of {path}\n"}))
    for tid in ("t-a", "t-hidden", "t-z"):
        _ok(r.put(f"/v1/transcripts/{tid}", content=b"[2026-02-01T09:00:00Z] USER: hello there\n"))
    _ok(r.post("/v1/code/eng/files", json={"files": [{"path": p, "content": "x = 1\n"} for p in (
        "a.py", "hr/1.py", "hr/2.py", "z.py")]}))
    _ok(r.post("/v1/code/hr/files", json={"files": [{"path": "pay.py", "content": "def salary():\n    return 1\n"}]}))
    project(engine, _ok(r.get("/v1/events", params={"limit": 1000}))["events"][-1]["position"])
    assert put_policy(w.ops, HIDDEN).status_code == 200

    for limit in (1, 2, 3):
        docs, cursors = _pages(r, "/v1/knowledge", "documents", "path", limit)
        assert docs == ["a.md", "z.md"] and not [c for c in cursors if c.startswith("hr/")], (limit, cursors)
        ids, cursors = _pages(r, "/v1/transcripts", "transcripts", "transcript_id", limit)
        assert ids == ["t-a", "t-z"] and "t-hidden" not in cursors, (limit, cursors)
        files, cursors = _pages(r, "/v1/code/eng/files", "files", "path", limit)
        assert files == ["a.py", "z.py"] and not [c for c in cursors if c.startswith("hr/")], (limit, cursors)

    before = _count(engine, tenant)
    for client in (r, w.ops):
        def same(hidden, unknown, secret: str, other: str) -> None:
            assert hidden.status_code == unknown.status_code, (hidden.text, unknown.text)
            assert hidden.text == unknown.text.replace(other, secret), (hidden.text, unknown.text)

        same(client.delete("/v1/knowledge/hr/1.md"), client.delete("/v1/knowledge/hr/9.md"), "hr/1.md", "hr/9.md")
        for version in ({}, {"version": 1}, {"content_hash": "0" * 64}):
            same(client.get("/v1/knowledge-sections", params={"path": "hr/1.md", "heading_path": "T > S", **version}),
                 client.get("/v1/knowledge-sections", params={"path": "hr/9.md", "heading_path": "T > S", **version}),
                 "hr/1.md", "hr/9.md")
            same(client.get("/v1/knowledge/hr/1.md", params={k: v for k, v in version.items() if k == "version"}),
                 client.get("/v1/knowledge/hr/9.md", params={k: v for k, v in version.items() if k == "version"}),
                 "hr/1.md", "hr/9.md")
        # a repository whose every file is excluded is as unknown as one never indexed
        same(client.get("/v1/code/hr/symbols/salary"), client.get("/v1/code/zz/symbols/salary"), "'hr'", "'zz'")
        for params in ({}, {"content_hash": "0" * 64}):
            same(client.get("/v1/transcripts/t-hidden/chunks/0", params=params),
                 client.get("/v1/transcripts/t-never/chunks/0", params=params), "t-hidden", "t-never")
        # a put to an excluded id: the same answer whether the log holds that transcript or not
        body = b"[2026-02-01T09:00:00Z] USER: hello there\n"
        hidden, unknown = client.put("/v1/transcripts/t-hidden", content=body), client.put(
            "/v1/transcripts/t-never", content=body)
        same(hidden, unknown, "t-hidden", "t-never")
        assert hidden.status_code == 422 and "privacy policy" in hidden.text, hidden.text
    assert _count(engine, tenant) == before  # nothing written (a drill of a visible item would append one)


def test_a_tenant_learns_its_own_head_not_the_logs(app, tenant, engine, monkeypatch):
    w = privacy_clients(app, tenant, monkeypatch)
    mine = _ok(w.reader.post("/v1/memories", json={"content": "mine", "must_keep": True}))["position"]
    for i in range(3):  # another tenant writes after: the log's head moves past this tenant's
        _ok(w.other_ops.post("/v1/memories", json={"content": f"theirs {i}", "must_keep": True}))
    with engine.connect() as conn:
        log_head = conn.execute(text("SELECT max(position) FROM events")).scalar_one()
        own_head = conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"),
                                {"t": tenant}).scalar_one()
    assert log_head > own_head >= mine
    for route, params in ((f"/v1/positions/{log_head}", {}), ("/v1/knowledge", {"min_position": log_head}),
                          ("/v1/sessions", {"min_position": 10**12})):
        beyond = w.reader.get(route, params=params)
        assert beyond.status_code == 422, (route, beyond.text)
        heads = re.findall(r"head \((\d+)\)", beyond.text)
        assert heads == [str(own_head)], (route, beyond.text)
    recall = w.reader.post("/v1/recall", json={"query": "mine", "min_position": log_head})
    assert recall.status_code == 422 and f"({own_head})" in recall.text and f"({log_head})" not in recall.text
