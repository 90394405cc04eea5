"""The quality dashboard: F1 vs gold from the engine's metric, HPD and AR side by side, speed, cost."""

import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalog.models import Catalog
from extraction.engine import data as ave
from extraction.engine.metric import Report
from extraction.models import Run
from review.actions import do_review
from review.models import GoldValue
from tests.support.factories import link_runs, make_run, make_scenario, make_values
from tests.support.gold import seed_gold_from_known_values

pytestmark = pytest.mark.django_db


def dashboard_f1(body: str, run: Run) -> float:
    return float(re.search(rf'data-run="{run.pk}" data-f1="([0-9.]+)"', body).group(1))


def predict(product, attribute, i):
    """A deterministic mix of right, wrong and missing answers (every outcome of the metric)."""
    known = product.known_values.get(attribute.name)
    if known:
        return [known, "something else", "n/a", f"  {known} "][i % 4]
    return ["n/a", "invented"][i % 2]


def test_dashboard_f1_equals_the_engine_metric_over_the_exported_ave_gold(client_for, bob, tmp_path):
    """With the demo catalog after a run, the dashboard's F1 is what `python -m extraction evaluate`
    computes on the same products and gold: the gold goes out through `export_gold` as AVE JSON
    lines, is read back by the engine's own loader (extraction.engine.data.load_jsonl, what
    evaluate reads), and scored by evaluate's loop over metric.Report. evaluate decodes its own
    predictions and takes none from a file, so the run's predictions stand in for its decoder."""
    call_command("load_demo_catalog")
    catalog = Catalog.objects.get(name="OA-Mine demo")
    products = list(catalog.products.select_related("category").order_by("sku"))
    assert len(products) >= 300
    hpd = make_run(products, decoder=Run.Decoder.HPD)
    values = {}
    for i, product in enumerate(products):
        for j, attribute in enumerate(product.category.current_schema.attributes.all()):
            values[(product, attribute)] = (predict(product, attribute, i + j), 0.5)
    make_values(hpd, values)
    assert seed_gold_from_known_values(catalog.products.all()) > 300

    body = client_for(bob).get(reverse("review:dashboard"), {"run": hpd.pk}).content.decode()
    shown = dashboard_f1(body, hpd)

    out = tmp_path / "gold.jsonl"
    call_command("export_gold", out=str(out), catalog=catalog.name)
    gold_products = ave.load_jsonl(out)
    predictions = {f"{catalog.name}/{p.sku}": {} for p in products}
    for (product, attribute), (text, _) in values.items():
        predictions[f"{catalog.name}/{product.sku}"][attribute.name] = text
    report = Report()  # the loop of extraction.engine.evaluate.command.run_once
    for p in gold_products:
        for attr, gold in p.gold.items():
            report.add(p.category, attr, predictions[p.key].get(attr), gold)

    assert report.micro.pairs == GoldValue.objects.count()
    assert 0.2 < report.micro.f1 < 0.9  # a mix, not a degenerate 0 or 1
    assert shown == pytest.approx(report.micro.f1, abs=1e-6)
    per_category = re.search(r'id="per-category".*?</table>', body, re.S).group(0)
    for category, counts in report.per_category.items():
        assert f"<td>{category}</td><td>{counts.f1:.3f}</td>" in per_category


