"""Row checks shared by the preview and the import: one row in, a clean product or its errors out."""

import json
import re
from dataclasses import dataclass, field

from catalog import kinds
from catalog.imports.map import Mapping
from catalog.models import Category, Product
from slotwise.names import unprintable_character

SKU_MAX = Product._meta.get_field("sku").max_length
TITLE_MAX = Product._meta.get_field("title").max_length
DESCRIPTION_MAX = 20_000
KNOWN_VALUE_MAX = 500
# What a number attribute holds: ASCII digits (at most 15 before and 6 after one decimal point or
# comma, what a float keeps exactly), then optionally a unit with no digit in it ("55 inch", "1,5 kg").
# No exponent (1e309 is infinity, 1e-400 zero), no hex, no second decimal mark, no other script's digits.
NUMBER = re.compile(r"^[-+]?([0-9]{1,15}([.,][0-9]{0,6})?|[.,][0-9]{1,6})(\s*[^\s\d.,+-][^\d]*)?$")
TRUE_WORDS = {"yes", "true", "1", "y"}
FALSE_WORDS = {"no", "false", "0", "n"}


@dataclass(frozen=True)
class RowError:
    row: int
    sku: str
    column: str
    reason: str


@dataclass(frozen=True)
class CleanRow:
    row: int
    sku: str
    title: str
    description: str
    category_id: int
    category_name: str
    known: dict

    def known_json(self) -> str:
        return json.dumps(self.known, ensure_ascii=False)


@dataclass
class UnknownCategory:
    """A category the file names that does not exist yet: how many rows name it, and the attributes
    those rows carry values for (in column order), which a new schema can start from."""

    name: str
    rows: int = 0
    attributes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CategoryInfo:
    id: int
    name: str
    attributes: dict  # lower-case name -> (name, kind, allowed values)


def load_categories() -> dict[str, CategoryInfo]:
    """Every category by lower-case name, with its current schema's attributes."""
    infos = {}
    for category in Category.objects.prefetch_related("schema_versions__attributes"):
        versions = sorted(category.schema_versions.all(), key=lambda v: v.version)
        attributes = versions[-1].attributes.all() if versions else []
        infos[category.name.lower()] = CategoryInfo(
            id=category.id,
            name=category.name,
            attributes={
                a.name.lower(): (a.name, str(a.kind), list(a.allowed_values or [])) for a in attributes
            },
        )
    return infos


