"""The held-out part of the coding-chat fixture (bench/coding_fixture.py): scenarios of other shapes (Go panics,
Rust compiler errors, Terraform plans, npm resolution, nginx logs, cache and schedule decisions with later
updates), written after the governor's correction rule was frozen (issue 15 item 3) and never used to change it.
Reported apart by bench/coding_chat_eval.py (--part heldout).
"""

from __future__ import annotations

import random

from bench.coding_fixture import PROSE, Fixture, Scenario, ask_two, build, noise


def go_panic(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    goroutines = "\n\n".join(
        f"goroutine {r.randint(20, 900)} [{r.choice(['select', 'IO wait', 'chan receive', 'sleep'])}]:\n"
        f"net/http.(*conn).serve(0xc000{r.randint(100000, 999999)})\n\t/usr/local/go/src/net/http/server.go:"
        f"{r.randint(1900, 2100)} +0x{r.randint(100, 999)}" for _ in range(r.randint(2, 4)))
    dump = (f"```\npanic: assignment to entry in nil map\n\ngoroutine {r.randint(1, 19)} [running]:\n"
            f"{v['pkg']}.(*{v['type']}).{v['method']}(0xc0001{r.randint(10000, 99999)}, "
            f"{{0xc00{r.randint(100, 999)}, 0x1c}})"
            f"\n\t/app/internal/{v['dir']}/{v['file']}.go:{r.randint(40, 400)} +0x1f4\n"
            f"{v['pkg']}.(*{v['type']}).Handle(...)\n\t/app/internal/{v['dir']}/{v['file']}.go:{r.randint(20, 39)}\n"
            f"main.main.func2()\n\t/app/cmd/{v['bin']}/main.go:{r.randint(50, 140)} +0x88\n\n{goroutines}\n```")
    a = fx.add(f"{p}.report", f"{v['bin']} crashed in production twice tonight. {r.choice(PROSE)}\n\n{dump}")
    b = fx.add(f"{p}.answer",
               f"`{v['type']}.{v['method']}` writes into `{v['field']}` but the map is only created in "
               f"`New{v['type']}`; the zero value built in the test helper and in the hot-reload path skips it. "
               f"Initialise it lazily under the mutex:\n\n```go\nfunc (s *{v['type']}) {v['method']}(k string) {{\n"
               f"\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\tif s.{v['field']} == nil {{\n"
               f"\t\ts.{v['field']} = make(map[string]int)\n\t}}\n\ts.{v['field']}[k]++\n}}\n```")
    ask_two(fx, r, [f"which method panicked with nil map in {v['bin']}?", f"{v['method']} panic",
                    f"why did {v['bin']} crash tonight?"], [a, b], "rare_identifier")


def rust_borrow(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    err = (f"```\nerror[{v['code']}]: cannot borrow `{v['var']}` as mutable because it is also borrowed as "
           f"immutable\n  --> src/{v['file']}.rs:{r.randint(30, 300)}:{r.randint(5, 30)}\n   |\n"
           f"{r.randint(20, 29)} |     let first = &{v['var']}[0];\n"
           f"   |                  - immutable borrow occurs here\n"
           f"{r.randint(30, 39)} |     {v['var']}.push({v['item']});\n"
           f"   |     ^^^^^^^^^^^^ mutable borrow occurs here\n"
           f"{r.randint(40, 49)} |     {v['fn']}(first);\n   |            ----- immutable borrow later used here\n\n"
           f"For more information about this error, try `rustc --explain {v['code']}`.\n"
           f"error: could not compile `{v['crate']}` (lib) due to 1 previous error\n```")
    a = fx.add(f"{p}.report", f"Stuck on this in `{v['crate']}`. {r.choice(PROSE)}\n\n{err}")
    b = fx.add(f"{p}.answer",
               f"`first` borrows `{v['var']}` and is still alive when you push, which may reallocate the vector. "
               f"Clone what you need before the push (`let first = {v['var']}[0].clone();`) or push after the call "
               f"to `{v['fn']}`. In `{v['crate']}` the second is cheaper since the items are large.")
    ask_two(fx, r, [f"how do I fix {v['code']} in {v['crate']}?", f"cannot borrow {v['var']} as mutable",
                    f"what did you suggest for the {v['fn']} borrow error?"], [b], "explanation")
    fx.ask(f"{v['crate']} compile error in src/{v['file']}.rs", [a, b], "log")


def terraform_destroy(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    plan = ("```\n$ terraform plan -out tf.plan\n" + "\n".join(
        f"  # {x} will be updated in-place" for x in r.sample(
            ["aws_iam_role.ci", "aws_sqs_queue.events", "aws_lambda_function.thumbs", "aws_route53_record.api"], 2))
            + f"\n  # {v['resource']} must be replaced\n-/+ resource \"{v['rtype']}\" \"{v['rname']}\" {{\n"
            f"      ~ {v['attr']} = \"{v['old']}\" -> \"{v['new']}\" # forces replacement\n    }}\n\n"
            f"Plan: 1 to add, 2 to change, 1 to destroy.\n```")
    a = fx.add(f"{p}.plan", f"Is this plan safe to apply on {v['env']}? {r.choice(PROSE)}\n\n{plan}")
    b = fx.add(f"{p}.decision",
               f"Not safe: changing `{v['attr']}` forces replacement of `{v['resource']}`, i.e. destroy then create, "
               f"and {v['what']} would be lost. We decided to keep `{v['attr']} = \"{v['old']}\"`, add "
               f"`lifecycle {{ prevent_destroy = true }}` to `{v['resource']}`, and do the change later with "
               f"`terraform state mv` plus a manual copy.")
    ask_two(fx, r, [f"why didn't we apply the terraform plan for {v['rname']}?",
                    f"which resource would terraform destroy on {v['env']}?",
                    f"prevent_destroy {v['rname']}"], [b], "decision")
    del a


def npm_conflict(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    log = (f"```\n$ npm install\nnpm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
           f"npm ERR!\nnpm ERR! While resolving: {v['app']}@{v['app_ver']}\nnpm ERR! Found: {v['peer']}@{v['have']}\n"
           f"npm ERR! node_modules/{v['peer']}\nnpm ERR!   {v['peer']}@\"^{v['have']}\" from the root project\n"
           f"npm ERR!\nnpm ERR! Could not resolve dependency:\nnpm ERR! peer {v['peer']}@\"^{v['want']}\" from "
           f"{v['lib']}@{v['lib_ver']}\nnpm ERR! node_modules/{v['lib']}\n```")
    a = fx.add(f"{p}.log", f"Fresh clone of {v['app']} and npm install fails. {r.choice(PROSE)}\n\n{log}")
    b = fx.add(f"{p}.fix",
               f"{v['lib']} {v['lib_ver']} wants {v['peer']} {v['want']} while {v['app']} is on {v['have']}. Do not "
               f"use --legacy-peer-deps: it hides the mismatch until runtime. We pinned {v['lib']} to "
               f"{v['lib_pin']} (the last release supporting {v['peer']} {v['have']}) with an `overrides` entry "
               f"and opened a ticket to upgrade {v['peer']} next sprint.")
    ask_two(fx, r, [f"which version of {v['lib']} did we pin in {v['app']}?", f"ERESOLVE {v['lib']}",
                    f"why does npm install fail on {v['app']}?"], [a, b], "rare_identifier")


def cache_ttl(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    fx.add(f"{p}.first",
           f"For {v['what']} in {v['svc']} we cache in Redis under `{v['key']}` with a TTL of {v['ttl1']} seconds; "
           f"invalidation happens on write through the `{v['event']}` event. {r.choice(PROSE)}\n\n```python\n"
           f"await redis.set(f\"{v['key']}\", payload, ex={v['ttl1']})\n```")
    c = fx.add(f"{p}.update",
               f"Changed the {v['what']} cache of {v['svc']}: hit rate was only {r.randint(30, 60)}% at "
               f"{v['ttl1']} s, and the `{v['event']}` invalidation covers every write anyway, so the TTL is now "
               f"{v['ttl2']} seconds. Memory on the Redis node went from {r.randint(200, 400)} to "
               f"{r.randint(500, 900)} MB, well within budget.")
    ask_two(fx, r, [f"what TTL does the {v['what']} cache in {v['svc']} use?", f"{v['key']} ttl",
                    f"how long do we keep {v['what']} in redis for {v['svc']}?"], [c], "update")


def nginx_502(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    lines = [f"2025/04/0{r.randint(1, 9)} 1{r.randint(0, 9)}:{r.randint(10, 59)}:{r.randint(10, 59)} [error] "
             f"{r.randint(20, 40)}#0: *{r.randint(1000, 99999)} upstream timed out (110: Connection timed out) "
             f"while reading response header from upstream, client: 10.2.{r.randint(0, 9)}.{r.randint(2, 250)}, "
             f"server: {v['host']}, request: \"POST {v['path']} HTTP/1.1\", upstream: "
             f"\"http://{v['upstream']}{v['path']}\"" for _ in range(r.randint(3, 5))]
    a = fx.add(f"{p}.log", f"Users get 502 on {v['path']} during the month-end run. {r.choice(PROSE)}\n\n```\n"
               + "\n".join(noise(r, 2) + lines) + "\n```")
    b = fx.add(f"{p}.fix",
               f"The upstream `{v['upstream']}` takes longer than nginx's default 60 s `proxy_read_timeout` for "
               f"{v['path']} at month end. We set `proxy_read_timeout {v['timeout']}s;` on that location only, and "
               f"the report is being moved to a background job so the request returns 202 right away.")
    ask_two(fx, r, [f"why do we get 502 on {v['path']}?", f"what proxy_read_timeout did we set for {v['path']}?",
                    f"{v['upstream']} upstream timed out"], [a, b], "log")


def backup_schedule(fx: Fixture, r: random.Random, v: dict[str, str], p: str) -> None:
    fx.add(f"{p}.first",
           f"The {v['db']} backups run from the `{v['job']}` CronJob at `{v['cron1']}` (UTC) with pgBackRest, "
           f"full on Sundays and incremental otherwise, retention {r.randint(7, 30)} days. {r.choice(PROSE)}")
    c = fx.add(f"{p}.update",
               f"Moved the {v['db']} backup: `{v['job']}` collided with the {v['other']} batch, so its schedule is "
               f"now `{v['cron2']}` (UTC). The first run at the new time finished in {r.randint(12, 50)} minutes.")
    ask_two(fx, r, [f"when does the {v['db']} backup run?", f"{v['job']} schedule",
                    f"what cron schedule does {v['job']} use now?"], [c], "update")


SCENARIOS: list[Scenario] = [go_panic, rust_borrow, terraform_destroy, npm_conflict, cache_ttl, nginx_502,
                             backup_schedule]
VALUES: dict[str, list[dict[str, str]]] = {
    "go_panic": [
        dict(pkg="shardrouter", type="ShardRouter", method="rebalanceLocked", field="pending", dir="routing",
             file="router", bin="edge-proxy"),
        dict(pkg="quota", type="QuotaTracker", method="bumpWindow", field="windows", dir="limits", file="quota",
             bin="api-gateway"),
        dict(pkg="ingest", type="SpanBuffer", method="recordDropped", field="drops", dir="otel", file="buffer",
             bin="trace-ingester"),
    ],
    "rust_borrow": [
        dict(code="E0502", var="segments", item="seg", fn="merge_segments", file="compact", crate="logstore"),
        dict(code="E0502", var="frames", item="frame.clone()", fn="encode_batch", file="codec", crate="videopipe"),
        dict(code="E0502", var="edges", item="edge", fn="relax_edge", file="graph/dijkstra", crate="routeplanner"),
    ],
    "terraform_destroy": [
        dict(env="prod-eu", resource="aws_s3_bucket.audit_logs_eu", rtype="aws_s3_bucket", rname="audit_logs_eu",
             attr="bucket", old="acme-audit-logs-eu", new="acme-audit-eu-v2", what="seven years of audit logs"),
        dict(env="staging", resource="aws_db_instance.billing_replica", rtype="aws_db_instance",
             rname="billing_replica", attr="identifier", old="billing-replica-1", new="billing-ro",
             what="the replica and its snapshots"),
        dict(env="prod-us", resource="google_sql_database_instance.orders_main", rtype="google_sql_database_instance",
             rname="orders_main", attr="name", old="orders-main", new="orders-primary", what="the orders database"),
    ],
    "npm_conflict": [
        dict(app="merchant-portal", app_ver="3.4.0", peer="react", have="17.0.2", want="18.2.0", lib="@acme/ui-kit",
             lib_ver="4.2.0", lib_pin="3.9.5"),
        dict(app="ops-dashboard", app_ver="1.12.3", peer="vue", have="2.7.14", want="3.3.0", lib="vue-chart-kit",
             lib_ver="2.0.1", lib_pin="1.8.7"),
        dict(app="docs-site", app_ver="0.9.0", peer="webpack", have="4.47.0", want="5.88.0", lib="mdx-loader-pro",
             lib_ver="6.1.0", lib_pin="5.4.2"),
    ],
    "cache_ttl": [
        dict(svc="catalog-api", what="product detail pages", key="pdp:{sku}", ttl1="300", ttl2="3600",
             event="ProductChanged"),
        dict(svc="auth-service", what="permission sets", key="perms:{user_id}", ttl1="60", ttl2="900",
             event="RoleGranted"),
        dict(svc="pricing", what="exchange rates", key="fx:{pair}", ttl1="30", ttl2="120", event="RatesPublished"),
    ],
    "nginx_502": [
        dict(host="reports.acme.internal", path="/api/reports/month-end", upstream="reports_backend",
             timeout="300"),
        dict(host="billing.acme.internal", path="/api/invoices/bulk-pdf", upstream="invoice_renderer",
             timeout="180"),
        dict(host="search.acme.internal", path="/api/reindex/trigger", upstream="search_admin", timeout="240"),
    ],
    "backup_schedule": [
        dict(db="orders", job="pg-backup-orders", cron1="30 2 * * *", cron2="15 4 * * *", other="ETL"),
        dict(db="billing", job="pg-backup-billing", cron1="0 1 * * *", cron2="45 5 * * *", other="invoice run"),
        dict(db="telemetry", job="pg-backup-telemetry", cron1="0 3 * * *", cron2="30 0 * * *", other="rollup"),
    ],
}


def heldout() -> Fixture:
    return build(SCENARIOS, VALUES, seed=907, filler=75, filler_seed=61)
