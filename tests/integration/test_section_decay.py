"""Knowledge sections decay like memories, by the same decay sweep with a pinned clock: unreferenced for 30 days
dormant, for 90 archived, referenced again active; each decision a SectionStatusChanged by the scheduler with its
inputs; a second sweep with the same clock appends nothing; a replay of the log gives the same statuses."""

from __future__ import annotations

from datetime import timedelta

from lifecycle_support import sync, verify_tenant
from sqlalchemy import text

DOC = "# Ops\n\n## Backups\n\nBackups run nightly at 02:00.\n\n## Restores\n\nRestores need two approvals.\n"


def _statuses(engine, tenant):
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT heading_path, status FROM knowledge_sections WHERE tenant = :t "
                                      "AND heading_path <> ''"), {"t": tenant}).all())


def test_unreferenced_sections_go_dormant_then_archived_and_a_reference_brings_one_back(engine, tenant):
    from domain.privacy import NO_POLICY
    from recall.domains.knowledge import drill
    from services.knowledge import DocumentInput, put_document
    from workers.lifecycle import decay_sweep

    put_document(engine, tenant, DocumentInput("ops/runbook.md", DOC), {"actor": "test"})
    sync(engine)
    with engine.connect() as conn:
        t0 = conn.execute(text("SELECT now()")).scalar_one()
    assert _statuses(engine, tenant) == {"Ops > Backups": "active", "Ops > Restores": "active"}

    report = decay_sweep(engine, t0 + timedelta(days=40), tenant)
    assert report.as_dict()["sections"]["by_transition"] == {"active → dormant": 3}  # the preamble too
    assert _statuses(engine, tenant) == {"Ops > Backups": "dormant", "Ops > Restores": "dormant"}
    again = decay_sweep(engine, t0 + timedelta(days=40), tenant)
    assert again.as_dict()["sections"]["transitions"] == 0

    drill(engine, tenant, "ops/runbook.md", "Ops > Restores", None, NO_POLICY, {"actor": "test"})
    sync(engine)
    report = decay_sweep(engine, t0 + timedelta(days=100), tenant)
    assert report.as_dict()["sections"]["by_transition"] == {"dormant → active": 1, "dormant → archived": 2}
    assert _statuses(engine, tenant) == {"Ops > Backups": "archived", "Ops > Restores": "active"}
    with engine.connect() as conn:
        inputs = conn.execute(text("SELECT data->'inputs', metadata->>'actor' FROM events WHERE tenant = :t "
                                   "AND type = 'SectionStatusChanged' ORDER BY position DESC LIMIT 1"),
                              {"t": tenant}).one()
    assert inputs[1] == "system:scheduler" and {"ref_count", "idle_days", "last_referenced_at"} <= set(inputs[0])
    assert all(n == 0 for n in verify_tenant(engine, "knowledge", tenant).values())
