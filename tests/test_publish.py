"""publish: the site from the committed two-version results: pages, figures for every
measured value, asv's data without its CDN front end, the regressions table; bad input
writes nothing."""

from __future__ import annotations

import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import committed_results, series_options, slow_fixture

from xferbench.analysis.provenance import provenance
from xferbench.analysis.repeats import chart_machines as repeats
from xferbench.analysis.sitemap import figure_path
from xferbench.cli import main
from xferbench.commands.publish.sections import banner_html
from xferbench.commands.publish.site import SITE_MARKER
from xferbench.commands.publish.unmeasured import gaps, unmeasured
from xferbench.results import load, version_key

RESULTS = committed_results()
GOLDEN_RESULTS = Path(__file__).resolve().parent / "golden" / "results"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.torch: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.links += [v for k, v in attrs if k in ("src", "href") and v]
        if "series" in (a.get("class") or "").split() and a.get("data-torch"):
            self.torch.add(a["data-torch"])


def parse(page: Path) -> _Links:
    p = _Links()
    p.feed(page.read_text(encoding="utf-8"))
    return p


#: The clone's remote, as git would read it from its configuration (GIT_CONFIG_COUNT adds a
#: setting for the processes started under it): the site's commit links lead there.
REMOTE = "git@github.com:example-owner/xferbench.git"
REMOTE_ENV = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "remote.origin.url",
              "GIT_CONFIG_VALUE_0": REMOTE}


