"""The kinds of attribute, defined once: what a value of an attribute may be.

Pure Python that imports nothing, so that everything that reads a kind imports it from here: the
catalog's Attribute.Kind (the stored choice, with its labels), the engine's slot constraints
(extraction/engine/decode/constraints.py, which never imports Django) and normalize.py. It lives in catalog,
which owns attributes, rather than in extraction/domain.py: extraction already depends on catalog,
so catalog importing from extraction would make the two apps import each other.
"""

TEXT = "text"  # copied from the product text (or written by the model when the attribute is free)
NUMBER = "number"  # a number with a unit, converted to the attribute's unit
ENUM = "enum"  # one of the attribute's allowed values
BOOLEAN = "boolean"  # yes or no
KINDS = (TEXT, NUMBER, ENUM, BOOLEAN)
