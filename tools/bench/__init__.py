"""The benchmarks: a run end to end beside the engine alone (run), the CSV import (imports), the review
queue under load (load/)."""
