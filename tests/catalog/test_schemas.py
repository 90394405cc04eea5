"""Schemas: categories, ordered attributes, versions, JSON export/import, the htmx editor."""

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalog.models import Attribute, Category, SchemaVersion
from catalog.schemas import AttributeData, StaleSchema, current_attributes, do_add_attribute
from tests.support.catalog import make_category

HTMX = {"HTTP_HX_REQUEST": "true"}


def names(category) -> list[str]:
    return [a.name for a in current_attributes(Category.objects.get(pk=category.pk).current_schema)]


def test_it_creates_a_category_with_an_empty_first_version(client_for, alice):
    response = client_for(alice).post(
        reverse("catalog:category_create"), {"name": "TV", "description": "Screens"}
    )
    category = Category.objects.get(name="TV")
    assert response["Location"] == reverse("catalog:schema", args=[category.pk])
    assert category.current_schema.version == 1
    assert names(category) == []


def test_it_refuses_a_duplicate_category_name(client_for, alice):
    make_category("TV")
    response = client_for(alice).post(reverse("catalog:category_create"), {"name": "tv"})
    assert response.status_code == 400
    assert "a category named &#x27;tv&#x27; already exists" in response.content.decode()
    assert Category.objects.count() == 1


def test_it_adds_an_attribute_as_a_new_version_without_a_full_page(client_for, alice):
    category = make_category("TV", AttributeData("Brand"))
    response = client_for(alice).post(
        reverse("catalog:attribute_add", args=[category.pk]),
        {"base_version": 1, "name": "Screen size", "kind": "number", "unit": "in", "max_tokens": 4,
         "description": "Diagonal", "required": "on"},
        **HTMX,
    )  # fmt: skip
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="schema-editor"')  # a partial, not a page
    assert "<html" not in body
    assert "Saved as v2: Added Screen size" in body
    assert names(category) == ["Brand", "Screen size"]
    size = category.current_schema.attributes.get(name="Screen size")
    assert (size.kind, size.unit, size.max_tokens, size.required) == ("number", "in", 4, True)
    assert [a.name for a in SchemaVersion.objects.get(category=category, version=1).attributes.all()] == [
        "Brand"
    ]


def test_it_edits_reorders_and_deletes_keeping_every_old_version(client_for, alice):
    category = make_category("TV", AttributeData("Brand"), AttributeData("Color"), AttributeData("Size"))
    client = client_for(alice)
    client.post(
        reverse("catalog:attribute_edit", args=[category.pk, 1]),
        {"base_version": 1, "edit-name": "Colour", "edit-kind": "enum", "edit-allowed_values": "black, silver",
         "edit-max_tokens": 3},
        **HTMX,
    )  # fmt: skip
    client.post(
        reverse("catalog:attribute_move", args=[category.pk, 2]),
        {"base_version": 2, "direction": "up"},
        **HTMX,
    )
    client.post(reverse("catalog:attribute_delete", args=[category.pk, 0]), {"base_version": 3}, **HTMX)
    assert names(category) == ["Size", "Colour"]
    colour = category.current_schema.attributes.get(name="Colour")
    assert colour.allowed_values == ["black", "silver"]
    notes = list(category.schema_versions.order_by("version").values_list("note", flat=True))
    assert notes == ["Imported from JSON", "Edited Colour (was Color)", "Moved Size up", "Deleted Brand"]
    old = client.get(reverse("catalog:schema_version", args=[category.pk, 1])).content.decode()
    assert re.findall(r'<td class="strong">(.*?)</td>', old) == ["Brand", "Color", "Size"]
    assert '<span class="badge">v1</span> <span class="muted small">read-only</span>' in old


@pytest.mark.parametrize("seen", ["²", "①", "１", ""])
def test_a_base_version_not_written_in_ascii_digits_changes_nothing(client_for, alice, seen):
    # int() reads "１" as 1: the delete was applied to v1 as if the editor had sent it
    category = make_category("TV", AttributeData("Brand"), AttributeData("Color"))
    response = client_for(alice).post(
        reverse("catalog:attribute_delete", args=[category.pk, 0]), {"base_version": seen}, **HTMX
    )
    said = " ".join(unescape(response.content.decode()).split())
    assert response.status_code == 200  # the editor's own error line, swapped in by htmx
    assert (
        f"base_version: expected a whole number from 1 to 2147483647, got {'nothing' if not seen else repr(seen)}"
        ": the form must send the schema version it shows; nothing was changed"
    ) in said
    assert names(category) == ["Brand", "Color"] and category.schema_versions.count() == 1


