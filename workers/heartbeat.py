"""Worker liveness: each worker process keeps a short-lived key in Redis; /healthz looks for one."""

import os
import socket

HEARTBEAT_PREFIX = "engramlog:worker:"


def heartbeat_key() -> str:
    return f"{HEARTBEAT_PREFIX}{socket.gethostname()}:{os.getpid()}"
