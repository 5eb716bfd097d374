"""The Dramatiq broker, by settings.workers.broker: Redis (default) or RabbitMQ (Dramatiq's own RabbitmqBroker, for a
deployment whose queue outgrows one Redis: docs/scale-out.md). Imported before any actor is declared, so actors
bind to it. Redis keeps the workers' heartbeats and the scheduler's last-run reports (`redis_client`) whichever
broker carries the queues."""

from __future__ import annotations

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

from infra.settings import get_settings

# Without a configured Redis, sends fail fast and are logged; the projectors' poll still catches up.
_UNCONFIGURED = "redis://127.0.0.1:1"
_TIMEOUTS = {"socket_connect_timeout": 2, "socket_timeout": 10, "health_check_interval": 15}


def make_broker(url: str) -> RedisBroker:
    return RedisBroker(url=url or _UNCONFIGURED, **_TIMEOUTS)


def make_rabbitmq_broker(url: str) -> dramatiq.Broker:
    from dramatiq.brokers.rabbitmq import RabbitmqBroker  # pika: imported only where the setting asks for it

    # An enqueue returns once RabbitMQ has confirmed the message (nothing acknowledged is lost).
    return RabbitmqBroker(url=url, confirm_delivery=True)


def _configured() -> tuple[dramatiq.Broker, redis.Redis]:
    settings = get_settings()
    if settings.workers.broker == "rabbitmq":
        return (make_rabbitmq_broker(settings.workers.rabbitmq_url),
                redis.Redis.from_url(settings.stack.redis_url or _UNCONFIGURED, **_TIMEOUTS))
    queue = make_broker(settings.stack.redis_url)
    return queue, queue.client


broker, redis_client = _configured()
dramatiq.set_broker(broker)
