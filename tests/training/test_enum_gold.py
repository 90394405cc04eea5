"""A catalog's reviewed gold trains under the prompt its runs decode with: an enumeration as an
enumeration (its allowed values listed in its prompt line, ImplicitAVE's options as a catalog's
schema holds them), a described attribute with its description; a later schema version's word wins,
as its gold does; and a start model that never lists values is not shown such a line."""

import pytest

from catalog.kinds import ENUM, TEXT
from catalog.models import Attribute
from extraction.engine.layout import attribute_line
from extraction.engine.splits import DESCRIPTIONS_KEY, OPTIONS
from extraction.engine.train.corpus import to_example
from extraction.engine.train.fine_tune import REVIEWED, as_prompted
from extraction.engine.train.row_packing import prompted_spec
from review.models import GoldValue
from tests.support.runs_catalog import make_catalog, make_schema
from training.gold import training_records

pytestmark = pytest.mark.django_db

FORMS = ["black", "blue", "white"]


def settle(product, schema, **values: str) -> None:
    for name, value in values.items():
        GoldValue.objects.create(
            product=product,
            attribute_name=name,
            schema=schema,
            value=value,
            provenance=GoldValue.Provenance.CORRECTED,
        )


def prompt_lines(record: dict) -> dict[str, str]:
    """Each attribute's prompt line as a training row of this record writes it."""
    example = to_example(record, REVIEWED)
    return {name: attribute_line(prompted_spec(name, [example])) for name in record["target_scores"]}


@pytest.fixture
def shoe():
    """A catalog's first shoe, its current schema's Color an enumeration of FORMS."""
    catalog = make_catalog("Enumerations")
    shoe = catalog.products.filter(category__name="Shoes").order_by("sku").first()
    Attribute.objects.filter(schema=shoe.category.current_schema, name="Color").update(
        kind=Attribute.Kind.ENUM, allowed_values=FORMS
    )
    return shoe


def test_reviewed_enumerations_train_as_enumerations_under_their_descriptions(shoe):
    catalog, schema = shoe.catalog, shoe.category.current_schema
    settle(shoe, schema, Color="black", Brand="Diesel")

    [record] = training_records(catalog, [shoe.pk])
    assert record[OPTIONS] == {"Color": FORMS}  # the text attribute Brand is no enumeration
    assert record[DESCRIPTIONS_KEY] == {"Brand": "maker", "Color": "main colour"}
    lines = prompt_lines(record)
    assert lines == {
        "Brand": "- Brand: maker",
        "Color": "- Color: main colour (one of: black | blue | white)",
    }
    example = to_example(record, REVIEWED)
    assert prompted_spec("Color", [example]).kind == ENUM and prompted_spec("Brand", [example]).kind == TEXT

    # a start model whose runs never list an enumeration's values trains without that line
    plain = as_prompted([record], {"enum_values_in_prompt": False})
    assert OPTIONS not in plain[0] and prompt_lines(plain[0])["Color"] == "- Color: main colour"
    assert as_prompted([record], {"enum_values_in_prompt": True}) == [record]


def test_a_later_schema_version_replaces_what_an_earlier_one_said(shoe):
    catalog, first = shoe.catalog, shoe.category.current_schema
    settle(shoe, first, Color="black")
    [before] = training_records(catalog, [shoe.pk])
    assert before[OPTIONS] == {"Color": FORMS}

    # version 2 makes Color a text without a description: its gold wins, and nothing of version 1's
    # enumeration or description is left on the record
    second = make_schema("Shoes", [("Brand", "maker", "", 6), ("Color", "", "", 4)])
    settle(shoe, second, Color="jet black")
    [after] = training_records(catalog, [shoe.pk])
    assert after["target_scores"] == {"Color": {"jet black": 1}}
    assert OPTIONS not in after and DESCRIPTIONS_KEY not in after
    assert prompt_lines(after) == {"Color": "- Color"}
