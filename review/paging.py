"""Keyset pages of the queue: "the values after this one", never "skip N".

Reviewing moves values out of a status filter (pending -> accepted), so an offset page 2 would
skip the values that slid up into page 1's place. A cursor names the last (or first) row seen by
its sort key instead, and the next page starts right after it, whatever changed before it.
"""

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from slotwise.params import parse_number, parse_whole_number

CURSOR_SEPARATOR = "_"


class CursorError(ValueError):
    """A page cursor the queue cannot read."""


def _fields(ordering: list[str]) -> list[tuple[str, bool]]:
    """[(field, ascending)] from an order_by list."""
    return [(f.lstrip("-"), not f.startswith("-")) for f in ordering]


def _sort_value(row, field: str):
    """The row's value of an order_by field, following relations ("review__confidence")."""
    value = row
    for name in ("pk" if field == "id" else field).split("__"):
        value = getattr(value, name)
    return value


def key_of(row, ordering: list[str]) -> str:
    return CURSOR_SEPARATOR.join(repr(_sort_value(row, f)) for f, _ in _fields(ordering))


def _read(part: str, field: str):
    """One sort value of a cursor, as key_of wrote it (repr)."""
    if field in ("id", "disagrees"):
        return parse_whole_number(part, "page cursor")  # a ParameterError is a ValueError
    if field.endswith("cut"):
        if part not in ("True", "False"):
            raise ValueError(part)
        return part == "True"
    return parse_number(part, "page cursor")


def _parse(cursor: str, ordering: list[str]) -> list:
    parts = cursor.split(CURSOR_SEPARATOR)
    fields = _fields(ordering)
    if len(parts) != len(fields):
        raise CursorError(f"page cursor {cursor!r} does not fit this order; open the queue's first page")
    try:
        return [_read(p, f) for p, (f, _) in zip(parts, fields, strict=True)]
    except ValueError:
        raise CursorError(f"page cursor {cursor!r} is not a position in the queue") from None


def _beyond(values: list, ordering: list[str], forward: bool) -> Q:
    """Rows after (forward) or before the row with sort key `values`, in `ordering`."""
    fields = _fields(ordering)
    condition = Q()
    for k, (field, ascending) in enumerate(fields):
        later = "gt" if ascending == forward else "lt"
        step = Q(**{f"{field}__{later}": values[k]})
        for j in range(k):  # ...with every field before it equal
            step &= Q(**{fields[j][0]: values[j]})
        condition |= step
    return condition


@dataclass
class Page:
    rows: list
    total: int
    first_position: int  # 1-based position of the first row in the whole filter
    next_cursor: str | None
    prev_cursor: str | None

    @property
    def last_position(self) -> int:
        return self.first_position + len(self.rows) - 1


def page_of(
    qs: QuerySet, ordering: list[str], size: int, after: str = "", before: str = "", total: int | None = None
) -> Page:
    """`total`: the filter's count when the caller has it already (one query fewer)."""
    if after:
        rows = list(qs.filter(_beyond(_parse(after, ordering), ordering, forward=True))[:size])
    elif before:
        rows = list(qs.filter(_beyond(_parse(before, ordering), ordering, forward=False)).reverse()[:size])
        rows.reverse()
    else:
        rows = list(qs[:size])
    total = qs.count() if total is None else total
    first = 0
    if rows and not (after or before):
        first = 1  # the first page: nothing comes before it
    elif rows:
        start = _parse(key_of(rows[0], ordering), ordering)
        first = qs.filter(_beyond(start, ordering, forward=False)).count() + 1
    return Page(
        rows=rows,
        total=total,
        first_position=first,
        next_cursor=key_of(rows[-1], ordering) if rows and first + len(rows) - 1 < total else None,
        prev_cursor=key_of(rows[0], ordering) if rows and first > 1 else None,
    )
