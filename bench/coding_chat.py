"""Synthetic coding-assistant chat messages: long memories (a few hundred characters to a few KB each).

Deterministic for a seed, no download. Each message is a user's report or an assistant's answer about one
project, built from what such chats hold: prose explanations, file paths, fenced code (Python, SQL, TypeScript,
shell), Python tracebacks, log lines and command output. They are rich in what the surface entity rule picks up
(class and exception names, frameworks, CamelCase identifiers, capitalised log levels), so they exercise every
stage that reads a memory's text (coreference, the entity boost, the abstention gate, the entities projection).

`messages(n)` answers n distinct messages; `queries(n)` questions about them, some with pronouns (coreference
runs) and some naming entities (the entity channel runs).
"""

from __future__ import annotations

import random

FRAMEWORKS = ["Django", "FastAPI", "Flask", "SQLAlchemy", "Celery", "Pydantic", "React", "Next.js", "Express",
              "PostgreSQL", "Redis", "Kafka", "Docker", "Kubernetes", "Terraform", "GitHub Actions", "Webpack",
              "Vite", "Jest", "Pytest", "NumPy", "Pandas", "PyTorch", "Alembic", "Gunicorn", "Nginx"]
ERRORS = ["TypeError", "ValueError", "KeyError", "AttributeError", "IndexError", "ModuleNotFoundError",
          "IntegrityError", "OperationalError", "TimeoutError", "ConnectionRefusedError", "RecursionError",
          "UnicodeDecodeError", "PermissionError", "ValidationError", "DoesNotExist", "ImproperlyConfigured"]
MESSAGES = ["'NoneType' object is not subscriptable", "invalid literal for int() with base 10: 'abc'",
            "duplicate key value violates unique constraint \"orders_pkey\"", "'User' object has no attribute 'email'",
            "list index out of range", "No module named 'app.settings'", "connection to server timed out",
            "maximum recursion depth exceeded", "'utf-8' codec can't decode byte 0xff in position 0",
            "field required (type=value_error.missing)", "could not serialize access due to concurrent update"]
MODULES = ["orders", "payments", "users", "billing", "inventory", "search", "notifications", "auth", "reports",
           "shipping", "analytics", "checkout", "catalog", "webhooks", "sessions", "exports"]
FILES = ["models.py", "views.py", "service.py", "tasks.py", "serializers.py", "api.py", "utils.py", "schemas.py",
         "repository.py", "handlers.py", "client.py", "config.py"]
FUNCS = ["create_order", "apply_discount", "load_user", "send_invoice", "refresh_token", "parse_payload",
         "sync_inventory", "build_report", "charge_card", "retry_webhook", "export_csv", "resolve_address",
         "compute_totals", "validate_cart", "enqueue_email", "fetch_rates"]
CLASSES = ["OrderService", "PaymentGateway", "UserRepository", "InvoiceBuilder", "TokenManager", "CartValidator",
           "ReportExporter", "WebhookDispatcher", "RateLimiter", "InventorySync", "AddressResolver", "EmailQueue"]
PEOPLE = ["Priya", "Marcus", "Elena", "Tomasz", "Aisha", "Kenji", "Lucas", "Fatima", "Noah", "Ingrid"]
TOOLS = ["mypy", "ruff", "black", "pip", "poetry", "npm", "yarn", "make", "psql", "kubectl", "docker compose"]

OPENERS = [
    "I'm getting a {err} when I call `{func}` from `{path}` and I can't figure out why.",
    "After upgrading {fw} the `{cls}` tests started failing with {err}.",
    "{person} asked me to look at the {module} module: `{func}` is slow under load and sometimes raises {err}.",
    "Can you help me refactor `{cls}` in `{path}`? It has grown to a few hundred lines.",
    "Our CI on {fw2} fails on the {module} job; locally everything passes with {tool}.",
    "Here is the traceback I see in production for the {module} endpoint since yesterday's deploy.",
]
EXPLAINS = [
    "The problem is that `{func}` is called before the {fw} session is committed, so the row it reads is still "
    "the old one. Move the call after the commit, or pass the object itself instead of its id.",
    "This happens because `{cls}` keeps a reference to a closed connection. When {fw} recycles the pool the "
    "next query raises {err}. Create the client per request, or enable pre-ping on the engine.",
    "Your `{func}` returns None when the {module} record is missing, and the caller indexes into the result. "
    "Either raise {err} explicitly with a clear message or return an empty dict and check for it.",
    "The migration adds a unique constraint while duplicate rows still exist in the {module} table. Run a "
    "deduplication step first (keep the newest row per key), then add the constraint in a second migration.",
    "In {fw} the default timeout is 30 seconds; `{func}` makes one request per item, so a batch of a few "
    "hundred items exceeds it. Batch the requests, or move the work to a {fw2} task and poll its status.",
    "Note that `{path}` imports `{cls}` at module level, which creates a circular import with the {module} "
    "package. Import it inside the function, or move the shared types to a separate module.",
    "I would split `{cls}` into a pure part that decides what to do and a thin part that talks to {fw}: the "
    "pure part is then easy to test with {tool}, and the IO part stays small.",
]
CLOSERS = [
    "Let me know if the {module} tests still fail after this change.",
    "Thanks, that fixed it. {person} will review the pull request tomorrow.",
    "That worked, but now `{func}` is about twice as slow. Is that expected?",
    "I also ran {tool} on the whole project and it found nothing else.",
    "It still fails on Python 3.12 though, only on the {fw2} runner.",
    "Should I also add a regression test for `{func}` in tests/test_{module}.py?",
]
QUERIES = [
    "How did we fix the {err} in {func}?",
    "Why does {cls} raise {err}?",
    "what was the traceback in {module}/{file}",
    "Which migration broke the {module} table?",
    "How do I make {func} faster?",
    "What did {person} say about the {module} module?",
    "{fw} timeout in {func}",
    "Why did it fail on the {fw2} runner?",
    "What did she suggest for {cls}?",
    "How should I split {cls} for testing?",
    "circular import {module} {cls}",
    "Did the regression test for {func} get added?",
    "What did he say about it?",
    "Where is {func} defined?",
]


