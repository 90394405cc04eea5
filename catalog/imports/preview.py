"""The preview step: the first rows as they will be imported, the errors of the rows checked, which
products are new and which an import updates (and what it changes), and cells a spreadsheet would
read as a formula (imported as text; every CSV export writes them with a leading apostrophe), and
documents too long for a worker to decode (counted in the default model's tokens)."""

from dataclasses import dataclass, field
from itertools import islice

from catalog.csv_safety import looks_like_formula
from catalog.imports.check import CleanRow, RowChecker, RowError, UnknownCategory, load_categories
from catalog.imports.document_length import document_limit, document_tokens
from catalog.imports.map import Mapping
from catalog.imports.read import read_rows
from catalog.models import ImportJob, Product

PREVIEW_ROWS = 20
PREVIEW_CHECK_ROWS = 10_000
PREVIEW_ERRORS_SHOWN = 200


@dataclass
class PreviewRow:
    row: int
    cells: list[str]
    clean: CleanRow | None
    errors: list[RowError]
    changes: list[str] | None = None  # None: a new product; else the fields the import changes


@dataclass(frozen=True)
class FormulaCell:
    row: int
    sku: str
    column: str
    text: str


@dataclass(frozen=True)
class LongDocument:
    row: int
    sku: str
    tokens: int


@dataclass
class Preview:
    rows: list[PreviewRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    error_count: int = 0
    bad_rows: int = 0
    checked_rows: int = 0
    complete: bool = True
    new_products: int = 0
    updated_products: int = 0  # of the good rows checked, SKUs the catalog already has
    formulas: list[FormulaCell] = field(default_factory=list)
    long_documents: list[LongDocument] = field(default_factory=list)
    document_limit: int = 0  # tokens; a longer document fails its run
    new_categories: list[UnknownCategory] = field(default_factory=list)  # named by rows, not there yet


def build_preview(job: ImportJob) -> Preview:
    """The first PREVIEW_ROWS rows, and the row errors of the first PREVIEW_CHECK_ROWS checked."""
    mapping = Mapping.from_json(job.mapping)
    checker = RowChecker(job.header, mapping, load_categories())
    preview = Preview(document_limit=document_limit())
    rows = read_rows(job.open_file, job.file_format)
    good: list[CleanRow] = []
    for row, cells in islice(rows, PREVIEW_CHECK_ROWS):
        clean, errors = checker.check(row, cells)
        preview.checked_rows += 1
        if clean is not None:
            good.append(clean)
            preview.formulas += [
                FormulaCell(row, clean.sku, column, text)
                for column, text in (("title", clean.title), ("description", clean.description))
                if looks_like_formula(text)
            ][: max(PREVIEW_ERRORS_SHOWN - len(preview.formulas), 0)]
            tokens = document_tokens(clean.title, clean.description)
            if tokens > preview.document_limit and len(preview.long_documents) < PREVIEW_ERRORS_SHOWN:
                preview.long_documents.append(LongDocument(row, clean.sku, tokens))
        if errors:
            preview.bad_rows += 1
            preview.error_count += len(errors)
            room = PREVIEW_ERRORS_SHOWN - len(preview.errors)
            preview.errors.extend(errors[: max(room, 0)])
        if len(preview.rows) < PREVIEW_ROWS:
            preview.rows.append(PreviewRow(row, cells, clean, errors))
    preview.complete = next(rows, None) is None
    preview.new_categories = list(checker.unknown_categories.values())
    existing = {
        p.sku: p
        for p in Product.objects.filter(
            catalog_id=job.catalog_id, sku__in=[c.sku for c in good]
        ).select_related("category")
    }
    preview.updated_products = len({c.sku for c in good if c.sku in existing})
    preview.new_products = len({c.sku for c in good}) - preview.updated_products
    for item in preview.rows:
        if item.clean is not None and item.clean.sku in existing:
            item.changes = changes(existing[item.clean.sku], item.clean, mapping.description is not None)
    return preview


def changes(product: Product, clean: CleanRow, has_description: bool) -> list[str]:
    """What importing `clean` changes on the product already stored under its SKU (a file without
    a description column keeps the stored description)."""
    fields = [("title", product.title, clean.title), ("category", product.category.name, clean.category_name)]
    if has_description:
        fields.insert(1, ("description", product.description, clean.description))
    changed = [name for name, old, new in fields if (old or "") != (new or "")]
    return changed + [
        name for name, value in clean.known.items() if str(product.known_values.get(name, "")) != str(value)
    ]
