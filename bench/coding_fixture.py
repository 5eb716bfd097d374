"""A labelled coding-assistant chat fixture: long technical messages, questions about them, the gold message ids.

Written for issue 15 item 3 (no public benchmark is fetched or copied). Each *scenario* is one thread of a
project's chat: a user's report with a traceback, log, config or CI output, the assistant's answer, a decision,
and sometimes a later update that changes a value. Each scenario is written once as text templates and
instantiated for several projects whose identifiers differ (service names, error codes, functions, versions,
ports, flags), so the corpus holds many messages of the same shape that differ in what matters: what BM25 and
the vector leg must tell apart. Between them sit the unlabelled messages of bench/coding_chat.py.

A question's gold is every message that answers it (any one of them counts as a hit); for an update question
only the message with the newest value is gold. `dev()` is the part the fixes were studied on;
bench/coding_fixture_heldout.py (written after the change was frozen) is reported separately.

    from bench.coding_fixture import dev
    fixture = dev()   # Fixture(messages=[Message(key, text)], questions=[Question(text, gold_keys, kind)])
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.coding_chat import messages as filler_messages


@dataclass(frozen=True)
class Message:
    key: str
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    gold: tuple[str, ...]
    kind: str


@dataclass
class Fixture:
    messages: list[Message] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def add(self, key: str, text: str) -> str:
        self.messages.append(Message(key, text))
        return key

    def ask(self, text: str, gold: list[str], kind: str) -> None:
        self.questions.append(Question(text, tuple(gold), kind))


# ---------------------------------------------------------------------------------------------------------
# Generic long material: library frames, log noise, prose. What makes a message long without saying much.

LIB_FRAMES = [
    ('/usr/local/lib/python3.11/site-packages/sqlalchemy/engine/base.py', 1969, '_exec_single_context',
     'self.dialect.do_execute('),
    ('/usr/local/lib/python3.11/site-packages/sqlalchemy/engine/default.py', 922, 'do_execute',
     'cursor.execute(statement, parameters)'),
    ('/usr/local/lib/python3.11/site-packages/starlette/routing.py', 73, 'app', 'response = await func(request)'),
    ('/usr/local/lib/python3.11/site-packages/fastapi/routing.py', 301, 'app',
     'raw_response = await run_endpoint_function('),
    ('/usr/local/lib/python3.11/asyncio/tasks.py', 277, '__step', 'result = coro.send(None)'),
    ('/usr/local/lib/python3.11/site-packages/celery/app/trace.py', 453, 'trace_task',
     'R = retval = fun(*args, **kwargs)'),
    ('/usr/local/lib/python3.11/site-packages/httpx/_client.py', 1617, 'send',
     'response = await self._send_handling_auth('),
    ('/usr/local/lib/python3.11/site-packages/psycopg/cursor.py', 732, 'execute', 'raise ex.with_traceback(None)'),
    ('/usr/local/lib/python3.11/site-packages/django/core/handlers/base.py', 197, '_get_response',
     'response = wrapped_callback(request, *callback_args, **callback_kwargs)'),
    ('/usr/local/lib/python3.11/site-packages/redis/connection.py', 1066, 'read_response',
     'response = self._parser.read_response(disable_decoding=disable_decoding)'),
]
NOISE_LOG = [
    "INFO  uvicorn.access 10.0.3.{a}:5{b}12 - \"GET /healthz HTTP/1.1\" 200",
    "DEBUG urllib3.connectionpool Starting new HTTPS connection (1): api.internal:443",
    "INFO  gunicorn.error Booting worker with pid: 7{a}{b}",
    "WARN  kafka.coordinator Heartbeat session expired, marking coordinator dead",
    "INFO  app.middleware request_id=r-{a}{b}9f latency_ms={a}{b} status=200",
    "DEBUG sqlalchemy.pool Connection <psycopg.Connection {a}{b}> checked out from pool",
    "INFO  celery.worker.strategy Task received",
    "WARN  py.warnings DeprecationWarning: datetime.utcnow() is deprecated",
]
PROSE = [
    "For context, this only started after we moved the service to the new cluster last sprint.",
    "I already tried restarting the pods and clearing the cache, neither changed anything.",
    "The rest of the suite is green, and staging looks fine apart from this.",
    "I am pasting the full output below because I am not sure which part matters.",
    "We have a demo on Thursday so I would like to understand the root cause, not just patch it.",
    "Nothing in the changelog of the last two releases looks related to me.",
    "It does not reproduce on my laptop, only in the container.",
]
ANSWER_PROSE = [
    "Two smaller things I noticed while reading the output, unrelated to the failure: the health check logs are "
    "very chatty at INFO, and the connection pool is checked out and returned on every request.",
    "You can confirm this by running the same command with verbose logging turned on; the line just before the "
    "error should show the value I describe above.",
    "Once this is merged it is worth adding a test that pins the behaviour, so the next upgrade does not bring it "
    "back silently.",
    "If you want, I can also sketch the follow-up refactor, but the fix above is the minimal change.",
]


def frames(r: random.Random, inner: list[tuple[str, int, str, str]], outer: int = 3) -> str:
    """A Python traceback: `outer` library frames, then the project's own frames (the last one raises)."""
    lib = r.sample(LIB_FRAMES, outer)
    parts = [f'  File "{p}", line {n}, in {fn}\n    {src}' for p, n, fn, src in lib]
    parts += [f'  File "{p}", line {n}, in {fn}\n    {src}' for p, n, fn, src in inner]
    return "Traceback (most recent call last):\n" + "\n".join(parts)


