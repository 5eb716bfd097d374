"""The console in a real browser (headless Debian chromium through Playwright) against the real stack with data:
every page loads with its title and what it should show, without script errors, at 1280×800 and 390×844 (a
screenshot of each under bench/results/console/); a retry button really retries a parked event; a supersede from
the memory page appears in its history; a tenant key never sees another tenant's data or the operator pages."""

from __future__ import annotations

import time
import uuid

import pytest
from console_support import SIZES, Stack, Visitor, browser, stack  # noqa: F401  (fixtures)
from sdk_support import module_worker  # noqa: F401  (fixture)
from sqlalchemy import text

from domain.text import term_frequencies


@pytest.fixture(scope="module")
def data(stack: Stack) -> Stack:  # noqa: F811
    """Memories (one superseded), a recall, a session, a knowledge document for the first tenant; one memory for
    the other tenant."""
    with stack.api(stack.operator_key) as c:
        first = c.post("/v1/memories", json={"content": "The Porto office door code is 4417", "must_keep": True,
                                             "agent_id": "ops", "tags": ["office"]}).json()
        c.post(f"/v1/memories/{first['memory_id']}/supersede",
               json={"content": "The Porto office door code is 5521", "reason": "code rotated"}).raise_for_status()
        lisbon = c.post("/v1/memories", json={"content": "Lisbon trams are yellow and run on rails",
                                              "must_keep": True, "agent_id": "ops"}).json()
        said = c.post("/v1/sessions/s-console/messages", json={"messages": [
            {"role": "user", "content": "where is the deploy runbook?"},
            {"role": "assistant", "content": "in docs/runbook.md"}]})
        said.raise_for_status()
        doc = c.put("/v1/knowledge/docs/runbook.md", content="# Runbook\n\n## Deploy\n\nRun make deploy.\n\n"
                    "## Rollback\n\nRun make rollback.\n", headers={"content-type": "text/markdown"})
        assert doc.status_code in (200, 201), doc.text
        stack.settle(stack.operator_key, lisbon["position"])
        last = max(lisbon["position"], said.json()["position"] or 0, doc.json()["position"])
        for read in ("/v1/sessions", "/v1/knowledge"):  # each domain's read model has the writes (read-your-writes)
            for _ in range(6):  # a 503 is the bounded wait running out on a loaded machine: wait again
                r = c.get(read, params={"min_position": last})
                if r.status_code != 503:
                    break
            assert r.status_code == 200, r.text
        recalled = c.post("/v1/recall", json={"query": "Lisbon trams", "k": 3,
                                              "min_position": lisbon["position"]}).json()
    with stack.api(stack.other_key) as c:
        secret = c.post("/v1/memories", json={"content": "tenant B's secret: the vault is in Faro",
                                              "must_keep": True}).json()
    stack.ids.update(first=first["memory_id"], lisbon=lisbon["memory_id"], recall=recalled["recall_id"],
                     secret=secret["memory_id"])
    return stack


PAGES = [  # (shot name, path (a format string over data.ids), title starts with, a text the page must show)
    ("home", "/console", "Engramlog console", "Recent activity"),
    ("projections", "/console/projections", "Projections", "Parked events"),
    ("events", "/console/events", "Events", "MemoryRecorded"),
    ("memory", "/console/memories/{lisbon}", "Memory", "Lisbon trams are yellow"),
    ("recall", "/console/recalls/{recall}", "Recall", "Lisbon trams"),
    ("recall-box", "/console/recalls", "Recall", "Recall and explain"),
    ("sessions", "/console/sessions", "Sessions", "s-console"),
    ("session", "/console/sessions/s-console", "Session s-console", "deploy runbook"),
    ("knowledge", "/console/knowledge", "Knowledge", "docs/runbook.md"),
    ("document", "/console/knowledge/docs/runbook.md", "docs/runbook.md", "make rollback"),
    ("policy", "/console/policy", "Privacy policy", "Set the policy"),
]


@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_loads_without_script_errors(browser, data, size):  # noqa: F811
    v = Visitor(browser, data, data.operator_key, size)
    try:
        for shot, path, title, shows in PAGES:
            response = v.open(path.format(**data.ids), shot=shot)
            assert response.status == 200, (path, response.status)
            assert v.page.title().startswith(title), (path, v.page.title())
            assert shows in v.page.inner_text("main"), (path, shows)
            assert v.errors == [], (path, v.errors)
            # nothing wider than the viewport but what scrolls inside its own box (tables, pre)
            assert v.page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0] + 1, path
        # the event browser's rows link to each event, whose page shows its payload
        v.open("/console/events?type=MemoryRecorded")
        v.page.locator("table[data-testid=events] tbody tr a").first.click()
        assert "content" in v.page.inner_text("[data-testid=payload]")
        v.open(f"/console/events/{_position_of(v)}", shot="event")
        assert v.errors == []
    finally:
        v.close()


def _position_of(v: Visitor) -> str:
    return v.page.url.rsplit("/", 1)[-1]


def test_the_login_form_signs_in_with_an_api_key(browser, data):  # noqa: F811
    v = Visitor(browser, data, None)
    try:
        v.open("/console/events", shot="login")
        assert v.page.url.startswith(data.url + "/console/login")
        v.page.fill("input[name=key]", data.tenant_key)
        v.page.click("button[type=submit]")
        assert v.page.url == data.url + "/console/events"
        assert f"tenant {data.tenant}" in v.page.inner_text("[data-testid=tenant]")
        assert v.errors == []
    finally:
        v.close()