@pytest.fixture(scope="module", autouse=True)
def _remote():
    """Every site of this module is built in a clone whose remote is REMOTE."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in REMOTE_ENV.items():
            mp.setenv(key, value)
        yield


@pytest.fixture(scope="module")
@slow_fixture
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("publish") / "site"
    assert main(["publish", "--results", str(RESULTS), "--out", str(out)]) == 0
    return out


@pytest.fixture
def results_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "results"
    shutil.copytree(RESULTS, dest, ignore=shutil.ignore_patterns(".xferbench-run.lock"))
    return dest


def result_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.json") if p.name != "machine.json")


def test_site_has_the_pages_and_asv_data(site: Path):
    for name in ("index.html", "asv.html", "asv.js", "asv-data.js", "style.css", SITE_MARKER,
                 "asv/index.json", "asv/graphs"):
        assert (site / name).exists(), name
    # asv's own front end loads its scripts from CDNs: not shipped
    assert not (site / "asv" / "index.html").exists()
    assert not list((site / "asv").glob("*.js"))


COMMIT_LINK = re.compile(r'<a class="commit" href="https://github\.com/example-owner/xferbench/'
                         r'commit/[0-9a-f]{40}">')


def test_every_page_link_is_a_file_of_the_site(site: Path):
    page_ids = set(re.findall(r'id="([^"]+)"', (site / "index.html").read_text()))
    for page in ("index.html", "asv.html"):
        for link in parse(site / page).links:
            if link.startswith("data:") or COMMIT_LINK.search(f'<a class="commit" href="{link}">'):
                continue
            if link.startswith("#"):
                assert page != "index.html" or link[1:] in page_ids, f"{page}: no {link}"
                continue
            assert not re.match(r"^[a-z]+:", link), f"{page} links outside the site: {link}"
            assert (site / link).is_file(), f"{page} links to a missing file: {link}"


def test_no_file_of_the_site_names_another_host(site: Path):
    # XML namespaces (xmlns="http://www.w3.org/2000/svg") are names, never fetched; a suite
    # commit links to its page at the clone's own remote: followed, never loaded
    namespace = re.compile(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"')
    for path in site.rglob("*"):
        if path.suffix in (".html", ".js", ".css", ".svg"):
            text = COMMIT_LINK.sub("", namespace.sub("", path.read_text(encoding="utf-8")))
            assert not re.search(r"https?://|//cdn|@import", text), path
    assert COMMIT_LINK.search((site / "index.html").read_text(encoding="utf-8"))


def test_both_versions_are_series_of_the_page_and_figures(site: Path):
    versions = set(load(str(RESULTS)).torch_versions())
    assert len(versions) >= 2, f"{RESULTS} should hold two PyTorch versions"
    assert parse(site / "index.html").torch == versions
    svgs = [p.read_text(encoding="utf-8") for p in (site / "figures").rglob("*.svg")]
    assert any(all(f">{v}<" in svg for v in versions) for svg in svgs), (
        "no figure shows both versions")


def test_figures_are_svg_and_each_measured_value_has_one(site: Path):
    figures = sorted((site / "figures").rglob("*.svg"))
    assert figures
    for f in figures:
        assert ET.parse(f).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    rs = load(str(RESULTS))
    chart = repeats(rs)  # a host's second name is drawn in its first name's charts
    for r in rs.newest():
        if r.ok:
            path = figure_path(r.benchmark, r.param_dict, chart[r.machine])
            assert (site / path).is_file(), f"{r.label()} on {r.machine}: no {path}"


def test_the_repeats_of_one_host_are_drawn_in_one_chart_and_cited_there(site: Path, capsys):
    """cpu-2core-vm-rerun is a second sweep of cpu-2core-vm's VM (one host in the metadata):
    each trend chart draws both, a line each, so run-to-run noise sits beside a release's
    change; cite quotes that chart for either."""
    rs = load(str(RESULTS))
    # the Intel host is the same VM's name ("vm") on other hardware: no repeat, its own chart
    assert repeats(rs) == {"cpu-2core-vm": "cpu-2core-vm", "cpu-2core-vm-rerun": "cpu-2core-vm",
                           "cpu-2core-vm-intel": "cpu-2core-vm-intel"}
    assert sorted(p.name for p in (site / "figures" / "trend").iterdir()) == [
        "cpu-2core-vm", "cpu-2core-vm-intel"]
    chart = site / figure_path("bench_sync.Loop.track_step_s",
                               {"read": "item_every_batch", "width": "256"}, "cpu-2core-vm")
    svg = chart.read_text(encoding="utf-8")
    assert ">cpu-2core-vm<" in svg and ">cpu-2core-vm-rerun<" in svg  # the legend names both
    assert main(["cite", "Loop.track_step_s", "--params", "read=item_every_batch,width=256",
                 "--machine", "cpu-2core-vm-rerun", "--torch", "2.13.0", "--results",
                 str(RESULTS), "--site", str(site)]) == 0
    out = capsys.readouterr().out
    assert str(chart.relative_to(site)) in out and "figure not published" not in out


def test_asv_data_holds_every_series(site: Path):
    text = (site / "asv-data.js").read_text(encoding="utf-8")
    bundle = json.loads(text[len("window.XFERBENCH_ASV = "):].rstrip().rstrip(";"))
    shown = {s["params"].get("torch") for s in bundle["series"]}
    assert shown == set(load(str(RESULTS)).torch_versions()), (
        "asv left out a series: are the results' suite commits in this clone's history "
        "(a shallow clone needs fetch-depth 0)?")
    assert "leaves out results" not in (site / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_rebuild_replaces_the_site_and_is_byte_identical(site: Path, tmp_path: Path):
    out = tmp_path / "again"
    shutil.copytree(site, out)  # a site publish made, as the module's
    (out / "figures" / "stale.svg").write_text("<svg/>")  # a figure an older publish wrote
    with open(out / ".xferbench-site", "a", encoding="utf-8") as fh:
        fh.write("wrote: figures/stale.svg\n")
    assert main(["publish", "--results", str(RESULTS), "--out", str(out)]) == 0
    assert not (out / "figures" / "stale.svg").exists()
    built = sorted(p.relative_to(site) for p in site.rglob("*") if p.is_file())
    again = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert built == again
    for rel in built:
        # asv's timestamps, and the marker, which lists every file's SHA-256, theirs too
        if rel.as_posix() not in ("asv/info.json", "asv/regressions.xml", SITE_MARKER):
            assert (out / rel).read_bytes() == (site / rel).read_bytes(), rel


def _scale_one(raw: dict, skip: int, factor: float) -> str:
    """Scale the ``skip``-th result with 5 or more samples by ``factor``; its label."""
    found = [(n, k) for n, row in raw["results"].items()
             for k, s in enumerate(dict(zip(raw["result_columns"], row)).get("samples") or [])
             if s and len(s) >= 5]
    name, i = found[skip]
    cols = dict(zip(raw["result_columns"], raw["results"][name]))
    for key in ("result", "stats_q_25", "stats_q_75", "stats_ci_99_a", "stats_ci_99_b"):
        cols[key] = list(cols[key])
        cols[key][i] *= factor
    cols["samples"] = list(cols["samples"])
    cols["samples"][i] = [x * factor for x in cols["samples"][i]]
    raw["results"] = {**raw["results"],
                      name: [cols[c] for c in raw["result_columns"][: len(raw["results"][name])]]}
    return name.split(".", 1)[1]


def _relabel_older(series: dict, older: str, newer: str) -> dict:
    """The older release's data written into the newer one's file, as if measured by the
    newer's run (its params and start times): identical, until a test changes some."""
    path_new, raw_new = series[newer]
    raw = json.loads(json.dumps(series[older][1]))
    raw["params"] = raw_new["params"]
    for name, row in raw["results"].items():
        cols = dict(zip(raw["result_columns"], row))
        new_cols = dict(zip(raw_new["result_columns"], raw_new["results"].get(name, [])))
        if "started_at" in new_cols:
            cols["started_at"] = new_cols["started_at"]
        raw["results"][name] = [cols[c] for c in raw["result_columns"][: len(row)]]
    return raw


