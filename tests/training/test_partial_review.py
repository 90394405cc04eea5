"""A reviewer who settles only some attributes of a product (as real reviewers do, and as every
ImplicitAVE product is judged: one attribute each): the training job learns from the attributes
settled and from nothing else (an unreviewed attribute is neither trained as "n/a" nor as the
model's own value), and its proof scores those attributes alone."""

import pytest

from extraction.engine.layout import AttributeSpec, schema_prompt, value_ids
from extraction.engine.modeling import build_tokenizer
from extraction.engine.splits import Split
from extraction.engine.train.corpus import corpus_of, to_example
from extraction.engine.train.fine_tune import REVIEWED
from extraction.engine.train.row_packing import IGNORE, build_row
from review.models import GoldValue
from runner.training.evaluation import score
from tests.support.runs_catalog import make_catalog
from training.gold import held_back_gold, training_records

pytestmark = pytest.mark.django_db

Provenance = GoldValue.Provenance


def settle(product, **values: str) -> None:
    schema = product.category.current_schema
    for name, value in values.items():
        GoldValue.objects.create(
            product=product, attribute_name=name, schema=schema, value=value, provenance=Provenance.CORRECTED
        )


def labelled_tokens(corpus, record) -> tuple:
    """(tokens a training row of this record puts a loss on, the tokenizer, the schema prompt): the
    row laid out as the job's sampler lays it out, with every attribute its group's records name."""
    names = corpus.schemas[(REVIEWED, "Shoes")]
    tokenizer = build_tokenizer([record["input"], *names, "n/a black Diesel Nike JSON Product"])
    specs = [AttributeSpec(name, max_tokens=16) for name in names]
    row = build_row(tokenizer, specs, [to_example(record, REVIEWED)], [])
    return sum(label != IGNORE for label in row.labels), tokenizer, schema_prompt(tokenizer, specs)


def test_a_partly_reviewed_product_trains_and_scores_only_its_reviewed_attributes():
    catalog = make_catalog("Partly reviewed")
    partly, fully = catalog.products.filter(category__name="Shoes").order_by("sku")[:2]
    settle(partly, Color="black")  # Brand left alone
    settle(fully, Color="black", Brand=fully.title.split()[0])

    corpus = corpus_of([Split(REVIEWED, training_records(catalog, [partly.pk, fully.pk]), [])])
    records = {r["input"]: r for r in corpus.groups[(REVIEWED, "Shoes")]}
    assert set(records[partly.document]["target_scores"]) == {"Color"}  # no "n/a" filled in for Brand
    assert set(corpus.schemas[(REVIEWED, "Shoes")]) == {"Brand", "Color"}  # its row lays Brand out

    # training: the loss sits on the settled value's tokens only (its first token on the key's
    # last token, the rest in the slot, the terminator included), none on Brand
    labelled, tokenizer, schema = labelled_tokens(corpus, records[partly.document])
    assert labelled == len(value_ids(tokenizer, "black", schema.terminator))
    # negative control: the fully reviewed shoe's row trains Brand too
    labelled_full, tokenizer, schema = labelled_tokens(corpus, records[fully.document])
    brand = value_ids(tokenizer, fully.title.split()[0], schema.terminator)
    assert labelled_full == len(value_ids(tokenizer, "black", schema.terminator)) + len(brand)

    # the proof: only the settled pair of the partly reviewed shoe is scored, whatever the model says
    gold = held_back_gold(catalog, [partly.pk])
    assert gold == {partly.pk: {"Color": "black"}}
    forms = {pid: {name: [value] for name, value in answers.items()} for pid, answers in gold.items()}
    predicted = {partly.pk: {"Color": "black", "Brand": "a brand nobody checked"}}
    result = score(predicted, forms, {partly.pk: "Shoes"})
    assert result["pairs"] == 1 and set(result["per_attribute"]) == {"Color"} and result["f1"] == 1.0
