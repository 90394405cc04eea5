"""A catalog with reviewed gold for training-job tests, and tiny jobs of the real trainer.

Gold is made as reviewers make it (typed blind, a correction, an acceptance by hand), plus values
that must never teach the model (the catalog's known values). A tiny job trains a few steps of short
rows on the real small model: the trainer is the engine's, only its size is cut for speed.
"""

from extraction.engine.splits import DEFAULT_DATA
from review.models import GoldValue
from tests.support.runs_catalog import make_catalog
from training.services import JobRequest, start_training_job

Provenance = GoldValue.Provenance
# The values a reviewer typed for the run catalog's titles (tests/support/runs_catalog.py)
SHOE_GOLD = {
    "Diesel": "black", "Nike": "blue", "Adidas": "white", "Clarks": "beige", "Vans": "black", "Birkenstock": "brown",
}  # fmt: skip
# The worker of a tiny job: OA-Mine's train split alone as the public data mixed in (quick to load),
# a checkpoint after every step, a heartbeat every second.
TINY_JOB_ENV = {
    "TRAINING_PUBLIC_DATA": str(DEFAULT_DATA / "oa-mine"),
    "TRAINING_CHECKPOINT_MINUTES": "0.001",
    "TRAINING_HEARTBEAT_SECONDS": "1",
}


def reviewed_catalog(name: str = "Reviewed shop"):
    """The run catalog (6 shoes, 4 coffees) with gold on its shoes: brand and colour of two typed
    blind, two corrected, two accepted; the coffees only with the catalog's known values."""
    catalog = make_catalog(name)
    kinds = [Provenance.BLIND, Provenance.BLIND, Provenance.CORRECTED, Provenance.CORRECTED,
             Provenance.ACCEPTED, Provenance.ACCEPTED]  # fmt: skip
    shoes = catalog.products.filter(category__name="Shoes").order_by("sku")
    for product, kind in zip(shoes, kinds, strict=True):
        schema = product.category.current_schema
        brand = product.title.split()[0]
        for attribute, value in (("Brand", brand), ("Color", SHOE_GOLD[brand])):
            GoldValue.objects.create(product=product, attribute_name=attribute, schema=schema, value=value,
                                     provenance=kind)  # fmt: skip
    for product in catalog.products.filter(category__name="Coffee"):
        GoldValue.objects.create(product=product, attribute_name="Brand", schema=product.category.current_schema,
                                 value=product.title.split()[0], provenance=Provenance.CATALOG)  # fmt: skip
    return catalog


def tiny_job(catalog, minutes: float = 3.0, max_steps: int = 2, user=None):
    """A real job cut small: `max_steps` steps of 128-token rows, a third of the products held back."""
    request = JobRequest(
        catalog, minutes=minutes, holdout_share=0.34, seed=1, max_steps=max_steps, batch_tokens=128
    )
    return start_training_job(request, user=user)
