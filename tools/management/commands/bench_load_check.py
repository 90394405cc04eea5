"""Compare the writes the load benchmark's simulated reviewers saw succeed with the database.

    manage.py bench_load_check --records FILE.jsonl

FILE holds one JSON object per successful accept or correct ({user, value, action, text}); prints one
JSON line (lost, doubled, unrecorded, problems) and exits 1 when anything was lost or doubled.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from tools.bench.load.data import check, refuse_unless_bench_database


class Command(BaseCommand):
    help = "Check that every accepted or corrected value of the load benchmark is stored once, with history."

    def add_arguments(self, parser):
        parser.add_argument("--records", type=Path, required=True)

    def handle(self, *args, records: Path, **options):
        refuse_unless_bench_database()
        lines = records.read_text(encoding="utf-8").splitlines() if records.exists() else []
        result = check([json.loads(line) for line in lines if line.strip()])
        self.stdout.write(json.dumps(result.as_dict()))
        if result.lost or result.doubled or result.unrecorded:
            raise SystemExit(1)
