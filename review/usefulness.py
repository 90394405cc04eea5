"""What teaches the model most when a person reviews it: the queue's "most useful" order.

A value is useful to review when the model is likely wrong about it, and most useful when it is
wrong in a way the reviewer has not already seen many times. So a value scores by

    usefulness = DISAGREEMENT_WEIGHT * (HPD and AR disagree) + (1 - calibrated confidence)

(disagreement counts only where the other decoder read the same product: `partner_value` set),
and the order spreads that usefulness over attributes and brands rather than repeating one
pattern: a candidate is discounted by how many better candidates share its attribute, its brand
and its pattern (attribute and value, say "Flavor: Corn Grits/ Polenta" on every Bob's Red Mill
product):

    score = usefulness / (1 + sum over groups g of SPREAD_WEIGHTS[g] * (better candidates in g))

That is the order a greedy pick takes ("next, the candidate whose usefulness, discounted by how
many picked candidates share its groups, is highest") when each group's better candidates are
picked before it; with one kind of group it is exactly the greedy order. Computed by sorting, in
O(n log n), so a run of tens of thousands of values ranks in a fraction of a second, where a
greedy loop would rescore every candidate after each pick.

Pure functions over plain data (no Django, no database): the review queue (review/useful_order.py)
ranks values with rank_values, and a benchmark that "reviews" N products picks them with
rank_products.
"""

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from extraction.domain import values_agree

# A disagreement between the two decoders is worth as much as a value read with no confidence.
DISAGREEMENT_WEIGHT = 1.0
# How strongly each better candidate sharing a group discounts a candidate. A repeated pattern
# (same attribute, same value) teaches least; a brand's house style is worth several looks; an
# attribute is only spread lightly (a schema's attributes are few and each has many values).
SPREAD_WEIGHTS = {"pattern": 1.0, "brand": 0.25, "attribute": 0.05}


@dataclass(frozen=True)
class Candidate:
    """One value a reviewer could look at. `key`: the caller's id for it (the value's id);
    `partner_value`: the other decoder's value for the same product and attribute, None when that
    run is missing or did not read the product; `cut`: the value filled its token budget."""

    key: Hashable
    product: Hashable
    attribute: str
    brand: str
    value: str
    confidence: float
    partner_value: str | None = None
    cut: bool = False

    @property
    def disagrees(self) -> bool:
        return self.partner_value is not None and not values_agree(self.value, self.partner_value)

    @property
    def pattern(self) -> tuple[str, str]:
        return (self.attribute, self.value.casefold())


def usefulness(candidate: Candidate) -> float:
    """How likely the model is wrong here, before any spreading: 0 (sure, and both decoders
    agree) to 1 + DISAGREEMENT_WEIGHT (no confidence, and they disagree)."""
    return DISAGREEMENT_WEIGHT * candidate.disagrees + (1.0 - candidate.confidence)


def brand_of(title: str, known_values: dict | None = None) -> str:
    """A product's brand for spreading: the catalog's known brand when it has one, else the
    title's first word (listings start with the brand: "Bob's Red Mill Corn Grits ...")."""
    for name, value in (known_values or {}).items():
        if name.casefold() == "brand" and str(value).strip():
            return str(value).strip().casefold()
    words = title.split()
    return words[0].casefold() if words else ""


def _spread(items: list, worth: Callable, groups: Callable, weights: dict[str, float]) -> dict:
    """{item: worth discounted by the better items in each of its groups}, as the module says.

    `groups(item)` -> {group kind: group key}; items are walked best first (ties in their order in
    `items`), counting per group how many came before."""
    best_first = sorted(range(len(items)), key=lambda i: -worth(items[i]))
    before: dict[tuple, int] = defaultdict(int)
    scores = {}
    for i in best_first:
        item = items[i]
        keys = [(kind, key) for kind, key in groups(item).items()]
        scores[i] = worth(item) / (1.0 + sum(weights[kind] * before[(kind, key)] for kind, key in keys))
        for group in keys:
            before[group] += 1
    return scores


def _tie_order(candidate: Candidate) -> tuple:
    return (candidate.confidence, candidate.key)


def _value_groups(candidate: Candidate) -> dict:
    return {"pattern": candidate.pattern, "brand": candidate.brand, "attribute": candidate.attribute}


def rank_values(candidates: Iterable[Candidate]) -> list[Hashable]:
    """The candidates' keys, most useful to review first.

    Values cut by the token budget come first whatever their score (a person must read them, as in
    every order of the queue); ties go to the lower confidence, then to the lower key."""
    items = sorted(candidates, key=_tie_order)
    scores = _spread(items, usefulness, _value_groups, SPREAD_WEIGHTS)
    order = sorted(
        range(len(items)),
        key=lambda i: (not items[i].cut, -scores[i], items[i].confidence, items[i].key),
    )
    return [items[i].key for i in order]


def rank_products(candidates: Iterable[Candidate]) -> list[Hashable]:
    """Products, most useful to review first: reviewing a product teaches all its values.

    A product is worth the sum of its values' usefulness, each spread over attributes and patterns
    (a product whose values repeat patterns better products show counts less); products are then
    spread over brands, so that N reviewed products cover many brands' house styles. Ties go to
    the lower product key."""
    items = sorted(candidates, key=_tie_order)
    value_weights = {kind: w for kind, w in SPREAD_WEIGHTS.items() if kind != "brand"}
    value_scores = _spread(
        items, usefulness, lambda c: {"pattern": c.pattern, "attribute": c.attribute}, value_weights
    )
    worth: dict[Hashable, float] = defaultdict(float)
    brand: dict[Hashable, str] = {}
    for i, candidate in enumerate(items):
        worth[candidate.product] += value_scores[i]
        brand.setdefault(candidate.product, candidate.brand)
    products = sorted(worth, key=lambda p: (-worth[p], p))  # a stable, seed-free start
    scores = _spread(
        products, worth.__getitem__, lambda p: {"brand": brand[p]}, {"brand": SPREAD_WEIGHTS["brand"]}
    )
    order = sorted(range(len(products)), key=lambda i: (-scores[i], i))
    return [products[i] for i in order]
