"""Every bad input gets a clear answer (status, and a message saying what and where) and stores nothing.

One table of cases: bad files, uploaded through the real upload view, and bad parameters, sent to
the views that read them. Each case checks the status, the message the user sees (the page's
alert) and that no database row and no file under MEDIA_ROOT was added, removed or changed.

`BAD_INPUT_TABLE=/tmp/h/bad_input_table.md pytest tests/web/test_bad_input.py` also writes a
Markdown table of what each case actually answered: kind, status, message, stored changes.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from catalog.forms import MappingForm
from catalog.models import ImportJob
from tests.support.bad_input import HEADER, ROWS, changes_between, markdown_table, shown_message, stored_state
from tests.support.catalog import latest_job, make_category, map_columns, upload
from tests.support.factories import make_scenario

MIB = 1024 * 1024
WIDE_HEADER = "sku,title,description,category\n"


def past_the_sniffer(tail: bytes) -> bytes:
    """Good rows filling more than the 64 KiB the head checks read, then `tail` as the last row."""
    filler = "".join(f"F{n:05d},Filler TV 55 inch,TV\n" for n in range(3000)).encode()
    assert len(filler) > 64 * 1024
    return HEADER.encode() + filler + tail


def long_field(prefix: str, suffix: str, quoted_lines: bool = False) -> Callable[[], bytes]:
    """A file with one field of 17 MiB between `prefix` and `suffix`, built when the case runs."""

    def build() -> bytes:
        if quoted_lines:  # a quoted description with line breaks, as exported from a rich-text field
            return (prefix + '"' + ("y" * 1023 + "\n") * (17 * 1024) + '"' + suffix).encode()
        return (prefix + "x" * (17 * MIB) + suffix).encode()

    return build


def columns(count: int) -> str:
    names = ["sku", "title", "category"] + [f"attribute {n}" for n in range(count - 3)]
    return ",".join(names) + "\n" + ",".join(["A1", "Acme TV", "TV"] + ["x"] * (count - 3)) + "\n"


@dataclass(frozen=True)
class Case:
    kind: str
    what: str  # "file" or "parameter"
    send: Callable  # (client, world) -> response
    status: int
    message: str  # a fragment of what the page's alert says
    user: str | None = "alice"
    settings: dict = field(default_factory=dict)
    needs_job: bool = False  # an uploaded import job waiting for its mapping


def bad_file(kind, content, message, status=400, name="products.csv", **settings) -> Case:
    def send(client, world):
        return upload(client, content() if callable(content) else content, name=name)

    return Case(kind, "file", send, status, message, settings=settings)


def bad_param(kind, send, message, user="bob", needs_job=False) -> Case:
    return Case(kind, "parameter", send, 400, message, user=user, needs_job=needs_job)


def post_urlencoded(client, url, data):
    """What htmx and plain forms without files send."""
    return client.post(url, urlencode(data), content_type="application/x-www-form-urlencoded")


def mapping_url(world) -> str:
    return reverse("catalog:import_map", args=[world.job.pk])


NUL = "holds a NUL character (\\x00), which no text field can store"

CASES = [
    # Files: what a catalog team exports by mistake, or what a broken export tool writes.
    bad_file("empty file", b"", "The file is empty."),
    bad_file("only blank lines", b"\n\r\n  \n", "The file is empty."),
    bad_file("only a UTF-8 marker", b"\xef\xbb\xbf", "The file is empty."),
    bad_file(
        "a workbook by its name",
        b"PK\x03\x04....",
        "'products.xlsx' is not a CSV file (expected .csv, .tsv or .txt)",
        name="products.xlsx",
    ),
    bad_file("a name without suffix", (HEADER + ROWS).encode(), "'products' is not a CSV file", name="products"),
    bad_file("Excel workbook renamed .csv", b"PK\x03\x04\x14\x00\x06\x00", "This file is an Excel workbook or a ZIP archive, not CSV."),
    bad_file("old Excel (.xls) file", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "This file is an old Excel (.xls) or Word file, not CSV."),
    bad_file("PDF document", b"%PDF-1.7\n...", "This file is a PDF document, not CSV."),
    bad_file("PNG image", b"\x89PNG\r\n\x1a\n\x00\x00", "This file is a PNG image, not CSV."),
    bad_file("JPEG image", b"\xff\xd8\xff\xe0\x00\x10JFIF", "This file is a JPEG image, not CSV."),
    bad_file("gzip archive", b"\x1f\x8b\x08\x00\x00\x00", "This file is a gzip archive, not CSV."),
    bad_file("binary bytes at the start", b"sku,title\n\x00\x01\x02\x03garbage", "This is a binary file, not CSV text."),
    bad_file("JSON array", b'[{"sku": "A1"}]', "This file looks like JSON, not CSV."),
    bad_file("JSON object after a BOM", b'\xef\xbb\xbf\n  {"sku": "A1"}', "This file looks like JSON, not CSV."),
    bad_file("UTF-16 (little-endian)", "sku,title\nA1,Caf\u00e9\n".encode("utf-16"), "The file is UTF-16 encoded"),
    bad_file("UTF-16 (big-endian)", b"\xfe\xff" + "sku,title\nA1,Caf\u00e9\n".encode("utf-16-be"), "The file is UTF-16 encoded"),
    bad_file("UTF-32 (little-endian)", "sku,title\nA1,Caf\u00e9\n".encode("utf-32"), "The file is UTF-32 encoded"),
    bad_file("blank lines before the header", "\n\n" + HEADER + ROWS, "Line 1 is blank: the header row"),
    bad_file(
        "an escape sequence in one cell",
        HEADER + "A1,Bad \x1b[31mred TV,TV\n",
        "control character 0x1b (ESC) at line 2 (byte offset 26)",
    ),
    bad_file(
        "UTF-8 marker, Latin-1 text",
        b"\xef\xbb\xbfsku,title\nA1,caf\xe9\n",
        "starts with a UTF-8 marker but line 2 (byte offset 19), 0xe9, is not UTF-8",
    ),
    bad_file(
        "neither UTF-8 nor Windows-1252",
        b"sku,title\nA1,bad \x81 byte\n",
        "line 2 (byte offset 17), 0x81, is neither UTF-8 nor Latin-1 / Windows-1252",
    ),
    bad_file(
        "UTF-8 rows, then a Latin-1 row",
        (HEADER + "A1,Caf\u00e9 TV,TV\n").encode() + "A2,Cr\u00e8me TV,TV\n".encode("latin-1"),
        "mixes text encodings: line 2 (byte offset 25) holds UTF-8 text ('\u00e9') but line 3 "
        "(byte offset 39), 0xe8, is not UTF-8",
    ),
    bad_file(
        "a Latin-1 row, then UTF-8 rows",
        (HEADER + "A1,Cr\u00e8me TV,TV\n").encode("latin-1") + "A2,Caf\u00e9 TV,TV\n".encode(),
        "line 3 (byte offset 40) holds UTF-8 text ('\u00e9') but line 2 (byte offset 24), 0xe8, is not UTF-8",
    ),
    bad_file(
        "UTF-8 cut inside its last character",
        (HEADER + "A1,Caf\u00e9 TV,TV\nA2,Caf").encode() + b"\xc3",
        "but line 3 (byte offset 40), 0xc3, is not UTF-8",
    ),
    bad_file(
        "NUL byte after the first 64 KiB",
        past_the_sniffer(b"A9,Bad\x00TV,TV\n"),
        "control character 0x00 (NUL) at line 3002 (byte offset 84025)",
    ),
    bad_file(
        "ESC after the first 64 KiB",
        past_the_sniffer(b"A9,Bad \x1b[31mred TV,TV\n"),
        "control character 0x1b (ESC) at line 3002 (byte offset 84026)",
    ),
    bad_file(
        "BEL after the first 64 KiB",
        past_the_sniffer(b"A9,Ringing\x07 TV,TV\n"),
        "control character 0x07 (BEL) at line 3002 (byte offset 84029)",
    ),
    bad_file("one column only", b"just one column\nA1\n", "Missing required columns: the header has one column only"),
    bad_file("a header and no rows", HEADER.encode(), "The file has a header row but no product rows."),
    bad_file("a header and blank rows", (HEADER + "\n,,\n \n").encode(), "The file has a header row but no product rows."),
    bad_file(
        "a field over 16 MiB",
        long_field(WIDE_HEADER + "A1,Acme TV,", ",TV\n"),
        "Row 2 (from line 2): the field in column 'description' is longer than 16 MiB (16,777,216 characters)",
    ),
    bad_file(
        "a quoted field over 16 MiB, with line breaks",
        long_field(WIDE_HEADER + "A1,Acme TV,,TV\nA2,Globex TV,", ",TV\n", quoted_lines=True),
        "Row 3 (from line 3): the field in column 'description' is longer than 16 MiB",
    ),
    bad_file(
        "a header field over 16 MiB",
        long_field("sku,", "\nA1,Acme TV\n"),
        "Row 1 (from line 1): the field in column 2 is longer than 16 MiB",
    ),
    bad_file(
        "too many columns to map (995)",
        columns(995),
        "The file has 995 columns; at most 994 can be mapped in one import",
    ),
    bad_file(
        "a quote never closed",
        HEADER + 'A1,"Acme TV,TV\nA2,Globex TV,TV\nA3,Initech TV,TV\n',
        "Row 2 (line 2): a quote opens the field in column 'title' and is not closed on that line, "
        "so lines 3 to 4 were swallowed into that one field (the row has 2 fields; the header has 3)",
    ),
    bad_file(
        "a quote never closed in the header",
        'sku,"title,category\nA1,Acme TV,TV\n',
        "Row 1 (line 1): a quote opens the field in header column 2 and is not closed on that line, "
        "so line 2 was swallowed into that one field (no product rows are left)",
    ),
    bad_file(
        "over the size limit",
        HEADER + ROWS + "B2," + "x" * 200 + ",TV\n",
        "The file is 0.0 MB (262 bytes): 162 bytes over the limit of 0.0 MB (100 bytes).",
        CATALOG_UPLOAD_MAX_BYTES=100,
    ),
    bad_file(
        "one byte over the size limit",
        (HEADER + ROWS).encode().ljust(MIB + 1, b"\n"),
        "The file is 1.0 MB (1,048,577 bytes): 1 byte over the limit of 1.0 MB (1,048,576 bytes).",
        CATALOG_UPLOAD_MAX_BYTES=MIB,
    ),
    bad_file(
        "far over the size limit (refused before reading)",
        lambda: (HEADER + "S1,Product with a longer title,TV\n" * 120_000).encode(),
        "over the limit of 3.0 MB (3,145,728 bytes). Split it into smaller files",
        status=413,
        CATALOG_UPLOAD_MAX_BYTES=3 * MIB,
    ),
    # Parameters: a NUL reaches PostgreSQL as text and fails there, whichever view reads it.
    bad_param(
        "NUL in the product search",
        lambda c, w: c.get(reverse("catalog:products"), {"q": "\x00"}),
        f"the query parameter 'q' {NUL}",
    ),
    bad_param(
        "NUL in a number filter",
        lambda c, w: c.get(reverse("catalog:products"), {"catalog": "1\x00"}),
        f"the query parameter 'catalog' {NUL}",
    ),
    bad_param(
        "NUL in the queue's attribute filter",
        lambda c, w: c.get(reverse("review:queue"), {"attribute": "\x00"}),
        f"the query parameter 'attribute' {NUL}",
    ),
    bad_param(
        "NUL in a parameter's name",
        lambda c, w: c.get(reverse("review:queue"), {"\x00": "1"}),
        f"the query parameter '\\x00' {NUL}",
    ),
    bad_param(
        "more parameters than Django accepts (1,001)",
        lambda c, w: c.get(reverse("catalog:products"), {f"p{n}": "1" for n in range(1001)}),
        "The request was malformed or too large (for example, a form with too many fields).",
    ),
    bad_param(
        "NUL in the export's filter (multipart form)",
        lambda c, w: c.post(
            reverse("review:export"),
            {"run": w.scene.run.pk, "format": "csv", "shape": "wide", "attribute": "\x00"},
        ),
        f"the form parameter 'attribute' {NUL}",
    ),
    bad_param(
        "NUL in the bulk action's filter (urlencoded form)",
        lambda c, w: post_urlencoded(
            c, reverse("review:bulk"), {"run": w.scene.run.pk, "action": "accept", "attribute": "\x00"}
        ),
        f"the form parameter 'attribute' {NUL}",
    ),
    bad_param(
        "NUL in a reviewer's correction",
        lambda c, w: c.post(
            reverse("review:review_value", args=[w.scene.values[0].pk]),
            {"action": "correct", "value": "Ac\x00me", "version": "0"},
        ),
        f"the form parameter 'value' {NUL}",
    ),
    bad_param(
        "NUL in a new catalog's name (upload form)",
        lambda c, w: upload(c, HEADER + ROWS, catalog="Shop\x00"),
        f"the form parameter 'new_catalog' {NUL}",
        user="alice",
    ),
    bad_param(
        "NUL in a new category's name",
        lambda c, w: c.post(reverse("catalog:category_create"), {"name": "TV\x00", "description": ""}),
        f"the form parameter 'name' {NUL}",
        user="alice",
    ),
    bad_param(
        "NUL in the sign-in form",
        lambda c, w: c.post(reverse("login"), {"username": "alice\x00", "password": "x"}),
        f"the form parameter 'username' {NUL}",
        user=None,
    ),
    bad_param(
        "NUL in a mapping's attribute name",
        lambda c, w: map_columns(c, w.job, known_2="Brand\x00"),
        f"the form parameter 'known_2' {NUL}",
        user="alice",
        needs_job=True,
    ),
    bad_param(
        "a mapping choice that is no column of the file",
        lambda c, w: map_columns(c, w.job, sku="99"),
        "SKU: Select a valid choice. 99 is not one of the available choices.",
        user="alice",
        needs_job=True,
    ),
    bad_param(
        "a mapping's attribute name over 100 characters",
        lambda c, w: map_columns(c, w.job, known_2="B" * 101),
        "Attribute held by column 'category': Ensure this value has at most 100 characters (it has 101).",
        user="alice",
        needs_job=True,
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def answers():
    """What each case answered; written as a Markdown table when BAD_INPUT_TABLE names a file."""
    rows: list[tuple] = []
    yield rows
    target = os.environ.get("BAD_INPUT_TABLE")
    if target and rows:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(markdown_table(rows), encoding="utf-8")


@pytest.fixture
def world(db):
    """A category the good rows use, and a reviewed run whose values the review views filter."""
    make_category("TV")
    return SimpleNamespace(scene=make_scenario(products=2), job=None)


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_it_answers_bad_input_clearly_and_stores_nothing(
    case, world, client, alice, bob, settings, answers, request
):
    for name, value in case.settings.items():
        setattr(settings, name, value)
    if case.user:
        client.force_login({"alice": alice, "bob": bob}[case.user])
    if case.needs_job:
        assert upload(client, HEADER + ROWS).status_code == 302
        world.job = latest_job()
        request.addfinalizer(lambda: world.job.file.delete(save=False))
    before = stored_state()

    response = case.send(client, world)

    message = shown_message(response)
    changes = changes_between(before, stored_state())
    answers.append((case.kind, case.what, response.status_code, message, changes))
    assert response.status_code == case.status, message
    assert case.message in message
    assert changes == 0


def test_the_widest_file_the_mapping_form_allows_still_maps(client_for, alice, db):
    """994 columns: the mapping form posts 1,000 fields with the CSRF token, Django's limit."""
    make_category("TV")
    width = MappingForm.max_columns()
    assert width == django_settings.DATA_UPLOAD_MAX_NUMBER_FIELDS - 6
    client = client_for(alice)
    assert upload(client, columns(width)).status_code == 302
    job = latest_job()
    response = map_columns(client, job, csrfmiddlewaretoken="the browser sends one")
    assert response.status_code == 302, shown_message(response)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.MAPPED
    job.file.delete(save=False)
