"""slotwise/params.py: whole numbers, fractions, ids and prices from request parameters, ASCII digits
only."""

from decimal import Decimal

import pytest
from django.http import QueryDict

from slotwise.params import (
    MAX_ID,
    ParameterError,
    choice,
    optional_id,
    optional_ids,
    optional_price,
    optional_version,
    parse_number,
    parse_whole_number,
    whole_number,
)

# Text str.isdigit() or int() / Decimal() take for digits, though no form of ours writes them.
NOT_ASCII_DIGITS = ["²", "①", "１", "٣", "12²"]


@pytest.mark.parametrize("raw", [*NOT_ASCII_DIGITS, "", " 1", "1.0", "1_000", "+1", "1e3", "0x10", "9" * 31])
def test_it_refuses_what_is_not_ascii_digits(raw):
    with pytest.raises(ParameterError) as refused:
        parse_whole_number(raw, "page")
    assert str(refused.value) == f"page: expected a whole number from 0 to {MAX_ID}, got {raw!r}"


@pytest.mark.parametrize(("raw", "number"), [("0", 0), ("7", 7), ("007", 7), (str(MAX_ID), MAX_ID)])
def test_it_reads_ascii_digits(raw, number):
    assert parse_whole_number(raw, "page") == number


def test_it_refuses_a_number_out_of_range_saying_what_it_expected():
    with pytest.raises(ParameterError, match=r"^version: expected a version, got '-1'$"):
        parse_whole_number("-1", "version", minimum=0, expected="a version")
    with pytest.raises(ParameterError, match="expected a whole number from 1 to 3, got '4'"):
        parse_whole_number("4", "n", minimum=1, maximum=3)
    assert parse_whole_number("-2", "offset", minimum=-5) == -2


def test_the_parameter_readers_share_the_rule():
    params = QueryDict(mutable=True)
    params.update({"run": " 12 ", "blank": " ", "bad": "١٢", "ids": "3, 4,3", "price": "2.499", "v": "2"})
    assert optional_id(params, "run") == 12 and optional_id(params, "blank") is None
    assert optional_id(params, "absent") is None
    assert optional_ids(params, "ids") == {3, 4} and optional_ids(params, "blank") == set()
    assert optional_version(params, "v") == 2 and whole_number(params, "v", 1, 2) == 2
    assert optional_price(params, "price") == Decimal("2.50")
    for read in (optional_id, optional_ids, optional_version, optional_price, whole_number):
        with pytest.raises(ParameterError, match=r"^bad: expected .*, got '١٢'$"):
            read(params, "bad")
    with pytest.raises(ParameterError, match="^blank: expected a whole number from 0 to .*, got nothing$"):
        whole_number(params, "blank")


@pytest.mark.parametrize("raw", ["1,²", "1,,2", "1,0", "①"])
def test_a_list_of_ids_with_one_bad_item_is_refused_whole(raw):
    with pytest.raises(ParameterError) as refused:
        optional_ids({"on_page": raw}, "on_page")
    assert str(refused.value) == (
        f"on_page: expected the ids of rows (1 or more) separated by commas, got {raw!r}"
    )


@pytest.mark.parametrize("raw", ["NaN", "inf", "-1", "1e2", "10000.01", "１.５", "1,5"])
def test_it_refuses_a_price_that_is_not_one(raw):
    with pytest.raises(ParameterError, match=r"^price: expected a price per hour from 0 to 10000, got "):
        optional_price({"price": raw}, "price")


# float() reads all of these but "", ".", "1,5", "0x1" and "1e" (and "1e999" as infinity).
NOT_FRACTIONS = ["０.５", "0.５", "", " 1", ".", "1,5", "1_0", "0x1", "nan", "inf", "1e", "1e999", "9" * 31]


@pytest.mark.parametrize("raw", [*NOT_ASCII_DIGITS, *NOT_FRACTIONS])
def test_it_refuses_a_fraction_that_is_not_ascii_digits(raw):
    with pytest.raises(ParameterError) as refused:
        parse_number(raw, "min_confidence", "a number from 0 to 1")
    assert str(refused.value) == f"min_confidence: expected a number from 0 to 1, got {raw!r}"


@pytest.mark.parametrize(
    ("raw", "number"),
    [("0", 0.0), ("98", 98.0), ("0.5", 0.5), (".5", 0.5), ("1.", 1.0), ("-0.25", -0.25), ("1e-05", 1e-05)],
)
def test_it_reads_a_fraction_in_ascii_digits(raw, number):
    assert parse_number(raw, "min_confidence") == number


def test_a_choice_is_one_of_its_values_or_the_default_when_blank():
    choices = ("all", "needs-review")
    assert choice(QueryDict("f=needs-review"), "f", choices, "all") == "needs-review"
    assert choice(QueryDict("f=+"), "f", choices, "all") == "all"
    with pytest.raises(ParameterError, match="f: expected one of all, needs-review, got 'All'"):
        choice(QueryDict("f=All"), "f", choices, "all")
