"""compare as a pull request uses it: two suite commits of one series, each change confirmed
by a repeat measured at the same two commits; and ``--format markdown``, read back with a
CommonMark parser with GitHub's table extension (markdown-it-py), as GitHub renders a
comment or a job summary."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from conftest import committed_results
from suitechange import MACHINE, RERUN, write_change

from xferbench.cli import main
from xferbench.commands.compare.markdown import MARKER, code_span, plain_text

markdown_it = pytest.importorskip("markdown_it", reason="the markdown check needs markdown-it-py")

RESULTS = committed_results()


def gfm():
    """CommonMark with HTML blocks and GitHub's tables: what GitHub's renderer reads."""
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table")


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["compare", *args])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def change(tmp_path_factory) -> tuple[Path, str, str, str]:
    dest = tmp_path_factory.mktemp("change") / "results"
    return (dest, *write_change(RESULTS, dest))


def test_a_slower_commit_is_a_regression_a_repeat_confirms(change, capsys):
    results, base, head, slower = change
    code, out = run(capsys, base[:8], head[:8], "--machine", MACHINE, "--results",
                    str(results), "--confirmed", "--format", "json")
    report = json.loads(out)
    worse = [r for r in report["rows"] if r["mark"] == "worse"]
    assert code == 1 and report["confirmed_worse"] == 1
    assert [(r["benchmark"], r["confirmation"], r["confirmed_by"]) for r in worse] == [
        (slower, "confirmed", [RERUN])]
    assert worse[0]["ratio"] == pytest.approx(1.3)


def test_a_slowdown_the_repeat_does_not_show_stays_suspected(tmp_path, capsys):
    base, head, _ = write_change(RESULTS, tmp_path / "results", repeat_factor=1.0)
    code, out = run(capsys, base, head, "--machine", MACHINE, "--results",
                    str(tmp_path / "results"), "--confirmed", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["suspected_worse"] == 1 and report["confirmed_worse"] == 0
    row = next(r for r in report["rows"] if r["mark"] == "worse")
    assert row["suspected_why"] == f"the repeat marked it otherwise ({RERUN}: same)"
    code, out = run(capsys, base, head, "--machine", MACHINE, "--results",
                    str(tmp_path / "results"), "--confirmed", "--format", "markdown")
    assert out.splitlines()[1] == ("### xferbench compare: no confirmed regression (1 worse, "
                                   "0 better of 68; each worse one suspected)")


def table_rows(tokens, first: int) -> list[list[str]]:
    """The body rows of the table opening at ``tokens[first]``, each a list of its cells'
    source text."""
    rows, row, inside = [], [], False
    for tok in tokens[first:]:
        if tok.type == "tbody_open":
            inside = True
        elif tok.type == "tr_close" and inside:
            rows.append(row)
            row = []
        elif tok.type == "inline" and inside:
            row.append(tok.content)
        elif tok.type == "table_close":
            return rows
    return rows


@pytest.fixture(scope="module")
def releases() -> tuple[str, dict]:
    """The README's comparison on the committed data, as markdown and as JSON."""
    argv = ["2.13.0", "2.14.1", "--machine", "cpu-2core-vm", "--results", str(RESULTS)]
    outs = []
    for fmt in ("markdown", "json"):  # capsys is per test: this fixture is per module
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["compare", *argv, "--format", fmt])
        outs.append(buf.getvalue())
    return outs[0], json.loads(outs[1])


def test_markdown_shows_the_changes_first_and_folds_the_rest(releases):
    text, report = releases
    tokens = gfm().parse(text)
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    assert len(tables) == 2
    shown, folded = table_rows(tokens, tables[0]), table_rows(tokens, tables[1])
    counts = report["counts"]
    assert len(shown) == counts["worse"] + counts["failed in B"] + counts["better"] == 28
    assert len(shown) + len(folded) == len(report["rows"])
    verdicts = [row[-1].split(",")[0] for row in shown]
    assert verdicts == ["worse"] * counts["worse"] + ["better"] * counts["better"]
    ratios = [float(row[4]) for row in shown]
    worse = ratios[:counts["worse"]]
    assert worse == sorted(worse, reverse=True) and ratios[0] == pytest.approx(2.314)
    assert {row[-1].split(" (")[0] for row in folded} <= {"same", "ambiguous", "clock",
                                                          "missing"}
    details = [i for i, t in enumerate(tokens)
               if t.type == "html_block" and t.content.startswith("<details>")]
    closing = [i for i, t in enumerate(tokens)
               if t.type == "html_block" and t.content.startswith("</details>")]
    assert details and closing and details[0] < tables[1] < closing[0]
    assert "<summary>40 more: 19 same, 21 ambiguous</summary>" in tokens[details[0]].content


def test_markdown_says_what_was_compared_and_the_rule_in_one_line(releases):
    text, _ = releases
    lines = text.splitlines()
    assert lines[0] == MARKER
    compared = [line for line in lines if line.startswith("**Compared**")]
    assert len(compared) == 1
    for part in ("B torch 2.14.1+cu130 on cpu-2core-vm", "A torch 2.13.0+cu130 on cpu-2core-vm",
                 "suite commit `d61e069d`", "a 5% false discovery rate over 62 rows",
                 "beyond 10%"):
        assert part in compared[0]
    assert lines[1].startswith("### xferbench compare: regression (12 worse, 16 better of 68")


def test_long_parameters_stay_one_cell_each_as_github_reads_them(releases):
    text, _ = releases
    tokens = gfm().parse(text)
    first = next(i for i, t in enumerate(tokens) if t.type == "table_open")
    header = [t.content for t in tokens[first:] if t.type == "inline"][:8]
    assert header == ["benchmark", "params", "A", "B", "B/A", "interval", "q", "verdict"]
    row = table_rows(tokens, first)[0]
    assert len(row) == 8 and row[0] == "`Copy.track_completion_s`"
    cell = next(t for t in tokens[first:] if t.type == "inline" and t.content == row[1])
    kinds = [c.type for c in cell.children]
    assert kinds == ["code_inline", "html_inline"] * 4 + ["code_inline"]
    assert [c.content for c in cell.children if c.type == "code_inline"] == [
        "direction=h2d", "host_memory=pageable", "sync=blocking", "layout=many", "size=256KiB"]


def test_a_bar_or_a_tag_in_a_value_never_opens_a_cell_or_an_element():
    md = gfm()
    row = f"| {code_span('k=x|y')} | {plain_text('<1e-4 | q')} |"
    html = md.render(f"| a | b |\n| --- | --- |\n{row}\n")
    assert "<td><code>k=x|y</code></td>" in html
    assert "<td>&lt;1e-4 | q</td>" in html
    assert html.count("<td>") == 2
    assert code_span("a`b") == "`` a`b ``"
