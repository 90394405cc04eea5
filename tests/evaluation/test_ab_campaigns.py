"""Campaigns: the seeded sample, balanced and stable sides, the checks on creation, outside imports."""

import pytest
from django.urls import reverse

from catalog.models import Product
from evaluation.campaigns import CampaignError, draw_sample
from evaluation.models import Campaign, CampaignItem, ImportedValue, System
from evaluation.systems import SystemImportError, do_import_system
from tests.support.ab_factories import make_campaign, make_two_runs


def test_it_balances_sides_and_draws_them_from_the_seed():
    ids = range(1, 5001)
    sample = draw_sample(ids, 1001, seed=42)
    first_on_a = sum(side for _, side in sample)
    assert first_on_a == 501  # exactly balanced: 501 vs 500
    assert len({pid for pid, _ in sample}) == 1001
    assert draw_sample(ids, 1001, seed=42) == sample
    assert draw_sample(reversed(ids), 1001, seed=42) == sample  # order of the input does not matter
    other = draw_sample(ids, 1001, seed=43)
    assert other != sample
    # Sides are not a function of the position: runs of the same side look like coin flips.
    sides = [side for _, side in sample]
    changes = sum(a != b for a, b in zip(sides, sides[1:], strict=False))
    assert 420 < changes < 580  # about n/2 for a random sequence; 0 or n for patterns


@pytest.mark.django_db
def test_it_stores_the_sample_and_the_sides_of_a_campaign():
    runs = make_two_runs(n_products=30)
    campaign = make_campaign(runs, size=20, seed=99)
    items = list(campaign.items.order_by("position"))
    assert [i.position for i in items] == list(range(1, 21))
    assert sum(i.first_is_a for i in items) == 10
    expected = draw_sample([p.pk for p in runs.products], 20, 99)
    assert [(i.product_id, i.first_is_a) for i in items] == expected
    assert len({i.token for i in items}) == 20
    # Stable per item: reading again changes nothing, and a second campaign with the seed repeats it.
    again = make_campaign(runs, size=20, seed=99, name="Shoe check again")
    assert [(i.product_id, i.first_is_a) for i in again.items.order_by("position")] == expected
    assert {i.token for i in again.items.all()}.isdisjoint({i.token for i in items})
    assert campaign.sample_size == 20 and campaign.seed == 99


