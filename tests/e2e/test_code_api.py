"""Code intelligence over HTTP (api/routes/code.py) and the CLI (cli/code.py): the symbol route answering the
exact source slice with callers and callees, symbol search, the delta listing, bad input refused with a 4xx and
nothing written (binary, oversized, unsupported, bad repository), unparseable source indexed with its errors
flagged, the privacy gate, tenant isolation, and the code bucket of POST /v1/recall/multi."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from typer.testing import CliRunner

from projections.code import CodeProjector
from projections.runner import catch_up

PARSER = ("import re\n\n\n"
          "def parse_http_url(url):\n"
          "    \"\"\"Split a URL into its scheme and the rest.\"\"\"\n"
          "    return split_scheme(url)\n\n\n"
          "def split_scheme(url):\n"
          "    return re.split(':', url, 1)\n")
CLIENT = ("from .parser import parse_http_url\n\n\n"
          "class Fetcher:\n"
          "    def fetch(self, url):\n"
          "        return parse_http_url(url)\n")


def project(engine) -> None:
    catch_up(engine, CodeProjector(), 500, max_seconds=120)


def events(engine, tenant: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM events WHERE tenant = :t"), {"t": tenant}).scalar()


def index(client, engine, files: dict[str, str], repo: str = "net"):
    r = client.post(f"/v1/code/{repo}/files", json={"files": [{"path": p, "content": c} for p, c in files.items()]})
    assert r.status_code == 200, r.text
    project(engine)
    return r.json()


def test_symbol_route_answers_source_and_callers(client, engine) -> None:
    out = index(client, engine, {"net/parser.py": PARSER, "net/client.py": CLIENT})
    assert [f["action"] for f in out["files"]] == ["put", "put"] and out["written"] == 2
    r = client.get("/v1/code/net/symbols/net.parser.parse_http_url")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["symbol"], body["kind"], body["file"], body["lines"]) == (
        "net.parser.parse_http_url", "function", "net/parser.py", [4, 6])
    assert body["source"] == "".join(PARSER.splitlines(keepends=True)[3:6])  # the exact slice
    assert body["callers"] == [{"symbol": "net.client.Fetcher.fetch", "file": "net/client.py", "line": 6}]
    assert body["callees"][0]["symbol"] == "net.parser.split_scheme" and body["callees"][0]["line"] == 9
    method = client.get("/v1/code/net/symbols/net.client.Fetcher.fetch").json()
    assert method["kind"] == "method" and method["callees"][0]["symbol"] == "net.parser.parse_http_url"
    assert client.get("/v1/code/net/symbols/net.parser.nope").status_code == 404
    assert client.get("/v1/code/other/symbols/net.parser.parse_http_url").status_code == 404
    found = client.get("/v1/code/net/symbols", params={"q": "parseHttpUrl"}).json()["symbols"]
    assert found[0]["symbol"] == "net.parser.parse_http_url" and found[0]["source"] == body["source"]
    listed = client.get("/v1/code/net/files").json()["files"]
    assert [(f["path"], f["language"], f["parse_errors"]) for f in listed] == [
        ("net/client.py", "python", 0), ("net/parser.py", "python", 0)]
    again = client.post("/v1/code/net/files", json={"files": [{"path": "net/parser.py", "content": PARSER}]})
    assert again.json()["files"][0]["action"] == "unchanged" and again.json()["written"] == 0


@pytest.mark.parametrize("files,status,reason", [
    ([{"path": "a.py", "content": "x = 1\n"}, {"path": "logo.py", "content": "\x89PNG\x00\x00"}], 422, "binary"),
    ([{"path": "a.py", "content": "x = 1\n"}, {"path": "big.py", "content": "#" * (1024 * 1024 + 1)}], 413,
     "limit"),
    ([{"path": "a.py", "content": "x = 1\n"}, {"path": "notes.txt", "content": "hello"}], 422, "supported"),
    ([{"path": "../a.py", "content": "x = 1\n"}], 422, "segment"),
    ([{"path": "a.py", "content": "x\n"}, {"path": "a.py", "content": "y\n"}], 422, "twice"),
])
def test_bad_files_are_refused_and_nothing_written(client, engine, tenant, files, status,
                                                   reason) -> None:
    before = events(engine, tenant)
    r = client.post("/v1/code/net/files", json={"files": files})
    assert r.status_code == status, r.text
    assert reason in r.json()["detail"]
    assert events(engine, tenant) == before  # the good file of the batch is not written either


def test_bad_repository_name_and_nul_parameters_are_refused(client) -> None:
    r = client.post("/v1/code/.hidden/files", json={"files": [{"path": "a.py", "content": "x = 1\n"}]})
    assert r.status_code == 422 and "repository" in r.json()["detail"]
    assert client.get("/v1/code/net/symbols/a%00b").status_code == 422
    assert client.get("/v1/code/net/symbols", params={"q": "a\x00b"}).status_code == 422
    assert client.get("/v1/code/net/files", params={"after": "a\x00"}).status_code == 422


def test_unparseable_source_is_indexed_with_its_errors(client, engine) -> None:
    index(client, engine, {"broken.py": "def ok():\n    pass\n\ndef broken(:\n    return (\n"})
    [f] = client.get("/v1/code/net/files").json()["files"]
    assert f["parse_errors"] > 0 and f["first_error_line"] is not None
    assert client.get("/v1/code/net/symbols/broken.ok").status_code == 200


@pytest.fixture
def ops(app, tenant, monkeypatch):
    import api.context
    from infra.settings import get_settings, replace

    key = f"cops-{uuid.uuid4().hex}"
    settings = replace(get_settings(), api_keys={key: tenant, f"other-{key}": f"{tenant}-other"},
                       operator_keys=(key,))
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c, \
            TestClient(app, headers={"Authorization": f"Bearer other-{key}"}) as other:
        c.other = other  # type: ignore[attr-defined]
        yield c


def test_privacy_gate_and_tenant_isolation(ops, engine) -> None:
    index(ops, engine, {"net/parser.py": PARSER, "net/client.py": CLIENT})
    assert ops.other.get("/v1/code/net/symbols/net.parser.parse_http_url").status_code == 404  # other tenant
    assert ops.other.get("/v1/code/net/files").json()["files"] == []
    assert ops.other.get("/v1/code").json()["repos"] == []
    assert ops.put("/v1/policy/privacy", json={"exclude_paths": ["net/net/client.py"]}).status_code == 200
    assert ops.get("/v1/code/net/symbols/net.client.Fetcher.fetch").status_code == 404
    body = ops.get("/v1/code/net/symbols/net.parser.parse_http_url").json()
    assert body["callers"] == []  # its one caller is in the excluded file
    assert [f["path"] for f in ops.get("/v1/code/net/files").json()["files"]] == ["net/parser.py"]
    assert ops.get("/v1/code").json()["repos"] == [{"repo": "net", "files": 1, "symbols": 2}]  # what it may see
    found = ops.get("/v1/code/net/symbols", params={"q": "fetch url"}).json()["symbols"]
    assert all(s["file"] != "net/client.py" for s in found)
    multi = ops.post("/v1/recall/multi", json={"query": "fetch parse url", "domains": ["code"]}).json()
    assert all(r["handle"]["file"] != "net/client.py" for b in multi["buckets"] for r in b["results"])


def test_code_bucket_in_recall_multi(client, engine) -> None:
    index(client, engine, {"net/parser.py": PARSER, "net/client.py": CLIENT})
    r = client.post("/v1/recall/multi", json={"query": "parse an http url", "domains": ["code"]})
    assert r.status_code == 200, r.text
    [bucket] = r.json()["buckets"]
    assert bucket["domain"] == "code"
    top = bucket["results"][0]
    assert top["handle"]["qualified_name"] == "net.parser.parse_http_url"
    assert top["content"] == "".join(PARSER.splitlines(keepends=True)[3:6])
    default = client.post("/v1/recall/multi", json={"query": "parse an http url"}).json()
    assert "code" in [b["domain"] for b in default["buckets"]]  # the default fan-out asks the domains with data


def cli_on(client, monkeypatch):
    from engramlog_client import Engramlog

    import cli.calls
    import cli.main

    def make():
        c = Engramlog("http://testserver")
        c.http = client
        c.close = lambda: None
        return c

    monkeypatch.setattr(cli.calls, "client", make)
    return cli.main.app


@pytest.mark.parametrize("as_git", [True, False])
def test_cli_index_sends_only_changed_files(client, engine, monkeypatch, tmp_path: Path,
                                            as_git: bool) -> None:
    root = tmp_path / "webshop"
    (root / "net").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "net" / "parser.py").write_text(PARSER)
    (root / "net" / "client.py").write_text(CLIENT)
    (root / "build" / "gen.py").write_text("def generated(): pass\n")  # ignored
    (root / ".gitignore").write_text("build/\n")
    (root / "net" / "blob.py").write_bytes(b"\x00\x01binary")
    (root / "net" / "latin.py").write_bytes(b"# caf\xe9\n")
    (root / "README.md").write_text("not source")
    if as_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    app = cli_on(client, monkeypatch)

    def run(*args: str) -> str:
        r = CliRunner().invoke(app, ["code", "index", *args])
        assert r.exit_code == 0, r.output
        return " ".join(r.output.split())  # rich wraps long lines

    out = run(str(root))
    assert "4 source file(s), 2 changed" in out and "2 skipped" in out, out
    assert "blob.py: binary" in out and "latin.py: not UTF-8" in out
    assert "2 file(s) put" in out
    project(engine)
    assert client.get("/v1/code/webshop/symbols/net.parser.parse_http_url").status_code == 200
    assert client.get("/v1/code/webshop/symbols/build.gen.generated").status_code == 404
    out = run(str(root))
    assert "0 changed, 0 to remove" in out, out
    (root / "net" / "client.py").unlink()
    (root / "net" / "parser.py").write_text(PARSER + "\n\ndef extra():\n    pass\n")
    out = run(str(root), "--repo", "webshop")
    assert "1 changed, 1 to remove" in out and "1 file(s) put, 1 removed" in out, out
