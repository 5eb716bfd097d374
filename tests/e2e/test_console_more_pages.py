"""The console's lifecycle and hit-log, transcripts and code pages in a real browser (headless Debian chromium
through Playwright) against the real stack with data: each loads with its title and what it should show, without
script errors, at 1280×800 and 390×844 (a screenshot each under bench/results/console/); another tenant's key sees
none of it; query texts the privacy policy hides are never shown (counted only)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from console_support import SIZES, Stack, Visitor, browser, stack  # noqa: F401  (fixtures)
from sdk_support import module_worker  # noqa: F401  (fixture)

PARSER = ("import re\n\n\n"
          "def parse_http_url(url):\n"
          "    \"\"\"Split a URL into its scheme and the rest.\"\"\"\n"
          "    return split_scheme(url)\n\n\n"
          "def split_scheme(url):\n"
          "    return re.split(':', url, 1)\n")
CLIENT = ("from .parser import parse_http_url\n\n\n"
          "class Fetcher:\n"
          "    def fetch(self, url):\n"
          "        return parse_http_url(url)\n")
TRANSCRIPT = "".join(f"[2026-02-01T09:00:{i:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: "
                     f"step {i} of the kayak{i} plan\n" for i in range(40))
UNANSWERED = "zebra quantum xylophone harpsichord"
BLIND_SPOT = "where is the penguin enclosure?"


def _ok(r):
    assert r.status_code in (200, 201), r.text
    return r.json()


def _read(c, path: str, position: int, **params):
    for _ in range(6):  # a 503 is the bounded read-your-writes wait running out on a loaded machine: again
        r = c.get(path, params={"min_position": position, **params})
        if r.status_code != 503:
            break
    return _ok(r)


def _blind_spot(tenant: str, agent_id: str, question: str) -> int:
    from domain.events import BlindSpotRegistered, NewEvent, blind_spot_stream, deep_scope_key
    from eventstore.append import append
    from infra.db import get_engine
    from infra.wake import appended

    now, key = datetime.now(UTC), deep_scope_key(agent_id, None, None)
    gap = BlindSpotRegistered(gap_id=uuid.uuid4(), scope_key=key, agent_id=agent_id, question=question,
                              priority=0.85, registered_at=now, expires_at=now + timedelta(days=7),
                              recall_id=uuid.uuid4(), reason="NOT FOUND")
    with get_engine().begin() as conn:
        [position] = append(conn, tenant, [NewEvent.of(gap, blind_spot_stream(key))], {"actor": "system:deep_recall"})
    appended(1)
    return position


@pytest.fixture(scope="module")
def data(stack: Stack) -> Stack:  # noqa: F811
    """For the first tenant: memories (decayed to dormant by a sweep a month on), recalls (the same query twice,
    one answered by nothing), a transcript recalled and drilled into, a repository of two files (a caller across
    them). The other tenant has one memory of its own."""
    from infra.db import get_engine
    from workers.lifecycle import decay_sweep

    with stack.api(stack.operator_key) as c:
        kept = [_ok(c.post("/v1/memories", json={"content": text, "must_keep": True, "agent_id": "ops"}))
                for text in ("The Porto office door code is 4417", "Lisbon trams are yellow and run on rails",
                             "Faro has a marina with ferries to the islands")]
        staged = _ok(c.post("/v1/memories", json={"content": "maybe the canteen opens at noon", "agent_id": "ops"}))
        t = _ok(c.put("/v1/transcripts/t-console", content=TRANSCRIPT.encode()))
        code = _ok(c.post("/v1/code/net/files", json={"files": [{"path": "net/parser.py", "content": PARSER},
                                                                {"path": "net/client.py", "content": CLIENT}]}))
        last = max(m["position"] for m in [*kept, staged])
        stack.settle(stack.operator_key, last)
        _read(c, "/v1/transcripts", t["position"])
        _read(c, "/v1/code/net/files", code["position"])
        for _ in range(2):
            _ok(c.post("/v1/recall", json={"query": "Lisbon trams", "k": 3, "min_position": last}))
        _ok(c.post("/v1/recall", json={"query": UNANSWERED, "k": 3, "min_position": last}))
        multi = _ok(c.post("/v1/recall/multi", json={"query": "kayak7 plan", "domains": ["transcripts"],
                                                     "min_position": t["position"]}))
        [hit, *_] = [r for r in multi["results"] if r["domain"] == "transcripts"]
        _ok(c.get(f"/v1/transcripts/t-console/chunks/{hit['handle']['ord']}",
                  params={"content_hash": hit["handle"]["content_hash"], "recall_id": multi["recall_id"]}))
    decay_sweep(get_engine(), datetime.now(UTC) + timedelta(days=40), stack.tenant)  # active -> dormant
    with stack.api(stack.operator_key) as c:  # a gap deep recall registered (its loop needs a model: appended)
        _read(c, "/v1/blind_spots", _blind_spot(stack.tenant, "ops", BLIND_SPOT), agent_id="ops")
    with stack.api(stack.other_key) as c:
        _ok(c.post("/v1/memories", json={"content": "tenant B's secret: the vault is in Faro", "must_keep": True}))
    return stack


PAGES = [  # (shot name, path, title starts with, texts the page must show)
    ("lifecycle", "/console/lifecycle", "Lifecycle and hit-log",
     ("Lisbon trams", UNANSWERED, "transcripts", BLIND_SPOT)),
    ("transcripts", "/console/transcripts", "Transcripts", ("t-console",)),
    ("transcript", "/console/transcripts/t-console", "Transcript t-console", ("step 7 of the kayak7 plan",)),
    ("code", "/console/code", "Code", ("net",)),
    ("code-repo", "/console/code/net?q=parse url", "net", ("net/client.py", "net.parser.parse_http_url")),
    ("code-symbol", "/console/code/net/symbols/net.parser.parse_http_url", "net.parser.parse_http_url",
     ("net.client.Fetcher.fetch", "return split_scheme(url)")),
]


@pytest.mark.parametrize("size", list(SIZES))
def test_the_pages_load_and_show_their_data(browser, data, size):  # noqa: F811
    v = Visitor(browser, data, data.operator_key, size)
    try:
        for shot, path, title, shows in PAGES:
            response = v.open(path, shot=shot)
            assert response.status == 200, (path, response.status)
            assert v.page.title().startswith(title), (path, v.page.title())
            main = v.page.inner_text("main")
            assert all(s in main for s in shows), (path, [s for s in shows if s not in main])
            assert v.errors == [], (path, v.errors)
            assert v.page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0] + 1, path
        for link in ("Lifecycle", "Transcripts", "Code"):  # in the nav of every page
            assert v.page.locator("header nav a", has_text=link).count() == 1
    finally:
        v.close()


def test_the_lifecycle_page_counts_statuses_queries_and_drills(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.tenant_key)
    try:
        v.open("/console/lifecycle")
        totals = dict(row.split("\t") for row in
                      v.page.locator("table[data-testid=status-totals] tbody tr").all_inner_texts())
        assert int(totals.get("dormant", 0)) >= 1, totals  # the sweep a month on
        assert v.page.locator("[data-testid=statuses] svg polyline").count() >= 2  # active and dormant lines
        top = v.page.locator("table[data-testid=top-queries] tbody tr", has_text="Lisbon trams")
        assert top.locator("td.num").inner_text() == "2"
        assert "Lisbon" not in v.page.inner_text("table[data-testid=unanswered]")
        assert UNANSWERED in v.page.inner_text("table[data-testid=unanswered]")
        drills = v.page.locator("table[data-testid=drills] tbody tr", has_text="transcripts").all_inner_texts()
        assert drills and drills[0].split("\t")[3] == "1", drills  # the one drilled result
        assert v.page.locator("table[data-testid=keyword-gaps] tbody tr", has_text="memories").count() == 1
        top.locator("a").click()  # a query opens its recall's explanation
        assert v.page.inner_text("[data-testid=query]") == "Lisbon trams"
        assert v.errors == []
    finally:
        v.close()


def test_a_symbol_links_to_its_callers_and_callees(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.tenant_key)
    try:
        v.open("/console/code")
        v.page.locator("table[data-testid=repos] a", has_text="net").click()
        v.page.fill("input[name=q]", "parse http url")
        v.page.click("form.filters button")
        v.page.locator("table[data-testid=symbols] a", has_text="net.parser.parse_http_url").click()
        v.page.locator("table[data-testid=callers] a", has_text="net.client.Fetcher.fetch").click()
        assert v.page.inner_text("h1") == "net.client.Fetcher.fetch"
        assert "net/parser.py" in v.page.inner_text("table[data-testid=callees]")
        assert v.errors == []
    finally:
        v.close()


def test_another_tenant_sees_none_of_it(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.other_key)
    try:
        assert v.open("/console/transcripts/t-console").status == 404
        assert v.open("/console/code/net").status == 404
        assert v.open("/console/code/net/symbols/net.parser.parse_http_url").status == 404
        v.open("/console/transcripts")
        assert "t-console" not in v.page.inner_text("main")
        v.open("/console/code")
        assert "net" not in v.page.inner_text("table[data-testid=repos]")
        v.open("/console/lifecycle", shot="lifecycle-other-tenant")
        main = v.page.inner_text("main")
        assert "Lisbon" not in main and UNANSWERED not in main and "kayak" not in main and BLIND_SPOT not in main
        assert v.page.inner_text("[data-testid=recall-count]") == "0"
        assert all("status of 40" in e for e in v.errors), v.errors  # only the refused pages' own status lines
    finally:
        v.close()


def test_query_texts_the_policy_hides_are_counted_not_shown(browser, data):  # noqa: F811
    with data.api(data.operator_key) as c:
        hr = _ok(c.post("/v1/memories", json={"content": "payroll runs on the 25th", "must_keep": True,
                                              "agent_id": "hr"}))
        data.settle(data.operator_key, hr["position"])
        _ok(c.post("/v1/recall", json={"query": "payroll scoped question", "agent_id": "hr",
                                       "min_position": hr["position"]}))
        answered = _ok(c.post("/v1/recall", json={"query": "payroll runs when", "min_position": hr["position"]}))
        assert any(r["memory_id"] == hr["memory_id"] for r in answered["results"]), answered
        _read(c, "/v1/blind_spots", _blind_spot(data.tenant, "hr", "payroll blind spot?"), agent_id="hr")
        v = Visitor(browser, data, data.operator_key)
        try:  # before the policy: the hr recalls and blind spot are shown
            v.open("/console/lifecycle")
            assert "payroll scoped question" in v.page.inner_text("main")
            assert "payroll blind spot?" in v.page.inner_text("[data-testid=blind-spots]")
        finally:
            v.close()
        _ok(c.put("/v1/policy/privacy", json={"exclude_agents": ["hr"]}))
    v = Visitor(browser, data, data.operator_key)
    try:
        v.open("/console/lifecycle", shot="lifecycle-policy")
        main = v.page.inner_text("main")
        assert "payroll" not in main and "Lisbon trams" in main
        assert int(v.page.inner_text("[data-testid=hidden-recalls]").split()[0]) >= 2
        assert v.errors == []
    finally:
        v.close()
        with data.api(data.operator_key) as c:
            _ok(c.put("/v1/policy/privacy", json={}))
