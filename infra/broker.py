"""The Dramatiq broker on Redis. Imported before any actor is declared, so actors bind to it."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from infra.settings import get_settings

# Without a configured Redis, sends fail fast and are logged; the projectors' poll still catches up.
_UNCONFIGURED = "redis://127.0.0.1:1"


def make_broker(url: str) -> RedisBroker:
    return RedisBroker(url=url or _UNCONFIGURED, socket_connect_timeout=2, socket_timeout=10,
                       health_check_interval=15)


broker = make_broker(get_settings().redis_url)
dramatiq.set_broker(broker)
