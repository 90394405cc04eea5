"""The queue's "most useful to review" order, one page at a time (the ranking: review/usefulness.py).

The ranking spreads values over attributes, brands and patterns, which no SQL order expresses, so
it is computed here from one query over the filter's values (their id, attribute, product title
and known values, confidence, status and the linked run's value), then the page's rows are
fetched by id. It ranks the filter's values whatever their status and then keeps those of the
asked status: reviewing a value never reorders the rest, so a page cursor (the id of the last or
first value seen) stays a position in the queue, as paging.py promises for the other orders.

Cost: one pass over the filter's values per page (a few hundred milliseconds for a run of tens of
thousands), the price of an order that looks at all of them.
"""

from bisect import bisect_left, bisect_right

from review.filters import QueueFilter, partner_value_of
from review.paging import CursorError, Page
from review.usefulness import Candidate, brand_of, rank_values
from slotwise.params import parse_whole_number

FIELDS = (
    "pk",
    "product_id",
    "attribute__name",
    "product__title",
    "product__known_values",
    "value",
    "review__confidence",
    "review__cut",
    "review__status",
)


def candidates(queue_filter: QueueFilter, partner) -> tuple[list[Candidate], dict[int, str]]:
    """(the filter's values, any status, as candidates for review; {value id: review status}).

    `partner`: the filter run's linked run (HPD for AR or AR for HPD), None when there is none."""
    qs = queue_filter.but(status="").values()
    if partner is not None:
        qs = qs.annotate(partner_value=partner_value_of(partner))
    statuses = {}
    found = []
    for row in qs.values(*FIELDS, *(["partner_value"] if partner is not None else [])):
        statuses[row["pk"]] = row["review__status"]
        found.append(
            Candidate(
                key=row["pk"],
                product=row["product_id"],
                attribute=row["attribute__name"],
                brand=brand_of(row["product__title"], row["product__known_values"]),
                value=row["value"],
                confidence=row["review__confidence"],
                partner_value=row.get("partner_value"),
                cut=row["review__cut"],
            )
        )
    return found, statuses


def ranked(queue_filter: QueueFilter, partner) -> tuple[list[int], dict[int, str]]:
    """(the value ids of the filter, any status, most useful first; {id: status})."""
    found, statuses = candidates(queue_filter, partner)
    return rank_values(found), statuses


def _position(cursor: str, place: dict[int, int]) -> int:
    try:
        return place[parse_whole_number(cursor, "page cursor")]  # a ParameterError is a ValueError
    except (ValueError, KeyError):
        raise CursorError(f"page cursor {cursor!r} is not a position in this queue") from None


def useful_page(queue_filter: QueueFilter, partner, size: int, after: str = "", before: str = "") -> Page:
    """A page of the queue in the useful order, as paging.page_of makes one for the SQL orders."""
    ranking, statuses = ranked(queue_filter, partner)
    place = {value_id: i for i, value_id in enumerate(ranking)}
    # the ranking positions of the values that have the asked status
    shown = [
        i
        for i, value_id in enumerate(ranking)
        if not queue_filter.status or statuses[value_id] == queue_filter.status
    ]
    if after:
        start = bisect_right(shown, _position(after, place))
    elif before:
        start = max(0, bisect_left(shown, _position(before, place)) - size)
    else:
        start = 0
    ids = [ranking[i] for i in shown[start : start + size]]
    by_id = {v.pk: v for v in queue_filter.ordered_values(partner=partner).filter(pk__in=ids)}
    rows = [by_id[i] for i in ids if i in by_id]
    return Page(
        rows=rows,
        total=len(shown),
        first_position=start + 1 if rows else 0,
        next_cursor=str(rows[-1].pk) if rows and start + len(rows) < len(shown) else None,
        prev_cursor=str(rows[0].pk) if rows and start > 0 else None,
    )
