"""The measure of issue #52: how many values a person reads before the catalog is right.

A simulated reviewer who knows the gold of a products file (review/products_file.py) works on the
catalog loaded from it (review/simulated_catalog.py) through the product's own logic only:

1. the blind labelling the product asks for before it judges auto-accept (review/blind.py: its
   seeded sample, MIN_PRODUCTS products), each product typed whole, and more while the auto-accept
   page asks for them before it could pool a threshold, up to the plan's `blind_most`;
2. auto-accept wherever the catalog's blind gold offers a threshold, an attribute's own or the
   pooled one (review/precision.py), run as the bulk accept the auto-accept page starts
   (review/bulk.py);
3. the review queue of the newest run, pending values in the queue's own order
   (review/filters.py, review/useful_order.py), a page at a time: each value read is accepted when
   it is right, set to n/a when the gold has none, else corrected to the gold (review/actions.py);
4. with learning, a training job whenever the reviewed products grew by the chosen step (the
   product offers one from two reviewed products on), a new run when its version was promoted, and
   auto-accept asked again for that run.

Costs: every value read is one look; typing a value (a correction, a blind label that is not n/a)
one more; accept and n/a are one key each. Values accepted without a look (auto-accept) cost nothing
and are scored like any other. The gold reaches the product only through what the looks write.

A slot (product, attribute of its category's schema) shows, as the catalog stands: its blind label
when it has one (typed by a person, never replaced by a run's value), else its newest approved value
of any run (by hand or in bulk), else the newest run's value, else nothing (n/a). It is right by the
AVE metric's rule (a gold form after trimming, or n/a where the gold has none). A value the queue
offers for a slot that already shows a person's value is passed over at no cost (the reviewer sees
it typed); what the queue offers that way is counted as `passed_over`.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from catalog.models import Catalog
from extraction.engine import metric
from extraction.models import ExtractedValue, Run
from extraction.services import RunRequest, do_start_run
from registry.versions import default_version
from review import bulk, precision
from review.actions import do_review
from review.blind import Selection, do_blind_label, fields_of
from review.bootstrap import MIN_PRODUCTS
from review.filters import USEFUL, QueueFilter, page_size
from review.gold import approved_by_hand
from review.models import APPROVED, BulkAction, GoldValue, ValueEvent
from review.paging import page_of
from review.products_file import FileProduct
from review.useful_order import useful_page

Action = ValueEvent.Action
Provenance = GoldValue.Provenance
DEFAULT_TARGET = 0.98  # the auto-accept page's default precision
LEVELS = (0.95, 0.98)
# Where a slot's shown value comes from (see the module's docstring).
BLIND, HAND, BULK, MODEL, NOTHING = "blind", "hand", "bulk", "model", "nothing"
SETTLED = (BLIND, HAND)  # a person's value: the queue's offers for the slot are passed over


@dataclass(frozen=True)
class Plan:
    """How the reviewer works. `max_looks`: stop once this many are spent (None: no limit);
    `blind_products`: products labelled blind before the queue (the product's floor for judging
    auto-accept); `blind_most`: the most products the reviewer labels blind when the auto-accept
    page asks for more (None: no more); `learn_every`: reviewed products between training jobs (None: no learning)."""

    max_looks: int | None = None
    blind_products: int = MIN_PRODUCTS
    blind_most: int | None = None  # label more blind, up to this many products, when auto-accept asks
    target: float = DEFAULT_TARGET
    sort: str = USEFUL
    learn_every: int | None = None


@dataclass(frozen=True)
class Hooks:
    """What workers do in production, done for the simulation by its caller: decode a run to its
    end; train on the catalog's reviewed gold (returns what happened, for the curve: with
    "promoted" true when its version became the catalog's default)."""

    decode: Callable[[Run], Run]
    learn: Callable[[Catalog], dict] | None = None


@dataclass
class Point:
    looks: int
    right: int
    event: dict | None = None


@dataclass
class Outcome:
    products: int
    slots: int
    curve: list[Point] = field(default_factory=list)
    wrong_accepted_unlooked: int = 0
    model_right: int = 0  # slots the first run's values got right before any look
    passed_over: int = 0
    runs: list[int] = field(default_factory=list)

    @property
    def looks(self) -> int:
        return self.curve[-1].looks if self.curve else 0

    @property
    def right_share_final(self) -> float:
        return self.curve[-1].right / self.slots if self.curve and self.slots else 0.0

    def looks_to(self, level: float) -> int | None:
        """The fewest looks after which at least `level` of the slots were right (None: never)."""
        return next((p.looks for p in self.curve if p.right >= level * self.slots), None)

    def summary(self) -> dict:
        return {
            "products": self.products,
            "slots": self.slots,
            "looks_to_95": self.looks_to(0.95),
            "looks_to_98": self.looks_to(0.98),
            "right_share_final": round(self.right_share_final, 4),
            "wrong_accepted_unlooked": self.wrong_accepted_unlooked,
            "looks": self.looks,
            "model_right_share": round(self.model_right / self.slots, 4) if self.slots else 0.0,
            "passed_over": self.passed_over,
            "runs": self.runs,
        }


