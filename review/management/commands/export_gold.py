"""Write reviewed gold as AVE JSON lines: `manage.py export_gold --out FILE.jsonl`.

To fine-tune on it, write it as a data set folder's train.jsonl:
    manage.py export_gold --out data/reviewed/train.jsonl
    python -m extraction train --data data/reviewed --base models/slotwise-ave --out models/slotwise-ft
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from review.ave import gold_records, write_jsonl
from review.models import GoldValue


class Command(BaseCommand):
    help = "Export gold values (accepted and corrected) in the JSON-lines format of shared/data/ave."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="the .jsonl file to write")
        parser.add_argument("--catalog", help="only products of this catalog (by name)")
        parser.add_argument("--category", help="only products of this category (by name)")

    def handle(self, *args, out, catalog=None, category=None, **options):
        path = Path(out)
        if not path.parent.is_dir():
            raise CommandError(f"--out: the folder {path.parent} does not exist")
        gold = GoldValue.objects.all()
        if catalog:
            gold = gold.filter(product__catalog__name=catalog)
        if category:
            gold = gold.filter(product__category__name=category)
        with path.open("w", encoding="utf-8") as f:
            count = write_jsonl(f, gold_records(gold))
        self.stdout.write(f"wrote {count} products with {gold.count()} gold values to {path}")
