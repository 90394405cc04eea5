"""The votes CSV that `ab_stats` reads and the results page exports (no Django here).

Columns: item, rater, left_system, right_system, vote (left, right, tie, both_bad); any further
columns (the export adds sku, category, comment, ...) are ignored when reading.
"""

import csv
from collections.abc import Iterable

from evaluation.stats import VOTE_CHOICES, VoteRecord, VotesError

REQUIRED_COLUMNS = ("item", "rater", "left_system", "right_system", "vote")


def read_votes(lines: Iterable[str]) -> list[VoteRecord]:
    """Parse and check every row; the first problem raises VotesError naming row and column."""
    reader = csv.DictReader(lines)
    header = [name.strip() for name in (reader.fieldnames or [])]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise VotesError(f"missing column(s): {', '.join(missing)} (the header is: {', '.join(header)})")
    reader.fieldnames = header
    votes: list[VoteRecord] = []
    first_row_of: dict[tuple[str, str], int] = {}
    for row_number, row in enumerate(reader, start=2):  # row 1 is the header
        cells = {name: (row.get(name) or "").strip() for name in REQUIRED_COLUMNS}
        for name in REQUIRED_COLUMNS:
            if not cells[name]:
                raise VotesError(f"row {row_number}, column {name}: empty")
        if cells["vote"] not in VOTE_CHOICES:
            raise VotesError(
                f"row {row_number}, column vote: {cells['vote']!r} is not one of {', '.join(VOTE_CHOICES)}"
            )
        if cells["left_system"] == cells["right_system"]:
            raise VotesError(
                f"row {row_number}: left_system and right_system are both {cells['left_system']!r}"
            )
        key = (cells["item"], cells["rater"])
        if key in first_row_of:
            raise VotesError(
                f"row {row_number}: rater {key[1]!r} already voted on item {key[0]!r} at row {first_row_of[key]}"
            )
        first_row_of[key] = row_number
        votes.append(VoteRecord(**cells))
    if not votes:
        raise VotesError("the file has a header but no votes")
    return votes