def test_a_supersede_from_the_memory_page_appears_in_its_history(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.tenant_key)
    try:
        v.open(f"/console/memories/{data.ids['lisbon']}")
        v.page.fill("textarea[name=content]", "Lisbon trams are yellow; the 28 is the famous line")
        v.page.fill("input[name=reason]", "more detail")
        v.page.click("form[action$=supersede] button")
        assert "superseded" in v.page.inner_text("[role=status]")
        history = v.page.inner_text("[data-testid=history]")
        assert "the 28 is the famous line" in history and "Lisbon trams are yellow and run on rails" in history
        v.open(v.page.url.split("?")[0].removeprefix(data.url), shot="memory-superseded")
        assert v.errors == []
    finally:
        v.close()


def test_a_recall_from_the_box_is_explained(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.tenant_key)
    try:
        v.open("/console/recalls")
        v.page.fill("input[name=query]", "Porto door code")
        v.page.select_option("select[name=mode]", "multi")
        v.page.click("form[action='/console/recalls'] button")
        assert v.page.url.startswith(data.url + "/console/recalls/")
        assert v.page.inner_text("[data-testid=query]") == "Porto door code"
        assert v.page.locator("[data-testid=bucket-memories]").count() == 1
        assert v.errors == []
    finally:
        v.close()


def test_retry_on_the_projections_page_applies_a_parked_event(browser, data, engine):  # noqa: F811
    from projections.dead_letters import MAX_EVENT_FAILURES
    from projections.registry import PROJECTORS
    from projections.runner import status
    from services.remember import MemoryInput, remember

    memory_id = uuid.uuid4()
    with engine.begin() as conn:  # a row in the way: the keyword projector's insert of this memory fails
        conn.execute(text("INSERT INTO keyword_docs (tenant, memory_id, length, kind) VALUES (:t, :m, 1, 'x')"),
                     {"t": data.tenant, "m": memory_id})
    content = "Faro has a marina"
    [done] = remember(engine, data.tenant, [MemoryInput(content, memory_id=memory_id, must_keep=True)],
                      {"actor": "test", "correlation_id": "console"})
    deadline = time.monotonic() + 120  # the worker tries it MAX_EVENT_FAILURES times, then parks it
    while True:
        with engine.connect() as conn:
            if status(conn, PROJECTORS["keyword"], data.tenant).parked == 1:
                break
        assert time.monotonic() < deadline, f"not parked after {MAX_EVENT_FAILURES} attempts"
        time.sleep(0.5)
    with engine.begin() as conn:  # the cause gone, the operator retries from the page
        conn.execute(text("DELETE FROM keyword_docs WHERE tenant = :t AND memory_id = :m"),
                     {"t": data.tenant, "m": memory_id})
    v = Visitor(browser, data, data.operator_key)
    try:
        v.open("/console/projections", shot="projections-parked")
        row = v.page.locator(f"table[data-testid=parked] tr[data-position='{done.position}']")
        assert "keyword" in row.inner_text()
        row.locator("form[action$=retry] button").click()
        assert "retried" in v.page.inner_text("[role=status]")
        assert v.page.locator(f"table[data-testid=parked] tr[data-position='{done.position}']").count() == 0
        assert v.errors == []
    finally:
        v.close()
    with engine.connect() as conn:
        assert status(conn, PROJECTORS["keyword"], data.tenant).parked == 0
        assert conn.execute(text("SELECT length FROM keyword_docs WHERE tenant = :t AND memory_id = :m"),
                            {"t": data.tenant, "m": memory_id}).scalar_one() == sum(term_frequencies(content).values())


def test_a_tenant_key_sees_its_tenant_only_and_no_operator_page(browser, data):  # noqa: F811
    v = Visitor(browser, data, data.other_key)
    try:
        assert v.open("/console/projections", shot="operator-only").status == 403
        assert "operator" in v.page.inner_text("[data-testid=refusal]")
        assert v.open(f"/console/memories/{data.ids['lisbon']}").status == 404
        assert v.open(f"/console/recalls/{data.ids['recall']}").status == 404
        assert v.open("/console/sessions/s-console").status == 404
        assert v.open("/console/knowledge/docs/runbook.md").status == 404
        v.open("/console/events?type=MemoryRecorded")
        events = v.page.inner_text("main")
        assert "Lisbon" not in events and data.tenant not in events
        v.open("/console")
        assert "Projections" not in v.page.inner_text("header nav")
        v.open("/console/policy")
        assert v.page.locator("form[action='/console/policy']").count() == 0  # shown, not set, by a tenant key
        assert v.open(f"/console/memories/{data.ids['secret']}").status == 200  # its own
        # the only console messages are the refused pages' own status lines (403, 404), never a script error
        assert all("status of 40" in e for e in v.errors), v.errors
    finally:
        v.close()
    with data.api(data.other_key) as c:  # the actions too: a tenant key cannot retry, skip or rebuild
        c.cookies.set("engramlog_console_key", data.other_key)  # on the client: per-request cookies are deprecated
        r = c.post("/console/projections/keyword/rebuild")
        assert r.status_code == 403
