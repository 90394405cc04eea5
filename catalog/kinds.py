"""The kinds of attribute, defined once: what a value of an attribute may be; and the slot size of
an attribute that nothing else sizes (DEFAULT_TOKEN_BUDGET).

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

# Tokens of a value's slot when nothing else sizes it (the schema's field default, the engine's
# AttributeSpec and budgets, the catalog's size suggestion); too small for many attributes (a pack
# size with its unit, a flavour of three words), so the catalog sizes attributes from data
# (catalog/budgets.py) and a run decodes at least with those sizes (extraction/sizes.py). Defined here,
# with the attributes it sizes, so that catalog imports nothing from extraction (no loop between apps);
# extraction/domain.py passes it on to the engine.
DEFAULT_TOKEN_BUDGET = 12
# The largest slot an attribute may have, in tokens (the editor's, the schema files' and the size
# suggestion's bound); here, beside DEFAULT_TOKEN_BUDGET, so budgets.py and schemas.py share it without
# importing each other.
MAX_TOKEN_BUDGET = 64
