"""The three roles of the product and the decorator every view states its audience with."""

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

ADMIN = "admin"
REVIEWER = "reviewer"
RATER = "rater"
ALL_ROLES = (ADMIN, REVIEWER, RATER)


def roles_of(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return set(ALL_ROLES)
    cached = getattr(user, "_slotwise_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ALL_ROLES).values_list("name", flat=True))
        user._slotwise_roles = cached
    return cached


def has_role(user, *roles: str) -> bool:
    return bool(roles_of(user) & set(roles))


def role_required(*roles: str) -> Callable:
    """Allow the view to signed-in users holding one of `roles`; 403 for everyone else signed in.

    Anonymous users never get here: LoginRequiredMiddleware sends them to the login page first.
    """
    unknown = set(roles) - set(ALL_ROLES)
    if unknown:
        raise ValueError(f"unknown roles {sorted(unknown)}")

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"this page is for: {', '.join(roles)}")
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = roles
        return wrapped

    return decorator
