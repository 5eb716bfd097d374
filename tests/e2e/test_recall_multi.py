"""POST /v1/recall/multi: one query, one bucket per domain (never one mixed list), equal quotas, activation
order, empty buckets with their reason, one hit-log event for the whole fan-out. No worker runs here: the
projections are caught up by hand, and a stand-in domain proves that a domain plugs in through the seam."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text

from recall.domains.base import DomainAnswer, DomainHit, DomainQuery
from recall.scope import Scope


def catch_up_all(engine: Engine) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for projector in PROJECTORS.values():
        catch_up(engine, projector, 1000)


def remember_all(engine: Engine, tenant: str, contents: list[str], **scope: Any) -> None:
    from services.remember import MemoryInput, remember

    remember(engine, tenant, [MemoryInput(content=c, must_keep=True, **scope) for c in contents], {"source": "test"})
    catch_up_all(engine)


class Notes:
    """A stand-in domain: answers every note holding a query word, scored by how many it holds."""

    name = "notes"
    read_models: tuple[str, ...] = ()  # no projection of its own: a min_position waits for nothing here
    vector_leg = True  # handed the query's vector, as the vector domains are
    seen: list[DomainQuery] = []

    def __init__(self, notes: dict[str, list[str]]) -> None:
        self.notes = notes  # tenant -> texts

    def data_check(self, scope: Scope, frame: object = None) -> Any:
        from recall.domains.base import data_check

        return data_check("SELECT CAST(:has AS boolean)", {"has": bool(self.notes.get(scope.tenant))})

    def has_data(self, conn: Connection, scope: Scope) -> bool:
        return bool(self.notes.get(scope.tenant))

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        self.seen.append(q)
        words = set(q.query.lower().split())
        hits = [DomainHit(n, len(words & set(n.lower().split())) / len(words), {"note": i})
                for i, n in enumerate(self.notes.get(q.scope.tenant, [])) if words & set(n.lower().split())]
        hits.sort(key=lambda h: -h.score)
        return DomainAnswer(hits[:q.k], None if hits else "nothing relevant")

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: Any) -> Any:
        return None


@pytest.fixture
def notes(monkeypatch, tenant):
    import recall.domains.registry
    import recall.multi

    domain = Notes({tenant: [f"deploy note {i} about the rollback window" for i in range(30)]})
    domains = {**recall.domains.registry.DOMAINS, "notes": domain}
    monkeypatch.setattr(recall.domains.registry, "DOMAINS", domains)
    monkeypatch.setattr(recall.multi, "DOMAINS", domains)
    return domain


def test_buckets_follow_the_asked_order_with_equal_quotas_and_one_hit_log_event(client, engine, tenant, notes):
    remember_all(engine, tenant, [f"The rollback window for deploys is {i} minutes on cluster {i}" for i in range(12)])
    for order in (["notes", "memories"], ["memories", "notes"]):
        out = client.post("/v1/recall/multi", json={"query": "rollback window for deploys", "domains": order,
                                                    "k": 10})
        assert out.status_code == 200, out.text
        body = out.json()
        assert [b["domain"] for b in body["buckets"]] == order
        assert all(b["quota"] == 5 for b in body["buckets"])
        assert all(0 < len(b["results"]) <= 5 for b in body["buckets"]), body
        memories = next(b for b in body["buckets"] if b["domain"] == "memories")
        assert all(r["memory_id"] and r["handle"] == {"memory_id": r["memory_id"]} for r in memories["results"])
        assert all("rollback" in r["content"] for r in memories["results"])
        record = client.get(f"/v1/recalls/{body['recall_id']}").json()
        assert record["domains"] == order
        assert [r["domain"] for r in record["results"]] == [b["domain"] for b in body["buckets"]
                                                           for _ in b["results"]]
        assert all(r["layer"] == "index" and not r["drilled"] for r in record["results"])
    with engine.connect() as conn:
        served = conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t AND type = 'RecallServed'"),
                              {"t": tenant}).scalar_one()
    assert served == 2  # one per fan-out, whatever the number of domains


def test_the_default_fan_out_asks_only_domains_with_data_and_an_asked_empty_one_says_why(client, engine, tenant,
                                                                                          notes):
    remember_all(engine, tenant, ["The office wifi password rotates every Monday"])
    notes.notes[tenant] = []
    body = client.post("/v1/recall/multi", json={"query": "wifi password rotation", "k": 6}).json()
    [memories] = body["buckets"]  # knowledge and notes hold nothing in this scope: not asked by default
    assert memories["domain"] == "memories" and memories["quota"] == 6 and memories["results"]
    body = client.post("/v1/recall/multi", json={"query": "wifi password rotation", "k": 6,
                                                 "domains": ["notes", "memories"]}).json()
    empty, memories = body["buckets"]
    assert empty == {"domain": "notes", "quota": 0, "results": [], "reason": "no data"}
    assert memories["domain"] == "memories" and memories["quota"] == 6  # the domain with data takes the ceiling
    none = client.post("/v1/recall/multi", json={"query": "wifi", "domains": ["memories"],
                                                 "agent_id": "nobody"}).json()
    assert none["buckets"] == [{"domain": "memories", "quota": 0, "results": [], "reason": "no data"}]


def test_bad_requests_are_refused_and_write_nothing(client, engine, tenant):
    for body, reason in (({"query": "x", "domains": ["nope"]}, "unknown domains: nope"),
                         ({"query": "x", "domains": ["memories", "memories"]}, "must not repeat"),
                         ({"query": " "}, "query must not be empty"),
                         ({"query": "x", "k": 0}, "k must be between"),
                         ({"query": "x", "domains": "memories"}, "")):
        out = client.post("/v1/recall/multi", json=body)
        assert 400 <= out.status_code < 500 and reason in out.text, (body, out.status_code, out.text)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one() == 0


def test_the_memories_domain_keeps_the_funnel_and_the_privacy_gate(engine, tenant):
    from domain.privacy import PrivacyPolicy
    from infra.embedding import get_embedder
    from infra.settings import get_settings
    from recall.multi import MultiRequest, recall_multi

    remember_all(engine, tenant, ["Payroll runs on the 25th of every month"], agent_id="hr", tags=["salary"])
    remember_all(engine, tenant, ["Payroll questions go to the finance desk"], agent_id="ops")
    settings = get_settings()
    embedder = get_embedder(settings.embedding.embedding_model)
    ask = MultiRequest(Scope(tenant), "when does payroll run", ("memories",))
    open_ = recall_multi(engine, embedder, settings, ask, {"actor": "test"})
    assert {h.content for h in open_.buckets[0].results} >= {"Payroll runs on the 25th of every month"}
    for policy in (PrivacyPolicy(exclude_agents=("hr",)), PrivacyPolicy(exclude_tags=("salary",))):
        gated = recall_multi(engine, embedder, settings, ask, {"actor": "test"}, policy)
        assert all("25th" not in h.content for h in gated.buckets[0].results), policy


def test_memories_and_knowledge_answer_their_own_buckets(client, engine, tenant):
    remember_all(engine, tenant, ["Deploy rollbacks need the on-call lead's approval"])
    doc = "# Runbook\n\n## Deploys\n\nDeploys go out at 10:00.\n\n## Rollback\n\nA rollback reverts the last deploy.\n"
    assert client.put("/v1/knowledge/ops/runbook.md", json={"content": doc}).status_code in (200, 201)
    catch_up_all(engine)
    body = client.post("/v1/recall/multi", json={"query": "how does a rollback of a deploy work", "k": 4}).json()
    assert [b["domain"] for b in body["buckets"]] == ["memories", "knowledge"]
    assert all(b["quota"] == 2 for b in body["buckets"])
    knowledge = body["buckets"][1]["results"]
    assert knowledge and knowledge[0]["handle"]["path"] == "ops/runbook.md"
    assert knowledge[0]["handle"]["heading_path"] == "Runbook > Rollback"  # the # title, then the ## heading
    assert knowledge[0]["content"] == "## Rollback\n\nA rollback reverts the last deploy.\n"
    record = client.get(f"/v1/recalls/{body['recall_id']}").json()
    assert {r["domain"] for r in record["results"]} == {"memories", "knowledge"}
    assert all(r["handle"] for r in record["results"] if r["domain"] == "knowledge")


def test_a_keyword_only_domain_is_asked_without_the_query_vector_and_the_others_with_it(client, engine, tenant,
                                                                                        notes, monkeypatch):
    """The query is embedded once, while the domains search; a domain with a vector leg gets it (a literal, or what
    answers it once its vector leg asks: recall/vector.py literal), a keyword-only domain none."""
    import recall.domains.registry
    import recall.multi
    from recall.vector import literal

    class KeywordNotes(Notes):
        name = "keyword_notes"
        vector_leg = False
        seen: list[DomainQuery] = []

    keyword = KeywordNotes({tenant: ["a deploy note about the rollback window"]})
    domains = {**recall.multi.DOMAINS, "keyword_notes": keyword}
    monkeypatch.setattr(recall.domains.registry, "DOMAINS", domains)
    monkeypatch.setattr(recall.multi, "DOMAINS", domains)
    notes.seen.clear()
    out = client.post("/v1/recall/multi", json={"query": "rollback window", "domains": ["notes", "keyword_notes"]})
    assert out.status_code == 200, out.text
    assert [len(b["results"]) > 0 for b in out.json()["buckets"]] == [True, True]
    [with_vector], [without] = notes.seen, keyword.seen
    assert with_vector.query_vector is not None and literal(with_vector.query_vector).startswith("[")
    assert without.query_vector is None


def test_a_failing_domain_answers_its_reason_and_logs_it_with_the_requests_correlation_id(client, engine, tenant,
                                                                                         notes, monkeypatch):
    """Each domain searches on the fan-out's threads in the request's context: a domain that fails leaves the
    others' buckets, says why in its own, and its log line carries the request's correlation id."""
    import structlog

    import recall.multi

    logs: list[dict[str, Any]] = []

    class Recorded:
        """recall/multi.py's logger: each line with the context bound where it is logged (the log's correlation id)."""

        def _line(self, event: str, **kw: Any) -> None:
            logs.append({"event": event, **structlog.contextvars.get_contextvars(), **kw})

        exception = info = warning = _line

    def broken(engine: Engine, q: DomainQuery) -> DomainAnswer:
        raise RuntimeError("index gone")

    monkeypatch.setattr(notes, "search", broken)
    monkeypatch.setattr(recall.multi, "log", Recorded())
    remember_all(engine, tenant, ["The rollback window for deploys is 15 minutes"])
    out = client.post("/v1/recall/multi", json={"query": "rollback window", "domains": ["notes", "memories"]},
                      headers={"x-correlation-id": "fan-out-7"})
    assert out.status_code == 200, out.text
    buckets = {b["domain"]: b for b in out.json()["buckets"]}
    assert buckets["notes"]["reason"] == "failed: RuntimeError" and buckets["notes"]["results"] == []
    assert buckets["memories"]["results"]
    [failed] = [e for e in logs if e["event"] == "recall_multi.domain_failed"]
    assert failed["domain"] == "notes" and failed["correlation_id"] == "fan-out-7"
