"""docker-compose.yml asks for its passwords and publishes nothing; the opt-in override publishes on loopback only.

Docker cannot run here, so the files are parsed (PyYAML, which huggingface_hub already brings) and checked for
those properties: Redis requires a password and every client's REDIS_URL carries it, PostgreSQL's password is a
required variable (`${VAR:?…}`: compose refuses to start without it) and no literal password is committed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = re.compile(r"\$\{(?P<name>[A-Z_]+):\?[^}]*\}")
ANY_VAR = re.compile(r"\$\{(?P<name>[A-Z_]+)(?P<op>:?[-?+])?[^}]*\}")


def _compose(name: str = "docker-compose.yml") -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _required(value: str) -> set[str]:
    return {m["name"] for m in REQUIRED.finditer(value)}


def _clients() -> dict[str, dict[str, str]]:
    """Every service running the engramlog image, with the environment it gets (the YAML anchor resolved)."""
    services = _compose()["services"]
    return {name: svc["environment"] for name, svc in services.items() if svc.get("image") == "engramlog:latest"}


def test_nothing_is_published_on_the_host_by_default() -> None:
    for name, service in _compose()["services"].items():
        assert "ports" not in service, f"{name} publishes {service['ports']}"
        assert service.get("network_mode") != "host", name


def test_the_opt_in_publishes_the_api_on_loopback_only() -> None:
    services = _compose("docker-compose.publish.yml")["services"]
    assert set(services) == {"api"}
    ports = services["api"]["ports"]
    assert ports and all(str(p).startswith("127.0.0.1:") for p in ports), ports


def test_redis_requires_a_password_that_every_client_url_carries() -> None:
    redis = _compose()["services"]["redis"]
    command = redis["command"]
    flag = command.index("--requirepass")
    assert _required(command[flag + 1]) == {"REDIS_PASSWORD"}, command
    assert _required(redis["environment"]["REDISCLI_AUTH"]) == {"REDIS_PASSWORD"}  # the healthcheck's login
    clients = _clients()
    assert {"migrate", "api", "worker"} <= set(clients)
    for name, env in clients.items():
        url = env["REDIS_URL"]
        assert re.fullmatch(r"redis://:\$\{REDIS_PASSWORD:\?[^}]*\}@redis:6379/\d+", url), (name, url)


def test_postgres_password_comes_from_the_environment_and_is_required() -> None:
    postgres = _compose()["services"]["postgres"]
    assert _required(postgres["environment"]["POSTGRES_PASSWORD"]) == {"POSTGRES_PASSWORD"}
    for name, env in _clients().items():
        url = env["DATABASE_URL"]
        assert re.fullmatch(r"postgresql\+psycopg://engramlog:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432/\w+",
                            url), (name, url)


def _strings(node: Any, key: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in _strings(v, str(k))]
    if isinstance(node, list):
        return [pair for v in node for pair in _strings(v, key)]
    return [(key, str(node))]


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.publish.yml"])
def test_no_password_is_a_literal_or_has_a_default(name: str) -> None:
    """Every secret-bearing value (a *PASSWORD / *AUTH setting, the user:password of a URL) is a required variable."""
    for key, value in _strings(_compose(name)):
        secrets = [m["secret"] for m in re.finditer(r"://[^:/@]*:(?P<secret>[^@]*)@", value)]
        if re.search(r"PASSWORD|AUTH", key):
            secrets.append(value)
        for secret in secrets:
            assert REQUIRED.fullmatch(secret), f"{key}: {value}"
    for m in ANY_VAR.finditer((ROOT / name).read_text()):
        if "PASSWORD" in m["name"]:
            assert m["op"] == ":?", f"{m[0]} may be left out"
