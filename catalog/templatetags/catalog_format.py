"""Number formatting for the catalog screens (django.contrib.humanize is not installed)."""

from django import template

register = template.Library()


@register.filter
def thousands(value) -> str:
    """12345 -> '12,345'."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)
