"""Bodies refused before they are read, against a real gunicorn (gunicorn.conf.py, DEBUG off).

Each request announces its Content-Length and sends only the first 3 MB of a multipart upload
(more than FILE_UPLOAD_MAX_MEMORY_SIZE, so a server reading it would spool a temporary file), then
waits: a body refused unread is answered at once while the rest is unsent, and no file appears in
the server's temporary directory (Django's upload spool) meanwhile. A client that trickles a body
the server does read is cut off after WEB_REQUEST_TIMEOUT.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from tools.worker_processes import current_database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
LIMIT_MB = 8
REQUEST_TIMEOUT = 20  # long enough for the first request to import every view on a loaded machine
BOUNDARY = "----slotwise-test-boundary"
FIRST_PART = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="new_catalog"\r\n\r\nShop\r\n'
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="products.csv"\r\n'
    "Content-Type: text/csv\r\n\r\nsku,title,category\r\n"
).encode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    spool, heartbeat = tmp_path / "spool", tmp_path / "heartbeat"
    spool.mkdir()
    heartbeat.mkdir()
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "slotwise.settings_test",
        "DATABASE_URL": current_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DEBUG": "0",
        "TMPDIR": str(spool),  # where Django spools an upload's file parts
        "CATALOG_UPLOAD_MAX_MB": str(LIMIT_MB),
        "WEB_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT),
        "WEB_WORKERS": "1",
    }
    command = [sys.executable, "-m", "gunicorn", "slotwise.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    command += ["--worker-tmp-dir", str(heartbeat)]
    with open(tmp_path / "gunicorn.log", "ab") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # until the worker has answered a page (views imported)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=30) as page:
                    if page.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        yield type("Server", (), {"port": port, "spool": spool})
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def send_partly(
    server, announced: int, session: str | None = None, sent: int = 3 * MIB, wait: float = 8, path: str = ""
):
    """POST an upload announcing `announced` bytes, send `sent` of them, and wait up to `wait` s.

    Returns (status or None, seconds until the answer or the close, largest number of files seen
    in the spool directory meanwhile)."""
    headers = [
        f"POST {path or reverse('catalog:upload')} HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}",
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
        f"Content-Length: {announced}",
    ]
    # Any client can send a CSRF cookie of its own: without one Django refuses before reading the form.
    cookies = [f"{settings.CSRF_COOKIE_NAME}={'a' * 32}"]
    if session:
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={session}")
    headers.append(f"Cookie: {'; '.join(cookies)}")
    body = (FIRST_PART + b"x" * sent)[:sent]
    started = time.monotonic()
    seen_files = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
        conn.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
        try:
            conn.sendall(body)
        except OSError:
            pass  # the server answered and closed before taking it all
        conn.settimeout(0.2)
        answer = b""
        while time.monotonic() - started < wait:
            seen_files = max(seen_files, sum(1 for path in server.spool.rglob("*") if path.is_file()))
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None
    return status, time.monotonic() - started, seen_files


def test_an_anonymous_upload_is_refused_unread(server):
    status, seconds, files = send_partly(server, announced=5 * MIB)
    assert status == 302  # to the sign-in page
    assert seconds < 3 and files == 0


def test_a_large_body_to_the_sign_in_page_is_refused_unread(server):
    status, seconds, files = send_partly(server, announced=5 * MIB, path=reverse("login"))
    assert status == 413
    assert seconds < 3 and files == 0


def test_an_upload_to_a_page_not_open_to_the_role_is_refused_unread(server, bob):
    status, seconds, files = send_partly(server, announced=5 * MIB, session=session_of(bob))
    assert status == 403
    assert seconds < 3 and files == 0


def test_an_upload_over_the_limit_is_refused_unread(server, alice):
    status, seconds, files = send_partly(server, announced=50 * MIB, session=session_of(alice))
    assert status == 413
    assert seconds < 3 and files == 0


def test_ten_gigabytes_announced_and_a_few_bytes_sent_get_an_answer_at_once(server, alice):
    status, seconds, files = send_partly(server, announced=10 * 1024**3, session=session_of(alice), sent=64)
    assert status == 413
    assert seconds < 3 and files == 0


def test_a_body_trickled_within_the_limit_is_cut_off_after_the_request_timeout(server, alice):
    """A signed-in admin's upload is read; one that stops half-way holds its worker no longer than
    WEB_REQUEST_TIMEOUT (gunicorn's watchdog), not for ever."""
    status, seconds, _ = send_partly(
        server, announced=5 * MIB, session=session_of(alice), sent=64 * 1024, wait=REQUEST_TIMEOUT + 20
    )
    # gunicorn's watchdog aborts the worker: it answers 500 as it goes, or just closes the connection
    assert status in (None, 500)
    assert REQUEST_TIMEOUT - 1 < seconds < REQUEST_TIMEOUT + 15
