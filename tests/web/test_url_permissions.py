"""Walk the whole URL map (every app's, found automatically) as anonymous and as each role.

Every view must state its audience with accounts.roles.role_required (which sets
`allowed_roles`); only the names in PUBLIC may do without. Anonymous users are sent to the login
page from everywhere. A signed-in user outside a view's roles gets 403, before the view runs;
a user inside them never gets a server error. Signed-in users only ever GET (or, for POST-only
views, are refused with 403 before the view body runs), so walking changes nothing.
"""

import re
import uuid

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from accounts.roles import ADMIN, RATER, REVIEWER

# Views that are reachable without a role: signing in and out. Django admin has its own checks.
PUBLIC = {"login", "logout"}
SKIPPED_NAMESPACES = {"admin"}
# The status page answers 503 when a part is down (no worker runs during this test): by design.
HEALTH_PAGES = {"health:status"}
CONVERTER_SAMPLES = {"int": "999999", "uuid": str(uuid.UUID(int=7)), "slug": "x", "str": "x", "path": "x"}


def walk(patterns=None, prefix="", namespace=""):
    """Yield (url, view name, callback) for every route, with converters filled with samples."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = str(entry.pattern)
        if isinstance(entry, URLResolver):
            ns = entry.namespace or ""
            if ns in SKIPPED_NAMESPACES:
                continue
            full_ns = f"{namespace}:{ns}".strip(":") if ns else namespace
            yield from walk(entry.url_patterns, prefix + route, full_ns)
        elif isinstance(entry, URLPattern):
            url = "/" + re.sub(
                r"<(?:(\w+):)?\w+>", lambda m: CONVERTER_SAMPLES.get(m.group(1) or "str", "x"), prefix + route
            )
            name = f"{namespace}:{entry.name}".strip(":") if entry.name else url
            yield url.replace("^", "").replace("$", ""), name, entry.callback


ROUTES = list(walk())


def test_the_walker_finds_every_apps_urls():
    names = {name for _, name, _ in ROUTES}
    assert {"catalog:products", "catalog:upload", "health:status", "login"} <= names
    assert {"review:blind_start", "review:blind_label", "review:blind_save"} <= names
    assert len(ROUTES) >= 20


def test_every_view_states_who_may_use_it():
    missing = [
        f"{name} ({callback.__module__}.{callback.__name__})"
        for _, name, callback in ROUTES
        if name not in PUBLIC and not getattr(callback, "allowed_roles", None)
    ]
    assert missing == [], "views without @role_required: " + ", ".join(missing)


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_login_from_everywhere(client):
    login = reverse("login")
    wrong = []
    for url, name, _ in ROUTES:
        if name in PUBLIC:
            continue
        for method in (client.get, client.post):
            response = method(url)
            if response.status_code != 302 or not response["Location"].startswith(login):
                wrong.append(f"{method.__name__.upper()} {url} ({name}) -> {response.status_code}")
    assert wrong == []


def test_each_role_sees_only_its_views(client, alice, bob, carol):
    wrong = []
    for user, role in ((alice, ADMIN), (bob, REVIEWER), (carol, RATER)):
        client.force_login(user)
        for url, name, callback in ROUTES:
            allowed = getattr(callback, "allowed_roles", None)
            if name in PUBLIC or not allowed:
                continue  # reported by test_every_view_states_who_may_use_it
            response = client.get(url)
            if response.status_code == 405 and role not in allowed:
                response = client.post(url)  # POST-only: the role check refuses before the body runs
            server_error = response.status_code >= 500 and not (
                name in HEALTH_PAGES and response.status_code == 503
            )
            if (role in allowed and response.status_code == 403) or server_error:
                wrong.append(f"{role} GET {url} ({name}) -> {response.status_code}, allowed: {allowed}")
            elif role not in allowed and response.status_code != 403:
                wrong.append(f"{role} {url} ({name}) -> {response.status_code}, allowed: {allowed}")
    assert wrong == [], "\n".join(wrong)
