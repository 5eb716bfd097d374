"""The deep recall sandbox holds: each escape attempt, resource bomb and out-of-scope live call is contained and
comes back to the model as a clear error, and the loop goes on to its FINAL."""

from __future__ import annotations

import api.routes.deep_recall as route
from infra.settings import get_settings, replace
from projections.runner import catch_up
from projections.sessions import SessionsProjector
from services.privacy import set_privacy_policy
from tests.deep_recall_support import ROOT, last_user

# (code, what the model must be told), one block each, all in one turn.
ESCAPES = [
    ("import os\nprint(os.listdir('/'))", "PermissionError"),
    ("print(open('/etc/passwd').read())", "PermissionError"),
    ("print(__import__('os'))", "NameError: name '__import__' is not defined"),
    ("print(().__class__.__base__.__subclasses__())", "AttributeError"),
    ("eval(\"__import__('os').system('id')\")", "NameError: name '__import__' is not defined"),
    ("exec('import os\\nos.system(\"id\")')", "AttributeError: module 'os' has no attribute 'system'"),
    ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
    ("import socket", "ModuleNotFoundError: No module named 'socket'"),
    ("import os\nprint(os.environ)", "not supported"),
    ("while True:\n    pass", "TimeoutError"),
    ("x = 'a' * (10 ** 10)", "MemoryError"),
    ("blocks = []\nwhile True:\n    blocks.append('x' * 10 ** 6)", "MemoryError"),
    ("for i in range(10 ** 8):\n    print('spam spam spam spam spam spam')", "MemoryError"),
    ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    ("search('walrus', tenant='someone-else')", "always answers the caller's own tenant"),
    ("search('walrus', project='secret')", "excluded by the tenant's privacy policy"),
    ("search('walrus', agent_id='intruder')", "outside this deep recall's scope"),
    ("load_transcript('s-secret')", "LookupError: no session 's-secret' in this scope"),
    ("load_transcript('s-other-tenant')", "LookupError: no session 's-other-tenant' in this scope"),
    ("print(search.__globals__)", "AttributeError"),
]


def test_every_escape_is_contained_and_told_to_the_model(client, engine, tenant, models, monkeypatch) -> None:
    settings = replace(get_settings(), llm_model=ROOT, llm_base_url=models.url, deep_shortcut_hits=1000,
                       deep_block_timeout_s=1.0, deep_sandbox_memory_mb=64, deep_print_bytes=65536)
    monkeypatch.setattr(route, "get_settings", lambda: settings)
    from services.sessions import append_messages

    for session_id, project in (("s-open", "public"), ("s-secret", "secret")):
        append_messages(engine, tenant, session_id, [{"role": "user", "content": f"walrus in {project}"}],
                        {"source": "test"}, agent_id="ops", project=project)
    append_messages(engine, f"{tenant}-other", "s-other-tenant", [{"role": "user", "content": "walrus elsewhere"}],
                    {"source": "test"}, agent_id="ops")
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    set_privacy_policy(engine, tenant, {"exclude_projects": ["secret"]}, {"actor": "test", "source": "test"})

    turn = "".join(f"```python\n{c}\n```\n" for c, _ in ESCAPES) + "```python\nprint('still alive', 6 * 7)\n```\n"
    told: dict[str, str] = {}

    def finish(messages):
        told["feedback"] = last_user(messages)
        return "FINAL: contained"

    models.reset()
    models.script(ROOT, turn, finish)
    r = client.post("/v1/deep_recall", json={"question": "try to escape", "agent_id": "ops"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stopped"] == "final" and body["answer"] == "contained" and body["iterations"] == 2
    feedback = told["feedback"]
    for i, (code, expected) in enumerate(ESCAPES, 1):
        section = feedback.split(f"[block {i} error]\n", 1)
        assert len(section) == 2, (code, feedback[:3000])
        error = section[1].split("[block ", 1)[0]
        assert expected in error, (code, error)
    assert f"[block {len(ESCAPES) + 1} output]\nstill alive 42" in feedback
    assert "root:" not in feedback and "/bin/bash" not in feedback  # nothing of the host leaked
    assert len(feedback) <= settings.deep.deep_output_chars + 200