def noise(r: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        out.append(r.choice(NOISE_LOG).format(a=r.randint(1, 9), b=r.randint(0, 9)))
    return out


def stamp(r: random.Random, day: int) -> str:
    return f"2025-03-{day:02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"


def ask_two(fx: Fixture, r: random.Random, phrasings: list[str], gold: list[str], kind: str) -> None:
    """Two of a question's phrasings (an identifier, or the words a user would use), the same gold."""
    for q in r.sample(phrasings, 2):
        fx.ask(q, gold, kind)


Scenario = Callable[[Fixture, random.Random, dict[str, str], str], None]


# ---------------------------------------------------------------------------------------------------------
# Scenarios. Each takes the fixture, an rng, the instance's values and a key prefix.


def lock_timeout(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    inner = [(f"/srv/{v['svc']}/app/api/{v['route']}.py", r.randint(40, 200), f"post_{v['route']}",
              f"result = await {v['svc_cls']}(session).{v['fn']}(payload)"),
             (f"/srv/{v['svc']}/app/domain/{v['module']}.py", r.randint(100, 600), v['fn'],
              f"slot = self._reserve(batch, timeout_ms={v['timeout']})"),
             (f"/srv/{v['svc']}/app/domain/{v['module']}.py", r.randint(100, 600), "_reserve",
              f"raise {v['exc']}(code=\"{v['code']}\", held_by=holder)")]
    log = noise(r, r.randint(4, 9))
    user = (f"{r.choice(PROSE)} Since this morning the {v['svc']} service fails on roughly one request in "
            f"fifty with a 500. {r.choice(PROSE)}\n\n```\n" + "\n".join(log[: len(log) // 2]) + "\n"
            + frames(r, inner, r.randint(3, 5)) + f"\n{v['exc']}: lock on {v['table']} not acquired within "
            f"{v['timeout']} ms [{v['code']}] held_by=pid {r.randint(1000, 9999)}\n" + "\n".join(log[len(log) // 2:])
            + "\n```\n\nAny idea what is going on?")
    a = fx.add(f"{p}.report", user)
    answer = (f"The error code {v['code']} comes from your own `_reserve` helper: `{v['fn']}` takes a row lock on "
              f"`{v['table']}` with `SELECT ... FOR UPDATE` and gives up after {v['timeout']} ms. The holder is the "
              f"nightly `{v['job']}` job, which opens one transaction for the whole batch and keeps the lock for "
              f"minutes. Two changes fix it:\n\n```python\nasync def {v['fn']}(self, payload):\n"
              f"    async with self.session.begin():\n        row = await self.session.execute(\n"
              f"            select({v['table'].title().replace('_', '')})"
              f".where(...).with_for_update(skip_locked=True)\n"
              f"        )\n```\n\nand make `{v['job']}` commit every 500 rows instead of once at the end. "
              f"{r.choice(ANSWER_PROSE)}")
    b = fx.add(f"{p}.answer", answer)
    q1 = [f"where did we see error code {v['code']}?", f"{v['code']} traceback",
          f"which exception carried the code {v['code']}?"][r.randint(0, 2)]
    fx.ask(q1, [a, b], "rare_identifier")
    ask_two(fx, r, [f"why does {v['fn']} time out on the {v['table']} lock?",
            f"what holds the lock on {v['table']} in {v['svc']}?",
            f"how did we fix the {v['exc']} in {v['svc']}?"], [b], "explanation")


def pool_update(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    first = (f"Here is the database section of `deploy/{v['svc']}/values.yaml` as it is today. {r.choice(PROSE)}\n\n"
             f"```yaml\ndatabase:\n  host: {v['svc']}-pg.internal\n  port: 5432\n  pool_size: {v['pool_old']}\n"
             f"  max_overflow: 5\n  pool_timeout_s: 30\n  statement_timeout_ms: {r.choice([5000, 15000, 30000])}\n"
             f"replicas: {r.randint(2, 6)}\nresources:\n  requests:\n    cpu: 250m\n    memory: 256Mi\n```\n\n"
             f"With {v['rps']} requests per second at peak, is pool_size {v['pool_old']} enough?")
    a = fx.add(f"{p}.pool_old", first)
    b = fx.add(f"{p}.pool_answer",
               f"At {v['rps']} rps with a p95 query time around 40 ms you need about rps × p95 / replicas "
               f"connections per pod, plus headroom for bursts. Keep pool_size at {v['pool_old']} for now, but "
               f"watch `sqlalchemy.pool` checkout waits in the logs; if `pool_timeout_s` is ever hit you will see "
               f"`QueuePool limit of size {v['pool_old']} overflow 5 reached` and that is the signal to raise it. "
               f"Also make sure PgBouncer's `default_pool_size` is at least replicas × (pool_size + max_overflow).")
    c = fx.add(f"{p}.pool_new",
               f"Update on {v['svc']}: the load test on Friday hit `QueuePool limit of size {v['pool_old']} "
               f"overflow 5 reached, connection timed out` after 12 minutes, so we raised pool_size to "
               f"{v['pool_new']} and max_overflow to 10 in values.yaml, and PgBouncer default_pool_size to "
               f"{int(v['pool_new']) * 4}. The rerun held {int(v['rps']) * 2} rps for an hour without a single "
               f"checkout wait.\n\n```diff\n-  pool_size: {v['pool_old']}\n-  max_overflow: 5\n"
               f"+  pool_size: {v['pool_new']}\n+  max_overflow: 10\n```")
    ask_two(fx, r, [f"what is the database pool size of {v['svc']} now?", f"current pool_size for {v['svc']}",
            f"did we change the connection pool of {v['svc']} after the load test?"], [c], "update")
    fx.ask(f"how do I know when the {v['svc']} pool is too small?", [b], "explanation")
    del a


def queue_decision(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    a = fx.add(f"{p}.queue_ask",
               f"For the {v['svc']} we need background jobs: about {r.randint(2, 90) * 1000} jobs a day, each a "
               f"few seconds of CPU, retries on failure, and we already run Redis. Options on the table are "
               f"Celery, {v['pick']}, "
               f"and {v['other']}. {r.choice(PROSE)} What would you pick?")
    b = fx.add(f"{p}.queue_decision",
               f"Decision for {v['svc']}: we go with {v['pick']}. Reasons: {v['reason']}. Celery is heavier than "
               f"we need (a separate beat process, its own serializer and result backend settings) and "
               f"{v['other']} has no retry with backoff built in. Concretely:\n\n```python\n"
               f"# {v['svc']}/worker.py\nfrom {v['pick_mod']} import {v['pick_cls']}\n\n"
               f"broker = {v['pick_cls']}(url=settings.stack.redis_url, max_retries=5)\n\n\n"
               f"@broker.task(queue=\"{v['queue']}\")\ndef {v['task']}(item_id: int) -> None:\n    ...\n```\n\n"
               f"The queue is called `{v['queue']}`; one worker process per node to start with.")
    ask_two(fx, r, [f"which job queue library did we choose for {v['svc']}?",
            f"why {v['pick']} and not celery for {v['svc']}?",
            f"what is the name of the {v['svc']} queue?"], [b], "decision")
    del a


def ci_failure(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    passed = r.randint(400, 1400)
    tests = [f"tests/{v['area']}/test_{w}.py::test_{w}_{x} PASSED" for w, x in
             zip(r.sample(["totals", "export", "auth", "limits", "parse", "retry", "cache", "merge"], 6),
                 r.sample(["basic", "empty", "unicode", "large", "concurrent", "timeout", "negative", "rounding"], 6),
                 strict=True)]
    log = (f"```\n$ pytest -n 4 tests/{v['area']}\n" + "\n".join(tests[:3])
           + f"\ntests/{v['area']}/test_{v['mod']}.py::{v['test']} FAILED\n" + "\n".join(tests[3:])
           + f"\n\n=================================== FAILURES ===================================\n"
           f"__________________________ {v['test']} __________________________\n\n"
           f"    def {v['test']}():\n        got = {v['fn']}({v['arg']})\n>       assert got == {v['expected']}\n"
           f"E       AssertionError: assert {v['got']} == {v['expected']}\n\n"
           f"tests/{v['area']}/test_{v['mod']}.py:{r.randint(20, 300)}: AssertionError\n"
           f"=========== 1 failed, {passed} passed, {r.randint(1, 9)} skipped in {r.randint(60, 400)}.21s "
           f"===========\n```")
    a = fx.add(f"{p}.ci_log",
               f"CI is red on the {v['runner']} runner only, the x86 one is green. Same commit. "
               f"{r.choice(PROSE)}\n\n{log}")
    b = fx.add(f"{p}.ci_answer",
               f"`{v['test']}` fails only on {v['runner']} because `{v['fn']}` uses float arithmetic and the "
               f"{v['runner']} image ships a different libm, so {v['got']} comes out instead of {v['expected']}. "
               f"Use `decimal.Decimal` with `ROUND_HALF_EVEN` inside `{v['fn']}` and compare exact values in the "
               f"test. Do not mark it flaky: it is deterministic per platform. {r.choice(ANSWER_PROSE)}")
    ask_two(fx, r, [f"which test failed on the {v['runner']} runner?", f"{v['test']} failure",
            f"why is CI red only on {v['runner']} for {v['area']}?"], [a, b], "log")


def slow_query(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    before, after = r.randint(1800, 9000), r.randint(2, 40)
    plan = (f"```\nEXPLAIN (ANALYZE, BUFFERS) SELECT * FROM {v['table']} WHERE {v['col1']} = $1 AND "
            f"{v['col2']} > now() - interval '7 days' ORDER BY {v['col2']} DESC LIMIT 50;\n\n"
            f" Limit  (cost=0.43..{r.randint(100, 900)}.12 rows=50 width=212) (actual time={before - 3}.1..{before}.4 "
            f"rows=50 loops=1)\n   ->  Sort  (cost=... rows={r.randint(10000, 90000)})\n"
            f"         Sort Key: {v['col2']} DESC\n         Sort Method: top-N heapsort  Memory: 61kB\n"
            f"         ->  Seq Scan on {v['table']}  (actual time=0.02..{before - 40}.9 "
            f"rows={r.randint(100000, 900000)} "
            f"loops=1)\n               Filter: (({v['col1']} = $1) AND ({v['col2']} > ...))\n"
            f"               Rows Removed by Filter: {r.randint(1000000, 5000000)}\n"
            f"               Buffers: shared hit={r.randint(1000, 9000)} read={r.randint(10000, 99999)}\n"
            f" Planning Time: 0.{r.randint(100, 999)} ms\n Execution Time: {before}.{r.randint(10, 99)} ms\n```")
    a = fx.add(f"{p}.slow_plan",
               f"The {v['page']} page of {v['svc']} takes seconds to load. Here is the plan of the query behind it. "
               f"{r.choice(PROSE)}\n\n{plan}")
    b = fx.add(f"{p}.slow_fix",
               f"It is a sequential scan of all of `{v['table']}` followed by a sort. Create\n\n```sql\n"
               f"CREATE INDEX CONCURRENTLY {v['index']} ON {v['table']} ({v['col1']}, {v['col2']} DESC);\n```\n\n"
               f"so the planner can read the 50 newest rows for one {v['col1']} straight from the index. "
               f"After creating it on staging the same query ran in {after} ms instead of {before} ms. Remember "
               f"`CONCURRENTLY` cannot run inside a transaction, so the migration needs its own non-transactional "
               f"step.")
    ask_two(fx, r, [f"which index did we add for the {v['page']} query?",
                    f"how fast is the {v['table']} query after the index?"], [b], "performance")
    fx.ask(f"why was the {v['page']} page of {v['svc']} slow?", [a, b], "performance")


def oom_update(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    describe = (f"```\n$ kubectl -n {v['ns']} describe pod {v['job']}-{r.randint(28000000, 29000000)}"
                f"-x{r.randint(10, 99)}k\n"
                f"Name:         {v['job']}-28{r.randint(100000, 999999)}\nNamespace:    {v['ns']}\n"
                f"Containers:\n  {v['job']}:\n    Image:   registry.internal/{v['job']}:{v['tag']}\n"
                f"    Limits:\n      cpu:     1\n      memory:  {v['mem_old']}\n    Requests:\n      memory:  256Mi\n"
                f"    State:          Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
                f"    Restart Count:  {r.randint(2, 6)}\nEvents:\n  Warning  BackOff  kubelet  Back-off restarting "
                f"failed container\n```")
    fx.add(f"{p}.oom_report",
           f"The nightly {v['job']} CronJob keeps dying. {r.choice(PROSE)}\n\n{describe}")
    b = fx.add(f"{p}.oom_answer",
               f"Exit code 137 with OOMKilled: the container went over its {v['mem_old']} limit. `{v['job']}` loads "
               f"the whole result set with `.all()` before writing the file; stream it with `yield_per(2000)` and "
               f"write rows as they come. As a stopgap raise the limit to {v['mem_mid']}.")
    c = fx.add(f"{p}.oom_update",
               f"Follow-up on {v['job']}: streaming fixed most of it, but the {v['big_tenant']} tenant still peaked "
               f"above {v['mem_mid']} because of the XLSX writer, so the CronJob limit is now {v['mem_new']} and "
               f"requests 512Mi. Three nights without a restart since.\n\n```yaml\n        resources:\n"
               f"          limits:\n            memory: {v['mem_new']}\n          requests:\n"
               f"            memory: 512Mi\n```")
    ask_two(fx, r, [f"what memory limit does the {v['job']} job have now?", f"{v['job']} memory limit",
            f"how much memory did we finally give {v['job']}?"], [c], "update")
    fx.ask(f"why was {v['job']} OOMKilled?", [b], "explanation")


def rate_limit(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    log = [f"{stamp(r, 14)} WARN  {v['svc']}.client POST https://{v['host']}/v2/{v['endpoint']} -> 429 "
           f"retry_after={r.randint(1, 30)} x-ratelimit-remaining=0 x-ratelimit-bucket={v['bucket']}"
           for _ in range(r.randint(3, 6))]
    a = fx.add(f"{p}.rl_log",
               f"We hammer {v['vendor']} when the backfill runs and get throttled. {r.choice(PROSE)}\n\n```\n"
               + "\n".join(noise(r, 2) + log + noise(r, 2)) + "\n```")
    b = fx.add(f"{p}.rl_decision",
               f"We agreed: calls to {v['vendor']} go through one token bucket of {v['rate']} requests per second "
               f"shared by all workers (in Redis, key `rl:{v['bucket']}`), and a 429 is retried with exponential "
               f"backoff and full jitter, base 0.5 s, at most {v['retries']} attempts, honouring `Retry-After` when "
               f"it is longer.\n\n```python\n@retry(wait=wait_random_exponential(multiplier=0.5, max=30), "
               f"stop=stop_after_attempt({v['retries']}),\n       retry=retry_if_exception_type(RateLimited))\n"
               f"def {v['endpoint'].replace('-', '_')}(client, payload):\n"
               f"    with bucket('rl:{v['bucket']}', rate={v['rate']}):\n"
               f"        return client.post('/v2/{v['endpoint']}', json=payload)\n```")
    ask_two(fx, r, [f"how many retries do we allow when {v['vendor']} returns 429?",
            f"what rate limit did we agree for {v['vendor']}?",
            f"{v['bucket']} bucket"], [b], "decision")
    fx.ask(f"{v['vendor']} 429 throttling during the backfill", [a, b], "log")


def cve_pin(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    audit = (f"```\n$ pip-audit -r requirements.txt\nFound 2 known vulnerabilities in 2 packages\n"
             f"Name        Version ID                  Fix Versions\n"
             f"---------- ------- ------------------- ------------\n"
             f"{v['lib']:<10} {v['bad']:<7} {v['cve']:<19} {v['good']}\n"
             f"{v['lib2']:<10} {v['bad2']:<7} GHSA-{r.randint(1000, 9999)}-x{r.randint(10, 99)}q {v['good2']}\n```")
    a = fx.add(f"{p}.cve_audit", f"The weekly audit on {v['svc']} flagged these. {r.choice(PROSE)}\n\n{audit}")
    b = fx.add(f"{p}.cve_fix",
               f"{v['cve']} in {v['lib']} {v['bad']} is the serious one ({v['why']}); we pinned "
               f"{v['lib']}=={v['good']} "
               f"in requirements.txt and constraints.txt, and {v['lib2']} to {v['good2']}. Renovate is told not to "
               f"downgrade below those. The lockfile diff is two lines; all tests pass.")
    ask_two(fx, r, [f"which version of {v['lib']} did we pin for {v['cve']}?", f"{v['cve']}",
            f"what did the pip-audit on {v['svc']} find?"], [a, b], "rare_identifier")


def flag_rollout(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    fx.add(f"{p}.flag_start",
           f"Rolling out `{v['flag']}` in {v['svc']}: it is at {v['pct1']}% of traffic since Monday, behind the "
           f"Unleash strategy `gradualRolloutUserId`. Error rate is flat, conversion "
           f"+{r.randint(1, 4)}.{r.randint(0, 9)}% "
           f"in the treatment group. {r.choice(PROSE)}")
    c = fx.add(f"{p}.flag_update",
               f"Status of {v['flag']}: after a week at {v['pct1']}% we moved it to {v['pct2']}% this morning; the "
               f"only regression was a {v['bug']} which {v['person']} fixed in the same deploy. Full rollout planned "
               f"for next Tuesday if the dashboards stay green.")
    ask_two(fx, r, [f"what percentage is {v['flag']} rolled out to?", f"{v['flag']} rollout status",
            f"how far is the {v['svc']} rollout of {v['flag']}?"], [c], "update")


def frontend_bug(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    stack = (f"```\nUncaught TypeError: Cannot read properties of undefined (reading '{v['prop']}')\n"
             f"    at {v['fn']} (webpack-internal:///./src/{v['dir']}/{v['file']}.ts:"
             f"{r.randint(10, 90)}:{r.randint(5, 40)})\n"
             f"    at {v['component']}.render (webpack-internal:///./src/components/{v['component']}.tsx:"
             f"{r.randint(20, 200)}:22)\n"
             f"    at renderWithHooks (webpack-internal:///./node_modules/react-dom/cjs/react-dom.development.js:16305:18)\n"
             f"    at mountIndeterminateComponent (react-dom.development.js:20074:13)\n"
             f"    at beginWork (react-dom.development.js:21587:16)\n```")
    a = fx.add(f"{p}.fe_report",
               f"On the {v['screen']} screen the app crashes white when the user has no {v['prop']} yet. "
               f"{r.choice(PROSE)}\n\n{stack}")
    b = fx.add(f"{p}.fe_fix",
               f"`{v['fn']}` in `src/{v['dir']}/{v['file']}.ts` assumes `user.profile.{v['prop']}` exists. New "
               f"accounts have no profile until onboarding finishes. Guard it and let `{v['component']}` render a "
               f"placeholder:\n\n```ts\nexport function {v['fn']}(user: User): string {{\n"
               f"  const value = user.profile?.{v['prop']};\n  if (value === undefined) return '';\n"
               f"  return value.trim();\n}}\n```")
    ask_two(fx, r, [f"which function crashes the {v['screen']} screen?", f"{v['fn']} undefined {v['prop']}",
            f"how did we fix the white screen on {v['screen']}?"], [a, b], "rare_identifier")


def migration(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    a = fx.add(f"{p}.mig",
               f"Alembic migration for the {v['svc']} {v['table']} table:\n\n```python\n"
               f"\"\"\"add {v['col']}\n\nRevision ID: {v['rev']}\nRevises: {v['prev']}\n\"\"\"\n"
               f"revision = \"{v['rev']}\"\ndown_revision = \"{v['prev']}\"\n\n\ndef upgrade() -> None:\n"
               f"    op.add_column(\"{v['table']}\", sa.Column(\"{v['col']}\", sa.Text(), nullable=True))\n"
               f"    op.execute(\"UPDATE {v['table']} SET {v['col']} = 'unknown' WHERE {v['col']} IS NULL\")\n\n\n"
               f"def downgrade() -> None:\n    op.drop_column(\"{v['table']}\", \"{v['col']}\")\n```\n\n"
               f"{r.choice(PROSE)} The backfill UPDATE took {r.randint(3, 40)} minutes on staging.")
    b = fx.add(f"{p}.mig_note",
               f"Heads-up: migration {v['rev']} locked `{v['table']}` for the whole backfill on production. Next time "
               f"the backfill runs in batches of 10k ids from a separate script after the column exists, and the "
               f"migration only adds the nullable column.")
    ask_two(fx, r, [f"which migration added {v['col']} to {v['table']}?", f"revision {v['rev']}",
            f"why did the {v['col']} migration lock the table?"], [a, b], "rare_identifier")


def ports(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    a = fx.add(f"{p}.compose",
               f"Local setup for {v['svc']}, in case someone else needs it:\n\n```yaml\nservices:\n  {v['svc']}:\n"
               f"    build: .\n    ports: [\"{v['app_port']}:8000\"]\n    environment:\n"
               f"      {v['env']}: \"{v['env_val']}\"\n      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel:4317\n"
               f"  {v['sidecar']}:\n    image: {v['sidecar_img']}\n"
               f"    ports: [\"{v['metrics_port']}:{v['metrics_port']}\"]\n"
               f"  redis:\n    image: redis:7\n    ports: [\"6379:6379\"]\n```\n\n"
               f"`{v['env']}` must be set or the app refuses to start with `ImproperlyConfigured`.")
    ask_two(fx, r, [f"which port does the {v['sidecar']} of {v['svc']} expose?",
            f"what must {v['env']} be set to locally?",
            f"{v['svc']} docker compose"], [a], "config")


SCENARIOS: list[Scenario] = [lock_timeout, pool_update, queue_decision, ci_failure, slow_query, oom_update,
                             rate_limit, cve_pin, flag_rollout, frontend_bug, migration, ports]

# Per scenario, one values dict per instance. Distinct projects, distinct identifiers.
SVCS = ["ledger", "thumbnailer", "geo-indexer", "invoice-mailer", "fleet-tracker", "quote-engine", "payout-api",
        "catalog-sync"]
VALUES: dict[str, list[dict[str, str]]] = {
    "lock_timeout": [
        dict(svc="ledger", svc_cls="LedgerService", route="transfers", module="reservations", fn="reserve_funds",
             timeout="750", exc="SlotLockTimeout", code="E-LK-4471", table="account_slots", job="reconcile_nightly"),
        dict(svc="fleet-tracker", svc_cls="FleetService", route="pings", module="assignments", fn="claim_vehicle",
             timeout="300", exc="VehicleClaimTimeout", code="FT-CLM-0932", table="vehicle_claims",
             job="rebalance_depots"),
        dict(svc="quote-engine", svc_cls="QuoteService", route="quotes", module="pricing", fn="lock_price_window",
             timeout="1200", exc="PriceWindowLocked", code="QE-PW-118", table="price_windows", job="repricing_sweep"),
        dict(svc="payout-api", svc_cls="PayoutService", route="payouts", module="batches", fn="allocate_batch",
             timeout="500", exc="BatchAllocationTimeout", code="PO-BA-7720", table="payout_batches", job="settle_all"),
    ],
    "pool_update": [dict(svc="ledger", pool_old="20", pool_new="45", rps="900"),
                    dict(svc="catalog-sync", pool_old="10", pool_new="32", rps="350"),
                    dict(svc="geo-indexer", pool_old="15", pool_new="40", rps="1200"),
                    dict(svc="invoice-mailer", pool_old="8", pool_new="24", rps="150")],
    "queue_decision": [
        dict(svc="thumbnailer", pick="Dramatiq", other="RQ", pick_mod="dramatiq", pick_cls="RedisBroker",
             queue="thumbs-hi", task="render_thumbnail",
             reason="retries with backoff out of the box, middleware for time limits, and workers that recover "
                    "from a lost Redis connection"),
        dict(svc="invoice-mailer", pick="arq", other="Huey", pick_mod="arq", pick_cls="ArqBroker",
             queue="mail-outbox", task="send_invoice_pdf",
             reason="it is asyncio-native like the rest of the service, so the SMTP client and the DB pool are "
                    "shared instead of duplicated"),
        dict(svc="geo-indexer", pick="Huey", other="Dramatiq", pick_mod="huey", pick_cls="RedisHuey",
             queue="tiles-rebuild", task="rebuild_tile",
             reason="periodic tasks without a second scheduler process and a tiny footprint on the edge boxes"),
    ],
    "ci_failure": [
        dict(runner="arm64", area="billing", mod="refunds", test="test_refund_partial_currency_rounding",
             fn="split_refund", arg="Decimal('10.005'), 3", expected="[3.34, 3.34, 3.33]", got="[3.33, 3.34, 3.34]"),
        dict(runner="macos-14", area="geo", mod="distance", test="test_haversine_antimeridian",
             fn="haversine_km", arg="(-179.9, 0), (179.9, 0)", expected="22.24", got="22.23"),
        dict(runner="windows-2022", area="exports", mod="csv", test="test_export_line_endings_crlf",
             fn="write_rows", arg="rows, dialect='excel'", expected="b'a,b\\r\\n'", got="b'a,b\\r\\r\\n'"),
        dict(runner="alpine-musl", area="auth", mod="tokens", test="test_totp_window_drift",
             fn="verify_totp", arg="secret, code, drift=1", expected="True", got="False"),
    ],
    "slow_query": [
        dict(svc="fleet-tracker", page="shipments", table="shipments", col1="carrier_id", col2="eta",
             index="idx_shipments_carrier_eta"),
        dict(svc="payout-api", page="payout history", table="payout_events", col1="merchant_id", col2="created_at",
             index="ix_payout_events_merchant_created"),
        dict(svc="catalog-sync", page="price changes", table="sku_price_log", col1="sku_id", col2="changed_at",
             index="sku_price_log_sku_changed_desc"),
    ],
    "oom_update": [
        dict(ns="data", job="nightly-export", tag="2025.03.2", mem_old="512Mi", mem_mid="1Gi", mem_new="1536Mi",
             big_tenant="acme-retail"),
        dict(ns="reports", job="ledger-statements", tag="v4.8.1", mem_old="768Mi", mem_mid="1536Mi", mem_new="2Gi",
             big_tenant="northwind"),
        dict(ns="geo", job="tile-prerender", tag="r1290", mem_old="2Gi", mem_mid="3Gi", mem_new="3584Mi",
             big_tenant="city-of-lyon"),
    ],
    "rate_limit": [
        dict(svc="catalog-sync", vendor="Shopify", host="shop.example-vendor.com", endpoint="bulk-products",
             bucket="shopify-bulk", rate="4", retries="6"),
        dict(svc="invoice-mailer", vendor="SendGrid", host="mail.example-vendor.com", endpoint="mail-send",
             bucket="sendgrid-mail", rate="12", retries="4"),
        dict(svc="geo-indexer", vendor="Mapbox", host="geo.example-vendor.com", endpoint="geocode-batch",
             bucket="mapbox-geocode", rate="10", retries="8"),
    ],
    "cve_pin": [
        dict(svc="payout-api", lib="jinja2", bad="3.1.2", good="3.1.4", cve="CVE-2024-34064",
             why="attribute injection through the xmlattr filter", lib2="idna", bad2="3.4", good2="3.7"),
        dict(svc="thumbnailer", lib="pillow", bad="10.0.0", good="10.3.0", cve="CVE-2024-28219",
             why="a buffer overflow in _imagingcms", lib2="certifi", bad2="2023.5.7", good2="2024.7.4"),
        dict(svc="quote-engine", lib="cryptography", bad="41.0.1", good="42.0.4", cve="CVE-2024-26130",
             why="a NULL dereference on PKCS12 with mismatched keys", lib2="urllib3", bad2="1.26.15", good2="1.26.19"),
    ],
    "flag_rollout": [
        dict(svc="checkout", flag="checkout_v3_address_autocomplete", pct1="10", pct2="50",
             bug="postcode field losing focus on Safari", person="Priya"),
        dict(svc="payout-api", flag="instant_payouts_eu", pct1="5", pct2="25",
             bug="double webhook on SEPA returns", person="Tomasz"),
        dict(svc="fleet-tracker", flag="driver_app_offline_sync", pct1="20", pct2="75",
             bug="stale route cache after reconnect", person="Aisha"),
    ],
    "frontend_bug": [
        dict(screen="settings", prop="phoneNumber", fn="normalizePhoneE164", dir="utils/format", file="phone",
             component="ProfileCard"),
        dict(screen="checkout", prop="postalCode", fn="formatPostalByCountry", dir="checkout/address",
             file="postal", component="AddressSummary"),
        dict(screen="invoices", prop="vatId", fn="maskVatIdentifier", dir="billing/tax", file="vat",
             component="InvoiceHeader"),
    ],
    "migration": [
        dict(svc="payout-api", table="refunds", col="refund_reason", rev="a91f3c2d7e10", prev="5b2e0d44c1aa"),
        dict(svc="fleet-tracker", table="drivers", col="licence_class", rev="0c7d1e9f22b3", prev="a91f3c2d7e10"),
        dict(svc="catalog-sync", table="skus", col="hazmat_code", rev="e4b88a1f6d07", prev="9d0c2b7a3e51"),
    ],
    "ports": [
        dict(svc="ledger", app_port="8081", env="LEDGER_SIGNING_KEY_PATH", env_val="/run/secrets/ledger.pem",
             sidecar="statsd-exporter", sidecar_img="prom/statsd-exporter:v0.26.0", metrics_port="9102"),
        dict(svc="thumbnailer", app_port="8093", env="THUMB_MAX_PIXELS", env_val="40000000",
             sidecar="otel-collector", sidecar_img="otel/opentelemetry-collector:0.96.0", metrics_port="8889"),
        dict(svc="quote-engine", app_port="8070", env="QUOTE_FX_PROVIDER", env_val="ecb-daily",
             sidecar="pyroscope-agent", sidecar_img="grafana/pyroscope:1.5.0", metrics_port="4040"),
    ],
}


def build(scenarios: list[Scenario], values: dict[str, list[dict[str, str]]], seed: int, filler: int,
          filler_seed: int) -> Fixture:
    """Instantiate every scenario for each of its values (threads interleaved as chats are), then mix in
    `filler` unlabelled messages of bench/coding_chat.py."""
    r = random.Random(seed)
    fx = Fixture()
    for scenario in scenarios:
        for i, v in enumerate(values[scenario.__name__]):
            scenario(fx, r, v, f"{scenario.__name__}{i}")
    labelled = fx.messages
    mixed: list[Message] = []
    extra = [Message(f"filler{i}", t) for i, t in enumerate(filler_messages(filler, seed=filler_seed))]
    # Interleave deterministically: threads keep their own order, filler in between.
    order = labelled + extra
    positions = sorted(range(len(order)), key=lambda i: (r.random(), i))
    slots = iter(sorted(positions[: len(labelled)]))
    by_slot = {next(slots): m for m in labelled}
    rest = iter(extra)
    for i in range(len(order)):
        mixed.append(by_slot[i] if i in by_slot else next(rest))
    fx.messages = mixed
    return fx


def dev() -> Fixture:
    return build(SCENARIOS, VALUES, seed=151, filler=90, filler_seed=23)
