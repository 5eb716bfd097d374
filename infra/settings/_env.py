"""How a setting is read from its environment variable, and the checks that refuse a bad value."""

from __future__ import annotations

import os


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def parse_api_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, tenant = pair.partition(":")
        if not sep or not key or not tenant:
            raise ValueError(f"ENGRAMLOG_API_KEYS entry {pair!r} is not 'key:tenant'")
        keys[key] = tenant
    return keys


def _actr_decay(raw: str) -> float:
    from domain.activation import check_decay

    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"ENGRAMLOG_ACTR_DECAY={raw!r} is not a number") from None
    try:
        return check_decay(value)
    except ValueError as exc:
        raise ValueError(f"ENGRAMLOG_ACTR_DECAY: {exc}") from None


def _number(name: str, default: str) -> tuple[float, str]:
    raw = _env(name, default)
    try:
        return float(raw), raw
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None


def _positive(name: str, default: str) -> float:
    value, raw = _number(name, default)
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {raw!r}")
    return value


def _share(name: str, default: str) -> float:
    value, raw = _number(name, default)
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be between 0 and 1, got {raw!r}")
    return value


def _at_least(name: str, default: str, least: int) -> int:
    value = int(_positive(name, default))
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return value


def _at_least_zero(name: str, default: str) -> int:
    raw = _env(name, default)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise ValueError(f"{name} must be at least 0, got {value}")
    return value


def _choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = _env(name, default).strip().lower()
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(allowed)}")
    return value