@pytest.mark.django_db
def test_it_samples_only_products_both_systems_cover():
    runs = make_two_runs(n_products=6)
    runs.ar.values.filter(product=runs.products[0]).delete()
    with pytest.raises(CampaignError, match="sample size: 6 asked but only 5 products"):
        make_campaign(runs, size=6)
    campaign = make_campaign(runs, size=5)
    assert runs.products[0].pk not in set(campaign.items.values_list("product_id", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "leak"),
    [("HPD against the rest", "hpd"), ("ar or not", "ar"), ("Zephyr fast pass check", "Zephyr fast pass")],
)
def test_it_refuses_a_campaign_name_that_names_a_system(name, leak):
    runs = make_two_runs(n_products=4)
    with pytest.raises(CampaignError, match=f"must not name the systems.*{leak}"):
        make_campaign(runs, name=name)
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_it_creates_a_campaign_from_the_form(client_for, alice, carol, dave):
    runs = make_two_runs(n_products=10)
    response = client_for(alice).post(
        reverse("evaluation:campaign_new"),
        {
            "name": "Spring shoes",
            "first_system": f"run:{runs.hpd.pk}",
            "second_system": f"run:{runs.ar.pk}",
            "sample_size": 8,
            "seed": 5,
            "raters_per_item": 2,
            "raters": [carol.pk, dave.pk],
        },
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get()
    assert (campaign.first_system, campaign.second_system) == (runs.hpd_system, runs.ar_system)
    assert campaign.items.count() == 8
    assert set(campaign.raters.all()) == {carol, dave}


@pytest.mark.django_db
def test_it_explains_a_sample_larger_than_the_products(client_for, alice):
    runs = make_two_runs(n_products=3)
    response = client_for(alice).post(
        reverse("evaluation:campaign_new"),
        {
            "name": "Too big",
            "first_system": f"run:{runs.hpd.pk}",
            "second_system": f"run:{runs.ar.pk}",
            "sample_size": 50,
            "seed": 1,
            "raters_per_item": 1,
        },
    )
    assert response.status_code == 200
    assert (
        "sample size: 50 asked but only 3 products have values from both systems" in response.content.decode()
    )
    assert not Campaign.objects.exists() and not CampaignItem.objects.exists()


@pytest.mark.django_db
def test_it_imports_outputs_of_an_outside_system_and_compares_against_them(client_for, alice):
    runs = make_two_runs(n_products=4)
    skus = [p.sku for p in runs.products]
    body = "sku,attribute,value\n" + "".join(f"{s},Brand,Acme\n{s},Color,red\n" for s in skus)
    upload = _upload(body)
    response = client_for(alice).post(
        reverse("evaluation:system_import"),
        {"name": "Vendor LLM", "catalog": runs.catalog.pk, "file": upload},
    )
    assert response.status_code == 302
    system = System.objects.get(name="Vendor LLM")
    assert system.kind == System.Kind.IMPORTED
    assert ImportedValue.objects.filter(system=system).count() == 8
    response = client_for(alice).post(
        reverse("evaluation:campaign_new"),
        {
            "name": "Versus the vendor",
            "first_system": f"run:{runs.hpd.pk}",
            "second_system": f"system:{system.pk}",
            "sample_size": 4,
            "seed": 3,
            "raters_per_item": 1,
        },
    )
    assert response.status_code == 302
    assert Campaign.objects.get().second_system == system


@pytest.mark.django_db
def test_it_refuses_a_bad_import_whole_and_names_each_row():
    runs = make_two_runs(n_products=2)
    sku = runs.products[0].sku
    body = f"sku,attribute,value\n{sku},Brand,Acme\nNOPE-1,Brand,x\n{sku},,y\n{sku},Brand,again\n"
    with pytest.raises(SystemImportError) as caught:
        do_import_system("Vendor", runs.catalog, body.encode())
    assert caught.value.errors == [
        f"row 3, column sku: 'NOPE-1' is not in catalog {runs.catalog.name!r}",
        "row 4, column attribute: empty",
        f"row 5: {sku!r} / 'Brand' already given at row 2",
    ]
    assert not System.objects.filter(kind=System.Kind.IMPORTED).exists()
    assert not ImportedValue.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe\x00s\x00k\x00u", "not UTF-8 text"),
        (b"product,attr,val\n1,2,3\n", "missing column(s): sku, attribute, value"),
        (b"sku,attribute,value\n", "header but no rows"),
    ],
)
def test_it_refuses_files_that_are_not_a_values_csv(data, message):
    catalog = make_two_runs(n_products=1).catalog
    with pytest.raises(SystemImportError, match=message.replace("(", r"\(").replace(")", r"\)")):
        do_import_system("Vendor", catalog, data)
    assert Product.objects.count() == 1 and not ImportedValue.objects.exists()


def _upload(body: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("vendor.csv", body.encode(), content_type="text/csv")


@pytest.mark.django_db
def test_the_demo_command_pits_the_newest_hpd_run_against_the_newest_ar_run(carol, dave):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="there is no finished HPD run"):
        call_command("ab_create_campaign", stdout=StringIO())
    runs = make_two_runs(n_products=6)
    out = StringIO()
    call_command("ab_create_campaign", "--raters", "carol,dave", "--size", "50", "--seed", "11", stdout=out)
    campaign = Campaign.objects.get()
    assert (campaign.first_system.run, campaign.second_system.run) == (runs.hpd, runs.ar)
    assert campaign.sample_size == 6 and campaign.seed == 11 and campaign.raters_per_item == 2
    assert set(campaign.raters.all()) == {carol, dave}
    assert f"/ab/campaigns/{campaign.pk}/rate/" in out.getvalue()
    assert not campaign.items.filter(votes__isnull=False).exists()  # it casts no votes


@pytest.mark.django_db
def test_imported_values_line_up_with_the_runs_attributes_whatever_their_case():
    from evaluation.campaigns import CampaignSpec, do_create_campaign
    from evaluation.voting import rows_for

    runs = make_two_runs(n_products=1)
    sku = runs.products[0].sku
    vendor = do_import_system(
        "Vendor", runs.catalog, f"sku,attribute,value\n{sku},color,red\n{sku},Weight,1 kg\n".encode()
    )
    campaign = do_create_campaign(CampaignSpec("Outside check", runs.hpd_system, vendor, 1, 1, 1))
    item = campaign.items.get()
    rows = {r.attribute: (r.a, r.b) if item.first_is_a else (r.b, r.a) for r in rows_for(item)}
    assert list(rows) == ["Brand", "Color", "Size", "Weight"]  # schema order, then the vendor's extras
    assert rows["Color"] == ("color-0", "red")
    assert rows["Brand"] == ("brand-0", "") and rows["Weight"] == ("", "1 kg")
