"""Blind labelling: a reviewer types each attribute of a product having seen no model output.

The labels are gold of provenance "blind", which scores every run (review/quality.py). Products are
served in a stable order (by id) among those of a catalog (and optionally a category) that have no
gold yet; nothing here reads extracted values, so nothing of any run can reach the page.
"""

from dataclasses import dataclass

from django.db import transaction

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
        return self.products().filter(gold_values__isnull=True)

    def next_product(self, after: int | None = None) -> Product | None:
        """The first unlabelled product after `after` (by id), else from the start: a skipped
        product comes round again once the others are done."""
        todo = self.unlabelled().select_related("category").order_by("pk")
        return (todo.filter(pk__gt=after).first() if after else None) or todo.first()

    def progress(self) -> tuple[int, int]:
        """(products with gold, products) in the selection."""
        total = self.products().count()
        return total - self.unlabelled().count(), total

    def as_params(self) -> dict[str, int]:
        params = {"catalog": self.catalog.pk}
        if self.category:
            params["category"] = self.category.pk
        return params


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
