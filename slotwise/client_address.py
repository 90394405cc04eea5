"""The address a request came from: the one function every reader of an address uses (the sign-in
throttle, the log line of a refused request).

Without a proxy (TRUSTED_PROXY_COUNT 0) it is the socket's peer, REMOTE_ADDR. Behind proxies, each
appends to X-Forwarded-For the address it received the request from, so the client's address is the
entry TRUSTED_PROXY_COUNT places from the right; every entry to its left was written by the client
and is ignored, as anyone may send the header with anything in it. A header with fewer entries, or
an entry there that is not an address, means the request did not come through the proxies as
configured: the socket's peer is used then, the address that really connected, never a shared
empty one.
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    peer = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if not proxies or not forwarded:
        return peer
    entries = [entry.strip() for entry in forwarded.split(",")]
    if len(entries) < proxies:
        return peer
    appended = entries[-proxies]  # written by the outermost trusted proxy
    return appended if is_ip_address(appended) else peer


def is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