def test_it_shows_hpd_and_ar_side_by_side_with_per_attribute_f1(client_for, bob):
    scene = make_scenario(products=4, attributes=("Brand",))
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    brand = scene.attributes["Brand"]
    make_values(ar, {(p, brand): ("wrong", 0.9) for p in scene.products})
    link_runs(scene.run, ar)
    for v in scene.values:
        do_review(v.pk, 0, "accept", bob)  # the HPD values are right: gold, supplied by HPD
    body = client_for(bob).get(reverse("review:dashboard"), {"run": ar.pk}).content.decode()
    # AR is scored on HPD's accepted values; HPD is not scored on the values it supplied itself.
    assert dashboard_f1(body, ar) == 0.0
    assert f'data-run="{scene.run.pk}" data-f1=' not in body and "no honest gold yet" in body
    assert f'data-run="{scene.run.pk}" data-used="0" data-left-out="4"' in body
    assert f'data-run="{ar.pk}" data-used="4" data-left-out="0"' in body
    assert body.index("HPD (hyper-parallel) · run") < body.index(
        "AR (autoregressive JSON, honest best) · run"
    )
    assert "Micro F1 per attribute" in body and "Brand (4)" in body and "<svg" in body  # the chart, inline


def test_the_ar_column_says_which_ar_its_speed_and_cost_are_of(client_for, bob):
    """#49: the cost report names the AR it compares with: AR at its honest best for the app's AR runs
    (the engine decoder the worker recorded), the paper's AR for a run decoded before it."""
    scene = make_scenario(products=2, attributes=("Brand",))
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    make_values(ar, {(p, scene.attributes["Brand"]): ("Acme", 0.9) for p in scene.products})
    Run.objects.filter(pk=ar.pk).update(decode_settings={"device": "cpu", "engine_decoder": "ar-honest"})
    link_runs(scene.run, ar)
    client = client_for(bob)
    body = client.get(reverse("review:dashboard"), {"run": ar.pk}).content.decode()
    assert (
        f'data-run="{ar.pk}" data-engine-decoder="ar-honest">AR-JSON at its honest best: prefix cache' in body
    )
    assert f'data-run="{scene.run.pk}" data-engine-decoder="hpd">HPD' in body
    assert 'id="which-ar"' in body and "cost per 1,000 products against it" in body
    # negative control: an AR run a worker decoded before workers recorded it ran the paper's AR
    Run.objects.filter(pk=ar.pk).update(decode_settings={"device": "cpu"})
    body = client.get(reverse("review:dashboard"), {"run": ar.pk}).content.decode()
    assert f'data-run="{ar.pk}" data-engine-decoder="ar">AR-JSON as the paper runs it' in body
    assert "honest best: prefix cache" not in body


def test_it_computes_speed_and_cost_on_the_device_the_run_used(client_for, bob):
    scene = make_scenario(products=2)
    counters = {"done": 100, "engine_seconds": 20.0, "forward_steps": 500, "tokens_decoded": 2000}
    Run.objects.filter(pk=scene.run.pk).update(**counters, decode_settings={"device": "cuda"})
    client = client_for(bob)
    body = client.get(reverse("review:dashboard"), {"run": scene.run.pk, "price": "3.60"}).content.decode()
    assert '<td class="speed">5.00</td>' in body  # 100 products / 20 s
    assert "<td>5.00</td>" in body and "<td>4.00</td>" in body  # steps per product, tokens per step
    # 1,000 products take 200 s = 1/18 h; at $3.60/h that is $0.20.
    assert '<td class="cost">$0.2000 <span class="muted small">(GPU at $3.60/h)</span>' in body
    # A run decoded on the CPU is priced at the CPU's price, and says so; the GPU price is not used.
    Run.objects.filter(pk=scene.run.pk).update(decode_settings={"device": "cpu"})
    body = client.get(
        reverse("review:dashboard"), {"run": scene.run.pk, "price": "3.60", "cpu_price": "0.36"}
    ).content.decode()
    assert '<td class="device">CPU</td>' in body
    assert '<td class="cost">$0.0200 <span class="muted small">(CPU at $0.36/h)</span>' in body
    assert "GPU price per hour" in body and "CPU price per hour" in body
    # A run no worker recorded a device for gets no cost rather than a guessed one.
    Run.objects.filter(pk=scene.run.pk).update(decode_settings={})
    body = client.get(reverse("review:dashboard"), {"run": scene.run.pk}).content.decode()
    assert '<td class="cost">– <span class="muted small">(the device was not recorded)</span>' in body
    for field in ("price", "cpu_price"):
        response = client.get(reverse("review:dashboard"), {"run": scene.run.pk, field: "cheap"})
        body = response.content.decode()
        assert response.status_code == 400 and f"{field}: expected a price per hour" in body
        assert "got &#x27;cheap&#x27;" in body


