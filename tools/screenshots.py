"""The README's screenshots, taken again: `python -m tools.screenshots` against a running `make dev`.

Like a new user's first steps, through the screens alone: alice (admin) starts HPD and AR over a few
demo products, waits for both runs, bulk-accepts one attribute in the review queue (its banner with
the Undo button), then reviews values in place on a product's page (its run picker, each value's
state). Each screen is saved as a PNG under docs/screenshots/. Every call starts new runs, so the
pictures show a run that has just finished; it changes nothing else the demo holds.

    python -m tools.screenshots [--url http://localhost:8000] [--out docs/screenshots]
"""

import argparse
import logging
from pathlib import Path

from tests.support.browser import chromium_page, sign_in

log = logging.getLogger("screenshots")

PASSWORD = "slotwise-demo"  # the demo users' (accounts/management/commands/create_demo_users.py)
CATALOG, CATEGORY, SEARCH = "OA-Mine demo", "Coffee", "Starbucks"  # four demo products: quick runs
BULK_ATTRIBUTE = "Brand"
SIZE = {"width": 1280, "height": 800}
RUN_MINUTES = 30  # the most both runs may take on a busy CPU before the script gives up
PAGE_SECONDS = 120  # the most one page or action may take (a dev server on a busy CPU is slow)


def start_runs(page, url: str, decoder: str, model: str | None) -> int:
    """Start a run over the chosen products (`decoder` "both": HPD and AR, linked), with the model
    whose menu label holds `model` (None: the form's default); the first run's id (its page)."""
    page.goto(f"{url}/runs/new/")
    page.select_option("#id_catalog", label=CATALOG)
    page.select_option("#id_category", label=CATEGORY)
    page.fill("#id_search", SEARCH)
    page.check(f"input[name=decoder][value={decoder}]")
    if model:
        page.select_option(
            "#id_model_dir", page.locator("#id_model_dir option", has_text=model).first.get_attribute("value")
        )
    page.fill("#id_name", "First steps")
    page.click("#start-submit")
    page.wait_for_url(lambda address: "/runs/new/" not in address)
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def wait_until_done(page, url: str, run_id: int) -> None:
    """The run page follows its run by itself: wait for it to say done (and fail loudly otherwise)."""
    page.goto(f"{url}/runs/{run_id}/")
    page.wait_for_selector(
        "#run-status.status-done, #run-status.status-failed, #run-status.status-cancelled",
        timeout=RUN_MINUTES * 60_000,
    )
    status = page.inner_text("#run-status")
    if status != "Done":
        raise SystemExit(f"run #{run_id} ended {status}: see its page, {url}/runs/{run_id}/")


def queue_with_undo(page, url: str, run_id: int, out: Path) -> None:
    """The queue after a bulk accept of one attribute: the banner says so and offers Undo."""
    page.goto(f"{url}/review/queue/?run={run_id}&attribute={BULK_ATTRIBUTE}")
    page.click("#bulk-accept")  # its confirmation dialog is accepted (main)
    page.wait_for_selector(".messages #undo-bulk")
    page.screenshot(path=str(out / "review-queue-undo.png"))


def product_page(page, url: str, run_id: int, out: Path) -> None:
    """A product's page on the HPD run's values, reviewed in place as a reviewer holding the catalog's
    known values would: one that matches accepted, one that differs corrected to it, one the
    catalog has none of set n/a; beside them the bulk acceptance and the values still pending."""
    page.goto(f"{url}/catalog/products/?q={SEARCH}")
    page.click("#products tbody td:first-child a")
    page.wait_for_url(lambda address: "/catalog/products/" in address and "?q=" not in address)
    page.goto(f"{page.url.split('?')[0]}?run={run_id}")  # the picker's choice, whichever run is newest
    rows = page.locator('#product-attributes tbody tr:has(.pvalue[data-state="pending"])')
    pending = []  # (known value, the model's value, its cell's id)
    for i in range(rows.count()):
        row = rows.nth(i)
        cell = row.locator(".pvalue")
        shown = cell.locator(".shown").inner_text().strip()
        pending.append((row.locator("td").nth(1).inner_text().strip(), shown, cell.get_attribute("id")))
    right = next((cell for known, shown, cell in pending if known == shown), None)
    if right:
        page.click(f"#{right} button.accept")
        page.wait_for_selector(f'#{right}[data-state="accepted"]')
    typed = [(known, cell) for known, shown, cell in pending if known not in ("—", shown)]
    wrong = next(((k, c) for k, c in typed if page.locator(f"#{c} input[name=value]").count()), None)
    if wrong:
        known, cell = wrong
        page.click(f"#{cell} summary")
        page.fill(f"#{cell} input[name=value]", known)
        page.click(f"#{cell} button.save")
        page.wait_for_selector(f'#{cell}[data-state="corrected"]')
    absent = next((cell for known, shown, cell in pending if known == "—" and shown != "n/a"), None)
    if absent:
        page.click(f"#{absent} button.na")
        page.wait_for_selector(f'#{absent}[data-state="n/a"]')
    page.screenshot(path=str(out / "product-page.png"))


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://localhost:8000", help="the running make dev")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument(
        "--decoder",
        choices=("both", "hpd"),
        default="both",
        help="both: HPD and AR, linked (the product page's run picker); hpd alone is quicker on a busy CPU "
        "(call it twice for the picker)",
    )
    parser.add_argument(
        "--model",
        help="the model menu's label to decode with (default: the form's); on a busy CPU the small one is quicker",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    url = args.url.rstrip("/")
    with chromium_page() as page:
        page.set_viewport_size(SIZE)
        page.set_default_timeout(PAGE_SECONDS * 1000)
        page.on("dialog", lambda dialog: dialog.accept())  # the bulk action's "Accept all N ...?"
        sign_in(page, url, "alice", PASSWORD)
        hpd = start_runs(page, url, args.decoder, args.model)
        log.info("started run #%s (%s); waiting for it", hpd, args.decoder)
        wait_until_done(page, url, hpd)
        if args.decoder == "both":
            linked = page.get_attribute("a.button:has-text('Linked')", "href")  # /runs/<AR run's id>/
            wait_until_done(page, url, int(linked.strip("/").rsplit("/", 1)[1]))
            wait_until_done(page, url, hpd)  # the HPD run's page, comparing the two
        page.screenshot(path=str(args.out / "run-page.png"))
        queue_with_undo(page, url, hpd, args.out)
        product_page(page, url, hpd, args.out)
    log.info("saved %s", ", ".join(sorted(str(p) for p in args.out.glob("*.png"))))


if __name__ == "__main__":
    main()
