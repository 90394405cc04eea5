"""Names people give things (categories, catalogs, attributes, campaigns, runs): printable text only.

A line break in a category's name went into the schema export's Content-Disposition header and broke
it; tabs, escapes and invisible format characters make two names look alike or print wrongly in
exports and pages. Refused where a name is created, with the character and its position.
"""

import unicodedata

from django.core.exceptions import ValidationError

# Control characters (Cc: tab, CR, LF, ESC ...), format characters (Cf: zero-width space, BOM, bidi
# marks) and the Unicode line / paragraph separators.
UNPRINTABLE = {"Cc", "Cf", "Zl", "Zp"}


def unprintable_character(text: str) -> str:
    """A description of the first character of `text` a name may not hold, or ""."""
    for position, char in enumerate(text, start=1):
        if unicodedata.category(char) in UNPRINTABLE:
            label = unicodedata.name(char, "") or f"control character {ord(char):#04x}"
            return f"U+{ord(char):04X} ({label.lower()}) at character {position}"
    return ""


def check_name(text: str, what: str = "the name") -> None:
    """Raise ValueError naming the first unprintable character of `text`."""
    found = unprintable_character(text)
    if found:
        raise ValueError(f"{what} holds {found}; a name must be printable text on one line")


def validate_name(text: str) -> None:
    """The same check as a Django form field validator."""
    try:
        check_name(text)
    except ValueError as exc:
        raise ValidationError(str(exc).replace("the name", "This name", 1)) from None