@pytest.mark.slow
def test_regressions_and_improvements_between_versions_are_tabled(results_copy: Path,
                                                                   tmp_path: Path):
    """A change counts as a regression or an improvement where the repeat (the committed
    second sweep, cpu-2core-vm-rerun) shows it too."""
    files = result_files(results_copy)
    by_version: dict = {}
    for f in files:
        raw = json.loads(f.read_text())
        by_version.setdefault(raw["params"]["machine"], {})[raw["params"]["torch"]] = (f, raw)
    machine = "cpu-2core-vm"
    older, newer = sorted(by_version[machine], key=version_key)[:2]
    for sweep in (machine, f"{machine}-rerun"):  # both sweeps see the same two changes
        series = by_version[sweep]
        raw = _relabel_older(series, older, newer)
        slower = _scale_one(raw, 0, 1.3)
        faster = _scale_one(raw, 1, 0.7)
        series[newer][0].write_text(json.dumps(raw))
    out = tmp_path / "site"
    assert main(["publish", "--results", str(results_copy), "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="changes">'):page.index('<section id="benchmarks">')]
    assert (f"torch {older} → torch {newer} on {machine}: 1 regression, 1 improvement, "
            "0 suspected") in section
    regressions = section[section.index("<h4>Regressions (1)"):section.index("<h4>Improvements")]
    assert regressions.count("<tr><td") == 1 and slower in regressions
    assert "1.300x" in regressions and ">slower<" in regressions
    assert f"confirmed ({machine}-rerun)" in regressions
    improvements = section[section.index("<h4>Improvements (1)"):]
    improvements = improvements[:improvements.index("</table>")]
    assert improvements.count("<tr><td") == 1 and faster in improvements
    assert "0.700x" in improvements and ">faster<" in improvements


def _refused(args: list[str], capsys) -> str:
    """publish's one sentence (exit 2), after at most the warnings of files left out."""
    assert main(["publish", *args]) == 2
    out, err = capsys.readouterr()
    *warned, last = err.strip().splitlines()
    assert out == "" and all(w.startswith("xferbench: warning: ") for w in warned), err
    return last


def test_empty_results_writes_nothing(tmp_path: Path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _refused(["--results", str(empty), "--out", str(tmp_path / "site")], capsys)
    assert "no results" in err and not (tmp_path / "site").exists()


def test_truncated_results_file_writes_nothing(results_copy: Path, tmp_path: Path, capsys):
    victim = result_files(results_copy)[0]
    needs = series_options(victim)  # a page of that series needs the file
    victim.write_text(victim.read_text()[:500])
    out = tmp_path / "site"
    err = _refused(["--results", str(results_copy), "--out", str(out), *needs], capsys)
    assert "truncated" in err and not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["results"]  # no staging folder left


@pytest.mark.slow
def test_failed_publish_keeps_the_previous_site(site: Path, results_copy: Path, tmp_path: Path,
                                               capsys):
    out = tmp_path / "site"
    shutil.copytree(site, out)  # the site these results made
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    victim = result_files(results_copy)[0]
    needs = series_options(victim)
    victim.write_text(victim.read_text()[:500])
    capsys.readouterr()
    _refused(["--results", str(results_copy), "--out", str(out), *needs], capsys)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_failure_while_building_leaves_no_folder(tmp_path: Path, monkeypatch, capsys):
    from xferbench import XferbenchError
    from xferbench.commands.publish import site

    def broken(*args, **kwargs):
        raise XferbenchError("asv publish failed (exit 1): for this test")

    monkeypatch.setattr(site, "run_asv_publish", broken)
    _refused(["--results", str(RESULTS), "--out", str(tmp_path / "a" / "b" / "site")], capsys)
    assert list(tmp_path.iterdir()) == []


def test_folder_not_made_by_publish_is_not_replaced(tmp_path: Path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    err = _refused(["--results", str(RESULTS), "--out", str(out)], capsys)
    assert "publish did not write" in err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def page_text(site: Path, name: str = "index.html") -> str:
    return (site / name).read_text(encoding="utf-8")


def test_banner_says_the_committed_data_is_not_for_citation(site: Path):
    for name in ("index.html", "asv.html"):
        text = page_text(site, name)
        banner = text[text.index('<div class="banner"'):]
        banner = banner[:banner.index("</div>")]
        assert "Not for citation." in banner and "every series: measured on a CPU, no GPU" \
            in banner, name
    golden = banner_html(provenance(load(str(GOLDEN_RESULTS))))
    assert any("quick run" in line for line in golden)
    assert any("measured on a CPU" in line for line in golden)


def test_each_series_has_its_provenance(site: Path):
    text = page_text(site)
    section = text[text.index('<section id="series">'):text.index('<section id="copies">')]
    for p in provenance(load(str(RESULTS))):
        row = section[section.index(f'id="series-{p.machine}-{p.torch.replace("+", "-")}'):]
        row = html.unescape(re.sub(r"<[^>]+>", " ", row[:row.index("</tr>")]))
        for value in (p.date, p.commit[:8], p.cpu_model, p.python, p.os, "default",
                      str(p.threads), p.torch_git[:8]):
            assert value in row, (p.label, value)


@pytest.mark.slow
def test_headline_rows_show_samples_interval_verdict_and_the_cli_citation(site: Path, capsys):
    text = page_text(site)
    section = text[text.index('<section id="headlines">'):text.index('<section id="series">')]
    # each measured row links to its citation, in the table's one control (no row each)
    assert 'class="cite-row"' not in section
    cited = dict(re.findall(r'<div class="cite" id="cite-(headline-[^"]+)">(.*?)</div>',
                            section, flags=re.S))
    rows = [(ident, cells, cited[ident]) for ident, cells in re.findall(
        r'<tr id="(headline-[^"]+)"[^>]*>(.*?)</tr>', section, flags=re.S)
        if f'href="#cite-{ident}"' in cells]
    assert rows, "no measured headline row"
    assert len(rows) == len(cited)
    for ident, cells, cite in rows:
        found = dict(re.findall(r'data-label="([^"]+)">(.*?)</td>', cells))
        assert re.fullmatch(r"\d+ / \d+", found["samples practice / baseline"]), ident
        assert re.search(r"x to .*x \(95%\)|unbounded", found["interval"]), ident
        assert re.search(r">(faster|slower|same|ambiguous)<",
                         found["verdict"])
        commands = re.findall(r"<pre><code>xferbench (cite .*?)</code></pre>", cite)
        sentences = re.findall(r'<p class="sentence">(.*?)</p>', cite)
        assert len(commands) == len(sentences) == 2, ident
        for cmd, shown in zip(commands, sentences):
            args = html.unescape(cmd).split() + ["--results", str(RESULTS), "--site", "."]
            capsys.readouterr()
            assert main(args) == 0
            printed = capsys.readouterr().out.splitlines()[0]
            shown = html.unescape(re.sub(r"</?code>", "`", shown))
            assert shown == printed, ident


def test_every_benchmark_and_every_reason_is_on_the_page(site: Path):
    text = html.unescape(page_text(site))
    rs = load(str(RESULTS))
    missing = unmeasured(rs)
    for name in rs.benchmarks:
        assert f'id="bench-{name.lower()}"' in text, name
        for g in gaps(rs.declared_params(name), missing, name):
            assert f"{g.status}: {g.reason}: {len(g.combos)} combination" in text, g


def test_a_comparison_across_builds_says_so(site: Path):
    text = page_text(site)
    assert "Not only the release differs: build +cu128 → +cu130; CUDA 12.8 → 13.0." in text


@pytest.mark.parametrize(("remote", "url"), [
    ("https://github.com/owner/xferbench.git", "https://github.com/owner/xferbench/commit/"),
    ("https://user:token@github.com/owner/xferbench", "https://github.com/owner/xferbench/commit/"),
    ("git@github.com:owner/xferbench.git", "https://github.com/owner/xferbench/commit/"),
    ("ssh://git@gitlab.example.org:2222/group/sub/xferbench.git",
     "https://gitlab.example.org/group/sub/xferbench/-/commit/"),
    ("https://bitbucket.org/owner/xferbench/", "https://bitbucket.org/owner/xferbench/commits/"),
    ("/work/main", None), ("file:///work/main", None), ("../xferbench", None), (None, None),
])
def test_commit_links_lead_to_the_clones_own_remote_or_nowhere(remote, url):
    from xferbench.results.repo import web_commit_url

    assert web_commit_url(remote) == url


@pytest.mark.parametrize(("remote", "linked"), [(REMOTE, True), ("/some/local/clone", False)])
def test_the_asv_configuration_links_commits_only_to_a_web_remote(tmp_path, monkeypatch,
                                                                   remote, linked):
    from xferbench.results.repo import write_asv_config
    from xferbench.results.suite import find_suite

    for key, value in {**REMOTE_ENV, "GIT_CONFIG_VALUE_0": remote}.items():
        monkeypatch.setenv(key, value)
    conf = json.loads(Path(write_asv_config(find_suite(), str(tmp_path), str(tmp_path)))
                      .read_text())
    expected = "https://github.com/example-owner/xferbench/commit/" if linked else None
    assert conf.get("show_commit_url") == expected