class _Pick:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def fields(self) -> dict[str, str]:
        r = self.rng
        module = r.choice(MODULES)
        return {"err": r.choice(ERRORS), "func": r.choice(FUNCS), "cls": r.choice(CLASSES), "module": module,
                "path": f"src/app/{module}/{r.choice(FILES)}", "file": r.choice(FILES), "fw": r.choice(FRAMEWORKS),
                "fw2": r.choice(FRAMEWORKS), "person": r.choice(PEOPLE), "tool": r.choice(TOOLS)}


def _traceback(p: _Pick, f: dict[str, str]) -> str:
    r = p.rng
    frames = []
    for _ in range(r.randint(3, 9)):
        module, file_ = r.choice(MODULES), r.choice(FILES)
        frames.append(f'  File "/srv/app/src/app/{module}/{file_}", line {r.randint(10, 900)}, in {r.choice(FUNCS)}\n'
                      f"    result = {r.choice(CLASSES)}(session).{r.choice(FUNCS)}(payload[\"{module}\"])")
    return ("```\nTraceback (most recent call last):\n" + "\n".join(frames)
            + f"\n{f['err']}: {r.choice(MESSAGES)}\n```")


def _python(p: _Pick, f: dict[str, str]) -> str:
    r = p.rng
    body = [f"class {f['cls']}:", "    def __init__(self, session: Session, settings: Settings) -> None:",
            "        self.session = session", "        self.settings = settings", "",
            f"    def {f['func']}(self, item_id: int) -> dict[str, Any]:",
            f"        row = self.session.get({f['module'].title()}, item_id)", "        if row is None:",
            f"            raise {f['err']}(f\"no {f['module']} {{item_id}}\")"]
    for _ in range(r.randint(0, 6)):
        body += [f"        # {r.choice(EXPLAINS).split('.')[0].format(**p.fields())}",
                 f"        total = sum(line.amount for line in row.lines if line.{r.choice(FUNCS)}())"]
    body.append("        return {\"id\": row.id, \"total\": total}")
    return "```python\n" + "\n".join(body) + "\n```"


def _sql(p: _Pick, f: dict[str, str]) -> str:
    m = f["module"]
    return (f"```sql\nALTER TABLE {m} ADD CONSTRAINT {m}_key_unique UNIQUE (tenant_id, external_id);\n"
            f"DELETE FROM {m} a USING {m} b\nWHERE a.external_id = b.external_id AND a.id < b.id;\n"
            f"CREATE INDEX CONCURRENTLY {m}_by_created ON {m} (tenant_id, created_at DESC);\n```")


def _typescript(p: _Pick, f: dict[str, str]) -> str:
    name = f["func"].title().replace("_", "")
    return (f"```ts\nexport async function {name}(client: ApiClient, id: string): Promise<Result> {{\n"
            f"  const response = await client.get(`/api/{f['module']}/${{id}}`);\n"
            f"  if (!response.ok) throw new HttpError(response.status, 'GET {f['module']} failed');\n"
            f"  return ResultSchema.parse(await response.json());\n}}\n```")


def _log(p: _Pick, f: dict[str, str]) -> str:
    r = p.rng
    lines = [f"2025-0{r.randint(1, 9)}-1{r.randint(0, 9)} 1{r.randint(0, 9)}:0{r.randint(0, 9)}:{r.randint(10, 59)} "
             f"{r.choice(['INFO', 'WARNING', 'ERROR', 'DEBUG'])} [{f['module']}] {r.choice(CLASSES)} "
             f"{r.choice(FUNCS)} took {r.randint(5, 5000)}ms" for _ in range(r.randint(3, 12))]
    return "```\n" + "\n".join(lines) + "\n```"


def _shell(p: _Pick, f: dict[str, str]) -> str:
    return (f"```sh\n$ {f['tool']} run tests/test_{f['module']}.py -x\nFAILED tests/test_{f['module']}.py::"
            f"test_{f['func']} - {f['err']}: {p.rng.choice(MESSAGES)}\n1 failed, {p.rng.randint(5, 300)} passed\n```")


_BLOCKS = (_traceback, _python, _sql, _typescript, _log, _shell)


def message(p: _Pick) -> str:
    """One chat message: an opener, then 1-5 parts (explanations and code blocks), sometimes a closer."""
    r = p.rng
    f = p.fields()
    parts = [r.choice(OPENERS).format(**f)]
    for _ in range(r.randint(1, 5)):
        g = {**f, **{k: v for k, v in p.fields().items() if r.random() < 0.3}}  # mostly about the same things
        parts.append(r.choice(EXPLAINS).format(**g) if r.random() < 0.5 else r.choice(_BLOCKS)(p, g))
    if r.random() < 0.6:
        parts.append(r.choice(CLOSERS).format(**f))
    return "\n\n".join(parts)


def messages(n: int, seed: int = 17) -> list[str]:
    """n distinct messages, a few hundred characters to a few KB each."""
    p = _Pick(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        m = message(p)
        if m not in seen:
            seen.add(m)
            out.append(m)
    return out


def queries(n: int, seed: int = 19) -> list[str]:
    p = _Pick(seed)
    return [p.rng.choice(QUERIES).format(**p.fields()) for _ in range(n)]
