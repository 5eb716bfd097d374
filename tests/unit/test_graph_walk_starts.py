"""The graph walk starts from the memories that match the query best before the question penalty: a question
ranked below its reply (composite.question_factor) still points at that reply, its timeline neighbour."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import recall.funnel.graph as graph
from infra.settings import get_settings
from recall.funnel.composite import question_factor, unasked
from recall.funnel.types import Item, StageReport


def _item(score: float, asked: float = 0.0) -> Item:
    item = Item(uuid.uuid4(), score=score)
    item.stages["composite"] = {"question_share": asked} if asked else {}
    return item


def test_unasked_divides_out_the_question_factor() -> None:
    settings = get_settings()
    question = _item(0.4, asked=1.0)
    factor = question_factor(question, settings)
    assert factor == 1 - settings.funnel.question_penalty
    assert unasked(question, settings) == 0.4 / factor
    plain = _item(0.7)
    assert question_factor(plain, settings) == 1.0 and unasked(plain, settings) == 0.7


def test_the_beam_holds_a_question_its_penalty_ranked_out(monkeypatch) -> None:
    settings = get_settings()
    beam = settings.graph.graph_beam
    assert settings.funnel.question_penalty > 0
    answers = [_item(0.6 - i * 0.01) for i in range(beam)]  # the beam's worth of statements, all above the question
    question = _item(0.45, asked=1.0)  # 0.45 after a penalty of 0.5: 0.9 as the query matched it
    asked: list[list[uuid.UUID]] = []

    def neighbourhood(conn, tenant, frontier, now, settings, statuses):  # noqa: ANN001, ANN202
        asked.append(list(frontier))
        return graph.Neighbourhood([], [], [])

    monkeypatch.setattr(graph, "neighbourhood", neighbourhood)
    graph.walk(None, "t", [*answers, question], datetime.now(UTC), settings, StageReport("graph"))  # type: ignore[arg-type]
    assert question.memory_id in asked[0]
    assert answers[-1].memory_id not in asked[0]  # the weakest statement gave the question its place