class RowChecker:
    """Checks rows in file order; remembers SKUs so a repeated SKU is an error on its later rows."""

    def __init__(self, header: list[str], mapping: Mapping, categories: dict[str, CategoryInfo]):
        self.header = header
        self.mapping = mapping
        self.categories = categories
        self.fixed_category = next(
            (info for info in categories.values() if info.id == mapping.fixed_category_id), None
        )
        self.first_row_of_sku: dict[str, int] = {}
        self.unknown_categories: dict[str, UnknownCategory] = {}  # by lower-case name, in file order

    def _cell(self, cells: list[str], index: int | None) -> str:
        return cells[index].strip() if index is not None and index < len(cells) else ""

    def _column(self, index: int | None, fallback: str) -> str:
        return self.header[index] if index is not None else fallback

    def check(self, row: int, cells: list[str]) -> tuple[CleanRow | None, list[RowError]]:
        m = self.mapping
        sku = self._cell(cells, m.sku)
        errors: list[RowError] = []

        def error(index: int | None, reason: str, column: str = ""):
            errors.append(RowError(row, sku[:200], column or self._column(index, ""), reason))

        if len(cells) != len(self.header):
            error(None, f"has {len(cells)} fields; the header has {len(self.header)}", "(whole row)")
            return None, errors
        if any("\x00" in cell for cell in cells):
            error(None, "contains a NUL character", "(whole row)")
            return None, errors
        title = self._cell(cells, m.title)
        description = self._cell(cells, m.description)
        if not sku:
            error(m.sku, "SKU is empty")
        elif len(sku) > SKU_MAX:
            error(m.sku, f"SKU is {len(sku)} characters long; at most {SKU_MAX} are allowed")
        elif unprintable := unprintable_character(sku):
            # A zero-width space makes "SEC-U\u200b21" look like "SEC-U21": two products, one on screen.
            error(m.sku, f"SKU {sku!r} holds {unprintable}, invisible on screen; remove it")
        elif sku in self.first_row_of_sku:
            error(m.sku, f"duplicate SKU {sku!r}: row {self.first_row_of_sku[sku]} has it already")
        else:
            self.first_row_of_sku[sku] = row
        if not title:
            error(m.title, "title is empty")
        elif len(title) > TITLE_MAX:
            error(m.title, f"title is {len(title)} characters long; at most {TITLE_MAX} are allowed")
        if len(description) > DESCRIPTION_MAX:
            error(
                m.description,
                f"description is {len(description)} characters long; at most {DESCRIPTION_MAX} are allowed",
            )
        category = self._category(cells, error)
        known = self._known_values(cells, category, error)
        if category is None and self.mapping.category is not None:
            self._note_unknown(self._cell(cells, self.mapping.category), known)
        if errors or category is None:
            return None, errors
        return CleanRow(row, sku, title, description, category.id, category.name, known), []

    def _note_unknown(self, name: str, known: dict) -> None:
        if not name or name.lower() in self.categories:
            return
        unknown = self.unknown_categories.setdefault(name.lower(), UnknownCategory(name))
        unknown.rows += 1
        unknown.attributes += [a for a in known if a.lower() not in {b.lower() for b in unknown.attributes}]

    def _category(self, cells, error) -> CategoryInfo | None:
        if self.mapping.category is None:
            if self.fixed_category is None:
                error(None, "no category: map a category column or choose one category", "category")
            return self.fixed_category
        name = self._cell(cells, self.mapping.category)
        if not name:
            error(self.mapping.category, "category is empty")
            return None
        info = self.categories.get(name.lower())
        if info is None:
            error(
                self.mapping.category,
                f"unknown category {name!r}: create it on the Schemas page first, or from the import's preview",
            )
        return info

    def _known_values(self, cells, category: CategoryInfo | None, error) -> dict:
        known = {}
        for index, attribute_name in self.mapping.known.items():
            value = self._cell(cells, index)
            if not value:
                continue
            if len(value) > KNOWN_VALUE_MAX:
                error(index, f"value is {len(value)} characters long; at most {KNOWN_VALUE_MAX} are allowed")
                continue
            spec = category.attributes.get(attribute_name.lower()) if category else None
            if spec is None:
                known[attribute_name] = value
                continue
            name, kind, allowed = spec
            checked = _typed_value(value, kind, allowed)
            if checked is None:
                error(index, _type_reason(value, name, kind, allowed))
            else:
                known[name] = checked
        return known


def _typed_value(value: str, kind: str, allowed: list[str]) -> str | None:
    if kind == kinds.NUMBER:
        return value if NUMBER.match(value) else None
    if kind == kinds.ENUM:
        return next((choice for choice in allowed if choice.lower() == value.lower()), None)
    if kind == kinds.BOOLEAN:
        lowered = value.lower()
        return "yes" if lowered in TRUE_WORDS else "no" if lowered in FALSE_WORDS else None
    return value


def _type_reason(value: str, name: str, kind: str, allowed: list[str]) -> str:
    if kind == kinds.NUMBER:
        return (
            f"{value!r} is not a number ({name} is a number attribute): write digits 0-9, at most 15 of "
            "them and 6 decimals after one point or comma, then the unit (no exponent, no hex)"
        )
    if kind == kinds.ENUM:
        shown = ", ".join(allowed[:10]) + (", ..." if len(allowed) > 10 else "")
        return f"{value!r} is not an allowed value of {name} ({shown})"
    return f"{value!r} is not yes/no ({name} is a boolean attribute)"
