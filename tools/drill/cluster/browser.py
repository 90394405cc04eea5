"""The drill's user: signs in, uploads a CSV catalog, maps it, starts runs and reads the run page,
all over HTTP to the web host, as an admin in a browser would (requests keeps the session and the
CSRF cookie; each form posts the token it rendered)."""

from __future__ import annotations

import html
import re
import time

import requests

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
INCIDENTS = re.compile(r'id="run-incidents".*?<ul>(.*?)</ul>', re.S)
LINE = re.compile(r"<li>(.*?)</li>", re.S)
TAG = re.compile(r"<[^>]+>")
RUN_URL = re.compile(r"/runs/(\d+)/$")
IMPORT_MAP_URL = re.compile(r"/catalog/imports/(\d+)/map/$")
TIMEOUT = 60


class PageRefused(RuntimeError):
    """The web server answered a step with something other than what the step needs."""


class Browser:
    def __init__(self, base_url: str):
        self.base = base_url.rstrip("/")
        self.session = requests.Session()

    def _token(self, path: str) -> str:
        page = self.session.get(self.base + path, timeout=TIMEOUT)
        found = CSRF_FIELD.search(page.text)
        if page.status_code != 200 or not found:
            raise PageRefused(f"GET {path}: HTTP {page.status_code}, no form")
        return found.group(1)

    def post(self, path: str, data: dict, files: dict | None = None, form_path: str | None = None):
        data = {**data, "csrfmiddlewaretoken": self._token(form_path or path)}
        answer = self.session.post(
            self.base + path, data=data, files=files, allow_redirects=False, timeout=TIMEOUT,
            headers={"Referer": self.base + (form_path or path)},
        )  # fmt: skip
        if answer.status_code != 302:
            raise PageRefused(f"POST {path}: HTTP {answer.status_code}: {TAG.sub(' ', answer.text)[:600]}")
        return answer.headers["Location"]

    def sign_in(self, username: str, password: str) -> None:
        self.post("/login/", {"username": username, "password": password})

    def upload(self, name: str, content: bytes, catalog: str) -> int:
        """The import job's id (the upload page sends the browser on to its mapping)."""
        location = self.post(
            "/catalog/upload/", {"new_catalog": catalog}, files={"file": (name, content, "text/csv")}
        )
        found = IMPORT_MAP_URL.search(location)
        if not found:
            raise PageRefused(f"upload went to {location}, not a mapping page")
        return int(found.group(1))

    def map_and_start(self, job_id: int, mapping: dict) -> None:
        base = f"/catalog/imports/{job_id}"
        self.post(f"{base}/map/", mapping)
        self.post(f"{base}/start/", {}, form_path=f"{base}/preview/")

    def start_run(self, catalog_id: int, batch_size: int, name: str) -> int:
        data = {"catalog": catalog_id, "category": "", "search": "", "decoder": "hpd", "model_dir": "",
                "batch_size": batch_size, "stack": "", "name": name}  # fmt: skip
        location = self.post("/runs/new/", data)
        found = RUN_URL.search(location)
        if not found:
            raise PageRefused(f"starting the run went to {location}, not a run page")
        return int(found.group(1))

    def run_page_lines(self, run_id: int) -> list[str]:
        """What the run page's "What happened" list says (empty: nothing interrupted the run)."""
        page = self.session.get(f"{self.base}/runs/{run_id}/", timeout=TIMEOUT)
        block = INCIDENTS.search(page.text)
        lines = LINE.findall(block.group(1)) if block else []
        return [html.unescape(" ".join(TAG.sub("", line).split())) for line in lines]

    def wait_until_up(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.session.get(self.base + "/login/", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise PageRefused(f"the web host did not answer {self.base}/login/ within {seconds:.0f}s")
