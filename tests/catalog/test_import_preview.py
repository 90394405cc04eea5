"""The import preview tells new products from updated ones and what an import changes, and flags
cells a spreadsheet would read as a formula (issue 30)."""

import pytest
from django.urls import reverse

from catalog.models import Product
from catalog.schemas import AttributeData
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload

HEADER = "sku,title,description,category,brand,colour\n"


@pytest.fixture
def tv(db):
    return make_category(
        "TV", AttributeData("Brand"), AttributeData("Colour", kind="enum", allowed_values=["black", "silver"])
    )


def test_the_preview_tells_new_from_updated_products_and_flags_formula_like_cells(client_for, alice, tv):
    client = client_for(alice)
    import_inline(client, HEADER + "A1,Acme TV 55,Old text,TV,Acme,black\nA2,Globex TV,,TV,Globex,\n")
    content = (
        "sku,title,category,colour\n"
        "A1,Acme TV 55 (2025),TV,silver\n"  # updated: title and Colour
        "A2,Globex TV,TV,\n"  # already there, nothing changes
        "A3,New TV,TV,\n"
        'A4,"=HYPERLINK(""http://x.example"",""click"")",TV,\n'
    )
    upload(client, content)
    job = latest_job()
    map_columns(client, job)
    response = client.get(reverse("catalog:import_preview", args=[job.pk]))
    preview = response.context["preview"]
    assert (preview.new_products, preview.updated_products) == (2, 2)
    assert [(r.clean.sku, r.changes) for r in preview.rows] == [
        ("A1", ["title", "Colour"]),
        ("A2", []),
        ("A3", None),
        ("A4", None),
    ]
    assert [(f.row, f.sku, f.column) for f in preview.formulas] == [(5, "A4", "title")]
    body = response.content.decode()
    assert '<strong id="new-products">2 new products</strong>' in body and "2 already in Shop" in body
    assert "updates title, Colour" in body and "no change" in body
    assert 'id="formula-cells"' in body and "every CSV export writes them with a leading apostrophe" in body
    assert Product.objects.count() == 2  # the preview stores nothing


def test_the_preview_warns_of_a_description_too_long_for_the_model_in_its_tokens(client_for, alice, tv):
    """2,950 rare Chinese characters are far under the 20,000 characters a description may have, and
    take 8,536 of the default model's tokens: over the 8,192 prompt positions a worker decodes."""
    chinese = "".join(chr(0x3400 + (i * 7) % 0x19C0) for i in range(2950))  # CJK Extension A
    english = "A plain description of a television. " * 20
    client = client_for(alice)
    upload(client, HEADER + f"A1,Acme TV,{chinese},TV,Acme,black\nA2,Globex TV,{english},TV,Globex,\n")
    job = latest_job()
    map_columns(client, job)
    response = client.get(reverse("catalog:import_preview", args=[job.pk]))
    preview = response.context["preview"]
    assert preview.bad_rows == 0  # it imports: a warning, not a row error
    (warning,) = preview.long_documents
    assert (warning.row, warning.sku) == (2, "A1") and warning.tokens > 8192 > preview.document_limit
    body = response.content.decode()
    assert 'id="long-documents"' in body and "row 2 (A1): about 8," in body
    assert "1 product too long to extract" in body and "shorten its description" in body
