"""How long an attribute's values may be, in words, and the size suggested for it.

The model writes each value into a slot of a fixed number of tokens (the attribute's token budget,
`Attribute.max_tokens`); a value longer than that is cut short ("100 O", "Fresh Scen"). Catalog teams
think in characters, so the editor says "up to about N characters (T tokens)", and an attribute
added without a size gets one from two sources: the longest value of that attribute in the data the
default model was trained on (its slotwise.json `attribute_budgets`, written by the training
command), and the longest value this category's products already carry (known values, counted with
the model's own tokenizer when its file is there). Neither source reads torch.
"""

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from catalog.kinds import DEFAULT_TOKEN_BUDGET, MAX_TOKEN_BUDGET
from catalog.models import Attribute, Category, Product

MARGIN = 2  # tokens beyond the longest value seen: the terminator and a little room
LOW = 4
CHARS_PER_TOKEN = 3  # product text runs about 3 to 4 characters a token; the lower end, to be safe


@dataclass(frozen=True)
class Budget:
    tokens: int
    why: str  # where the size comes from, in words
    from_data: bool = True  # False: nothing knew the attribute, the size is the default guess

    @property
    def need(self) -> int:
        """The tokens its values are known to need: 0 where the size is only the default guess (a
        person's smaller size then stands; nothing says values would be cut)."""
        return self.tokens if self.from_data else 0


def in_words(tokens: int) -> str:
    return f"up to about {tokens * CHARS_PER_TOKEN} characters ({tokens} tokens)"


def short(tokens: int) -> str:
    """The size in a table cell: one line, characters only (the tokens go in its tooltip)."""
    return f"~{tokens * CHARS_PER_TOKEN} characters"


def _model_dir() -> Path:
    configured = Path(settings.SLOTWISE_MODEL_DIR)
    # before `make model` has run: the committed artifact it will be assembled from
    return configured if (configured / "slotwise.json").is_file() else Path(settings.TRAINING_SHIPPED_ADAPTER)


@functools.cache
def _trained(model_dir: Path) -> dict[str, int]:
    path = model_dir / "slotwise.json"
    stored = json.loads(path.read_text()) if path.is_file() else {}
    return {k: int(v) for k, v in stored.get("attribute_budgets", {}).items()}


@functools.cache
def _tokenizer(model_dir: Path):
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def tokens_of(text: str, model_dir: Path | None = None) -> int:
    tokenizer = _tokenizer(model_dir or _model_dir())
    if tokenizer is None:
        return math.ceil(len(text) / CHARS_PER_TOKEN)
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def longest_known(category: Category, name: str) -> str | None:
    """The longest known value of attribute `name` among the category's products."""
    # the key is read in Python: Django's key transforms take a name that looks like a number
    # ("12", "1.5") for an array index, which PostgreSQL refuses on an object
    rows = Product.objects.filter(category=category, known_values__has_key=name).values_list(
        "known_values", flat=True
    )
    texts = [str(v) for v in (row.get(name) for row in rows) if v not in (None, "")]
    return max(texts, key=len) if texts else None


def suggested(category: Category, name: str, model_dir: Path | None = None) -> Budget:
    """The size for attribute `name` of `category`: the longest value of the training data and of
    the category's known values, plus a margin. `model_dir`: the model whose training data and
    tokenizer count (a run's); None: the default model."""
    return suggested_from(name, longest_known(category, name), model_dir)


def suggested_from(name: str, known: str | None, model_dir: Path | None = None) -> Budget:
    """suggested(), given the longest value the catalog knows for `name` (None: none known): the rule
    for a catalog whose values are at hand before its products are stored (manage.py simulate_review)."""
    model_dir = model_dir or _model_dir()
    trained = _trained(model_dir).get(name)
    sizes, reasons = [], []
    if trained:
        sizes.append(trained)
        reasons.append(f"{trained} tokens fit the longest {name} the model was trained on")
    if known is not None:
        needed = tokens_of(known, model_dir)
        sizes.append(needed + MARGIN)
        reasons.append(f"this catalog's longest known {name}, {known!r}, needs {needed}")
    if not sizes:
        return Budget(
            DEFAULT_TOKEN_BUDGET,
            "neither the training data nor this catalog knows it: the default",
            from_data=False,
        )
    return Budget(min(max(max(sizes), LOW), MAX_TOKEN_BUDGET), "; ".join(reasons))


def suggested_for(category: Category, attribute, model_dir: Path | None = None) -> Budget:
    """suggested(), for an attribute whose type bounds its values (an Attribute or AttributeData):
    an enumeration's slot needs its longest allowed value and a boolean's "yes" / "no", whatever
    long values the training data held under that name (a wider slot only costs positions)."""
    if attribute.kind == Attribute.Kind.ENUM and attribute.allowed_values:
        longest = max((str(v) for v in attribute.allowed_values), key=lambda v: tokens_of(v, model_dir))
        needed = tokens_of(longest, model_dir)
        return Budget(max(needed + MARGIN, LOW), f"its longest allowed value, {longest!r}, needs {needed}")
    if attribute.kind == Attribute.Kind.BOOLEAN:
        return Budget(LOW, "a yes or no")
    return suggested(category, attribute.name, model_dir)


def needed_by_values(category: Category, attribute) -> int:
    """The tokens the category's known values of `attribute` need (its longest, plus the margin);
    0 when it has none. An enumeration or a boolean needs what its type bounds (suggested_for). What
    a product import grows a slot to: a size a person chose stands until values need more, whatever
    the training data held under the name."""
    if attribute.kind in (Attribute.Kind.ENUM, Attribute.Kind.BOOLEAN):
        return suggested_for(category, attribute).need
    known = longest_known(category, attribute.name)
    return 0 if known is None else min(tokens_of(known) + MARGIN, MAX_TOKEN_BUDGET)
