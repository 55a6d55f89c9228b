"""lint on real code nobody here wrote, scored, on each real-code set apart:
tests/lint/realcode/corpus.toml (the training files the analysis was tuned on),
heldout.toml (files labelled before the linter ran on them, whose classes were fixed since),
heldout2.toml and heldout3.toml (a third and a fourth set, labelled before the linter ran on
them, whose misses have since informed the analysis too), fetched from the package index into a
cache outside git (pip download; ~70 MB the first time, then nothing), each checked against its
sha256, linted with the rest of its package and its every report labelled. On each set:
precision at least 0.90 overall and for every rule with 5 reports or more, and per-step
recall at least 0.70 for XB101 and XB107 where a set has 5 such reads. Skipped, in one line,
where the package index cannot be reached."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "lint" / "realcode"))
import score_real as score  # noqa: E402

pytestmark = pytest.mark.slow

#: Each set: its file, how much of it must be there (files, packages), its name in the docs,
#: and whether its per-step recall is held to RECALL.
SETS = {"tuned": (score.CORPUS, 40, 30, "tuned", True),
        "heldout": (score.HELDOUT, 60, 38, "held-out", True),
        "heldout2": (score.HELDOUT2, 13, 12, "third set", True),
        "heldout3": (score.HELDOUT3, 13, 12, "fourth set", True)}
PRECISION, RECALL, REPORTS = 0.90, 0.70, 5
DOCS = Path(__file__).resolve().parents[1] / "docs" / "lint.md"


@pytest.fixture(scope="module", params=sorted(SETS))
def scored(request):
    corpus, files, packages, label, recall = SETS[request.param]
    result = score.run(corpus)
    if result.files == 0 and result.skipped and all(
            "the package index cannot be reached" in s for s in result.skipped):
        pytest.skip(f"the package index cannot be reached: the real-code set "
                    f"({corpus.name}) could not be fetched")
    return result, files, packages, label, recall


def test_the_set_is_whole_and_every_report_is_labelled(scored):
    outcome, files, packages = scored[:3]
    assert outcome.errors == []
    assert outcome.files >= files and len(outcome.packages) >= packages, outcome.skipped


def test_precision_overall_and_per_rule(scored):
    outcome = scored[0]
    assert outcome.total.precision >= PRECISION, "\n".join(score.summary(outcome))
    for code, s in outcome.scores.items():
        if s.reports >= REPORTS:
            assert s.precision >= PRECISION, f"{code}: " + "\n".join(outcome.false_alarms)


def test_per_step_recall_of_reads_and_timers(scored):
    outcome, held = scored[0], scored[4]
    if not held:
        pytest.skip("this set is scored as it is, not held to a recall")
    for code in ("XB101", "XB107"):
        s = outcome.scores[code]
        if s.expected >= REPORTS:
            assert s.recall >= RECALL, f"{code}: " + "\n".join(outcome.misses)


def test_the_docs_quote_the_set_s_score_as_it_is(scored):
    outcome, label = scored[0], scored[3]
    row = score.docs_row(label, outcome)
    assert row in DOCS.read_text(encoding="utf-8").splitlines(), f"docs/lint.md lacks: {row}"
