"""Locust's simulated reviewers for `make bench-load` (tools/bench/load/__main__.py starts locust with it).

Each simulated user signs in as its own reviewer (bench-reviewer-001, -002, ...: distinct users with the
right password, so sign-in throttling never locks anyone out), then works like a person: opens the
queue, pages through it with the htmx partials, looks at a row and its history, accepts or corrects
values, waiting 1 to 3 s between actions. Each user reviews its own confidence band of the queue, as a
team splitting the work would, so two users rarely act on one value; a conflict (409) still counts as
an error here, so that one showing up is seen.

The measured window: the statistics are reset once every user has signed in (a sign-in checks a
PBKDF2 hash of a million iterations, seconds of CPU by design, once a working day for a person), and
the test stops $BENCH_SECONDS later; the sign-ins' own figures are kept apart. When the test stops,
the statistics go to $BENCH_STATS (JSON), and every write the server confirmed ({user, value,
action, text}) to $BENCH_RECORDS, which `manage.py bench_load_check` compares with the database.
No Django here: this process only speaks HTTP.
"""

import itertools
import json
import os
import random
import re
import time

import gevent
from locust import HttpUser, between, events, task

PASSWORD = os.environ["BENCH_PASSWORD"]
USERS = int(os.environ["BENCH_USERS"])
RECORDS = os.environ["BENCH_RECORDS"]
STATS = os.environ["BENCH_STATS"]
SECONDS = float(os.environ["BENCH_SECONDS"])
SIGN_IN = ("sign-in page", "sign-in")
PREFIX = "bench-reviewer-"
QUEUE = "/review/queue/"
HTMX = {"HX-Request": "true", "HX-Target": "queue-body"}
ROW = re.compile(
    r'id="value-(\d+)" class="vrow status-(\w+)[^"]*"\s+role="option" tabindex="-1" data-id="\d+" data-version="(\d+)"'
)
NEXT = re.compile(r'id="next-page"[^>]*href="\?[^"]*after=([^"&]+)"')
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

_numbers = itertools.count(1)
written: list[dict] = []
window = {"arrived": 0, "since": None, "sign_in": {}}


def figures(entry, seconds: float) -> dict:
    return {
        "requests": entry.num_requests,
        "errors": entry.num_failures,
        "requests_per_s": round(entry.num_requests / seconds, 1) if seconds > 0 else 0.0,
        "p50_ms": entry.get_response_time_percentile(0.5) or 0,
        "p95_ms": entry.get_response_time_percentile(0.95) or 0,
        "p99_ms": entry.get_response_time_percentile(0.99) or 0,
    }


def everyone_arrived(environment) -> None:
    """Keep the sign-ins' figures, then measure the reviewing alone for SECONDS."""
    stats = environment.stats
    window["sign_in"] = {
        name: figures(stats.get(name, method), time.time() - stats.start_time)
        for name, method in ((SIGN_IN[0], "GET"), (SIGN_IN[1], "POST"))
    }
    window["sign_in_errors"] = sum(e.occurrences for e in stats.errors.values())
    stats.reset_all()
    window["since"] = time.time()
    gevent.spawn_later(SECONDS, environment.runner.quit)


@events.test_stop.add_listener
def save(environment, **_kwargs):
    seconds = time.time() - window["since"] if window["since"] else 0.0
    stats = environment.stats
    report = {
        "measured_seconds": round(seconds, 1),
        "all_signed_in": window["since"] is not None,
        "total": figures(stats.total, seconds),
        "requests": {name: figures(entry, seconds) for (name, _), entry in sorted(stats.entries.items())},
        "sign_in": window["sign_in"],
        "sign_in_errors": window.get("sign_in_errors", 0),
        "errors": [f"{e.method} {e.name}: {e.error} (x{e.occurrences})" for e in stats.errors.values()][:20],
    }
    with open(STATS, "w", encoding="utf-8") as out:
        json.dump(report, out)
    with open(RECORDS, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(record) + "\n" for record in written)


class Reviewer(HttpUser):
    wait_time = between(1, 3)

    def on_start(self):
        self.number = next(_numbers)
        if self.number > USERS:
            raise RuntimeError(f"only {USERS} benchmark reviewers were seeded")
        self.username = f"{PREFIX}{self.number:03d}"
        low = (self.number - 1) / USERS
        # Bands do not overlap: confidences have 4 decimals, so the upper bound stops just below the next.
        self.band = {
            "status": "pending",
            "min_confidence": f"{low:.4f}",
            "max_confidence": f"{self.number / USERS - 0.00005:.5f}",
        }
        self.pending: dict[int, int] = {}  # value id -> version, from the last page seen
        self.cursor = ""
        self.done: set[int] = set()
        page = self.client.get("/login/", name="sign-in page")
        token = CSRF_INPUT.search(page.text).group(1)
        with self.client.post(
            "/login/",
            {"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            name="sign-in",
            catch_response=True,
        ) as response:
            if "/login/" in response.url:
                response.failure(f"{self.username} could not sign in (status {response.status_code})")
        window["arrived"] += 1
        if window["arrived"] == USERS:
            everyone_arrived(self.environment)
        self.open_queue()

    def _read_rows(self, html: str) -> None:
        self.pending = {
            int(value): int(version)
            for value, status, version in ROW.findall(html)
            if status == "pending" and int(value) not in self.done
        }
        found = NEXT.search(html)
        self.cursor = found.group(1) if found else ""

    def _csrf(self) -> dict:
        return {"X-CSRFToken": self.client.cookies.get("csrftoken", "")}

    @task(2)
    def open_queue(self):
        with self.client.get(QUEUE, params=self.band, name="queue page", catch_response=True) as response:
            if response.ok:
                self._read_rows(response.text)

    @task(2)
    def next_page(self):
        if not self.cursor:
            return self.open_queue()
        params = {**self.band, "after": self.cursor}
        with self.client.get(
            QUEUE, params=params, headers=HTMX, name="queue next page (htmx)", catch_response=True
        ) as response:
            if response.ok:
                self._read_rows(response.text)

    @task(1)
    def look_at_row(self):
        if self.pending:
            value = random.choice(list(self.pending))
            self.client.get(
                f"/review/values/{value}/", headers={"HX-Request": "true"}, name="row partial (htmx)"
            )
            self.client.get(f"/review/values/{value}/history/", name="value history")

    def _review(self, action: str, text: str = ""):
        if not self.pending:
            return self.open_queue()
        value = min(self.pending)
        version = self.pending.pop(value)
        data = {"action": action, "version": str(version), "value": text}
        headers = {**HTMX, "HX-Target": f"value-{value}", **self._csrf()}
        with self.client.post(
            f"/review/values/{value}/review/",
            data,
            headers=headers,
            name=f"{action} (htmx)",
            catch_response=True,
        ) as response:
            if response.status_code == 200 and 'data-outcome="ok"' in response.text:
                self.done.add(value)
                written.append({"user": self.username, "value": value, "action": action, "text": text})
            else:
                response.failure(f"{action} of value {value}: status {response.status_code}")

    @task(4)
    def accept(self):
        self._review("accept")

    @task(2)
    def correct(self):
        self._review("correct", f"corrected by {self.username} #{len(self.done)}")
