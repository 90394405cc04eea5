"""Attribute schemas: every change makes the category's next schema version (do_* actions).

Versions are immutable once written, so a run that recorded version 3 can always show what
version 3 asked for. Each action locks the category row, checks that the editor was looking at
the current version (else StaleSchema: someone else changed it meanwhile), copies the attribute
list, applies the change and writes it as the next version, all in one transaction.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db import transaction

from catalog import budgets
from catalog.kinds import DEFAULT_TOKEN_BUDGET, MAX_TOKEN_BUDGET
from catalog.models import Attribute, Category, SchemaVersion
from slotwise.names import check_name

SCHEMA_FORMAT = "slotwise-schema/1"
KINDS = tuple(Attribute.Kind.values)


class SchemaError(ValueError):
    """A schema change or a schema file that cannot be applied; the message says why."""


class StaleSchema(SchemaError):
    """The editor showed an older version than the current one."""


@dataclass
class AttributeData:
    name: str
    description: str = ""
    kind: str = Attribute.Kind.TEXT
    unit: str = ""
    allowed_values: list[str] = field(default_factory=list)
    max_tokens: int = DEFAULT_TOKEN_BUDGET
    required: bool = False
    free: bool = False

    @classmethod
    def of(cls, attribute: Attribute) -> "AttributeData":
        return cls(
            name=attribute.name,
            description=attribute.description,
            kind=attribute.kind,
            unit=attribute.unit,
            allowed_values=list(attribute.allowed_values or []),
            max_tokens=attribute.max_tokens,
            required=attribute.required,
            free=attribute.free,
        )

    @property
    def decoding(self) -> str:
        return Attribute.Kind(self.kind).decoding(self.unit, self.free)

    def normalized(self) -> "AttributeData":
        """Drop what the kind does not use (a unit on a text attribute, values on a number, free on
        anything but text)."""
        return AttributeData(
            name=self.name.strip(),
            description=self.description.strip(),
            kind=self.kind,
            unit=self.unit.strip() if self.kind == Attribute.Kind.NUMBER else "",
            allowed_values=[v.strip() for v in self.allowed_values if v.strip()]
            if self.kind == Attribute.Kind.ENUM
            else [],
            max_tokens=self.max_tokens,
            required=self.required,
            free=self.free and self.kind == Attribute.Kind.TEXT,
        )


def check_attribute(data: AttributeData, where: str = "") -> None:
    prefix = f"{where}: " if where else ""
    if not data.name.strip():
        raise SchemaError(f"{prefix}name is empty")
    _check_printable(data.name, f"{prefix}name")
    if len(data.name.strip()) > 100:
        raise SchemaError(f"{prefix}name is longer than 100 characters")
    if len(data.description) > 500:
        raise SchemaError(f"{prefix}description is longer than 500 characters")
    if data.kind not in KINDS:
        raise SchemaError(f"{prefix}kind {data.kind!r} is not one of {', '.join(KINDS)}")
    if data.kind == Attribute.Kind.ENUM and not [v for v in data.allowed_values if v.strip()]:
        raise SchemaError(f"{prefix}an enumeration needs at least one allowed value")
    if not isinstance(data.max_tokens, int) or not 1 <= data.max_tokens <= MAX_TOKEN_BUDGET:
        raise SchemaError(f"{prefix}token budget must be a whole number from 1 to {MAX_TOKEN_BUDGET}")


def _check_unique_names(attributes: list[AttributeData]) -> None:
    seen = set()
    for data in attributes:
        key = data.name.strip().lower()
        if key in seen:
            raise SchemaError(f"an attribute named {data.name.strip()!r} already exists")
        seen.add(key)


def _write_version(category: Category, attributes: list[AttributeData], user, note: str) -> SchemaVersion:
    current = category.current_schema
    version = SchemaVersion.objects.create(
        category=category, version=(current.version + 1) if current else 1, created_by=user, note=note[:300]
    )
    Attribute.objects.bulk_create(
        Attribute(schema=version, position=index, **asdict(data.normalized()))
        for index, data in enumerate(attributes)
    )
    return version


def current_attributes(version: SchemaVersion | None) -> list[AttributeData]:
    return [AttributeData.of(a) for a in version.attributes.all()] if version else []


def _check_printable(name: str, what: str) -> None:
    try:
        check_name(name, what)
    except ValueError as exc:
        raise SchemaError(str(exc)) from None


def do_create_category(name: str, description: str, user) -> Category:
    name = name.strip()
    if not name:
        raise SchemaError("category name is empty")
    _check_printable(name, "the category name")
    with transaction.atomic():
        if Category.objects.filter(name__iexact=name).exists():
            raise SchemaError(f"a category named {name!r} already exists")
        category = Category.objects.create(name=name, description=description.strip())
        _write_version(category, [], user, "Created")
    return category


def _change(
    category: Category, base_version: int, user, change: Callable[[list[AttributeData]], str]
) -> SchemaVersion:
    with transaction.atomic():
        category = Category.objects.select_for_update().get(pk=category.pk)
        current = category.current_schema
        if current is None or current.version != base_version:
            now = current.version if current else 0
            raise StaleSchema(
                f"the schema changed while you were editing (you saw v{base_version}, it is now v{now}); "
                "your change was not applied"
            )
        attributes = current_attributes(current)
        note = change(attributes)
        _check_unique_names(attributes)
        return _write_version(category, attributes, user, note)


def _at(attributes: list[AttributeData], index: int) -> AttributeData:
    if not 0 <= index < len(attributes):
        raise StaleSchema(f"there is no attribute number {index + 1} in this version")
    return attributes[index]


def do_add_attribute(category: Category, base_version: int, data: AttributeData, user) -> SchemaVersion:
    check_attribute(data)

    def add(attributes):
        attributes.append(data)
        return f"Added {data.name.strip()}"

    return _change(category, base_version, user, add)


def do_update_attribute(
    category: Category, base_version: int, index: int, data: AttributeData, user
) -> SchemaVersion:
    check_attribute(data)

    def update(attributes):
        old = _at(attributes, index)
        attributes[index] = data
        renamed = f" (was {old.name})" if old.name != data.name.strip() else ""
        return f"Edited {data.name.strip()}{renamed}"

    return _change(category, base_version, user, update)


def do_delete_attribute(category: Category, base_version: int, index: int, user) -> SchemaVersion:
    def delete(attributes):
        removed = _at(attributes, index)
        attributes.pop(index)
        return f"Deleted {removed.name}"

    return _change(category, base_version, user, delete)


def do_move_attribute(category: Category, base_version: int, index: int, offset: int, user) -> SchemaVersion:
    def move(attributes):
        moved = _at(attributes, index)
        target = index + offset
        if not 0 <= target < len(attributes):
            raise SchemaError(f"{moved.name} is already {'first' if offset < 0 else 'last'}")
        attributes[index], attributes[target] = attributes[target], attributes[index]
        return f"Moved {moved.name} {'up' if offset < 0 else 'down'}"

    return _change(category, base_version, user, move)


@dataclass(frozen=True)
class Resized:
    """One attribute's token budget, grown from `old` to `new`."""

    name: str
    old: int
    new: int


