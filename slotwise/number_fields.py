"""Number fields for the project's forms: ASCII digits only, by the rule of slotwise/params.py.

Django's IntegerField and FloatField call int() and float(), which take "１" for 1, "٣" for 3 and
"1_000" for 1000: a value no form of ours writes, accepted as if typed. These refuse such text
with an error that says which digits to use; their limits (min_value, max_value) work as Django's.
"""

from django import forms
from django.core.exceptions import ValidationError

from slotwise.params import NUMBER, WHOLE_NUMBER


class _AsciiDigits:
    """Checks the typed text against `grammar` before the Django field converts it."""

    grammar = None  # a compiled pattern of slotwise.params

    def to_python(self, value):
        if isinstance(value, str) and value.strip() and not self.grammar.fullmatch(value.strip()):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class WholeNumberField(_AsciiDigits, forms.IntegerField):
    grammar = WHOLE_NUMBER
    default_error_messages = {"invalid": "Enter a whole number in the digits 0 to 9."}


class NumberField(_AsciiDigits, forms.FloatField):
    grammar = NUMBER
    default_error_messages = {"invalid": "Enter a number in the digits 0 to 9, such as 2 or 2.5."}
