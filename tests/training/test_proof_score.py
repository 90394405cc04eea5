"""The scorer of a training job's proof (and of the learning curve): every accepted form of a pair
counts, an attribute the model no longer decodes is left out, and the interval needs 20 products."""

import pytest

from runner.training.evaluation import score


def test_any_accepted_form_is_right_and_an_attribute_not_decoded_is_left_out():
    predictions = {1: {"Brand": "acme", "Size": "10 oz"}, 2: {"Brand": "zenith", "Size": "n/a"}}
    gold = {
        1: {
            "Brand": ["Acme Foods", "acme"],
            "Size": ["10 oz"],
            "Gone": ["x"],
        },  # "Gone": not in the schema now
        2: {"Brand": ["Zenith Inc"], "Size": ["3 lb"]},
    }
    result = score(predictions, gold, {1: "Food", 2: "Food"})
    # 1: two right (one by its second form); 2: a wrong value (VW) and n/a where gold has one (NV)
    assert result["pairs"] == 4 and result["products"] == 2
    assert result["f1"] == pytest.approx(2 * (2 / 3) * (2 / 4) / ((2 / 3) + (2 / 4)))
    assert result["interval"] is None  # under 20 products: no bootstrap interval
    assert set(result["per_attribute"]) == {"Brand", "Size"}


def test_twenty_products_get_an_interval_around_the_f1():
    predictions = {i: {"Brand": "acme" if i % 4 else "other"} for i in range(24)}
    gold = {i: {"Brand": ["acme"]} for i in range(24)}
    result = score(predictions, gold, dict.fromkeys(range(24), "Food"))
    low, high = result["interval"]
    assert low <= result["f1"] <= high and result["f1"] == pytest.approx(0.75)
