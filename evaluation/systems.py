"""Systems under comparison: their outputs, the products they cover, and imports of outside outputs."""

import csv
import io
from dataclasses import dataclass

from django.db import transaction

from catalog.models import Catalog, Product
from evaluation.models import ImportedValue, System
from extraction.domain import values_agree
from extraction.models import ExtractedValue, Run

IMPORT_MAX_BYTES = 20 * 1024 * 1024
IMPORT_COLUMNS = ("sku", "attribute", "value")
MAX_REPORTED_ERRORS = 20
# Imported attributes a run does not know sort after the run's schema order.
UNKNOWN_POSITION = 10_000


class SystemImportError(ValueError):
    """The file was refused; `errors` lists each problem as "row N, column C: reason"."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def system_for_run(run: Run, user=None) -> System:
    """The System standing for `run` (made on first use, named after the run and its decoder)."""
    system = System.objects.filter(run=run).first()
    if system:
        return system
    decoder = run.decoder.upper()  # "HPD" / "AR": short enough for chart labels
    base = f"{decoder} · {run.name} (run {run.pk})" if run.name else f"{decoder} · run {run.pk}"
    name, n = base, 1
    while System.objects.filter(name=name).exists():
        n += 1
        name = f"{base} ({n})"
    return System.objects.create(name=name, kind=System.Kind.RUN, run=run, created_by=user)


def covered_product_ids(system: System) -> set[int]:
    """Products for which the system has at least one value."""
    if system.kind == System.Kind.RUN:
        rows = ExtractedValue.objects.filter(run_id=system.run_id)
    else:
        rows = ImportedValue.objects.filter(system=system)
    return set(rows.values_list("product_id", flat=True).distinct())


@dataclass(frozen=True)
class Output:
    """One attribute value of one system for one product."""

    attribute: str
    value: str
    position: int


def outputs_of(system: System, product_ids) -> dict[int, dict[str, Output]]:
    """{product_id: {attribute name: Output}} for the given products."""
    result: dict[int, dict[str, Output]] = {}
    if system.kind == System.Kind.RUN:
        rows = ExtractedValue.objects.filter(run_id=system.run_id, product_id__in=product_ids).values_list(
            "product_id", "attribute__name", "value", "attribute__position"
        )
    else:
        rows = (
            (p, a, v, UNKNOWN_POSITION)
            for p, a, v in ImportedValue.objects.filter(
                system=system, product_id__in=product_ids
            ).values_list("product_id", "attribute_name", "value")
        )
    for product_id, attribute, value, position in rows:
        result.setdefault(product_id, {})[attribute] = Output(attribute, value, position)
    return result


@dataclass(frozen=True)
class Pair:
    """One attribute of one product as the two systems gave it (None: the system gave nothing)."""

    attribute: str
    first: str | None
    second: str | None

    @property
    def differs(self) -> bool:
        return not values_agree(self.first, self.second)


def paired_outputs(first: dict[str, Output], second: dict[str, Output]) -> list[Pair]:
    """Both systems' values matched by attribute name regardless of case, in schema order.

    Outside systems spell names their own way ("color" for "Color"); the run's spelling wins.
    """
    merged: dict[str, dict] = {}
    for side, outputs in (("first", first), ("second", second)):
        for name, output in outputs.items():
            entry = merged.setdefault(name.casefold(), {"name": name, "position": output.position})
            entry[side] = output.value
            if output.position < entry["position"]:
                entry["name"], entry["position"] = name, output.position
    ordered = sorted(merged.values(), key=lambda e: (e["position"], e["name"].casefold()))
    return [Pair(e["name"], e.get("first"), e.get("second")) for e in ordered]


def parse_import(data: bytes, catalog: Catalog) -> list[tuple[Product, str, str]]:
    """Check a CSV of sku, attribute, value against `catalog`; every problem is reported by row."""
    if len(data) > IMPORT_MAX_BYTES:
        raise SystemImportError(
            [f"the file is {len(data) // 1024} KiB; the limit is {IMPORT_MAX_BYTES // 1024} KiB"]
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SystemImportError([f"the file is not UTF-8 text (byte {exc.start} cannot be read)"]) from exc
    if "\x00" in text:
        raise SystemImportError(["the file is not a CSV text file (it holds NUL bytes)"])
    reader = csv.DictReader(io.StringIO(text))
    header = [(name or "").strip().lower() for name in (reader.fieldnames or [])]
    missing = [c for c in IMPORT_COLUMNS if c not in header]
    if missing:
        raise SystemImportError([f"missing column(s): {', '.join(missing)}; expected sku, attribute, value"])
    reader.fieldnames = header
    rows = [
        (n, {k: (row.get(k) or "").strip() for k in IMPORT_COLUMNS}) for n, row in enumerate(reader, start=2)
    ]
    if not rows:
        raise SystemImportError(["the file has a header but no rows"])
    wanted = {r["sku"] for _, r in rows}
    products = {p.sku: p for p in Product.objects.filter(catalog=catalog, sku__in=wanted)}
    errors: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    parsed = []
    for number, row in rows:
        if not row["sku"]:
            errors.append(f"row {number}, column sku: empty")
        elif row["sku"] not in products:
            errors.append(f"row {number}, column sku: {row['sku']!r} is not in catalog {catalog.name!r}")
        if not row["attribute"]:
            errors.append(f"row {number}, column attribute: empty")
        key = (row["sku"], row["attribute"])
        if key in seen:
            errors.append(f"row {number}: {key[0]!r} / {key[1]!r} already given at row {seen[key]}")
        seen.setdefault(key, number)
        if row["sku"] in products and row["attribute"]:
            parsed.append((products[row["sku"]], row["attribute"], row["value"]))
    if errors:
        extra = len(errors) - MAX_REPORTED_ERRORS
        raise SystemImportError(
            errors[:MAX_REPORTED_ERRORS] + ([f"... and {extra} more"] if extra > 0 else [])
        )
    return parsed


def do_import_system(name: str, catalog: Catalog, data: bytes, user=None) -> System:
    """Create an imported System from a CSV of sku, attribute, value: all rows or nothing."""
    name = name.strip()
    if not name:
        raise SystemImportError(["name: give the system a name (it appears only on results pages)"])
    if System.objects.filter(name=name).exists():
        raise SystemImportError([f"name: a system called {name!r} already exists"])
    parsed = parse_import(data, catalog)
    with transaction.atomic():
        system = System.objects.create(name=name, kind=System.Kind.IMPORTED, catalog=catalog, created_by=user)
        ImportedValue.objects.bulk_create(
            ImportedValue(system=system, product=product, attribute_name=attribute, value=value)
            for product, attribute, value in parsed
        )
    return system