def test_the_default_prices_come_from_settings(client_for, bob, settings):
    settings.GPU_PRICE_PER_HOUR, settings.CPU_PRICE_PER_HOUR = 7.2, 0.72
    scene = make_scenario(products=2)
    Run.objects.filter(pk=scene.run.pk).update(
        done=100, engine_seconds=20.0, decode_settings={"device": "cpu"}
    )
    body = client_for(bob).get(reverse("review:dashboard"), {"run": scene.run.pk}).content.decode()
    assert 'name="price" value="7.20"' in body and 'name="cpu_price" value="0.72"' in body
    assert '<td class="cost">$0.0400 <span class="muted small">(CPU at $0.72/h)</span>' in body


def test_gold_export_writes_the_ave_format(bob, tmp_path):
    scene = make_scenario(products=2)
    do_review(scene.values[0].pk, 0, "accept", bob)
    do_review(scene.values[1].pk, 0, "set_na", bob)
    out = tmp_path / "gold.jsonl"
    call_command("export_gold", out=str(out))
    [product] = ave.load_jsonl(out)
    assert product.category == "Shoes" and product.text == "Item 0 brand0 color0"
    assert product.gold == {"Brand": ["brand0"], "Color": ["n/a"]}
    assert ave.schemas([product]) == {"Shoes": ["Brand", "Color"]}


def test_the_dashboard_downloads_the_same_gold_file(client_for, bob, tmp_path):
    scene = make_scenario(products=3)
    for v in scene.values:
        do_review(v.pk, 0, "accept", bob)
    out = tmp_path / "gold.jsonl"
    call_command("export_gold", out=str(out))
    response = client_for(bob).get(reverse("review:gold_download"))
    assert response["Content-Disposition"] == 'attachment; filename="gold-ave.jsonl"'
    assert b"".join(response.streaming_content).decode() == out.read_text()


def test_exported_gold_is_a_data_set_folder_the_training_command_reads(bob, tmp_path):
    """`python -m extraction train --data DIR` reads DIR/train.jsonl through splits.load_split."""
    from extraction.engine.splits import load_split

    scene = make_scenario(products=5)
    for v in scene.values:
        do_review(v.pk, 0, "accept", bob)
    folder = tmp_path / "reviewed"
    folder.mkdir()
    call_command("export_gold", out=str(folder / "train.jsonl"))
    split = load_split(folder, splits_dir=tmp_path / "splits")
    assert len(split.train) + len(split.dev) == 5
    assert all(r["target_scores"].keys() == {"Brand", "Color"} for r in split.train + split.dev)


def test_the_per_attribute_chart_shows_the_attributes_with_the_most_gold(client_for, bob):
    names = tuple(f"A{i:02d}" for i in range(15))
    scene = make_scenario(products=2, attributes=names)
    first, second = scene.products
    first.known_values = {name: "x" for name in names[:14]}  # A14 never gets gold
    second.known_values = {"A00": "x"}
    first.save(), second.save()
    seed_gold_from_known_values(scene.catalog.products.all())
    body = client_for(bob).get(reverse("review:dashboard"), {"run": scene.run.pk}).content.decode()
    chart = re.search(r'<figure class="chart">\s*<figcaption>Micro F1 per attribute.*?</figure>', body, re.S)
    labels = re.findall(r'class="axis-label">([^<]+)</text>', chart.group(0))
    assert "the 12 with the most gold" in chart.group(0)
    assert labels[0] == "A00 (2)" and len(labels) == 12 and "A14" not in chart.group(0)