def test_it_shows_the_inline_edit_form_as_a_table_row(client_for, alice):
    category = make_category("TV", AttributeData("Brand", "The maker"))
    response = client_for(alice).get(reverse("catalog:attribute_edit", args=[category.pk, 0]), **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith('<tr id="attribute-0"')
    assert 'value="Brand"' in body and 'value="The maker"' in body
    assert 'name="edit-free"' in body and "<dt>Boolean</dt><dd>Yes / no / n/a.</dd>" in body


def test_it_rejects_a_change_made_on_an_old_version(client_for, alice):
    category = make_category("TV", AttributeData("Brand"))
    do_add_attribute(category, 1, AttributeData("Color"), alice)
    response = client_for(alice).post(
        reverse("catalog:attribute_delete", args=[category.pk, 0]), {"base_version": 1}, **HTMX
    )
    assert "you saw v1, it is now v2" in response.content.decode()
    assert names(category) == ["Brand", "Color"]
    with pytest.raises(StaleSchema):
        do_add_attribute(category, 1, AttributeData("Size"), alice)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "Color", "kind": "enum", "allowed_values": "", "max_tokens": 4}, "An enumeration needs at least one allowed value."),
        ({"name": "Size", "kind": "text", "max_tokens": 500}, "Ensure this value is less than or equal to 64."),
        ({"name": "brand", "kind": "text", "max_tokens": 4}, "an attribute named &#x27;brand&#x27; already exists"),
    ],
)  # fmt: skip
def test_it_explains_a_bad_attribute_and_keeps_the_version(client_for, alice, data, message):
    category = make_category("TV", AttributeData("Brand"))
    response = client_for(alice).post(
        reverse("catalog:attribute_add", args=[category.pk]), {"base_version": 1, **data}, **HTMX
    )
    assert message in response.content.decode()
    assert category.schema_versions.count() == 1


def test_it_exports_and_imports_a_schema_as_json(client_for, alice):
    category = make_category(
        "TV", AttributeData("Brand", "Maker", max_tokens=6), AttributeData("Size", kind="number", unit="in")
    )
    client = client_for(alice)
    exported = json.loads(client.get(reverse("catalog:schema_export", args=[category.pk])).content)
    assert exported["category"] == "TV"
    assert [a["name"] for a in exported["attributes"]] == ["Brand", "Size"]
    assert exported["attributes"][1]["unit"] == "in"
    exported["category"] = "Monitor"
    upload = SimpleUploadedFile("monitor.json", json.dumps(exported).encode())
    response = client.post(reverse("catalog:schema_import"), {"file": upload})
    monitor = Category.objects.get(name="Monitor")
    assert response["Location"] == reverse("catalog:schema", args=[monitor.pk])
    assert names(monitor) == ["Brand", "Size"]
    again = SimpleUploadedFile("monitor.json", json.dumps(exported).encode())
    client.post(reverse("catalog:schema_import"), {"file": again})
    assert monitor.schema_versions.count() == 1  # the same schema twice writes nothing


