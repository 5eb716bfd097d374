"""The `engramlog` command line: run the stack, write and recall, query the log, operate projections. This module
only assembles the Typer app; each command lives in the module named beside its registration, and what they share
(settings, the API's client, the database engine, errors, consoles) in cli/calls.py and cli/output.py."""

from __future__ import annotations

import os

import typer

from cli import (
    analyst,
    analyze,
    code,
    dead_letters,
    evaluate,
    events,
    import_log,
    imports,
    knowledge,
    lifecycle,
    mcp,
    memories,
    projections,
    sessions,
    stack,
    transcripts,
)

app = typer.Typer(help="Engramlog: event-sourced long-term memory for LLM agents.", no_args_is_help=True)


@app.callback()
def main(data_dir: stack.DataDir = None) -> None:
    if data_dir is not None:
        os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    from infra.logging import configure_logging

    configure_logging(os.environ.get("ENGRAMLOG_LOG_LEVEL", "warning"))


# The order here is the order `engramlog --help` lists them in (commands first, then groups).
stack.register(app)  # up, migrate
memories.register(app)  # remember, recall, history, supersede
mcp.register(app)  # mcp (the MCP server over stdio)
events.register(app)  # events query | tail | export
projections_app = projections.register(app)  # projections status | rebuild | verify
evaluate.register(app)  # eval locomo
lifecycle.register(app)  # lifecycle decay | consolidate
dead_letters.register(app, projections_app)  # projections dead-letters …, ingest dead-letters …
knowledge.register(app)  # knowledge put …, knowledge sync …
sessions.register(app)  # sessions list | show | append | resume
code.register(app)  # code index …
transcripts.register(app)  # transcripts put …, transcripts sync …
analyze.register(app)  # analyze keyword-gaps
imports.register(app)  # import chat FILE (chat exports; the `import` group, shared with import log)
import_log.register(app)  # import log FILE (an export of the event log: services/import_log.py)
analyst.register(app)  # analyst create | list | drop (read-only roles on the analytics views)

if __name__ == "__main__":
    app()
