"""What an import refuses, one exception per kind; each message tells the user what to do.

All are ValueErrors: the input was wrong, not the code. Views show the message as it is.
"""


class BadFile(ValueError):
    """The file cannot be read as the CSV it claims to be: not a CSV, empty, binary, undecodable,
    no header or no rows, a broken record."""


class FileOverLimit(ValueError):
    """The file reads as CSV but is larger than one import takes: over the upload size limit, or
    with more columns than the mapping form can hold."""


class BadMapping(ValueError):
    """The chosen column mapping cannot import the file: a required field is left unmapped, or one
    column feeds two product fields."""


class WrongImportState(ValueError):
    """The import job is not in the state the asked step needs: its mapping can change only
    before it starts, and it starts once, from a saved mapping."""
