"""The domain's shared words and rules, each defined once for the engine and every app.

Pure Python that imports only catalog/kinds.py (pure too): the engine (which never imports Django)
and the web process (which never imports torch) both import it.

- NA: how an absent attribute reads, in the engine's output, normalized values, reviews and gold.
- DEFAULT_TOKEN_BUDGET: the tokens a value's slot holds when nothing sizes it, defined in
  catalog/kinds.py (catalog imports nothing from extraction) and passed on here for the engine.
- values_agree: when two systems' values count as the same (the HPD / AR run comparison, the review
  queue's disagreement sort, the A/B panel's "differs" mark); extraction.comparison.agree is the
  same rule as a SQL condition.

The run states that may still be worked on (Run.ACTIVE_STATUSES, Run.is_active) and the takeable
rule (WorkItem.takeable) are conditions on rows, so they live once on their models.
"""

from catalog.kinds import DEFAULT_TOKEN_BUDGET

__all__ = ["DEFAULT_TOKEN_BUDGET", "NA", "values_agree"]

NA = "n/a"


def values_agree(a: str | None, b: str | None) -> bool:
    """Equal but for letter case; a missing value agrees only with a missing one."""
    if a is None or b is None:
        return a is b
    return a.lower() == b.lower()
