"""Mark where an extracted value occurs in the product's document."""

import re

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from extraction.domain import NA


def highlight(document: str, value: str) -> SafeString:
    """The document as HTML with every occurrence of `value` wrapped in <mark> (case-insensitive)."""
    value = (value or "").strip()
    if not value or value == NA:
        return escape(document)
    parts = re.split(f"({re.escape(value)})", document, flags=re.IGNORECASE)
    html = []
    for i, part in enumerate(parts):
        html.append(format_html('<mark class="span">{}</mark>', part) if i % 2 else escape(part))
    return mark_safe("".join(html))  # noqa: S308 - every part is escaped above


def occurs(document: str, value: str) -> bool:
    value = (value or "").strip()
    return bool(value) and value != NA and value.lower() in document.lower()
