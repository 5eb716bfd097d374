"""The code read models (projections/code.py) and the code domain (recall/domains/code.py): calls resolved
against the repository as it stands (re-resolved when another file changes what a name means), an unchanged put
appending nothing, removal, postings kept consistent, the same rows after a rebuild, symbol search answering the
exact slice with callers (callees on request), the privacy gate and tenant isolation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from domain.privacy import NO_POLICY, PrivacyPolicy
from projections.code import CodeProjector
from projections.runner import catch_up
from recall.domains.base import DomainQuery
from recall.domains.code import CodeDomain
from recall.scope import Scope
from services.code import FileInput, write_files

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database

META = {"actor": "test", "source": "test"}
UTIL = 'def get_user_name(user_id):\n    """Look up a user\'s display name."""\n    return lookup(user_id)\n\n\n' \
       "def lookup(key):\n    return key\n"
APP = "from .util import get_user_name\n\n\nclass Page:\n    def render(self):\n        return self.title()\n\n" \
      "    def title(self):\n        return get_user_name(1) + save()\n"
STORE = "def save():\n    pass\n"


def project(engine) -> None:
    catch_up(engine, CodeProjector(), 500, max_seconds=120)


def put(engine, tenant: str, files: dict[str, str | None], repo: str = "shop"):
    done = write_files(engine, tenant, repo, [FileInput(p, c, remove=c is None) for p, c in files.items()], META)
    project(engine)
    return done


def calls(engine, tenant: str) -> dict[tuple[str, str], tuple]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT caller, callee, resolved_name, candidates, how FROM code_calls"
                                 " WHERE tenant = :t"), {"t": tenant}).all()
    return {(r.caller, r.callee): (r.resolved_name, r.candidates, r.how) for r in rows}


def ask(engine, tenant: str, query: str, policy: PrivacyPolicy = NO_POLICY, **options):
    return CodeDomain().search(engine, DomainQuery(Scope(tenant), query, 5, datetime.now(UTC), policy,
                                                   options=options))


def test_calls_follow_the_repository_as_it_changes(engine, tenant: str) -> None:
    put(engine, tenant, {"shop/util.py": UTIL, "shop/app.py": APP, "shop/store.py": STORE})
    c = calls(engine, tenant)
    assert c[("shop.app.Page.title", "get_user_name")] == ("shop.util.get_user_name", 1, "import")
    assert c[("shop.app.Page.render", "title")] == ("shop.app.Page.title", 1, "self")
    assert c[("shop.app.Page.title", "save")] == ("shop.store.save", 1, "unique")
    # A second `save` elsewhere: the call in app.py (a file not re-put) becomes ambiguous.
    put(engine, tenant, {"shop/cache.py": "def save():\n    return 1\n"})
    assert calls(engine, tenant)[("shop.app.Page.title", "save")] == (None, 2, "ambiguous")
    put(engine, tenant, {"shop/cache.py": None})  # removed: unique again
    assert calls(engine, tenant)[("shop.app.Page.title", "save")] == ("shop.store.save", 1, "unique")
    with engine.connect() as conn:
        n = conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar()
        again = write_files(engine, tenant, "shop", [FileInput("shop/util.py", UTIL)], META)
        assert again[0].action == "unchanged" and again[0].version == 1
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar() == n
        # BM25 statistics stay those of the symbols present (removal took its postings and document counts away).
        df = dict(conn.execute(text("SELECT term, df FROM code_terms WHERE tenant = :t"), {"t": tenant}).all())
        counted = dict(conn.execute(text("SELECT term, count(*) FROM code_postings WHERE tenant = :t GROUP BY term"),
                                    {"t": tenant}).all())
        assert df == counted
        stats = conn.execute(text("SELECT n_docs FROM code_stats WHERE tenant = :t"), {"t": tenant}).scalar()
        assert stats == conn.execute(text("SELECT count(*) FROM code_symbols WHERE tenant = :t"),
                                     {"t": tenant}).scalar()


def test_rebuild_gives_the_same_rows(engine, tenant: str) -> None:
    from projections.rebuild import verify

    put(engine, tenant, {"shop/util.py": UTIL, "shop/app.py": APP, "shop/store.py": STORE})
    put(engine, tenant, {"shop/cache.py": "def save():\n    return 1\n", "shop/util.py": UTIL + "\n# edited\n"})
    put(engine, tenant, {"shop/store.py": None})
    report = verify(engine, CodeProjector(), batch_size=2)  # batches cut elsewhere than the live run's
    assert report.identical, [t.samples for t in report.tables if not t.identical]


def test_search_answers_exact_slices_with_callers(engine, tenant: str) -> None:
    put(engine, tenant, {"shop/util.py": UTIL, "shop/app.py": APP, "shop/store.py": STORE})
    answer = ask(engine, tenant, "getUserName")
    top = answer.results[0]
    assert top.fields["symbol"] == "shop.util.get_user_name" and top.fields["lines"] == [1, 3]
    assert top.content == UTIL.split("\n\n\n")[0] + "\n"  # the exact slice of the file
    assert top.fields["callers"] == [{"symbol": "shop.app.Page.title", "file": "shop/app.py", "line": 9}]
    assert "callees" not in top.fields
    assert top.handle == {"repo": "shop", "file": "shop/util.py", "qualified_name": "shop.util.get_user_name",
                          "content_hash": top.fields["content_hash"]}
    with_callees = ask(engine, tenant, "display name of a user", callees=True).results[0]
    assert [c["symbol"] for c in with_callees.fields["callees"]] == ["shop.util.lookup"]
    with engine.connect() as conn:
        fetched = CodeDomain().fetch(conn, Scope(tenant), top.handle, NO_POLICY)
        assert fetched["source"] == top.content and not fetched["current_differs"]
        assert CodeDomain().has_data(conn, Scope(tenant)) and not CodeDomain().has_data(conn, Scope(tenant + "-x"))
    assert ask(engine, tenant + "-x", "getUserName").results == []  # another tenant sees nothing


def test_privacy_gate_hides_excluded_files(engine, tenant: str) -> None:
    put(engine, tenant, {"shop/util.py": UTIL, "shop/app.py": APP})
    policy = PrivacyPolicy(exclude_paths=("shop/shop/app.py",))  # <repo>/<file path>
    names = {h.fields["symbol"] for h in ask(engine, tenant, "title render page user name", policy).results}
    assert "shop.util.get_user_name" in names and not any(n.startswith("shop.app") for n in names)
    top = ask(engine, tenant, "get_user_name", policy).results[0]
    assert top.fields["callers"] == []  # its caller lives in the excluded file
    with engine.connect() as conn:
        handle = {"repo": "shop", "file": "shop/app.py", "qualified_name": "shop.app.Page.title"}
        assert CodeDomain().fetch(conn, Scope(tenant), handle, policy) is None
        assert CodeDomain().fetch(conn, Scope(tenant), handle, NO_POLICY) is not None
    whole_repo = PrivacyPolicy(exclude_paths=("shop",))
    assert ask(engine, tenant, "get_user_name", whole_repo).results == []
