"""A run decodes each attribute with at least the size its data needs (extraction/sizes.py): the
larger of its schema's size and the suggestion from the run's model's training data and the
category's known values; recorded when the run starts, read by the worker, said on the run page."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from catalog import budgets
from catalog.schemas import AttributeData
from extraction.services import RunRequest, do_start_run
from extraction.sizes import sizes_of
from runner import decoding
from tests.support.catalog import make_category
from tests.support.factories import make_catalog, make_product

pytestmark = pytest.mark.django_db
LONG = "Blueberry Lemon Verbena with Chamomile and a Hint of Mint"


def start(catalog, **kwargs):
    return do_start_run(RunRequest(decoder="hpd", catalog=catalog, **kwargs))[0]


def test_a_run_decodes_a_too_small_attribute_with_its_suggested_size_and_never_shrinks_one():
    category = make_category(
        "Tea", AttributeData("Flavor", max_tokens=4), AttributeData("Never seen before", max_tokens=40)
    )
    catalog = make_catalog()
    make_product(catalog, category, known_values={"Flavor": LONG})
    run = start(catalog)
    schema = category.current_schema
    sizes = sizes_of(run.decode_settings, schema.pk)
    wanted = budgets.suggested(category, "Flavor").tokens
    assert wanted > 4 and sizes["Flavor"] == wanted
    assert sizes["Never seen before"] == 40  # larger than any suggestion: the schema's size stands

    # what the worker hands the engine for this run
    specs = decoding.attribute_specs(schema.pk, sizes_of(run.decode_settings, schema.pk))
    assert {s.name: s.max_tokens for s in specs} == {"Flavor": wanted, "Never seen before": 40}
    # a run started before runs were sized decodes with the schema's own sizes
    assert [s.max_tokens for s in decoding.attribute_specs(schema.pk, sizes_of({}, schema.pk))] == [4, 40]


def test_the_sizes_come_from_the_runs_model():
    """The fast model's training data, not the default model's, sizes a run of the fast model."""
    category = make_category("Tea", AttributeData("Capacity", max_tokens=2))
    catalog = make_catalog()
    make_product(catalog, category)
    fast = start(catalog, model_dir=settings.FAST_MODEL_DIR)
    fast_trained = budgets._trained(Path(settings.FAST_MODEL_DIR))["Capacity"]
    assert sizes_of(fast.decode_settings, category.current_schema.pk)["Capacity"] == fast_trained


def test_the_run_page_says_per_attribute_which_schemas_to_resize_in_words(client_for, alice, bob):
    """One line per attribute however many categories share it, each category's schema linked, no
    token counts; an attribute whose schema has room, or whose size nothing knows better, is not
    listed; reviewers read the same page."""
    catalog = make_catalog()
    categories = [
        make_category(
            name,
            AttributeData("Flavor", max_tokens=4),
            AttributeData("Brand", max_tokens=40),
            AttributeData("Never seen before", max_tokens=3),
        )
        for name in ("Tea", "Coffee", "Cocoa")
    ]
    for category in categories:
        make_product(catalog, category, known_values={"Flavor": LONG})
    run = start(catalog)
    for user in (alice, bob):
        body = client_for(user).get(reverse("extraction:detail", args=[run.pk])).content.decode()
        section = body.split('id="run-sizes"', 1)[1].split("</div>", 1)[0]
        assert "1 attribute with values longer than its schema allows" in section
        assert section.count("<li>") == 1 and "<strong>Flavor</strong>: resize it on the schema of" in section
        links = [f'<a href="{reverse("catalog:schema", args=[c.pk])}">{c.name}</a>' for c in categories]
        assert ", ".join(sorted(links, key=lambda link: link.rsplit(">", 2)[1])) in section  # by name
        assert "Brand" not in section and "Never seen" not in section and "tokens" not in section


def test_a_run_whose_schemas_have_room_says_nothing_about_sizes(client_for, alice):
    category = make_category("Tea", AttributeData("Flavor", max_tokens=40))
    catalog = make_catalog()
    make_product(catalog, category, known_values={"Flavor": LONG})
    body = client_for(alice).get(reverse("extraction:detail", args=[start(catalog).pk])).content.decode()
    assert 'id="run-sizes"' not in body
