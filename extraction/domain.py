"""The domain's shared words and rules, each defined once for the engine and every app.

Pure Python that imports nothing: the engine (which never imports Django) and the web process
(which never imports torch) both import it.

- NA: how an absent attribute reads, in the engine's output, normalized values, reviews and gold.
- DEFAULT_TOKEN_BUDGET: the tokens a value's slot holds when nothing sizes it (the schema's field
  default, the engine's AttributeSpec and budgets, the catalog's size suggestion).
- values_agree: when two systems' values count as the same (the HPD / AR run comparison, the review
  queue's disagreement sort, the A/B panel's "differs" mark); extraction.comparison.agree is the
  same rule as a SQL condition.

The run states that may still be worked on (Run.ACTIVE_STATUSES, Run.is_active) and the takeable
rule (WorkItem.takeable) are conditions on rows, so they live once on their models.
"""

NA = "n/a"

# Tokens of a value's slot when nothing else sizes it; too small for many attributes (a pack size
# with its unit, a flavour of three words), so the catalog sizes attributes from data
# (catalog/budgets.py) and a run decodes at least with those sizes (extraction/sizes.py).
DEFAULT_TOKEN_BUDGET = 12


def values_agree(a: str | None, b: str | None) -> bool:
    """Equal but for letter case; a missing value agrees only with a missing one."""
    if a is None or b is None:
        return a is b
    return a.lower() == b.lower()
