"""Without API keys the API has no authentication and one tenant: it may serve this machine only.

Three checks, each pure or reading only this process: the address the server is asked to bind (its command line),
the sockets this process already listens on, and per request the peer address and the Host header (a browser
page on another site reaching 127.0.0.1 through DNS rebinding sends its own host name).
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import psutil

LOOPBACK_HOST_NAMES = ("localhost", "127.0.0.1", "::1")


class ExposedWithoutKeys(RuntimeError):
    pass


def is_loopback_address(host: str) -> bool:
    """An address or name that reaches this machine only: 127.0.0.0/8, ::1, localhost."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local_address(host: str) -> bool:
    """Loopback, or an address of one of this machine's own interfaces (what a wildcard bind is reached by)."""
    if is_loopback_address(host):
        return True
    host = host.strip().strip("[]").lower()
    try:
        wanted = ipaddress.ip_address(host)
    except ValueError:
        return False
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            try:
                if ipaddress.ip_address(addr.address.split("%")[0]) == wanted:
                    return True
            except ValueError:
                continue
    return False


def is_local_url(url: str) -> bool:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return bool(host and is_local_address(host))


def host_header_is_loopback(value: str | None) -> bool:
    """`localhost`, `127.0.0.1` or `[::1]`, each with or without a port; anything else is another site's name."""
    if not value:
        return False
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return False
        return name == "::1"
    name, sep, port = value.partition(":")
    if sep and not port.isdigit():
        return False
    return name in ("localhost", "127.0.0.1")


def peer_is_local(client: tuple[str, int] | None) -> bool:
    """The connection's peer: a loopback address, or none at all (a unix socket has no peer address)."""
    return client is None or not client[0] or is_loopback_address(client[0])


def _option_values(argv: Sequence[str], names: tuple[str, ...]) -> list[str]:
    values: list[str] = []
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                values.append(argv[i + 1])
            elif name.startswith("--") and arg.startswith(name + "="):
                values.append(arg[len(name) + 1:])
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                values.append(arg[len(name):])
    return values


def _bind_host(bind: str) -> str | None:
    """`0.0.0.0:8000` → 0.0.0.0, `[::]:8000` → ::, `unix:/path` / `fd://3` → None (no TCP address)."""
    if bind.startswith(("unix:", "fd://")):
        return None
    if bind.startswith("["):
        return bind[1:].partition("]")[0]
    return bind.rpartition(":")[0] if bind.count(":") == 1 else bind


def requested_bind_hosts(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The TCP hosts the ASGI server running this process was told to bind; [] when it is not one we know."""
    program = Path(argv[0]).name if argv else ""
    if program == "__main__.py" and len(Path(argv[0]).parts) > 1:
        program = Path(argv[0]).parent.name  # `python -m uvicorn`
    if program.startswith("uvicorn"):
        if "--uds" in argv or "--fd" in argv or any(a.startswith(("--uds=", "--fd=")) for a in argv):
            return []
        hosts = _option_values(argv, ("--host",))
        return hosts[-1:] or [environ.get("UVICORN_HOST", "127.0.0.1")]
    if program.startswith(("gunicorn", "hypercorn")):
        args = [*shlex.split(environ.get("GUNICORN_CMD_ARGS", "")), *argv[1:]]
        binds = _option_values(args, ("--bind", "-b")) or ["127.0.0.1:8000"]
        return [h for h in map(_bind_host, binds) if h is not None]
    return []


def listening_hosts() -> list[str]:
    """The addresses this process already listens on (a socket its server inherited or bound before start-up)."""
    try:
        connections = psutil.Process().net_connections(kind="inet")
    except (psutil.Error, OSError):
        return []
    return [c.laddr.ip for c in connections if c.status == psutil.CONN_LISTEN and c.laddr]


def refuse_exposed_without_keys(keys_configured: bool, hosts: Sequence[str]) -> None:
    if keys_configured:
        return
    exposed = [h for h in hosts if not is_loopback_address(h)]
    if exposed:
        raise ExposedWithoutKeys(
            f"refusing to serve on {', '.join(exposed)}: ENGRAMLOG_API_KEYS is unset, so the API has no "
            "authentication and serves loopback only (127.0.0.1, ::1). Set ENGRAMLOG_API_KEYS=key:tenant,... "
            "to serve other hosts, or bind 127.0.0.1.")
