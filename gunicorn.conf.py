"""gunicorn's settings for Slotwise (read from the working directory: the Dockerfile's and
docker-compose.yml's web server, and the load benchmark's).

Sync workers, one request each, so the worker watchdog bounds every request: a worker busy with one
request for WEB_REQUEST_TIMEOUT seconds is killed and replaced, whether it computes or waits for a
client that trickles its body (or announces 10 GB and sends a few bytes). A body over its view's
limit, or from someone its view would refuse, is answered before it is read
(slotwise/body_guard.py), so only a body a signed-in user may send can hold a worker that long.

The trade-off: an upload must arrive within WEB_REQUEST_TIMEOUT (the 200 MB limit at 120 s is
about 1.7 MB/s). For slower clients, put a buffering reverse proxy in front (nginx:
client_max_body_size, client_body_timeout), which receives the body before gunicorn sees it.
"""

from slotwise.env import env_int

worker_class = "sync"
workers = env_int("WEB_WORKERS", 3, minimum=1)
timeout = env_int("WEB_REQUEST_TIMEOUT", 120, minimum=1)
graceful_timeout = 30
# Request line and headers: gunicorn's own limits, stated so a change is a decision.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