class OutOfLooks(Exception):
    """The plan's looks are spent."""


class Reviewer:
    """One simulated reviewer on one catalog; `products` by sku, `on_point` hears every point."""

    def __init__(
        self, catalog: Catalog, products: list[FileProduct], user, plan: Plan, hooks: Hooks, on_point=None
    ):
        self.catalog, self.user, self.plan, self.hooks = catalog, user, plan, hooks
        self.on_point = on_point or (lambda point: None)
        by_sku = {p.sku: p for p in products}
        self.gold = {}  # (product id, attribute) -> the file's product: what only the reviewer knows
        for product in catalog.products.select_related("category"):
            schema = product.category.current_schema
            for name in schema.attributes.values_list("name", flat=True):
                self.gold[(product.pk, name)] = by_sku[product.sku]
        self.outcome = Outcome(products=catalog.products.count(), slots=len(self.gold))
        self.looks = 0
        self.run: Run | None = None
        self.shown: dict[tuple[int, str], tuple[str, str]] = {}  # slot -> (value, where it comes from)
        self.right = 0  # slots whose shown value is right
        self.reviewed_at_last_job = 0

    # --- the catalog as it stands -----------------------------------------------------------------

    def is_right(self, slot: tuple[int, str], value: str | None) -> bool:
        return self.gold[slot].is_right(slot[1], value)

    def read_catalog(self) -> None:
        """Every slot's shown value and its source, from PostgreSQL (see the module's docstring)."""
        shown = {slot: ("", NOTHING) for slot in self.gold}
        latest = ExtractedValue.objects.filter(run=self.run).values_list(
            "product_id", "attribute__name", "value"
        )
        for product_id, name, value in latest:
            shown[(product_id, name)] = (value, MODEL)
        approved = ExtractedValue.objects.filter(product__catalog=self.catalog, review__status__in=APPROVED)
        by_hand = set(approved_by_hand().filter(product__catalog=self.catalog).values_list("pk", flat=True))
        rows = approved.order_by("review__reviewed_at", "pk").values_list(
            "pk", "product_id", "attribute__name", "review__reviewed_value"
        )
        for pk, product_id, name, value in rows:
            shown[(product_id, name)] = (value, HAND if pk in by_hand else BULK)
        blind = GoldValue.objects.filter(product__catalog=self.catalog, provenance=Provenance.BLIND)
        for product_id, name, value in blind.values_list("product_id", "attribute_name", "value"):
            shown[(product_id, name)] = (value, BLIND)
        self.shown = {slot: entry for slot, entry in shown.items() if slot in self.gold}
        self.right = sum(self.is_right(slot, value) for slot, (value, _) in self.shown.items())

    def show(self, slot: tuple[int, str], value: str, source: str) -> None:
        """What one action of the reviewer wrote, without reading the whole catalog again."""
        self.right += self.is_right(slot, value) - self.is_right(slot, self.shown[slot][0])
        self.shown[slot] = (value, source)

    def mark(self, event: dict | None = None) -> None:
        point = Point(self.looks, self.right, event)
        self.outcome.curve.append(point)
        self.on_point(point)

    def spend(self, looks: int) -> None:
        """Take `looks` from the plan's allowance, or OutOfLooks before anything is done."""
        if self.plan.max_looks is not None and self.looks + looks > self.plan.max_looks:
            raise OutOfLooks()
        self.looks += looks

    # --- the reviewer's day -----------------------------------------------------------------------

    def start_run(self) -> None:
        run = do_start_run(RunRequest(decoder=Run.Decoder.HPD, catalog=self.catalog, name="simulate_review"))[
            0
        ]
        self.run = self.hooks.decode(run)
        self.outcome.runs.append(self.run.pk)
        self.read_catalog()

    def label_blind(self, count: int | None = None) -> None:
        """Type the products the blind sample serves, whole, until `count` more (default the plan's
        number) are labelled."""
        selection = Selection(self.catalog)
        for _ in range(self.plan.blind_products if count is None else count):
            product = selection.next_product()
            if product is None:
                break  # every product is labelled
            attributes = fields_of(product)
            labels = {a.name: self.gold[(product.pk, a.name)].label(a.name) for a in attributes}
            self.spend(sum(1 if metric.is_na(label) else 2 for label in labels.values()))
            do_blind_label(product, product.category.current_schema.pk, labels, self.user)
            for name, label in labels.items():
                self.show((product.pk, name), label, BLIND)
            self.mark()
        if self.plan.blind_products if count is None else count:
            self.mark({"event": "blind_labelled", "products": selection.progress()[0]})

    def label_blind_as_asked(self) -> None:
        """Label the products the auto-accept page asks for before it could pool a threshold, while
        that keeps the blind-labelled products within the plan's `blind_most`."""
        while self.plan.blind_most is not None:
            found = precision.estimate(self.run, self.plan.target)
            asked = found.pool_needed if found.pool is None else None
            if (
                not asked
                or found.labelled_products + asked > self.plan.blind_most
                or found.labelled_products >= found.run_products  # every product is labelled
            ):
                return
            self.label_blind(asked)

    def auto_accept(self) -> None:
        """Every threshold the auto-accept page offers for the run at the plan's target, accepted."""
        found = precision.estimate(self.run, self.plan.target)
        for offered in found.offered:
            # what the auto-accept page accepts: the attribute's pending values at or above the threshold
            accepting = QueueFilter(
                run=self.run.pk,
                attribute=offered.attribute,
                status="pending",
                min_confidence=offered.proposal.threshold,
            )
            job = bulk.run_or_mark_failed(
                bulk.do_create_bulk_action(accepting, BulkAction.Action.ACCEPT, self.user).pk
            )
            self.read_catalog()
            self.mark(
                {
                    "event": "auto_accept",
                    "attribute": offered.attribute,
                    "threshold": offered.proposal.threshold,
                    "accepted": job.changed,
                }
            )

    def look(self, value: ExtractedValue) -> None:
        """Read one pending value: accept it when right, n/a when the gold has none, else correct it."""
        slot = (value.product_id, value.attribute.name)
        truth = self.gold[slot]
        if self.is_right(slot, value.value):
            action, text, cost = Action.ACCEPT, None, 1
        elif metric.is_na(truth.label(slot[1])):
            action, text, cost = Action.SET_NA, None, 1
        else:
            action, text, cost = Action.CORRECT, truth.label(slot[1]), 2
        self.spend(cost)
        reviewed = do_review(value.pk, value.review.version, action, self.user, text=text)
        self.show(slot, reviewed.review.reviewed_value, HAND)
        self.mark()

    def queue_pages(self):
        """The run's pending values, a page at a time, in the queue's own order."""
        queue = QueueFilter(run=self.run.pk, status="pending", sort=self.plan.sort)
        cursor = ""
        while True:
            if queue.sort == USEFUL:
                page = useful_page(queue, None, page_size(), after=cursor)
            else:
                page = page_of(queue.ordered_values(), queue.ordering(False), page_size(), after=cursor)
            if not page.rows:
                return
            yield page.rows
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def review_queue(self) -> bool:
        """Work the queue to its end; True when a new run replaced the one it walked (learning)."""
        for rows in self.queue_pages():
            for value in rows:
                slot = (value.product_id, value.attribute.name)
                if self.shown[slot][1] in SETTLED:
                    self.outcome.passed_over += 1
                    continue
                self.look(value)
            if self.maybe_learn():
                return True
        return False

    def reviewed_products(self) -> int:
        reviewed = GoldValue.objects.filter(
            product__catalog=self.catalog,
            provenance__in=(Provenance.BLIND, Provenance.CORRECTED, Provenance.ACCEPTED),
        )
        return reviewed.values("product_id").distinct().count()

    def maybe_learn(self) -> bool:
        """A training job once the reviewed products grew by the plan's step; a new run of the
        catalog's default when the job's version was promoted. True when a new run replaced the old."""
        if self.plan.learn_every is None or self.hooks.learn is None:
            return False
        reviewed = self.reviewed_products()
        if reviewed - self.reviewed_at_last_job < self.plan.learn_every:
            return False
        self.reviewed_at_last_job = reviewed
        before = default_version(self.catalog).pk
        happened = self.hooks.learn(self.catalog)
        promoted = default_version(self.catalog).pk != before
        self.mark({"event": "training", "reviewed_products": reviewed, **happened, "promoted": promoted})
        if not promoted:
            return False
        self.start_run()
        self.mark({"event": "new_run", "run": self.run.pk})
        self.auto_accept()
        return True

    def work(self) -> Outcome:
        self.start_run()
        self.outcome.model_right = self.right
        self.mark({"event": "extracted", "run": self.run.pk})
        try:
            self.label_blind()
            self.label_blind_as_asked()
            self.auto_accept()
            while self.review_queue():
                pass
        except OutOfLooks:
            pass
        self.read_catalog()
        self.outcome.wrong_accepted_unlooked = sum(
            not self.is_right(slot, value) for slot, (value, source) in self.shown.items() if source == BULK
        )
        self.mark({"event": "end"})
        return self.outcome
