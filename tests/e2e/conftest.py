"""Fixtures the deep-recall e2e modules share (the stack's fixtures are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deep_recall_support import ScriptedModels, start_scripted_models


@pytest.fixture(scope="module")
def models() -> Iterator[ScriptedModels]:
    """The scripted model server on loopback (the OpenAI chat and Anthropic Messages protocols), one per module."""
    scripted, server, thread = start_scripted_models()
    yield scripted
    server.should_exit = True
    thread.join(10)
