"""Deprecated: the Python client is the `engramlog-client` distribution now (sdk/python, `engramlog_client`).

This shim stays for one release so that code written against `client` keeps importing: `EngramlogClient` is the
SDK's `Engramlog` (typed answers), with `_call` kept as an alias of `Engramlog.request` (parsed JSON).
Use `from engramlog_client import Engramlog, EngramlogError` instead.
"""

from __future__ import annotations

import warnings

from engramlog_client import Engramlog, EngramlogError

warnings.warn("the top-level `client` package is deprecated: use `engramlog_client` (sdk/python)",
              DeprecationWarning, stacklevel=2)


class EngramlogClient(Engramlog):
    _call = Engramlog.request  # the old client's raw call, for callers not moved to `request` yet


__all__ = ["EngramlogClient", "EngramlogError"]
