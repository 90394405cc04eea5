"""Which file column feeds which product field: the guesses the mapping step starts from, the
checks a mapping must pass, and saving it on its import job."""

import re
from dataclasses import dataclass, field

from django.db import transaction

from catalog.imports.errors import BadMapping, WrongImportState
from catalog.models import ImportJob

PRODUCT_FIELDS = ("sku", "title", "description", "category")
REQUIRED_FIELDS = ("sku", "title")
# Header spellings seen in catalog exports (Shopify, Akeneo, Amazon flat files, German ERPs).
SYNONYMS = {
    "sku": ["sku", "id", "product id", "item id", "item sku", "article number", "artikelnummer",
            "code", "product code", "item number", "asin", "ean", "gtin", "mpn", "reference"],
    "title": ["title", "name", "product name", "product title", "item name", "item title",
              "input", "bezeichnung", "designation"],
    "description": ["description", "desc", "body", "body html", "long description", "details",
                    "product description", "beschreibung", "text"],
    "category": ["category", "product type", "type", "category name", "product category",
                 "department", "kategorie", "item type"],
}  # fmt: skip


def normalize_header(text: str) -> str:
    return re.sub(r"[\s_\-./]+", " ", text.strip().lower()).strip()


@dataclass
class Mapping:
    """Column indexes (None: not in the file) and the known-value columns by attribute name."""

    sku: int | None = None
    title: int | None = None
    description: int | None = None
    category: int | None = None
    fixed_category_id: int | None = None
    known: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "sku": self.sku,
            "title": self.title,
            "description": self.description,
            "category": self.category,
            "fixed_category_id": self.fixed_category_id,
            "known": {str(index): name for index, name in self.known.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> "Mapping":
        return cls(
            sku=data.get("sku"),
            title=data.get("title"),
            description=data.get("description"),
            category=data.get("category"),
            fixed_category_id=data.get("fixed_category_id"),
            known={int(index): name for index, name in (data.get("known") or {}).items()},
        )

    def used_columns(self) -> set[int]:
        return {i for i in (self.sku, self.title, self.description, self.category) if i is not None}


def guess_mapping(header: list[str], attribute_names: list[str]) -> Mapping:
    """Match each product field to the first column with a known spelling, then attribute names."""
    normalized = [normalize_header(h) for h in header]
    mapping = Mapping()
    taken: set[int] = set()
    for product_field in PRODUCT_FIELDS:
        for synonym in SYNONYMS[product_field]:
            index = next((i for i, h in enumerate(normalized) if h == synonym and i not in taken), None)
            if index is not None:
                setattr(mapping, product_field, index)
                taken.add(index)
                break
    by_name = {normalize_header(name): name for name in attribute_names}
    for index, header_name in enumerate(normalized):
        if index not in taken and header_name in by_name:
            mapping.known[index] = by_name[header_name]
    return mapping


def check_mapping(mapping: Mapping) -> None:
    """Refuse a mapping that leaves a required field unmapped or feeds two fields from one column."""
    problems = []
    for required in REQUIRED_FIELDS:
        if getattr(mapping, required) is None:
            problems.append(f"Missing required column: choose the column that holds the {required}.")
    if mapping.category is None and mapping.fixed_category_id is None:
        problems.append("Missing required column: choose the category column, or one category for all rows.")
    fields = [i for i in (mapping.sku, mapping.title, mapping.description, mapping.category) if i is not None]
    if len(fields) != len(set(fields)):
        problems.append("One column is mapped to two product fields.")
    if problems:
        raise BadMapping(" ".join(problems))


def do_save_mapping(job: ImportJob, mapping: Mapping) -> None:
    """Store the mapping on a job that has not started; the job is then ready for its preview."""
    check_mapping(mapping)
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job.pk)
        if job.status not in {ImportJob.Status.UPLOADED, ImportJob.Status.MAPPED}:
            raise WrongImportState("This import has started already; its mapping can no longer change.")
        job.mapping = mapping.to_json()
        job.status = ImportJob.Status.MAPPED
        job.save(update_fields=["mapping", "status"])
