"""Chat import rate: a generated ChatGPT export (conversations.json) imported through `engramlog import chat`, the
path users take: the CLI parses the file, checks it whole with the server (dry run), then imports it in batches,
through the SDK over the real app (in process: a TestClient, so each request is parsed, validated and answered as
over a socket) on an embedded PostgreSQL; no worker runs (the projectors' cost is not the import's).

Steps, each timed as a whole command:
1. the export (`--messages`, default 10,000, in conversations of `--per-conversation` messages) imported;
2. the same file imported again (nothing appended: the events counted before and after);
3. with `--remember-messages` N > 0 (default 2,000): another export of N messages imported with --remember,
   every user message through the governor (embedding, neighbours, salience gate) as well.
Messages are seeded: user turns are statements ("my <thing> is <value> ..."), assistant turns 20-80 words.

    python -m bench.import_chat [--messages 10000] [--per-conversation 40] [--remember-messages 2000]
                                [--output bench/results/import_chat.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, cli_through, loopback_client, machine, machine_line, save_result, start_stack

WORDS = ("kayak", "lake", "route", "paddle", "harbour", "sourdough", "rye", "starter", "oven", "greenhouse",
         "tomato", "drip", "valve", "bike", "saddle", "chain", "gear", "standup", "calendar", "deploy", "canary",
         "replica", "schema", "budget", "invoice", "flight", "hotel", "visa", "dentist", "piano", "lesson")
THINGS = ("favourite lake", "bike's saddle height", "sourdough starter", "standup time", "dentist", "piano teacher",
          "flight to Lisbon", "greenhouse valve", "deploy window", "budget for March")


def export(messages: int, per_conversation: int, seed: int) -> list[dict[str, Any]]:
    """A ChatGPT conversations.json of `messages` messages (a linear mapping per conversation, a root node each)."""
    rng = random.Random(seed)
    out = []
    for c in range((messages + per_conversation - 1) // per_conversation):
        n = min(per_conversation, messages - c * per_conversation)
        start = 1_700_000_000 + c * 86_400
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": ["n0"]}}
        for i in range(n):
            user = i % 2 == 0
            text = (f"My {rng.choice(THINGS)} is {rng.choice(WORDS)} {rng.randint(1, 99)}; "
                    + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25))) if user
                    else " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80))))
            mapping[f"n{i}"] = {"id": f"n{i}", "parent": "root" if i == 0 else f"n{i - 1}",
                                "children": [f"n{i + 1}"] if i + 1 < n else [],
                                "message": {"id": f"n{i}", "author": {"role": "user" if user else "assistant"},
                                            "create_time": start + i * 30.0,
                                            "content": {"content_type": "text", "parts": [text]}, "metadata": {}}}
        cid = f"{seed:04d}-{c:06d}"
        out.append({"id": cid, "conversation_id": cid, "title": f"conversation {c}", "create_time": start,
                    "current_node": f"n{n - 1}", "mapping": mapping})
    return out


def run(messages: int, per_conversation: int, remember_messages: int) -> dict[str, Any]:
    with start_stack() as where:
        from sqlalchemy import text
        from typer.testing import CliRunner

        import cli.main
        from infra.db import get_engine

        engine = get_engine()

        def events() -> dict[str, int]:
            with engine.connect() as conn:
                return dict(conn.execute(text("SELECT type, count(*) FROM events GROUP BY type")).all())

        def command(path: Path, *flags: str) -> tuple[float, str]:
            started = time.perf_counter()
            r = CliRunner().invoke(cli.main.app, ["import", "chat", str(path), *flags])
            seconds = time.perf_counter() - started
            if r.exit_code != 0:
                raise SystemExit(r.output)
            return seconds, " ".join(r.output.split()[-40:])

        result: dict[str, Any] = {"benchmark": "import_chat", "machine": machine(), "where": where,
                                  "export": {"format": "chatgpt", "messages": messages,
                                             "per_conversation": per_conversation}}
        with loopback_client() as http, tempfile.TemporaryDirectory() as tmp:
            cli_through(http)
            path = Path(tmp) / "conversations.json"
            path.write_text(json.dumps(export(messages, per_conversation, seed=1)))
            result["export"]["bytes"] = path.stat().st_size
            seconds, said = command(path)
            after = events()
            result["first"] = {"seconds": round(seconds, 2), "messages_per_s": round(messages / seconds, 1),
                               "events": after, "summary": said}
            print(f"first import: {messages} messages in {seconds:.1f} s = {messages / seconds:.0f} messages/s "
                  f"({sum(after.values())} events)")
            seconds, said = command(path)
            again = events()
            result["again"] = {"seconds": round(seconds, 2), "messages_per_s": round(messages / seconds, 1),
                               "events_appended": sum(again.values()) - sum(after.values()), "summary": said}
            print(f"re-import: {seconds:.1f} s = {messages / seconds:.0f} messages/s, "
                  f"{result['again']['events_appended']} events appended")
            if remember_messages:
                path = Path(tmp) / "remember.json"
                path.write_text(json.dumps(export(remember_messages, per_conversation, seed=2)))
                seconds, said = command(path, "--remember")
                final = events()
                recorded = final.get("MemoryRecorded", 0)
                result["remember"] = {"messages": remember_messages, "seconds": round(seconds, 2),
                                      "messages_per_s": round(remember_messages / seconds, 1),
                                      "memories_recorded": recorded,
                                      "decisions": {k: v - after.get(k, 0) for k, v in final.items()
                                                    if k.startswith("Memory")},
                                      "summary": said}
                print(f"with --remember: {remember_messages} messages ({recorded} user messages through the governor) "
                      f"in {seconds:.1f} s = {remember_messages / seconds:.0f} messages/s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--per-conversation", type=int, default=40)
    parser.add_argument("--remember-messages", type=int, default=2_000)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "import_chat.json")
    args = parser.parse_args()
    print(machine_line())
    result = run(args.messages, args.per_conversation, args.remember_messages)
    print(f"saved {save_result('import_chat', result, args.output)}")


if __name__ == "__main__":
    main()
