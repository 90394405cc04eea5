"""Playwright driving Debian's Chromium (a test tool's own browser download fails here)."""

import contextlib
import tempfile

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@contextlib.contextmanager
def chromium_page(accept_downloads: bool = True):
    """Yield a fresh page in a new headless Chromium with an empty profile."""
    with tempfile.TemporaryDirectory(prefix="slotwise-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            accept_downloads=accept_downloads,
            # Playwright's own predicates (wait_for_function) are evaluated as strings, which the
            # site's Content-Security-Policy forbids; tests/web/test_security_headers.py checks that
            # the pages need nothing the policy refuses (no inline script or handler).
            bypass_csp=True,
        )
        context.set_default_timeout(20_000)
        try:
            yield context.new_page() if not context.pages else context.pages[0]
        finally:
            context.close()


def sign_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
