"""The published site in a real browser: headless Chromium loads it from 127.0.0.1, every
request for another host is refused and counted, and any failed request or console error
fails the test (one the browser cancelled, only if its file is not served). Both PyTorch
versions must show as series and every figure must load; no page scrolls sideways at 390 or
1400 px; asv.html's # follows the chosen benchmark and opens it; a headline row shows its
samples, interval and citation (behind its table's one control, reached by the row's link);
the banner says the committed data is not for citation; the first headline chart stands near
the top at both widths, drawn for the width (a phone's drawing on a phone, a wide one on a
wide screen); the generated twenty-version site renders within its bounds, its figure text at
least 9 px at 390 and 1400 px; and the claims section opens the page, fits both widths and
links every verdict to evidence the site holds."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import committed_results

from xferbench.results import load as load_results

RESULTS = committed_results()
CHROMIUM = "/usr/bin/chromium"
#: No request leaves 127.0.0.1: any other host, named or by address, goes to a proxy at
#: 127.0.0.1:9, where nothing listens, so it fails at once. Nothing is intercepted:
#: Playwright's request routing pauses every request in the browser for a round trip to this
#: process, which a busy host makes slow, and its in-flight count under routing may never go
#: idle.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1"]
SCREENSHOT_COPY = Path("/tmp/xferbench-site.png")
#: How long a page may take to load and go idle (Playwright's default: 30 s).
PAGE_TIMEOUT_MS = 120_000

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


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def served_site(committed_site) -> Iterator[str]:
    """The site published from the committed results, at http://127.0.0.1:PORT/."""
    with serve(committed_site) as url:
        yield url


@pytest.fixture(scope="module")
def served_many(many_versions_site) -> Iterator[str]:
    """The site of the generated twenty-version results (conftest), served."""
    with serve(many_versions_site[0]) as url:
        yield url


#: How Chromium names a request it cancelled itself: a navigation away, a <picture> whose
#: source changed, a full-page screenshot's resize. No server or file failed it.
CANCELLED = "net::ERR_ABORTED"


