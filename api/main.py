"""ASGI entry point: `uvicorn api.main:app`.

Without API keys the API refuses to start when its server is told to bind anything but loopback.
"""

import os
import sys

from api.app import create_app
from infra.loopback import refuse_exposed_without_keys, requested_bind_hosts
from infra.settings import get_settings

refuse_exposed_without_keys(bool(get_settings().api.api_keys), requested_bind_hosts(sys.argv, os.environ))
app = create_app()
