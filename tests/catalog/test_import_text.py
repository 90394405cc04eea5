"""Text details of imported files: a doubled UTF-8 marker, SKUs that only look alike, what a number is."""

import pytest

from catalog.models import ImportRowError, Product
from catalog.schemas import AttributeData
from extraction.normalize import checked_value
from tests.support.catalog import import_inline, make_category

ROWS = "SEC-U21,Acme TV 55,TV\nSEC-U\u200b21,Acme TV 55 again,TV\n"


def test_a_doubled_utf8_marker_leaves_no_mark_in_the_first_column_name(client_for, alice, db):
    make_category("TV")
    content = b"\xef\xbb\xbf\xef\xbb\xbf" + b"sku,title,category\nA1,Acme TV 55,TV\n"
    job = import_inline(client_for(alice), content)
    assert job.header[0] == "sku"
    assert list(Product.objects.values_list("sku", flat=True)) == ["A1"]


def test_a_sku_with_a_zero_width_character_is_refused_with_where_it_is(client_for, alice, db):
    make_category("TV")
    import_inline(client_for(alice), "sku,title,category\n" + ROWS)
    assert list(Product.objects.values_list("sku", flat=True)) == ["SEC-U21"]
    (error,) = ImportRowError.objects.all()
    assert (error.row_number, error.column) == (3, "sku")
    assert "U+200B (zero width space) at character 6" in error.reason


NOT_NUMBERS = ["1e309", "1e-400", "0x1F", "1.5.6", "\u0661\u0662", "9" * 29]


def test_a_number_attribute_takes_plain_decimal_numbers_only(client_for, alice, db):
    make_category("TV", AttributeData("Size", kind="number", unit="inch"))
    rows = [f"N{i},Acme TV {i},TV,{value}" for i, value in enumerate([*NOT_NUMBERS, "55 inch", '"1,5"'])]
    import_inline(client_for(alice), "sku,title,category,size\n" + "\n".join(rows) + "\n")

    refused = dict(ImportRowError.objects.values_list("row_number", "reason"))
    assert sorted(refused) == list(range(2, 2 + len(NOT_NUMBERS)))
    assert all(
        "is not a number (Size is a number attribute): write digits 0-9" in r for r in refused.values()
    )
    kept = dict(Product.objects.values_list("sku", "known_values"))
    assert kept == {"N6": {"Size": "55 inch"}, "N7": {"Size": "1,5"}}


def test_a_typed_number_in_another_script_or_too_long_is_refused():
    for typed in ("\u0661\u0662 inch", "9" * 29, "1e309", "0x1F"):
        with pytest.raises(ValueError, match="is not a number in inch"):
            checked_value(typed, "number", "inch")
    assert checked_value("55 inches", "number", "inch") == "55 inch"
