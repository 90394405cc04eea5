from django import forms
from django.conf import settings

from catalog.models import Catalog, Category
from extraction import config
from extraction.services import BOTH, DECODER_CHOICES, RunRequest
from registry.cache import run_model_dir
from registry.versions import offered_versions
from slotwise.names import validate_name
from slotwise.number_fields import WholeNumberField


def with_versions(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The model menu with the stored versions: the bundled entry is each catalog's default (the
    shipped version unless a trained one was promoted), then every trained version offered. Their
    F1 on blind gold sits beside the menu (review's fragment, loaded by the form's page)."""
    out = []
    for value, label in choices:
        if value == config.BUNDLED:
            label = f"{label} · the catalog's promoted version if any"
        out.append((value, label))
    for version in offered_versions()[1:]:  # [0] is the shipped default: the bundled entry above
        out.append((run_model_dir(version), version.label))
    return out


class RunForm(forms.Form):
    """What a run extracts (catalog / category / search), with which decoder and model."""

    catalog = forms.ModelChoiceField(Catalog.objects.all(), required=False, empty_label="All catalogs")
    category = forms.ModelChoiceField(Category.objects.all(), required=False, empty_label="All categories")
    search = forms.CharField(
        required=False, max_length=200, help_text="Words in the title or description, or an exact SKU."
    )
    decoder = forms.ChoiceField(choices=DECODER_CHOICES, initial="hpd", widget=forms.RadioSelect)
    model_dir = forms.ChoiceField(label="Model", required=False)
    batch_size = WholeNumberField(
        required=False,
        min_value=1,
        max_value=512,
        help_text=f"Products per leased batch (default {settings.EXTRACTION_BATCH_SIZE}).",
    )
    stack = WholeNumberField(
        required=False,
        min_value=1,
        max_value=64,
        label="Documents per HPD prompt",
        help_text="Leave empty to let the engine choose by measuring.",
    )
    name = forms.CharField(required=False, max_length=200, validators=[validate_name])

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")  # labels sit above their fields, as on every other form
        super().__init__(*args, **kwargs)
        self.fields["model_dir"].choices = with_versions(config.model_choices())
        if config.bundled_model_missing():
            self.fields["model_dir"].help_text = (
                config.no_model_message(settings.SLOTWISE_MODEL_DIR)
                + "; the workers never decode with random weights instead."
            )

    def clean_stack(self):
        stack = self.cleaned_data.get("stack")
        if stack and self.data.get("decoder") == "ar":
            raise forms.ValidationError("Stacking applies to HPD only; leave it empty for AR.")
        return stack

    def run_request(self) -> RunRequest:
        data = self.cleaned_data
        return RunRequest(
            decoder=data["decoder"] if data["decoder"] != BOTH else BOTH,
            catalog=data["catalog"],
            category=data["category"],
            search=data["search"],
            model_dir=data["model_dir"] or config.BUNDLED,
            batch_size=data["batch_size"],
            stack=data["stack"],
            name=data["name"],
        )
