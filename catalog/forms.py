"""Forms of the catalog screens; they validate at the edge and say exactly what was wrong."""

import json

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS

from catalog import budgets
from catalog.models import Attribute, Catalog, Category
from catalog.schemas import MAX_TOKEN_BUDGET, AttributeData
from slotwise.names import validate_name
from slotwise.number_fields import WholeNumberField

SCHEMA_FILE_MAX_BYTES = 1024 * 1024


class CategoryForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[validate_name])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class AttributeForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_name])
    description = forms.CharField(
        max_length=500, required=False, help_text="Goes into the prompt: say what the value is."
    )
    kind = forms.ChoiceField(choices=Attribute.Kind.choices, initial=Attribute.Kind.TEXT)
    unit = forms.CharField(max_length=30, required=False, help_text="Numbers only, e.g. in, kg, mAh.")
    allowed_values = forms.CharField(
        required=False, help_text="Enumerations only: the values, separated by commas."
    )
    max_tokens = WholeNumberField(
        min_value=1,
        max_value=MAX_TOKEN_BUDGET,
        required=False,
        label="Longest value (tokens)",
        help_text=(
            "How long a value may be, in tokens (about 3 characters each); a longer one is cut short. "
            "Leave empty to size it from the model's training data and this category's known values."
        ),
    )
    required = forms.BooleanField(required=False)
    free = forms.BooleanField(
        required=False,
        label="Free text",
        help_text="Text only: the model may write a normalized value instead of copying it from the text.",
    )

    # What each type makes the decoder do, listed beside the form (catalog/_decodings.html).
    decodings = Attribute.Kind.decodings()

    def clean(self):
        cleaned = super().clean()
        values = [v.strip() for v in (cleaned.get("allowed_values") or "").split(",") if v.strip()]
        if cleaned.get("kind") == Attribute.Kind.ENUM and not values:
            self.add_error("allowed_values", "An enumeration needs at least one allowed value.")
        cleaned["allowed_values"] = values
        return cleaned

    def to_data(self, category: Category) -> AttributeData:
        """The attribute; left empty, its size comes from catalog/budgets.py."""
        c = self.cleaned_data
        data = AttributeData(
            name=c["name"],
            description=c["description"],
            kind=c["kind"],
            unit=c["unit"],
            allowed_values=c["allowed_values"],
            max_tokens=c["max_tokens"] or 0,
            required=c["required"],
            free=c["free"],
        )
        if not data.max_tokens:
            data.max_tokens = budgets.suggested_for(category, data).tokens
        return data

    @classmethod
    def initial_from(cls, data: AttributeData, **kwargs) -> "AttributeForm":
        initial = {**data.__dict__, "allowed_values": ", ".join(data.allowed_values)}
        return cls(initial=initial, **kwargs)


class SchemaImportForm(forms.Form):
    file = forms.FileField(label="Schema JSON file")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > SCHEMA_FILE_MAX_BYTES:
            raise forms.ValidationError("The schema file is larger than 1 MB; is it really a schema?")
        try:
            return json.loads(upload.read().decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise forms.ValidationError("The schema file is not UTF-8 text.") from None
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"The schema file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from None


class UploadForm(forms.Form):
    catalog = forms.ModelChoiceField(Catalog.objects.all(), required=False, empty_label="New catalog…")
    new_catalog = forms.CharField(
        max_length=200, required=False, label="New catalog name", validators=[validate_name]
    )
    file = forms.FileField(label="CSV file", allow_empty_file=True)  # our own message says it is empty

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("catalog") and not (cleaned.get("new_catalog") or "").strip():
            self.add_error("new_catalog", "Choose a catalog or name a new one.")
        return cleaned


NOT_IN_FILE = ""


class MappingForm(forms.Form):
    """One select per product field, one attribute name per other column (empty: ignore it)."""

    def __init__(self, *args, header: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.header = header
        choices = [(NOT_IN_FILE, "— not in the file —")] + [(str(i), h) for i, h in enumerate(header)]
        for name, label in (
            ("sku", "SKU"),
            ("title", "Title"),
            ("description", "Description"),
            ("category", "Category"),
        ):
            self.fields[name] = forms.ChoiceField(choices=choices, required=False, label=label)
        self.fields["fixed_category"] = forms.ModelChoiceField(
            Category.objects.all(),
            required=False,
            label="…or one category for every row",
            empty_label="— use the category column —",
        )
        for index, _ in enumerate(header):
            self.fields[f"known_{index}"] = forms.CharField(
                max_length=100, required=False, validators=[validate_name]
            )

    @classmethod
    def max_columns(cls) -> int | None:
        """The widest file whose mapping Django accepts: it refuses a form of more fields than
        DATA_UPLOAD_MAX_NUMBER_FIELDS (TooManyFieldsSent), and this form posts one per column
        besides its own fields and the CSRF token."""
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return None if limit is None else limit - len(cls(header=[]).fields) - 1

    def error_lines(self) -> list[str]:
        """Every error, each saying which select or which column's attribute box it is about."""
        lines = []
        for name, errors in self.errors.items():
            if name == NON_FIELD_ERRORS:
                where = ""
            elif name.startswith("known_"):
                where = f"Attribute held by column {self.header[int(name.removeprefix('known_'))]!r}: "
            else:
                where = f"{self.fields[name].label}: "
            lines.extend(where + error for error in errors)
        return lines

    def known_field(self, index: int):
        return self[f"known_{index}"]

    def column_choice(self, name: str) -> int | None:
        value = self.cleaned_data.get(name)
        return int(value) if value not in (None, NOT_IN_FILE) else None
