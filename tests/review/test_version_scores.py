"""A model version's F1 on blind gold: of its newest finished run, on the blind gold of the products
that run decoded, as the run form's fragment shows it beside the model menu."""

import pytest
from django.urls import reverse

from extraction.engine import metric
from registry.archive import sha256_hex
from registry.models import ModelVersion
from review.blind import do_blind_label
from review.version_scores import blind_score
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db


def test_a_version_is_scored_on_the_blind_gold_of_its_newest_run_and_shown_beside_the_menu(
    client_for, alice, bob
):
    scene = make_scenario(
        products=24, value_of=lambda i, name: (f"{name.lower()}{i}" if i % 3 else "guess", 0.7)
    )
    version = ModelVersion.objects.create(
        kind=ModelVersion.Kind.TRAINED, name="house style", catalog=scene.catalog, archive=b"x",
        sha256=sha256_hex(b"x"), size_bytes=1,
    )  # fmt: skip
    assert blind_score(version, scene.catalog).f1 is None  # no run decoded with it yet
    scene.run.model_version = version
    scene.run.save(update_fields=["model_version"])
    assert blind_score(version, scene.catalog).f1 is None  # a run, but no blind gold yet
    for i, product in enumerate(scene.products[:20]):
        do_blind_label(product, scene.schema.pk, {"Brand": f"brand{i}", "Color": f"color{i}"}, bob)

    scored = blind_score(version, scene.catalog)
    expected = metric.evaluate(
        ("Shoes", v.attribute.name, v.value, [f"{v.attribute.name.lower()}{i}"])
        for i, product in enumerate(scene.products[:20])
        for v in scene.run.values.filter(product=product).select_related("attribute")
    )
    assert scored.run == scene.run and scored.products == 20
    assert scored.f1 == pytest.approx(expected.micro.f1) and 0 < scored.f1 < 1
    low, high = scored.interval
    assert low <= scored.f1 <= high

    page = client_for(alice).get(reverse("review:version_scores")).content.decode()
    row = page[page.index("house style") :]
    assert f"{scored.f1:.3f}" in row[: row.index("</tr>")]
    assert "no F1 on blind gold yet" in page  # the shipped default, never run here
