"""A value accepted in bulk (auto-accept included) is no longer gold (review/gold.py): its gold rows
go, and where the product's catalog knew the value, that known value is the gold again. One
statement; nothing to put back going backwards (the rows were never a person's judgement)."""

from django.db import migrations

FORWARDS = """
WITH gone AS (
    DELETE FROM review_goldvalue AS g
    WHERE g.provenance IN ('accepted', 'corrected')
      AND g.source_id IS NOT NULL
      AND (
          SELECT e.action FROM review_valueevent AS e
          WHERE e.value_id = g.source_id AND NOT e.undone AND e.action <> 'undo'
          ORDER BY e.version_after DESC, e.id DESC LIMIT 1
      ) = 'bulk_accept'
    RETURNING g.product_id, g.attribute_name, g.schema_id
)
INSERT INTO review_goldvalue (product_id, attribute_name, schema_id, value, provenance, approved_at)
SELECT gone.product_id, gone.attribute_name, gone.schema_id,
       p.known_values ->> gone.attribute_name, 'catalog', now()
FROM gone JOIN catalog_product AS p ON p.id = gone.product_id
WHERE coalesce(p.known_values ->> gone.attribute_name, '') <> ''
"""


class Migration(migrations.Migration):
    dependencies = [("review", "0003_value_review")]

    operations = [migrations.RunSQL(FORWARDS, migrations.RunSQL.noop)]
