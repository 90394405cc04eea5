"""Categories an import's rows name that do not exist yet, created from its preview.

Without this a row naming a new category is refused until someone creates the category on the
Schemas page and comes back. The preview lists them (catalog.imports.check.UnknownCategory); an admin
creates each with the attributes its rows carry values for (text attributes, sized from the model's
training data now and grown to the imported values when the rows are written: catalog.imports.run),
or with an empty schema to fill in on the Schemas page. Only names the file itself holds are
created, so a forged form makes no category the file does not ask for.
"""

from django.db import transaction

from catalog.imports.errors import WrongImportState
from catalog.imports.preview import build_preview
from catalog.models import Category, ImportJob
from catalog.schemas import SchemaError, do_create_category, do_import_schema

WITH_ATTRIBUTES = "attributes"
EMPTY = "empty"
SCHEMA_CHOICES = (WITH_ATTRIBUTES, EMPTY)


def do_create_import_categories(job: ImportJob, names: list[str], schema: str, user) -> list[Category]:
    """Create the categories `names` that the job's rows name and that do not exist yet; `schema`:
    WITH_ATTRIBUTES (the attributes the file holds values for) or EMPTY. SchemaError says why nothing
    was created (a name the file does not hold, a bad choice); all or nothing."""
    if job.status != ImportJob.Status.MAPPED:
        raise WrongImportState("This import has been started already; its categories cannot be added here.")
    if schema not in SCHEMA_CHOICES:
        raise SchemaError(
            f"choose how to create the categories ({' or '.join(SCHEMA_CHOICES)}), not {schema!r}"
        )
    names = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    if not names:
        raise SchemaError("tick at least one category to create")
    unknown = {c.name.lower(): c for c in build_preview(job).new_categories}
    wanted = [unknown.get(name.lower()) for name in names]
    if None in wanted:
        missing = [name for name, found in zip(names, wanted, strict=True) if found is None]
        raise SchemaError(
            f"the file names no new category {missing[0]!r} (created meanwhile, or not in the file); "
            "nothing was created"
        )
    created = []
    with transaction.atomic():
        for category in wanted:
            if schema == EMPTY:
                created.append(do_create_category(category.name, "", user))
                continue
            if Category.objects.filter(name__iexact=category.name).exists():
                raise SchemaError(f"a category named {category.name!r} already exists; nothing was created")
            attributes = [{"name": name} for name in category.attributes]  # sized by do_import_schema
            payload = {"category": category.name, "attributes": attributes}
            version, _ = do_import_schema(
                payload, user, note=f"Created from the import of {job.original_name}"
            )
            created.append(version.category)
    return created
