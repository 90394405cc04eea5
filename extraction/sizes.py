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

from catalog import budgets
from catalog.models import SchemaVersion
from extraction import config


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


def grown(run) -> list[tuple[str, int, int]]:
    """(attribute, tokens decoded with, tokens its schema gives) where the run decodes more."""
    rows = []
    for schema in run.schema_versions.prefetch_related("attributes"):
        sizes = sizes_of(run.decode_settings, schema.pk)
        rows += [
            (a.name, sizes[a.name], a.max_tokens)
            for a in schema.attributes.all()
            if sizes.get(a.name, 0) > a.max_tokens
        ]
    return sorted(set(rows))
