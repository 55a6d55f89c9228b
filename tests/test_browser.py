"""The published site in a real browser: headless Chromium loads it from 127.0.0.1, every
request for another host is refused and counted, and any failed request or console error
fails the test. Both PyTorch versions must show as series and every figure must load."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import committed_results

from xferbench.cli import main
from xferbench.results import load

RESULTS = committed_results()
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT_COPY = Path("/tmp/xferbench-site.png")

pytestmark = pytest.mark.slow


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    return sync_playwright


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture(scope="module")
def served_site(tmp_path_factory) -> Iterator[str]:
    """The site published from the committed results, at http://127.0.0.1:PORT/."""
    out = tmp_path_factory.mktemp("browser") / "site"
    assert main(["publish", "--results", str(RESULTS), "--out", str(out)]) == 0
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Guard:
    """Routes every request: 127.0.0.1 passes, anything else is aborted and counted; failed
    requests, HTTP errors, console errors and page errors are collected."""

    def __init__(self, page, origin: str) -> None:
        self.origin = urlsplit(origin)
        self.refused: list[str] = []
        self.failures: list[str] = []
        page.route("**/*", self._route)
        page.on("requestfailed", lambda r: self.failures.append(
            f"request failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.failures.append(
            f"HTTP {r.status}: {r.url}"))
        page.on("console", lambda m: m.type == "error" and self.failures.append(
            f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.failures.append(f"page error: {e}"))

    def _route(self, route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme == "data" or (url.hostname, url.port) == (self.origin.hostname,
                                                                 self.origin.port):
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort("blockedbyclient")

    def problems(self) -> list[str]:
        return [f"refused (another host): {u}" for u in self.refused] + self.failures


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _playwright()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def test_site_renders_offline_with_both_versions(browser, served_site, tmp_path: Path):
    versions = load(str(RESULTS)).torch_versions()
    assert len(versions) >= 2, f"{RESULTS} should hold two PyTorch versions"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    guard = Guard(page, served_site)
    page.goto(served_site + "index.html", wait_until="load")
    page.wait_for_load_state("networkidle")

    images = page.eval_on_selector_all(
        "img", "els => els.map(e => [e.getAttribute('src'), e.complete, e.naturalWidth])")
    assert images, "the page shows no figure"
    assert [src for src, complete, width in images if not complete or width == 0] == []
    shown = set(page.eval_on_selector_all(".series", "els => els.map(e => e.dataset.torch)"))
    assert set(versions) <= shown
    # both versions as series inside a figure, read back as the browser received it
    svgs = page.evaluate("""async () => Promise.all(
        [...document.images].map(i => fetch(i.src).then(r => r.text())))""")
    assert any(all(f"torch {v}" in svg for v in versions) for svg in svgs)

    shot = tmp_path / "xferbench-site.png"
    page.screenshot(path=str(shot), full_page=True)
    shutil.copyfile(shot, SCREENSHOT_COPY)
    assert shot.stat().st_size > 10_000

    page.goto(served_site + "asv.html", wait_until="load")
    page.wait_for_selector("#asv-table tbody tr")
    columns = set(page.eval_on_selector_all("#asv-table th.series",
                                            "els => els.map(e => e.dataset.torch)"))
    assert set(versions) <= columns
    page.screenshot(path=str(tmp_path / "xferbench-asv.png"), full_page=True)
    page.close()
    assert guard.problems() == []


def test_guard_refuses_and_counts_other_hosts(browser, served_site):
    page = browser.new_page()
    guard = Guard(page, served_site)
    page.goto(served_site + "index.html", wait_until="load")
    page.evaluate("""() => new Promise(done => {
        const img = new Image();
        img.onload = img.onerror = () => done();
        img.src = "https://cdn.example.com/x.png";
    })""")
    page.close()
    assert guard.refused == ["https://cdn.example.com/x.png"]
    assert any("request failed" in f for f in guard.failures)
