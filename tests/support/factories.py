"""Rows for tests, made directly through the ORM (no GPU worker, no import file needed).

Each factory takes only what a test cares about and fills in the rest; counters keep names unique.
"""

import itertools

from django.utils import timezone

from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion
from extraction.models import ExtractedValue, Run, WorkItem
from review.opening import open_reviews

_counter = itertools.count(1)


def make_catalog(name: str | None = None) -> Catalog:
    return Catalog.objects.create(name=name or f"Catalog {next(_counter)}")


def make_schema(
    category: str | Category = "Shoes",
    attributes: list[str] | tuple[str, ...] = ("Brand", "Color"),
    version: int | None = None,
) -> SchemaVersion:
    """A schema version of `category` (created when given by name) with text attributes."""
    if isinstance(category, str):
        category, _ = Category.objects.get_or_create(name=category)
    if version is None:
        latest = category.current_schema
        version = latest.version + 1 if latest else 1
    schema = SchemaVersion.objects.create(category=category, version=version)
    for position, name in enumerate(attributes):
        Attribute.objects.create(schema=schema, position=position, name=name, max_tokens=8)
    return schema


def make_product(
    catalog: Catalog,
    category: Category,
    title: str | None = None,
    description: str = "",
    sku: str | None = None,
    known_values: dict | None = None,
) -> Product:
    n = next(_counter)
    return Product.objects.create(
        catalog=catalog,
        category=category,
        sku=sku or f"SKU-{n:05d}",
        title=title or f"Product {n}",
        description=description,
        known_values=known_values or {},
    )


def make_run(
    products: list[Product],
    schema: SchemaVersion | None = None,
    decoder: str = Run.Decoder.HPD,
    status: str = Run.Status.DONE,
    **fields,
) -> Run:
    """A finished run over `products` with one done work item each (values are added separately).

    Without `schema`, each product is read with its category's current schema.
    """
    now = timezone.now()
    schemas = {p.pk: schema or p.category.current_schema for p in products}
    run = Run.objects.create(
        decoder=decoder,
        status=status,
        catalog=products[0].catalog if products else None,
        category=schema.category if schema else None,
        model_dir="models/test",
        model_name="test-model",
        total=len(products),
        done=len(products) if status == Run.Status.DONE else 0,
        started_at=now,
        finished_at=now if status == Run.Status.DONE else None,
        **fields,
    )
    run.schema_versions.add(*set(schemas.values()))
    WorkItem.objects.bulk_create(
        WorkItem(
            run=run,
            product=product,
            schema=schemas[product.pk],
            status=WorkItem.Status.DONE if status == Run.Status.DONE else WorkItem.Status.QUEUED,
        )
        for product in products
    )
    return run


def make_value(
    run: Run, product: Product, attribute: Attribute, value: str, confidence: float = 0.5, **fields
) -> ExtractedValue:
    made = ExtractedValue.objects.create(
        run=run,
        product=product,
        attribute=attribute,
        raw_text=value,
        value=value,
        confidence=confidence,
        **fields,
    )
    open_reviews([made])  # as the worker does when it writes values
    return made


def make_values(run: Run, values: dict[tuple[Product, Attribute], tuple[str, float]]) -> list[ExtractedValue]:
    """Many values at once: {(product, attribute): (value, confidence)}."""
    made = ExtractedValue.objects.bulk_create(
        ExtractedValue(run=run, product=p, attribute=a, raw_text=v, value=v, confidence=c)
        for (p, a), (v, c) in values.items()
    )
    open_reviews(made)
    return made


def link_runs(first: Run, second: Run) -> None:
    """Link two runs over the same products (HPD and AR) both ways, as the run service does."""
    first.linked_run = second
    first.save(update_fields=["linked_run"])
    # linked_run is one-to-one, so the second run points back through `linked_from`.


def make_scenario(
    products: int = 3,
    attributes: tuple[str, ...] = ("Brand", "Color"),
    category: str = "Shoes",
    decoder: str = Run.Decoder.HPD,
    value_of=None,
):
    """A catalog of `products` products, one run over them, one value per (product, attribute).

    value_of(i, attribute_name) -> (value, confidence); by default "Brand<i>"-style values that
    occur in the product's title, with confidence rising with i.
    Returns a namespace: catalog, schema, attributes (by name), products, run, values (list).
    """
    from types import SimpleNamespace

    schema = make_schema(category, attributes)
    attrs = {a.name: a for a in schema.attributes.all()}
    catalog = make_catalog()
    value_of = value_of or (
        lambda i, name: (f"{name.lower()}{i}", round(0.1 + 0.8 * i / max(products, 1), 4))
    )
    items = []
    for i in range(products):
        words = " ".join(value_of(i, name)[0] for name in attributes)
        items.append(make_product(catalog, schema.category, title=f"Item {i} {words}", sku=f"S{i:04d}"))
    run = make_run(items, schema, decoder=decoder)
    values = make_values(
        run, {(p, attrs[n]): value_of(i, n) for i, p in enumerate(items) for n in attributes}
    )
    return SimpleNamespace(
        catalog=catalog, schema=schema, attributes=attrs, products=items, run=run, values=values
    )


def make_review_choices():
    """Six products of one "Flavor" attribute read by a finished HPD run and a linked AR run, made
    so that the queue's three orders each put a different value first or third:

    - four Bob's Red Mill products read "Corn Grits" at confidence 0.2 (one pattern, repeated),
    - an Acme product read "Vanilla" at 0.3,
    - a Zest product read "Lemon" at 0.95, where AR read "Lime" (the only disagreement).

    Returns a namespace: run (HPD), ar, values (by name: bob1..bob4, acme, zest), products (same).
    """
    from types import SimpleNamespace

    schema = make_schema("Pantry", ("Flavor",))
    flavor = schema.attributes.get()
    catalog = make_catalog()
    said = {f"bob{i}": ("Bob's Red Mill", "Corn Grits", 0.2) for i in range(1, 5)}
    said |= {"acme": ("Acme", "Vanilla", 0.3), "zest": ("Zest", "Lemon", 0.95)}
    products = {
        name: make_product(catalog, schema.category, title=f"{brand} {value} no. {n}", sku=f"P{n}")
        for n, (name, (brand, value, _)) in enumerate(said.items())
    }
    run = make_run(list(products.values()), schema)
    made = make_values(run, {(products[n], flavor): (v, c) for n, (_, v, c) in said.items()})
    ar = make_run(list(products.values()), schema, decoder=Run.Decoder.AR)
    make_values(
        ar, {(products[n], flavor): ("Lime" if n == "zest" else v, 0.5) for n, (_, v, _) in said.items()}
    )
    link_runs(run, ar)
    return SimpleNamespace(run=run, ar=ar, values=dict(zip(said, made, strict=True)), products=products)
