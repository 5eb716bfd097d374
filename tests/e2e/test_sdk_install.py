"""The SDK installs alone into a fresh virtual environment (no system site-packages, so nothing of the server's
environment leaks in) and imports without torch or any server module. Slow-ish (~30-60 s: pip resolves httpx
and pydantic from the configured package index, or from ENGRAMLOG_WHEELHOUSE with --no-index when set)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, check=False)


def test_sdk_installs_alone_and_imports_without_torch(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # The wheel is built here, with this environment's setuptools (the fresh venv has none to build with).
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels,
                 ROOT / "sdk" / "python")
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("engramlog_client-*.whl")

    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv)  # no --system-site-packages: only what is installed below
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    house = os.environ.get("ENGRAMLOG_WHEELHOUSE")
    source = ["--no-index", "--find-links", house] if house else []
    installed = _run(python, "-m", "pip", "install", "-q", *source, wheel)
    assert installed.returncode == 0, installed.stderr

    probe = _run(python, "-c", "import sys, engramlog_client\n"
                               "from engramlog_client import Engramlog, AsyncEngramlog\n"
                               "from engramlog_client.models import Recalled\n"
                               "c = Engramlog('http://127.0.0.1:9'); c.close()\n"
                               "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
                               "('torch', 'sqlalchemy', 'psycopg', 'fastapi', 'api', 'services', 'recall'))\n"
                               "print(engramlog_client.__file__, heavy)")
    assert probe.returncode == 0, probe.stderr
    where, heavy = probe.stdout.strip().split(" ", 1)
    assert Path(where).is_relative_to(venv) and heavy == "[]"  # the venv's own copy, nothing of the server
    assert _run(python, "-c", "import torch").returncode != 0  # torch is not there at all
    listed = _run(python, "-m", "pip", "list", "--format=freeze").stdout
    names = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert {"engramlog-client", "httpx", "pydantic"} <= names and "torch" not in names and "engramlog" not in names
