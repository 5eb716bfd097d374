"""ASGI entry point: `uvicorn api.main:app`.

Without API keys the API refuses to start when its server is told to bind anything but loopback.
"""

import os
import signal
import sys

from api.app import create_app
from infra import lifeline
from infra.loopback import refuse_exposed_without_keys, requested_bind_hosts
from infra.settings import get_settings

if os.environ.get(lifeline.ENV):  # under `engramlog up`: an API process dies with its parent, uvicorn's supervisor
    lifeline.die_with_parent(signal.SIGKILL, os.getppid())  # when it runs several (--workers), up when one
refuse_exposed_without_keys(bool(get_settings().api.api_keys), requested_bind_hosts(sys.argv, os.environ))
app = create_app()
