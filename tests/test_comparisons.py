"""The comparisons (analysis/comparisons.py): each "X vs Y" pair declared once, every figure one
the suite declares, and the headlines, prices and shipped claims reading them by id."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT

from xferbench.analysis.claimtable import RATIO, check_figure, load_table
from xferbench.analysis.comparisons import COMPARISONS, ComparisonSpec, comparison
from xferbench.analysis.headline import HEADLINES
from xferbench.analysis.prices import PRICES
from xferbench.devices import Capabilities
from xferbench.errors import XferbenchError
from xferbench.results.discovery import describe_suite


def _pair(c: ComparisonSpec) -> frozenset:
    """The two figures compared, whichever side each is on."""
    return frozenset((f.benchmark, tuple(sorted(f.params))) for f in (c.practice, c.baseline))


def test_no_benchmark_pair_is_declared_twice():
    pairs = [_pair(c) for c in COMPARISONS]
    twice = [c.id for c, p in zip(COMPARISONS, pairs) if pairs.count(p) > 1]
    assert twice == []
    ids = [c.id for c in COMPARISONS]
    assert len(ids) == len(set(ids))


def test_the_shipped_claims_name_comparisons_rather_than_repeat_their_figures():
    """A ratio claim of the shipped table reads a declared comparison: a pair written out in
    the table as well would be a second place for the same fact."""
    declared = {_pair(c) for c in COMPARISONS}
    for claim in load_table().claims:
        if claim.rule.kind != RATIO:
            continue
        for e in claim.evidence:
            assert frozenset((f.benchmark, tuple(sorted(f.params))) for f in e.figures) \
                in declared, claim.id
    text = (REPO_ROOT / "src" / "xferbench" / "data" / "claims.toml").read_text()
    assert "\npractice = " not in text and "\nbaseline = " not in text


def test_headlines_and_prices_are_comparisons_by_id():
    assert all(comparison(h.key) is h.comparison for h in HEADLINES)
    assert all(comparison(p.key) is p.comparison for p in PRICES)
    pinned = next(h for h in HEADLINES if h.key == "pinned_vs_pageable")
    assert pinned.practice == {"direction": "h2d", "host_memory": "pinned", "sync": "blocking",
                               "layout": "one", "size": "64MiB"}


def test_an_unknown_comparison_is_one_sentence_naming_those_declared():
    with pytest.raises(XferbenchError, match=r"^'nope' is not a comparison xferbench declares: "
                                             r"it has pinned_vs_pageable, "):
        comparison("nope")


@pytest.mark.parametrize("caps", [None, Capabilities("cuda:0", True, True, True,
                                                     stream_hold=True)])
def test_every_comparison_reads_figures_the_suite_declares(caps):
    """Against the suite's own discovery (the full sweep, a CPU or a GPU probe), not the
    committed results: a benchmark or value renamed in the suite fails here by name."""
    declared = describe_suite(str(REPO_ROOT), caps)
    for c in COMPARISONS:
        for figure in (c.practice, c.baseline):
            check_figure(f"comparison {c.id}", figure, declared)
        units = {declared[f.benchmark].unit for f in (c.practice, c.baseline)}
        assert len(units) == 1, f"{c.id} compares {units}"
