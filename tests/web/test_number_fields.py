"""The number fields of the project's forms read ASCII digits only (slotwise/number_fields.py), as the
query parameters do (slotwise/params.py): Django's IntegerField and FloatField call int() and float(),
which take "１" for 1 and "０.５" for 0.5."""

from importlib import import_module
from pathlib import Path

import pytest
from django import forms
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.urls import reverse

from catalog.models import Catalog
from extraction.models import Run
from slotwise.number_fields import NumberField, WholeNumberField
from tests.support.runs_catalog import make_catalog
from training.models import TrainingJob

WHOLE_NUMBER_ERROR = "Enter a whole number in the digits 0 to 9."
NUMBER_ERROR = "Enter a number in the digits 0 to 9, such as 2 or 2.5."


def subclasses(cls: type):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def project_forms() -> list[type[forms.BaseForm]]:
    """Every form class of the project's apps (the URL map imports every view, and so every form)."""
    import_module(settings.ROOT_URLCONF)
    ours = {c.name for c in apps.get_app_configs() if Path(c.path).parent == Path(settings.BASE_DIR)}
    return [form for form in subclasses(forms.BaseForm) if form.__module__.split(".")[0] in ours]


def test_every_number_field_of_the_project_s_forms_reads_ascii_digits_only():
    found = project_forms()
    number_fields = [
        (f"{form.__module__}.{form.__name__}.{name}", field)
        for form in found
        for name, field in form.base_fields.items()
        if isinstance(field, forms.IntegerField)  # FloatField and DecimalField are IntegerFields too
    ]
    assert len(number_fields) >= 9  # the run, training, campaign and attribute forms' at least
    plain = [name for name, field in number_fields if not isinstance(field, WholeNumberField | NumberField)]
    assert not plain, f"number fields that take non-ASCII digits: {plain}"


@pytest.mark.parametrize("raw", ["１", "٣", "²", "1_000", "1.0", "+1"])
def test_a_whole_number_field_refuses_what_is_not_ascii_digits(raw):
    with pytest.raises(ValidationError) as refused:
        WholeNumberField(min_value=0).clean(raw)
    assert refused.value.messages == [WHOLE_NUMBER_ERROR]


@pytest.mark.parametrize("raw", ["０.５", "0.５", "１", "1_0.5", "nan", "inf"])
def test_a_number_field_refuses_what_is_not_ascii_digits(raw):
    with pytest.raises(ValidationError) as refused:
        NumberField().clean(raw)
    assert refused.value.messages == [NUMBER_ERROR]


def test_the_fields_read_ascii_digits_and_keep_their_limits():
    assert WholeNumberField().clean(" 42 ") == 42
    assert WholeNumberField(required=False).clean("") is None
    assert NumberField().clean("0.5") == 0.5 and NumberField().clean("2") == 2.0
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        WholeNumberField(min_value=1).clean("0")


@pytest.mark.django_db
def test_a_run_asked_with_a_full_width_batch_size_is_refused_with_a_form_error(client_for, alice):
    catalog = make_catalog()
    form = {"catalog": str(catalog.pk), "decoder": "hpd", "model_dir": "", "batch_size": "１"}
    response = client_for(alice).post(reverse("extraction:start"), form)
    assert response.status_code == 400 and WHOLE_NUMBER_ERROR in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_training_job_asked_with_full_width_minutes_is_refused_with_a_form_error(client_for, alice):
    catalog = Catalog.objects.create(name="Shop")
    response = client_for(alice).post(
        reverse("training:start", args=[catalog.pk]),
        {"minutes": "０.５", "holdout_percent": "２０", "seed": "0"},
    )
    page = response.content.decode()
    assert response.status_code == 400 and NUMBER_ERROR in page and WHOLE_NUMBER_ERROR in page
    assert not TrainingJob.objects.exists()
