"""Settings for the test suite: production settings with the few changes a local test server needs."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789abcdefghij")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# between browser steps are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from slotwise.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
# The test run's own; a worker the tests start is given another (tests/support/workers.py), so no test
# passes because the web side and a worker happen to share a disk.
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or BASE_DIR / ".data" / "test-media")  # noqa: F405