class Guard:
    """Watches every request of a page: one to another host is counted as refused (the
    browser cannot reach one, CHROMIUM_ARGS); failed requests, HTTP errors, console errors
    and page errors are collected. A request the browser cancelled (CANCELLED) counts only if
    its file is not served: each is fetched again, outside the browser, when the problems are
    read; one to another host counts at once and is never fetched. It also keeps the requests
    in flight, for `settle`."""

    def __init__(self, page, origin: str) -> None:
        self.origin = urlsplit(origin)
        self.refused: list[str] = []
        self.failures: list[str] = []
        self.cancelled: list[str] = []
        self.inflight: dict[object, float] = {}
        self.last_activity = time.monotonic()
        page.on("request", self._request)
        page.on("requestfinished", self._done)
        page.on("requestfailed", self._failed)
        page.on("response", lambda r: r.status >= 400 and self.failures.append(
            f"HTTP {r.status}: {r.url}"))
        page.on("console", lambda m: m.type == "error" and self.failures.append(
            f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.failures.append(f"page error: {e}"))

    def _served_here(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "http" and (parts.hostname, parts.port) == (
            self.origin.hostname, self.origin.port)

    def _request(self, request) -> None:
        self.last_activity = time.monotonic()
        if not self._served_here(request.url) and urlsplit(request.url).scheme != "data":
            self.refused.append(request.url)
        self.inflight[request] = self.last_activity

    def _done(self, request) -> None:
        self.last_activity = time.monotonic()
        self.inflight.pop(request, None)

    def _failed(self, request) -> None:
        self._done(request)
        # only a file of the served site is fetched again: never another host (no network)
        if request.failure == CANCELLED and request.method == "GET" and \
                self._served_here(request.url):
            self.cancelled.append(request.url)
        else:
            self.failures.append(f"request failed: {request.url} ({request.failure})")

    def problems(self) -> list[str]:
        unserved = []
        for url in dict.fromkeys(self.cancelled):
            try:
                with urllib.request.urlopen(url, timeout=30) as response:
                    response.read()
            except (OSError, ValueError) as err:  # HTTPError is an OSError
                unserved.append(f"request failed: {url} ({CANCELLED}), and fetched again: {err}")
        return [f"refused (another host): {u}" for u in self.refused] + self.failures + unserved


#: How long no request may be in flight before a page counts as loaded (Playwright's
#: networkidle: 500 ms), and how long a page may take to get there.
QUIET_S = 0.5


def settle(page, guard: Guard, timeout_s: float = PAGE_TIMEOUT_MS / 1000) -> None:
    """Waits until no request of the page has been in flight for QUIET_S, from the guard's
    own count of requests started and ended (Playwright advises against its networkidle,
    whose count may never go idle); past ``timeout_s``, fails naming each request
    still in flight and for how long."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = time.monotonic()
        if not guard.inflight and now - guard.last_activity >= QUIET_S:
            return
        if now > deadline:
            pending = [f"{r.url} ({now - t:.1f} s)" for r, t in guard.inflight.items()]
            raise AssertionError(f"still loading after {timeout_s:.0f} s: " + (
                ", ".join(pending) or "nothing in flight, yet never quiet for "
                f"{QUIET_S} s"))
        page.wait_for_timeout(50)  # lets Playwright deliver the page's events


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _playwright()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def load(browser, url: str, width: int = 1280):
    """A page at ``width`` px, scrolled through so that every lazy figure in view loaded."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    # longer than Playwright's default: the other tests' asv runs may keep the host busy, and
    # a slow page is not a broken one here
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    guard = Guard(page, url)
    page.goto(url, wait_until="load")
    settle(page, guard)
    page.evaluate("""async () => {
        for (let y = 0; y < document.body.scrollHeight; y += 600) {
            window.scrollTo(0, y);
            await new Promise(r => setTimeout(r, 20));
        }
        window.scrollTo(0, 0);
    }""")
    settle(page, guard)
    return page, guard


def sideways(page) -> int:
    """How far the page scrolls sideways (0: not at all), every <details> opened."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_site_renders_offline_with_both_versions(browser, served_site, tmp_path: Path):
    versions = load_results(str(RESULTS)).torch_versions()
    assert len(versions) >= 2, f"{RESULTS} should hold two PyTorch versions"
    page, guard = load(browser, served_site + "index.html")

    images = page.eval_on_selector_all(
        "img", "els => els.filter(e => e.offsetParent).map(e => "
               "[e.getAttribute('src'), e.complete, e.naturalWidth])")
    assert images, "the page shows no figure"
    assert [src for src, complete, width in images if not complete or width == 0] == []
    # every figure, shown or waiting behind the trend picker, is a file the page can fetch
    statuses = page.evaluate("""async () => Promise.all([...document.images].map(
        i => fetch(i.src).then(r => r.status)))""")
    assert set(statuses) == {200}
    shown = set(page.eval_on_selector_all(".series", "els => els.map(e => e.dataset.torch)"))
    assert set(versions) <= shown
    # both versions inside a figure, read back as the browser received it
    svgs = page.evaluate("""async () => Promise.all(
        [...document.images].map(i => fetch(i.src).then(r => r.text())))""")
    assert any(all(f">{v}<" in svg for v in versions) for svg in svgs)

    shot = tmp_path / "xferbench-site.png"
    page.screenshot(path=str(shot), full_page=True)
    shutil.copyfile(shot, SCREENSHOT_COPY)
    assert shot.stat().st_size > 10_000
    # the full-page shot brings every lazy figure into view: let them load before leaving
    # (the navigation would cancel them: Guard fetches those again)
    settle(page, guard)

    page.goto(served_site + "asv.html", wait_until="load")
    page.wait_for_selector("#asv-table tbody tr")
    columns = set(page.eval_on_selector_all("#asv-table th.series",
                                            "els => els.map(e => e.dataset.torch)"))
    assert set(versions) <= columns
    # the column says the device it ran on, not only the CUDA its build targets
    assert all("device CPU" in t for t in page.eval_on_selector_all(
        "#asv-table th.series", "els => els.map(e => e.textContent)"))
    page.screenshot(path=str(tmp_path / "xferbench-asv.png"), full_page=True)
    page.close()
    assert guard.problems() == []


@pytest.mark.parametrize("width", [390, 1400])
def test_no_page_scrolls_sideways(browser, served_site, width):
    for name in ("index.html", "asv.html"):
        page, guard = load(browser, served_site + name, width)
        assert sideways(page) == 0, f"{name} scrolls sideways at {width} px"
        page.close()
        assert guard.problems() == []


def test_asv_page_follows_and_sets_the_url_hash(browser, served_site):
    page, guard = load(browser, served_site + "asv.html")
    names = page.eval_on_selector_all("#benchmark option", "els => els.map(e => e.value)")
    assert len(names) >= 4
    first = page.evaluate("decodeURIComponent(location.hash.slice(1))")
    assert first == names[0] == page.inner_text("#asv-view h2")

    def shows(name: str) -> None:
        page.wait_for_function("n => document.querySelector('#asv-view h2').textContent === n",
                               arg=name)
        assert page.input_value("#benchmark") == name

    page.select_option("#benchmark", names[2])  # choosing sets the #
    shows(names[2])
    assert page.evaluate("decodeURIComponent(location.hash.slice(1))") == names[2]
    page.evaluate("n => { location.hash = encodeURIComponent(n); }", names[3])  # # changed
    shows(names[3])
    page.go_back()  # the browser's history holds each choice
    shows(names[2])
    page.close()
    link = browser.new_page()  # a link with # opens that benchmark
    link.goto(served_site + "asv.html#" + names[1], wait_until="load")
    link.wait_for_selector("#asv-view h2")
    assert link.inner_text("#asv-view h2") == names[1]
    assert link.input_value("#benchmark") == names[1]
    link.close()
    assert guard.problems() == []


def test_headline_row_shows_samples_interval_and_its_citation(browser, served_site):
    page, guard = load(browser, served_site + "index.html", 390)
    row = page.locator("table.headlines tbody tr[id^='headline-']:not(.ns)").first
    if not row.count():
        row = page.locator("table.headlines tbody tr[id^='headline-']").first
    ident = row.get_attribute("id")
    cell = {label: row.locator(f"td[data-label='{label}']").inner_text()
            for label in ("samples practice / baseline", "interval", "verdict", "speed-up")}
    assert re.fullmatch(r"\d+ / \d+", cell["samples practice / baseline"]), cell
    assert re.search(r"\d\.\d+x to \d\.\d+x \(95%\)|unbounded", cell["interval"]), cell
    assert cell["verdict"] in ("faster", "slower", "same", "ambiguous")
    # the row is an anchor, and its citation, behind the table's one control and reached by
    # the row's cite link, is the sentence `xferbench cite` prints
    page.goto(served_site + f"index.html#{ident}", wait_until="load")
    assert page.locator("tr.cite-row").count() == 0  # no row of its own per citation
    cite = page.locator(f"div.cite[id='cite-{ident}']")
    assert not cite.is_visible()  # closed until asked for
    row.locator("a.cite-link").click()
    assert cite.is_visible()
    sentence = cite.locator("p.sentence").first.inner_text()
    assert "measured a median of" in sentence and "samples" in sentence
    assert cite.locator("pre code").first.inner_text().startswith("xferbench cite ")
    figure = cite.locator("p.figure-link a").first.get_attribute("href")
    assert figure.startswith("figures/trend/") and figure in sentence
    page.wait_for_function("id => { const r = document.getElementById(id)"
                           ".getBoundingClientRect(); return r.top > -1 && r.top < innerHeight; }",
                           arg=f"cite-{ident}", timeout=5000)  # scrolled to it
    # a link to a citation opens its control by itself (site.js)
    page.goto(served_site + "index.html", wait_until="load")
    page.goto(served_site + f"index.html#cite-{ident}", wait_until="load")
    assert page.locator(f"div.cite[id='cite-{ident}']").is_visible()
    page.close()
    assert guard.problems() == []


def test_banner_says_the_committed_data_is_not_for_citation(browser, served_site):
    for name in ("index.html", "asv.html"):
        page, guard = load(browser, served_site + name)
        banner = page.locator(".banner")
        assert banner.is_visible()
        text = banner.inner_text()
        assert "Not for citation." in text and "measured on a CPU, no GPU" in text
        page.close()
        assert guard.problems() == []


def figure_text_px(page) -> list[tuple[str, float]]:
    """(figure, the smallest text it shows in CSS px) for every figure on screen."""
    return page.evaluate("""async () => {
        const out = [];
        for (const img of document.images) {
            if (!img.offsetParent || !img.clientWidth) continue;
            const shown = img.currentSrc || img.src;  // a <picture>'s: what this width shows
            const svg = await (await fetch(shown)).text();
            const box = +/viewBox="0 0 ([\\d.]+)/.exec(svg)[1];
            const sizes = [...svg.matchAll(/font-size: ([\\d.]+)px/g)].map(m => +m[1]);
            out.push([shown.split('/').pop(), Math.min(...sizes) * img.clientWidth / box,
                      img.clientWidth]);
        }
        return out;
    }""")


@pytest.mark.parametrize("which", ["committed", "twenty versions"])
@pytest.mark.parametrize("width", [390, 1400])
def test_figure_text_is_at_least_9px_at_both_widths(browser, served_site, served_many, which,
                                                    width):
    url = served_site if which == "committed" else served_many
    page, guard = load(browser, url + "index.html", width)
    sizes = figure_text_px(page)
    assert sizes and min(px for _, px, _ in sizes) >= 9.0, min(sizes, key=lambda s: s[1])
    headlines = [(name, px, shown) for name, px, shown in sizes if name.startswith("headline-")]
    assert headlines
    for name, _px, shown in headlines:  # a phone's drawing on a phone, a wide one wide
        assert name.endswith("-narrow.svg") == (width == 390), name
        assert shown >= (330 if width == 390 else 640), (name, shown)
    page.close()
    assert guard.problems() == []


@pytest.mark.parametrize(("width", "claims_at_most", "then_within"),
                         [(390, 1400, 700), (1400, 600, 400)])
def test_the_first_headline_is_near_the_top(browser, served_site, width, claims_at_most,
                                            then_within):
    """At 390 px the series' provenance used to stand before the headlines, 3,500 px of it,
    and the full claims table after it 6,900 px: now the claims' short table opens the page
    (the full one folded behind its summary), within a screen and a half at a phone's width,
    and the first headline chart follows it (the measured headlines first, the others a
    line each after them)."""
    page, guard = load(browser, served_site + "index.html", width)
    claims = page.evaluate("(() => { const r = document.querySelector('#claims')"
                           ".getBoundingClientRect(); return [r.height, r.bottom + scrollY]; })()")
    top = page.evaluate("() => document.querySelector('section.headline figure')"
                        ".getBoundingClientRect().top + scrollY")
    assert claims[0] < claims_at_most, f"the claims section is {claims[0]:.0f} px at {width} px"
    assert top - claims[1] < then_within, (
        f"the first headline figure is {top - claims[1]:.0f} px below the claims at {width} px")
    order = page.eval_on_selector_all("body > section", "els => els.map(e => e.id)")
    assert order.index("claims") < order.index("headlines") < order.index("series") < \
        order.index("copies")
    page.close()
    assert guard.problems() == []


@pytest.mark.parametrize("width", [390, 1400])
def test_twenty_versions_render_within_bounds(browser, served_many, width):
    for name in ("index.html", "asv.html"):
        page, guard = load(browser, served_many + name, width)
        if name == "index.html":
            images = page.eval_on_selector_all(
                "img", "els => els.filter(e => e.offsetParent).map(e => "
                       "[e.getAttribute('src'), e.naturalWidth, e.getBoundingClientRect().right])")
            assert images and all(w > 0 and right <= width for _, w, right in images)
            # the trend picker: one chart per combination, a few shown at first
            counts = page.eval_on_selector_all("form.pick output",
                                               "els => els.map(e => e.textContent)")
            assert counts and all(re.fullmatch(r"\d+ of \d+ charts", c) for c in counts)
        else:
            page.wait_for_selector("#asv-table tbody tr")
            assert len(page.eval_on_selector_all("#asv-table th.series", "e => e")) == 20
        assert sideways(page) == 0, f"{name} scrolls sideways at {width} px"
        page.close()
        assert guard.problems() == []


def test_guard_refuses_and_counts_other_hosts(browser, served_site):
    page = browser.new_page()
    guard = Guard(page, served_site)
    page.goto(served_site + "index.html", wait_until="load")
    started = time.monotonic()
    for url in ("https://cdn.example.com/x.png", "http://192.0.2.1:8080/y.png"):
        page.evaluate("""url => new Promise(done => {
            const img = new Image();
            img.onload = img.onerror = () => done();
            img.src = url;
        })""", url)
    settle(page, guard)
    page.close()
    assert guard.refused == ["https://cdn.example.com/x.png", "http://192.0.2.1:8080/y.png"]
    assert [f for f in guard.failures if "request failed" in f] == [
        "request failed: https://cdn.example.com/x.png (net::ERR_PROXY_CONNECTION_FAILED)",
        "request failed: http://192.0.2.1:8080/y.png (net::ERR_PROXY_CONNECTION_FAILED)"]
    assert time.monotonic() - started < 30  # refused at once, never waited out


def test_guard_forgives_a_cancelled_request_only_for_a_file_that_is_served(served_site):
    class Page:  # what Guard asks of a page, and the events' request
        def on(self, event, handler): pass

    class Request:
        method = "GET"

        def __init__(self, url: str, failure: str) -> None:
            self.url, self.failure = url, failure

    guard = Guard(Page(), served_site)
    guard._failed(Request(served_site + "index.html", CANCELLED))
    assert guard.problems() == []
    guard._failed(Request(served_site + "figures/no-such.svg", CANCELLED))
    guard._failed(Request(served_site + "index.html", "net::ERR_CONNECTION_RESET"))
    problems = guard.problems()
    assert len(problems) == 2
    assert "ERR_CONNECTION_RESET" in problems[0] and "no-such.svg" in problems[1]
    assert "404" in problems[1]
    # a cancelled request to another host counts at once, and is never fetched again
    other = Guard(Page(), served_site)
    other._failed(Request("http://192.0.2.1:9/x.png", CANCELLED))
    assert other.cancelled == []
    assert other.problems() == [f"request failed: http://192.0.2.1:9/x.png ({CANCELLED})"]


@pytest.mark.parametrize("width", [390, 1400])
def test_the_claims_section_comes_first_and_fits(browser, served_site, width):
    """The advice and its verdicts open the page: a row per claim, every series in each row
    (shared cells' spans add up), nothing wider than its box at a phone's or a desktop's
    width, and each verdict linking to evidence the site holds."""
    from xferbench.analysis.claimtable import load_table

    page, guard = load(browser, served_site + "index.html", width)
    assert page.evaluate("document.querySelector('body > section').id") == "claims"
    claims = [c.id for c in load_table().claims]
    assert page.eval_on_selector_all("table.claims tbody tr", "rs => rs.map(r => r.id)") == [
        f"claim-{i}" for i in claims]
    spans = page.eval_on_selector_all(
        "table.claims tbody tr",
        "rs => rs.map(r => [...r.cells].slice(1).reduce((n, c) => n + c.colSpan, 0))")
    series = {(r.machine, r.torch) for r in load_results(str(RESULTS))}
    assert set(spans) == {len(series)}
    assert page.evaluate("""(() => { const d = document.querySelector('.claims-wrap');
                                     return d.scrollWidth - d.clientWidth; })()""") <= 0
    cramped = page.evaluate("""[...document.querySelectorAll('table.claims td')]
        .filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.innerText)""")
    assert cramped == []
    hrefs = page.eval_on_selector_all("table.claims a.verdict, table.claims a.mark",
                                      "els => els.map(a => a.getAttribute('href'))")
    assert any(h.startswith("figures/trend/") for h in hrefs)  # a decided cell's chart
    for h in set(hrefs):
        if h.startswith("#"):
            assert page.evaluate("id => !!document.getElementById(id)", h[1:]), h
        else:
            assert page.evaluate("h => fetch(h).then(r => r.status)", h) == 200, h
    page.locator("#claims").screenshot(path=f"/tmp/xferbench-claims-{width}.png")
    assert sideways(page) == 0, f"the page scrolls sideways at {width} px"
    page.close()
    assert guard.problems() == []
