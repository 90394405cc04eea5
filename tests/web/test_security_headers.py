"""Content-Security-Policy: on every page, scripts from the site's static files only, and no
template that would need more (an inline script or an on* handler attribute)."""

import re
from pathlib import Path

from django.conf import settings
from django.urls import reverse

TEMPLATES = Path(settings.BASE_DIR) / "templates"
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
HANDLER_ATTRIBUTE = re.compile(r"\son[a-z]+\s*=", re.I)


def test_every_page_carries_the_policy(client, client_for, bob, db):
    for response in (client.get(reverse("login")), client_for(bob).get(reverse("review:queue"))):
        policy = response["Content-Security-Policy"]
        assert (
            "script-src 'self'" in policy
            and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        )
        assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy


def test_no_template_holds_an_inline_script_or_handler():
    found = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        found += [f"{path.name}: {m.group()}" for m in INLINE_SCRIPT.finditer(text)]
        found += [f"{path.name}: {m.group().strip()}" for m in HANDLER_ATTRIBUTE.finditer(text)]
    assert not found
