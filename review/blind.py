"""Blind labelling: a reviewer types each attribute of a product having seen no model output.

The labels are gold of provenance "blind", which scores every run (review/quality.py) and is the
only evidence auto-accept trusts (review/precision.py). They are their own pool: products are served
in a seeded random order over the catalog (and optionally a category), whatever other gold they
have, so the products labelled so far are a uniform sample of the catalog, never the ones a run or
a reviewer left over. Nothing here reads extracted values, so nothing of any run can reach the page.
"""

import hashlib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import CharField, Exists, OuterRef, Value
from django.db.models.functions import MD5, Cast, Concat

from catalog.models import Attribute, Catalog, Category, Product
from extraction.normalize import checked_value
from review.actions import MAX_VALUE_LENGTH
from review.models import GoldValue

Provenance = GoldValue.Provenance


class BlindLabelError(ValueError):
    """Labels that cannot be stored; `errors` maps each attribute name to what is wrong with it."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {why}" for name, why in errors.items()))


@dataclass(frozen=True)
class Selection:
    """The products a blind labelling session walks through."""

    catalog: Catalog
    category: Category | None = None

    def products(self):
        products = Product.objects.filter(catalog=self.catalog)
        return products.filter(category=self.category) if self.category else products

    def unlabelled(self):
        """Products with no blind label yet (gold of other kinds does not count)."""
        return self.products().exclude(Exists(blind_gold().filter(product=OuterRef("pk"))))

    def next_product(self, after: int | None = None) -> Product | None:
        """The next unlabelled product in the sample's order after `after`, else from the start: a
        skipped product comes round again once the others are done."""
        todo = self.unlabelled().annotate(draw=draw_of()).select_related("category").order_by("draw", "pk")
        if after is None:
            return todo.first()
        return todo.filter(draw__gt=draw(after)).first() or todo.first()

    def progress(self) -> tuple[int, int]:
        """(products labelled blind, products) in the selection."""
        total = self.products().count()
        return total - self.unlabelled().count(), total

    def as_params(self) -> dict[str, int]:
        params = {"catalog": self.catalog.pk}
        if self.category:
            params["category"] = self.category.pk
        return params


def blind_gold():
    return GoldValue.objects.filter(provenance=Provenance.BLIND)


# The sample's seed: a product's place in the order is md5(SEED:product id), in PostgreSQL and here
# alike, so every labeller walks the same random permutation and a prefix of it is a uniform sample.
SAMPLE_SEED = "slotwise-blind-sample-1"


def draw_of():
    """The product's place in the seeded sample, as a query expression."""
    return MD5(Concat(Value(f"{SAMPLE_SEED}:"), Cast("pk", CharField())))


def draw(product_id: int) -> str:
    """draw_of() for one product id, computed here."""
    return hashlib.md5(f"{SAMPLE_SEED}:{product_id}".encode()).hexdigest()


def fields_of(product: Product) -> list[Attribute]:
    """The attributes to type, in schema order: the product's category's current schema."""
    schema = product.category.current_schema
    return list(schema.attributes.all()) if schema else []


def clean_label(attribute: Attribute, raw: str) -> str:
    """The label as gold stores it (normalized as the model's values are), or ValueError saying why."""
    text = (raw or "").strip()
    if not text:
        raise ValueError("empty: type the value, or n/a when the product has none")
    if len(text) > MAX_VALUE_LENGTH:
        raise ValueError(f"{len(text)} characters, at most {MAX_VALUE_LENGTH} are allowed")
    return checked_value(text, attribute.kind, attribute.unit, attribute.allowed_values)


def clean_labels(attributes: list[Attribute], submitted: dict[str, str]) -> dict[str, str]:
    """{attribute name: label} for every attribute, or BlindLabelError naming each bad one."""
    labels, errors = {}, {}
    for attribute in attributes:
        try:
            labels[attribute.name] = clean_label(attribute, submitted.get(attribute.name, ""))
        except ValueError as exc:
            errors[attribute.name] = str(exc)
    if errors:
        raise BlindLabelError(errors)
    return labels


class AlreadyLabelled(Exception):
    """Someone labelled the product blind while this reviewer was typing; nothing was stored."""


def do_blind_label(product: Product, schema_id: int, submitted: dict[str, str], user) -> list[GoldValue]:
    """Store one product's blind labels as gold, all or nothing.

    `schema_id` is the schema the page showed: if the category got a new schema version since, the
    fields no longer match and nothing is stored. A blind label replaces gold made by reviewing a
    model value (it is the better evidence) but never another blind label.
    """
    schema = product.category.current_schema
    if schema is None or schema.pk != schema_id:
        raise BlindLabelError(
            {"schema": "the category's schema changed since the page was shown; type the labels again"}
        )
    labels = clean_labels(list(schema.attributes.all()), submitted)
    with transaction.atomic():
        Product.objects.select_for_update().filter(pk=product.pk).first()  # one labeller at a time
        if GoldValue.objects.filter(product=product, schema=schema, provenance=Provenance.BLIND).exists():
            raise AlreadyLabelled(
                f"{product.sku} was labelled blind by someone else meanwhile; nothing was saved"
            )
        return [
            GoldValue.objects.update_or_create(
                product=product,
                attribute_name=name,
                schema=schema,
                defaults={
                    "value": value,
                    "source": None,
                    "provenance": Provenance.BLIND,
                    "from_run": None,
                    "approved_by": user,
                },
            )[0]
            for name, value in labels.items()
        ]