def test_it_exports_an_old_version_on_request(client_for, alice):
    category = make_category("TV", AttributeData("Brand"))
    do_add_attribute(category, 1, AttributeData("Color"), alice)
    response = client_for(alice).get(reverse("catalog:schema_export", args=[category.pk]) + "?version=1")
    assert [a["name"] for a in json.loads(response.content)["attributes"]] == ["Brand"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "The schema file is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2."),
        (b'{"category": "TV", "attributes": [{"name": "Size", "kind": "colour"}]}',
         "attributes[0]: kind &#x27;colour&#x27; is not one of text, number, enum, boolean"),
        (b'{"category": "TV", "attributes": [{"name": "A"}, {"name": "B", "max_tokens": 0}]}',
         "attributes[1]: token budget must be a whole number from 1 to 64"),
        (b'{"attributes": []}', "&#x27;category&#x27; must be a non-empty string"),
        (b'{"category": "TV", "attributes": [{"name": "A", "colour": 1}]}', "attributes[0]: unknown field(s) colour"),
    ],
)  # fmt: skip
def test_it_explains_a_bad_schema_file_and_stores_nothing(client_for, alice, content, message):
    response = client_for(alice).post(
        reverse("catalog:schema_import"), {"file": SimpleUploadedFile("s.json", content)}
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Category.objects.count() == 0


def test_it_lets_reviewers_read_schemas_but_not_change_them(client_for, bob):
    category = make_category("TV", AttributeData("Brand"))
    client = client_for(bob)
    assert client.get(reverse("catalog:schema", args=[category.pk])).status_code == 200
    response = client.post(reverse("catalog:attribute_delete", args=[category.pk, 0]), {"base_version": 1})
    assert response.status_code == 403
    assert names(category) == ["Brand"]


def test_it_imports_a_list_of_schemas_all_or_nothing(client_for, alice):
    client = client_for(alice)
    good = {"category": "TV", "attributes": [{"name": "Brand"}]}
    bad = {"category": "Shoes", "attributes": [{"name": "Size", "max_tokens": 999}]}
    response = client.post(
        reverse("catalog:schema_import"),
        {"file": SimpleUploadedFile("s.json", json.dumps([good, bad]).encode())},
    )
    assert (
        "schema 2 of 2: attributes[0]: token budget must be a whole number from 1 to 64"
        in response.content.decode()
    )
    assert Category.objects.count() == 0
    demo = (Path(__file__).resolve().parents[2] / "catalog" / "demo" / "schemas.json").read_bytes()
    response = client.post(reverse("catalog:schema_import"), {"file": SimpleUploadedFile("demo.json", demo)})
    assert response["Location"] == reverse("catalog:schemas")
    assert Category.objects.count() == 10


def test_each_type_says_what_it_makes_the_decoder_do():
    Kind = Attribute.Kind
    assert Kind.TEXT.decoding() == "Copied from the product text, or n/a."
    assert Kind.TEXT.decoding(free=True).startswith("Written by the model")
    assert Kind.ENUM.decoding() == "One of the allowed values, or n/a."
    assert Kind.BOOLEAN.decoding() == "Yes / no / n/a."
    assert Kind.NUMBER.decoding(unit="kg") == "A number with a unit, converted to kg, or n/a."
    assert [kind for kind, _ in Kind.decodings()] == [
        "Text", "Text, free", "Number with unit", "Enumeration", "Boolean"
    ]  # fmt: skip


def test_the_editor_shows_what_each_attribute_and_each_type_makes_the_decoder_do(client_for, alice):
    category = make_category(
        "TV",
        AttributeData("Brand"),
        AttributeData("Series", free=True),
        AttributeData("Size", kind="number", unit="in"),
        AttributeData("Panel", kind="enum", allowed_values=["OLED", "LCD"]),
        AttributeData("Smart", kind="boolean"),
    )
    body = client_for(alice).get(reverse("catalog:schema", args=[category.pk])).content.decode()
    rows = re.findall(r'<tr id="attribute-\d+".*?</tr>', body, re.S)
    sentences = [re.search(r'<div class="decoding small">(.*?)</div>', row).group(1) for row in rows]
    assert sentences == [
        "Copied from the product text, or n/a.",
        "Written by the model (a normalized value, not necessarily in the text), or n/a.",
        "A number with a unit, converted to in, or n/a.",
        "One of the allowed values, or n/a.",
        "Yes / no / n/a.",
    ]
    assert re.search(r'<td>text, free\s*<div class="decoding small">', rows[1])  # its type cell
    add_form = re.search(r'<form id="add-attribute".*?</form>', body, re.S).group(0)
    assert "<dt>Text, free</dt><dd>Written by the model" in add_form
    assert (
        "<dt>Number with unit</dt><dd>A number with a unit, converted to the attribute&#x27;s unit"
        in add_form
    )
    assert '<input type="checkbox" name="free"' in add_form
    version = client_for(alice).get(reverse("catalog:schema_version", args=[category.pk, 1])).content.decode()
    # the read-only page of a version says it too
    assert re.findall(r'<div class="decoding small">(.*?)</div>', version) == sentences


def test_marking_a_text_attribute_free_makes_a_new_version(client_for, alice):
    category = make_category("TV", AttributeData("Series", max_tokens=6))
    response = client_for(alice).post(
        reverse("catalog:attribute_edit", args=[category.pk, 0]),
        {"base_version": 1, "edit-name": "Series", "edit-kind": "text", "edit-max_tokens": 6, "edit-free": "on"},
        **HTMX,
    )  # fmt: skip
    assert "Saved as v2: Edited Series" in response.content.decode()
    assert category.current_schema.attributes.get().free is True
    assert SchemaVersion.objects.get(category=category, version=1).attributes.get().free is False


def test_free_is_kept_for_text_only(client_for, alice):
    category = make_category("TV", AttributeData("Brand"))
    client_for(alice).post(
        reverse("catalog:attribute_add", args=[category.pk]),
        {"base_version": 1, "name": "Smart", "kind": "boolean", "max_tokens": 4, "free": "on"},
        **HTMX,
    )
    assert category.current_schema.attributes.get(name="Smart").free is False


def test_the_free_flag_travels_in_the_schema_file(client_for, alice):
    category = make_category("TV", AttributeData("Series", free=True))
    client = client_for(alice)
    exported = json.loads(client.get(reverse("catalog:schema_export", args=[category.pk])).content)
    assert exported["attributes"][0]["free"] is True
    exported["attributes"][0]["free"] = "yes"
    upload = SimpleUploadedFile("tv.json", json.dumps(exported).encode())
    response = client.post(reverse("catalog:schema_import"), {"file": upload})
    assert response.status_code == 400
    assert "attributes[0].free must be true or false" in response.content.decode()


def test_the_free_flag_reaches_the_engine(db):
    from runner.decoding import attribute_specs

    category = make_category(
        "TV",
        AttributeData("Brand"),
        AttributeData("Series", free=True),
        AttributeData("Panel", kind="enum", allowed_values=["OLED", "LCD"]),
    )
    specs = attribute_specs(category.current_schema.pk)
    assert [(s.name, s.kind, s.free, s.allowed_values) for s in specs] == [
        ("Brand", "text", False, ()),
        ("Series", "text", True, ()),
        ("Panel", "enum", False, ("OLED", "LCD")),
    ]
