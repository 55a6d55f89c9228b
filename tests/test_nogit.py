"""A suite tree without git (a GPU machine's copy of the tree, an image with no git binary):
``xferbench run`` labels its results with the commit it is given (XFERBENCH_SUITE_COMMIT) or
the tree's own hash, and asv files them through the listing repository (results/listedrepo.py),
an asv plugin that needs no git. The whole check without git on PATH is
tests/test_gpu_check.py's gpu-check run with a minimal interpreter."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xferbench.errors import XferbenchError
from xferbench.results.repo import (
    LISTED_DVCS,
    LISTED_PLUGIN,
    SUITE_COMMIT_VAR,
    suite_commit,
    write_asv_config,
)
from xferbench.results.suite import CLONE, Suite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The suite's files copied without .git."""
    dest = tmp_path / "tree"
    for part in ("benchmarks", "src/xferbench"):
        shutil.copytree(REPO / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "asv.conf.json", dest / "asv.conf.json")
    return dest


def test_a_tree_without_git_is_labelled_by_its_own_hash_or_the_commit_given(tree):
    found = suite_commit(Suite(str(tree), CLONE), {})
    assert found.source == "tree" and len(found.commit) == 40 and not found.needs_git
    # the same tree, the same hash
    assert suite_commit(Suite(str(tree), CLONE), {}).commit == found.commit
    (tree / "benchmarks" / "bench_sync.py").write_text("# changed\n")
    assert suite_commit(Suite(str(tree), CLONE), {}).commit != found.commit
    given = suite_commit(Suite(str(tree), CLONE), {SUITE_COMMIT_VAR: "c" * 40})
    assert (given.commit, given.source) == ("c" * 40, "given")
    with pytest.raises(XferbenchError, match=rf"^{SUITE_COMMIT_VAR}='HEAD' is not a commit"):
        suite_commit(Suite(str(tree), CLONE), {SUITE_COMMIT_VAR: "HEAD"})


def test_a_checkout_is_labelled_by_git_whatever_is_given():
    found = suite_commit(Suite(str(REPO), CLONE), {SUITE_COMMIT_VAR: "c" * 40})
    assert found.source == "git" and found.commit != "c" * 40


def test_asv_files_a_tree_without_git_through_the_listing_repository(tree, tmp_path,
                                                                     monkeypatch):
    """asv's own lookup (get_repo) finds the plugin's repository by the configuration's dvcs,
    and the names it asks for are the suite commit; asv's git repository is never made."""
    from asv import config, repo
    from asv.plugin_manager import plugin_manager

    monkeypatch.setenv(SUITE_COMMIT_VAR, "d" * 40)
    suite = Suite(str(tree), CLONE)
    path = write_asv_config(suite, str(tmp_path / "results"), str(tmp_path),
                            suite_commit(suite))
    conf = config.Config.load(path)
    assert conf.dvcs == LISTED_DVCS and conf.plugins == [LISTED_PLUGIN]
    for plugin in conf.plugins:
        plugin_manager.import_plugin(plugin)
    found = repo.get_repo(conf)
    assert type(found).__name__ == "ListedCommits"
    assert {found.get_hash_from_name(n) for n in (*conf.branches, "HEAD", "d" * 40)} == \
        {"d" * 40}
    assert found.get_branch_commits("main") == ["d" * 40]
    assert isinstance(found.get_date("d" * 40), int)
