"""The token budget each attribute of a run decodes with, fixed when the run starts.

A schema's stored size may be older than what its data needs (the old default of 12 tokens, a size
typed before the catalog held long values): decoded so, values are cut ("100 O", "Fresh Scen"). A
run therefore decodes each attribute with the larger of its schema's size and the size its data
suggests (catalog/budgets.py: the longest value of the run's model's training data and of the
category's known values; where neither knows the attribute, its schema's size stands), and records
those sizes in decode_settings["sizes"], so that every worker decodes the same slots and the run page
can say where they exceed the schema. The schema itself
changes only when a person resizes it (the editor's "Resize to suggested", a new version).
"""

from dataclasses import dataclass

from catalog import budgets
from catalog.models import Category, SchemaVersion
from extraction import config

# Categories named on one line of the run page before "and N more".
CATEGORIES_NAMED = 6


def run_sizes(schemas: list[SchemaVersion], model_dir: str) -> dict[str, dict[str, int]]:
    """{schema version id (text, a JSON key): {attribute name: tokens}} for a run of `model_dir`."""
    path = config.run_model_path(model_dir)
    model = path if (path / "slotwise.json").is_file() else None  # else the default model's data
    return {
        str(schema.pk): {
            a.name: max(a.max_tokens, budgets.suggested_for(schema.category, a, model).need)
            for a in schema.attributes.all()
        }
        for schema in schemas
    }


def sizes_of(decode_settings: dict, schema_id: int) -> dict[str, int]:
    """The sizes a run recorded for one schema version; {} for a run started before runs were sized
    (its attributes decode with their schema's sizes)."""
    return (decode_settings.get("sizes") or {}).get(str(schema_id), {})


@dataclass(frozen=True)
class TooSmall:
    """An attribute whose schema gives a smaller slot than its values need, in the categories where
    it does (the run page's one line per attribute, with a link to each schema to resize it)."""

    name: str
    categories: list[Category]

    @property
    def named(self) -> list[Category]:
        return self.categories[:CATEGORIES_NAMED]

    @property
    def more(self) -> int:
        return max(0, len(self.categories) - CATEGORIES_NAMED)


def too_small(run) -> list[TooSmall]:
    """The attributes the run decodes with more room than their schema gives, by name: a run over ten
    categories that all say "Brand" gets one line for Brand, not ten."""
    by_name: dict[str, list[Category]] = {}
    for schema in run.schema_versions.select_related("category").prefetch_related("attributes"):
        sizes = sizes_of(run.decode_settings, schema.pk)
        for a in schema.attributes.all():
            if sizes.get(a.name, 0) > a.max_tokens:
                categories = by_name.setdefault(a.name, [])
                if schema.category not in categories:
                    categories.append(schema.category)
    return [
        TooSmall(name, sorted(categories, key=lambda c: c.name))
        for name, categories in sorted(by_name.items())
    ]
