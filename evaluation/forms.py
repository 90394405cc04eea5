import secrets

from django import forms
from django.contrib.auth import get_user_model

from accounts.roles import RATER
from catalog.models import Catalog
from evaluation.models import System
from evaluation.systems import system_for_run
from extraction.models import Run
from slotwise.names import validate_name
from slotwise.number_fields import WholeNumberField

MAX_SEED = 2**31 - 1


def system_choices() -> list[tuple[str, str]]:
    """Finished runs and imported systems, as "run:<id>" / "system:<id>" keys."""
    runs = Run.objects.filter(status=Run.Status.DONE).order_by("-created_at")
    imported = System.objects.filter(kind=System.Kind.IMPORTED)
    return [("", "— choose —")] + [
        (f"run:{r.pk}", f"{r} · {r.get_decoder_display()} · {r.done} products") for r in runs
    ] + [(f"system:{s.pk}", f"{s.name} (imported)") for s in imported]  # fmt: skip


def system_from_choice(key: str, user=None) -> System:
    kind, _, pk = key.partition(":")
    if kind == "run":
        return system_for_run(Run.objects.get(pk=pk, status=Run.Status.DONE), user)
    return System.objects.get(pk=pk, kind=System.Kind.IMPORTED)


class CampaignForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        help_text="Raters see this name: do not name the systems.",
        validators=[validate_name],
    )
    first_system = forms.ChoiceField()
    second_system = forms.ChoiceField()
    sample_size = WholeNumberField(min_value=1, max_value=100_000, initial=40)
    seed = WholeNumberField(min_value=0, max_value=MAX_SEED, help_text="Same seed, same sample and sides.")
    raters_per_item = WholeNumberField(min_value=1, max_value=50, initial=2)
    raters = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Leave empty to open the campaign to every rater.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = system_choices()
        self.fields["first_system"].choices = choices
        self.fields["second_system"].choices = choices
        self.fields["raters"].queryset = (
            get_user_model().objects.filter(groups__name=RATER).order_by("username")
        )
        self.fields["seed"].initial = secrets.randbelow(1_000_000)

    def clean(self):
        data = super().clean()
        if data.get("first_system") and data.get("first_system") == data.get("second_system"):
            self.add_error("second_system", "choose a system different from the first")
        return data


class ImportSystemForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Shown only on results pages, e.g. the vendor's model.")
    catalog = forms.ModelChoiceField(
        queryset=Catalog.objects.all(), empty_label="— choose —", help_text="The catalog the SKUs belong to."
    )
    file = forms.FileField(help_text="CSV with the columns sku, attribute, value (UTF-8).")
