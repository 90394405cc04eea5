from django import forms
from django.conf import settings

from slotwise.number_fields import NumberField, WholeNumberField


class JobForm(forms.Form):
    """How long a training job may train, and how much reviewed gold it holds back."""

    minutes = NumberField(
        min_value=0.05,
        max_value=settings.TRAINING_MAX_MINUTES,
        initial=settings.TRAINING_MINUTES,
        help_text="Training time (the job then decodes the held-back products with both versions).",
    )
    holdout_percent = WholeNumberField(
        label="Held back (%)",
        min_value=5,
        max_value=50,
        initial=round(100 * settings.TRAINING_HOLDOUT_SHARE),
        help_text="Share of the reviewed products never trained on, to prove the gain (blind labels first).",
    )
    seed = WholeNumberField(
        initial=0, min_value=0, max_value=2**31 - 1, help_text="Draws the held-back products."
    )

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
