"""A products file in the format of shared/data/ave (JSON lines: the product's text, its category,
its gold values), read and checked whole before anything is stored: `manage.py simulate_review`
loads it as a new catalog and plays a reviewer who knows its gold.

Every slot of a product is judged: its category's schema is the union of the attribute names its
records list (first seen first), and an attribute a record does not list is gold "n/a" (OA-Mine's
rule: annotators tagged what each title says, so a value there is an invented one).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from extraction.domain import NA
from extraction.engine import metric
from extraction.engine.data import gold_forms


class ProductsFileError(ValueError):
    """A products file that cannot be used; the message names the file and, where one is at fault,
    the line."""


@dataclass(frozen=True)
class FileProduct:
    line: int  # its line in the file, 1 first: the product's sku in the catalog
    title: str
    description: str
    category: str
    gold: dict[str, list[str]]  # attribute -> accepted forms; an attribute absent here is n/a

    @property
    def sku(self) -> str:
        return f"line-{self.line:06d}"

    def forms(self, attribute: str) -> list[str]:
        """The accepted forms of `attribute` (["n/a"] where the record lists none)."""
        return self.gold.get(attribute) or [NA]

    def label(self, attribute: str) -> str:
        """What a person who knows the gold types for `attribute`: its first form, or n/a."""
        forms = [f for f in self.forms(attribute) if not metric.is_na(f)]
        return forms[0].strip() if forms else NA

    def is_right(self, attribute: str, value: str | None) -> bool:
        """The AVE metric's rule (extraction.engine.metric): a gold form after trimming, or n/a
        where the gold has none."""
        return metric.outcome(value, self.forms(attribute)) in ("VC", "NN")


def _text(record: dict, name: str, where: str) -> str:
    value = record.get(name, "")
    if not isinstance(value, str):
        raise ProductsFileError(f"{where}: {name!r} must be a string, not {type(value).__name__}")
    return value.strip()


def _product(record, line: int, where: str) -> FileProduct:
    if not isinstance(record, dict):
        raise ProductsFileError(f"{where}: a line must hold one JSON object, not {type(record).__name__}")
    if "input" in record:
        title, description = _text(record, "input", where), ""
    elif "input_title" in record:
        title, description = _text(record, "input_title", where), _text(record, "input_description", where)
    else:
        raise ProductsFileError(f"{where}: no 'input' (or 'input_title'): the product has no text")
    if not title:
        raise ProductsFileError(f"{where}: the product's title is empty")
    category = _text(record, "category", where)
    if not category:
        raise ProductsFileError(f"{where}: 'category' is missing or empty")
    scores = record.get("target_scores")
    if not isinstance(scores, dict) or not all(isinstance(v, dict) and v for v in scores.values()):
        raise ProductsFileError(
            f"{where}: 'target_scores' must map each attribute to an object of its accepted forms"
        )
    return FileProduct(line, title, description, category, gold_forms(scores))


def read_products(path: Path) -> list[FileProduct]:
    """Every product of the file, or ProductsFileError naming the file and the line at fault."""
    if not path.is_file():
        raise ProductsFileError(f"{path}: no such file")
    products = []
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                where = f"{path}, line {number}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ProductsFileError(f"{where}: not a JSON object ({exc.msg})") from None
                products.append(_product(record, number, where))
    except UnicodeDecodeError as exc:
        raise ProductsFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not products:
        raise ProductsFileError(f"{path}: holds no product")
    return products
