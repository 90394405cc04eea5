"""The honest proof of a training job: the held-back products decoded by the old and the new
version, each scored on their reviewed gold with the engine's metric (micro F1, a seeded bootstrap
95% interval over products, review/bootstrap.py) and per attribute.

Worker side: the engine is imported inside the functions, so the web process never loads torch.
Values are normalized as a run's worker writes them (extraction/normalize.py), so the F1 here is
the dashboard's F1 of a run that decoded these products.
"""

import logging
from collections import defaultdict

from catalog.models import Attribute, Product
from extraction.engine import metric
from extraction.normalize import normalize_value
from extraction.sizes import run_sizes
from review.bootstrap import f1_interval
from runner.decoding import attribute_specs

log = logging.getLogger(__name__)

DECODER = "hpd"  # the decoder a run uses by default


def decode(
    model_dir: str, products: list[Product], device: str, should_stop=None
) -> dict[int, dict[str, str]]:
    """{product id: {attribute: normalized value}} for the products under their category's current
    schema, decoded by the model in model_dir (loaded here, dropped after) with the token budgets a
    run of that model would give them (extraction/sizes.py): the proof judges what a run shows."""
    from extraction.engine.api import Document, Extractor
    from extraction.engine.decode.stopping import stop_between_forwards

    extractor = Extractor(model_dir=model_dir, device=device)
    by_schema: dict[int, list[Product]] = defaultdict(list)
    schemas = {}
    for product in products:
        schema = product.category.current_schema
        if schema is not None:
            by_schema[schema.id].append(product)
            schemas[schema.id] = schema
    sizes = run_sizes(list(schemas.values()), model_dir)
    out: dict[int, dict[str, str]] = {}
    with stop_between_forwards(extractor.model, should_stop):
        for schema_id, group in sorted(by_schema.items()):
            attributes = {a.name: a for a in Attribute.objects.filter(schema_id=schema_id)}
            docs = [Document(key=p.sku, text=p.document) for p in group]
            results, _ = extractor.extract(
                docs, attribute_specs(schema_id, sizes[str(schema_id)]), decoder=DECODER
            )
            for product, values in zip(group, results, strict=True):
                out[product.id] = {
                    name: normalize_value(str(r.text), attributes[name].kind, attributes[name].unit,
                                          attributes[name].allowed_values)
                    for name, r in values.items()
                    if name in attributes
                }  # fmt: skip
    return out


def score(
    predictions: dict[int, dict[str, str]], gold: dict[int, dict[str, list[str]]], categories: dict
) -> dict:
    """F1, its interval and per-attribute F1 of predictions on the gold, each pair's accepted forms
    (one typed by a reviewer; several in an AVE file), pairs the model answered."""
    report = metric.Report()
    per_product: dict[int, metric.Counts] = defaultdict(metric.Counts)
    for product_id, answers in gold.items():
        predicted = predictions.get(product_id, {})
        for name, forms in answers.items():
            if name not in predicted:
                continue  # an attribute no longer in the schema: nothing was decoded for it
            kind = report.add(categories[product_id], name, predicted[name], forms)
            per_product[product_id].add(kind)
    interval = f1_interval(list(per_product.values()))
    return {
        "f1": report.micro.f1,
        "interval": list(interval) if interval else None,
        "pairs": report.micro.pairs,
        "products": len(per_product),
        "per_attribute": {name: [c.f1, c.pairs] for name, c in sorted(report.per_attribute.items())},
    }


def compare(
    old_dir: str, new_dir: str, gold: dict[int, dict[str, str]], device: str, should_stop=None
) -> dict:
    """Both versions on the held-back products: {"old": score, "new": score, "changes": [...]}."""
    products = list(Product.objects.filter(pk__in=gold).select_related("category"))
    categories = {p.id: p.category.name for p in products}
    forms = {
        product_id: {name: [value] for name, value in answers.items()} for product_id, answers in gold.items()
    }
    old = score(decode(old_dir, products, device, should_stop), forms, categories)
    new = score(decode(new_dir, products, device, should_stop), forms, categories)
    changes = []
    for name in sorted(set(old["per_attribute"]) | set(new["per_attribute"])):
        before = old["per_attribute"].get(name, [None, 0])
        after = new["per_attribute"].get(name, [None, 0])
        delta = after[0] - before[0] if before[0] is not None and after[0] is not None else None
        changes.append(
            {"attribute": name, "old": before[0], "new": after[0], "change": delta, "pairs": after[1]}
        )
    return {"old": old, "new": new, "changes": changes, "gain": new["f1"] - old["f1"]}


def better_beyond_interval(evaluation: dict) -> bool:
    """The new version beats the old on the held-back gold by more than its interval's half-width
    (the rule for automatic promotion); never without an interval (too few products)."""
    interval = evaluation.get("new", {}).get("interval")
    if not interval:
        return False
    half_width = (interval[1] - interval[0]) / 2
    return evaluation["gain"] > half_width