def resized_text(resized: list[Resized]) -> str:
    """The sizes that grew as a version's note and the messages say them: "Flavor 4 → 9 tokens"."""
    return ", ".join(f"{r.name} {r.old} → {r.new}" for r in resized) + " tokens"


@dataclass(frozen=True)
class Fitted:
    """A schema version do_fit_budgets wrote, and the sizes it grew."""

    version: SchemaVersion
    resized: list[Resized]


def do_resize_attributes(category: Category, base_version: int, sizes: dict[str, int], user) -> SchemaVersion:
    """Grow the named attributes to the given token budgets (the editor's "Resize to suggested");
    an attribute already as large, or no longer there, is left as it is."""

    def resize(attributes):
        changed = []
        for attribute in attributes:
            wanted = min(sizes.get(attribute.name, 0), MAX_TOKEN_BUDGET)
            if wanted > attribute.max_tokens:
                changed.append(Resized(attribute.name, attribute.max_tokens, wanted))
                attribute.max_tokens = wanted
        if not changed:
            raise SchemaError("every attribute already has at least its suggested size; nothing changed")
        return "Resized " + resized_text(changed)

    return _change(category, base_version, user, resize)


def fitted(category: Category, data: AttributeData, values_only: bool = False) -> AttributeData:
    """`data` with at least the size its values need (catalog/budgets.py: the model's training data and
    the category's known values; values_only: the known values alone); a larger size stands."""
    needed = (
        budgets.needed_by_values(category, data)
        if values_only
        else budgets.suggested_for(category, data).need
    )
    if needed <= data.max_tokens:
        return data
    return AttributeData(**{**asdict(data), "max_tokens": min(needed, MAX_TOKEN_BUDGET)})


