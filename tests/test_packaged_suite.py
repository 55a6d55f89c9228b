"""Which suite a command runs (a clone's, or the one the wheel carries), the identity the
wheel records, and asv's repository for the package's suite, which has no git: its commits
are a listing, ordered by date. The wheel itself, installed and run: tests/test_package.py
(slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.errors import XferbenchError
from xferbench.results import suite as suite_mod
from xferbench.results.repo import LISTED_DVCS, LISTED_PLUGIN, result_commits, write_asv_config
from xferbench.results.runrecords import RunRecord
from xferbench.results.suite import (
    CLONE,
    PACKAGE,
    Suite,
    SuiteIdentity,
    find_clone,
    find_suite,
)

REPO = Path(__file__).resolve().parents[1]
COMMIT = "ab" * 20


def _suite_folder(where: Path, project: str = "xferbench") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "benchmarks").mkdir(exist_ok=True)
    (where / "benchmarks" / "_asv.py").write_text("")  # the suite's own module marks it
    (where / "asv.conf.json").write_text(
        '{\n  // a comment, as asv allows\n  "version": 1,\n  "project": "' + project + '",\n'
        '  "branches": ["main"], "benchmark_dir": "benchmarks"\n}\n')
    return where


def test_a_clone_is_found_from_a_folder_below_its_top(tmp_path):
    clone = _suite_folder(tmp_path / "clone")
    (clone / "results" / "m").mkdir(parents=True)
    assert find_clone(str(clone / "results" / "m")) == str(clone)


def test_another_projects_asv_suite_is_never_taken_for_this_one(tmp_path):
    """numpy's clone holds an asv.conf.json and a benchmarks/ too: from inside it, the suite
    is xferbench's own (here: the clone this test runs from), never numpy's."""
    numpy = _suite_folder(tmp_path / "numpy", project="numpy")
    assert find_clone(str(numpy)) == str(REPO)


def test_the_packages_own_suite_folder_is_no_clone(tmp_path):
    packaged = _suite_folder(tmp_path / "site-packages" / "xferbench" / "suite")
    (packaged / "suite.json").write_text(json.dumps({"commit": COMMIT}))
    assert find_clone(str(packaged)) == str(REPO)


def test_no_suite_at_all_is_one_sentence_naming_both_ways(monkeypatch):
    monkeypatch.setattr(suite_mod, "find_clone", lambda start=None: None)
    monkeypatch.setattr(suite_mod, "packaged_suite", lambda: None)
    with pytest.raises(XferbenchError) as err:
        find_suite()
    text = str(err.value)
    assert "pip install xferbench" in text and "git clone https://" in text
    assert "\n" not in text


def test_an_identity_without_a_commit_stands_in_its_digest_and_says_so():
    known = SuiteIdentity.from_dict({"commit": COMMIT, "date_ms": 5, "version": "0.1.0",
                                     "dirty": False, "digest": "f" * 64})
    assert (known.commit, known.commit_known, known.date_ms) == (COMMIT, True, 5)
    unknown = SuiteIdentity.from_dict({"commit": None, "date_ms": None, "digest": "e" * 64})
    assert unknown.commit == "e" * 40 and not unknown.commit_known
    assert Suite("/s", PACKAGE, known).record() == "package 0.1.0"
    assert Suite("/s", CLONE).record() == "clone"


def test_a_run_record_keeps_which_suite_ran():
    record = RunRecord(COMMIT, "m", "cpu", "default", False, None, "2026-12-01T00:00:00Z",
                       suite="package 0.1.0")
    assert RunRecord.from_dict(record.to_dict()).suite == "package 0.1.0"
    assert "suite" not in RunRecord(COMMIT, "m", None, None, False, None, None).to_dict()


def test_the_package_suites_asv_configuration_lists_every_commit_with_its_date(tmp_path):
    """asv needs a repository to file a run under a commit and to order results: the
    package's suite has no git, so its configuration names the listing repository (an asv
    plugin) with the suite's commit and every commit the results folder holds."""
    root = _suite_folder(tmp_path / "suite")
    identity = SuiteIdentity(COMMIT, 1_700_000_000_000, "0.1.0", False, "d" * 64)
    results = committed_results()
    conf = json.loads(Path(write_asv_config(Suite(str(root), PACKAGE, identity), str(results),
                                            str(tmp_path))).read_text())
    assert conf["dvcs"] == LISTED_DVCS and LISTED_PLUGIN in conf["plugins"]
    assert conf["benchmark_dir"] == str(root / "benchmarks")
    listing = json.loads(Path(conf["repo"]).read_text())
    assert listing["head"] == COMMIT
    assert listing["commits"] == {**result_commits(str(results)), COMMIT: 1_700_000_000_000}
    # the committed results' commits (the sweeps', the behaviour checks'), and the suite's
    assert len(listing["commits"]) == len(result_commits(str(results))) + 1
    assert conf["show_commit_url"] == "https://github.com/xferbench/xferbench/commit/"


def test_the_listing_repository_answers_asv_as_git_would(tmp_path):
    from asv.repo import NoSuchNameError, get_repo

    import xferbench.results.listedrepo  # noqa: F401 - what asv's plugins entry imports

    old, new = "1" * 40, "2" * 40
    path = tmp_path / "commits.json"
    path.write_text(json.dumps({"head": new, "commits": {new: 2000, old: 1000}}))

    class Conf:
        repo, dvcs, project = str(path), LISTED_DVCS, "xferbench"

    repo = get_repo(Conf)
    for name in ("HEAD", "main", new, new[:8]):
        assert repo.get_hash_from_name(name) == new
    assert repo.get_date(old) == 1000
    assert repo.get_revisions({old, new}) == {old: 0, new: 1}  # oldest first, as git's
    assert repo.get_branch_commits("main") == [new, old]  # newest first
    assert repo.get_tags() == {}
    assert repo.get_range_spec(old, new) == f"{old}..{new}"  # where publish finds a step
    with pytest.raises(NoSuchNameError):
        repo.get_hash_from_name("3" * 8)
