"""What a bad input must leave untouched, and what the user was told: shared by the bad-input and
bad-parameter tables (tests/web)."""

from html.parser import HTMLParser
from pathlib import Path

from django.conf import settings as django_settings

from catalog.models import Catalog, Category, ImportJob, ImportRowError, Product, SchemaVersion
from extraction.models import ExtractedValue
from filestore.models import StoredFile
from review.models import BulkAction, ExportJob, GoldValue, ValueEvent

# a small valid upload
HEADER = "sku,title,category\n"
ROWS = "A1,Acme TV 55,TV\nA2,Globex TV 42,TV\n"

# Everything a bad input could leave behind or change, as hashable rows.
WATCHED = {
    Catalog: ("pk", "name"),
    ImportJob: ("pk", "status", "mapping", "file"),
    ImportRowError: ("pk",),
    Product: ("pk", "sku", "title", "description", "known_values", "updated_at"),
    Category: ("pk", "name"),
    SchemaVersion: ("pk",),
    ExtractedValue: ("pk", "review__status", "review__reviewed_value", "review__version"),
    ValueEvent: ("pk",),
    GoldValue: ("pk", "value", "source_id"),
    BulkAction: ("pk",),
    ExportJob: ("pk",),
    StoredFile: ("pk", "name", "size"),
}


def stored_state() -> dict[str, frozenset]:
    state = {
        model._meta.label: frozenset(repr(row) for row in model.objects.values_list(*fields))
        for model, fields in WATCHED.items()
    }
    media = Path(django_settings.MEDIA_ROOT)
    state["files"] = frozenset(str(p) for p in media.rglob("*") if p.is_file())
    return state


def changes_between(before: dict, after: dict) -> int:
    return sum(len(before[key] ^ after[key]) for key in before)


class _Alerts(HTMLParser):
    """The text of the elements a user reads as errors: role="alert", an error class, or the list
    of errors Django's forms put beside a field."""

    VOID = {"br", "hr", "img", "input", "link", "meta", "option"}

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        if self.depth:
            self.depth += 1
            return
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if attributes.get("role") == "alert" or {"error", "form-error", "errorlist"} & set(classes):
            self.depth = 1
            self.texts.append("")

    def handle_endtag(self, tag):
        if self.depth and tag not in self.VOID:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.texts[-1] += data


def shown_message(response) -> str:
    parser = _Alerts()
    parser.feed(response.content.decode())
    return " | ".join(" ".join(text.split()) for text in parser.texts if text.strip())


def markdown_table(rows: list[tuple]) -> str:
    def cell(value) -> str:
        return str(value).replace("|", "\\|")

    lines = [
        "| kind | input | HTTP status | message shown | stored changes |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