def do_fit_budgets(category: Category, user, why: str) -> Fitted | None:
    """Grow every attribute of the category's current schema below the size its known values need,
    as one new version noted `why` and what grew (returned with it); None when every attribute fits
    already. Called
    where values arrive (a product import, the demo loader), so a slot never starts out cutting
    them; a size a person chose smaller than the training data's stands (the editor warns of it)."""
    with transaction.atomic():
        category = Category.objects.select_for_update().get(pk=category.pk)
        current = category.current_schema
        if current is None:
            return None
        attributes = current_attributes(current)
        grown = [fitted(category, data, values_only=True) for data in attributes]
        resized = [
            Resized(new.name, old.max_tokens, new.max_tokens)
            for old, new in zip(attributes, grown, strict=True)
            if new.max_tokens != old.max_tokens
        ]
        if not resized:
            return None
        return Fitted(_write_version(category, grown, user, f"{why}: {resized_text(resized)}"), resized)


def schema_to_dict(version: SchemaVersion) -> dict:
    return {
        "format": SCHEMA_FORMAT,
        "category": version.category.name,
        "description": version.category.description,
        "version": version.version,
        "attributes": [asdict(data) for data in current_attributes(version)],
    }


def parse_schema_dict(payload) -> tuple[str, str, list[AttributeData]]:
    """Validate an exported schema; SchemaError says which field of which attribute is wrong."""
    if not isinstance(payload, dict):
        raise SchemaError("the file must hold one JSON object with 'category' and 'attributes'")
    if payload.get("format", SCHEMA_FORMAT) != SCHEMA_FORMAT:
        raise SchemaError(f"format {payload.get('format')!r} is not {SCHEMA_FORMAT!r}")
    category = payload.get("category")
    if not isinstance(category, str) or not category.strip():
        raise SchemaError("'category' must be a non-empty string")
    _check_printable(category, "'category'")
    description = payload.get("description", "")
    if not isinstance(description, str):
        raise SchemaError("'description' must be a string")
    raw_attributes = payload.get("attributes")
    if not isinstance(raw_attributes, list):
        raise SchemaError("'attributes' must be a list")
    attributes = []
    known_fields = set(AttributeData.__dataclass_fields__)
    for number, raw in enumerate(raw_attributes):
        where = f"attributes[{number}]"
        if not isinstance(raw, dict):
            raise SchemaError(f"{where} must be an object")
        unknown = set(raw) - known_fields
        if unknown:
            raise SchemaError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for text_field in ("name", "description", "kind", "unit"):
            if text_field in raw and not isinstance(raw[text_field], str):
                raise SchemaError(f"{where}.{text_field} must be a string")
        values = raw.get("allowed_values", [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SchemaError(f"{where}.allowed_values must be a list of strings")
        for flag in ("required", "free"):
            if flag in raw and not isinstance(raw[flag], bool):
                raise SchemaError(f"{where}.{flag} must be true or false")
        if isinstance(raw.get("max_tokens"), bool):
            raise SchemaError(f"{where}.max_tokens must be a whole number")
        data = AttributeData(**{"name": "", **raw})
        check_attribute(data, where)
        attributes.append(data.normalized())
    _check_unique_names(attributes)
    return category.strip(), description.strip(), attributes


def do_import_schema(
    payload, user, fit: bool = True, note: str = "Imported from JSON"
) -> tuple[SchemaVersion, bool]:
    """Create the category or its next version from an exported schema.

    Returns (version, created). Each attribute gets at least the size its data needs (fitted(): a
    file written by hand, or exported before the catalog held long values, would otherwise cut
    them from the first run); fit=False keeps the file's sizes as they are (tests that need a
    small slot). Importing what the current version already says writes nothing, so loading the
    same file twice is harmless.
    """
    name, description, attributes = parse_schema_dict(payload)
    with transaction.atomic():
        category = Category.objects.select_for_update().filter(name__iexact=name).first()
        if category is None:
            category = Category.objects.create(name=name, description=description)
        elif description and description != category.description:
            category.description = description
            category.save(update_fields=["description"])
        if fit:
            attributes = [fitted(category, data) for data in attributes]
        current = category.current_schema
        if current is not None and current_attributes(current) == attributes:
            return current, False
        return _write_version(category, attributes, user, note), True


def do_import_schemas(payloads: list, user) -> list[tuple[SchemaVersion, bool]]:
    """Import several exported schemas (a JSON list) all or nothing; errors name the list item."""
    if not payloads:
        raise SchemaError("the file holds an empty list")
    results = []
    with transaction.atomic():
        for number, payload in enumerate(payloads):
            try:
                results.append(do_import_schema(payload, user))
            except SchemaError as exc:
                raise SchemaError(
                    f"schema {number + 1} of {len(payloads)}: {exc}" if len(payloads) > 1 else str(exc)
                ) from None
    return results
