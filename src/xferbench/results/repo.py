"""The suite's repository: a clone's git state and its own remote's commit pages, and the asv
configuration a command runs with, for a clone (git) or the package's suite (no git: asv
reads the commits from a listing, ``listedrepo.py``). Where the suite is: ``suite.py``.

Shared by ``run`` and ``publish``; no command imports another for these.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from .asvfiles import iter_result_files
from .safefiles import load_json, write_json_safely
from .suite import CLONE, Suite, repository_url

# asv loads inside the functions that need it: `import xferbench` stays free of it.

def git_head(repo: str) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise XferbenchError(
            f"{repo} is not a git checkout with a commit: asv labels results by suite commit"
        ) from None
    return out.stdout.strip()


#: Where the package's suite commit comes from (``SuiteCommit.source``).
PACKAGE_COMMIT = "package"
#: The suite commit a tree without git is labelled with (a GPU machine's copy of the tree):
#: ``xferbench run`` reads it where git cannot answer, and asv's listing repository
#: (``listedrepo.py``) files the run under it.
SUITE_COMMIT_VAR = "XFERBENCH_SUITE_COMMIT"
#: The files whose content makes a tree's own hash, where neither git nor SUITE_COMMIT_VAR
#: says the commit: the suite and the package that measures it.
TREE_PARTS = ("asv.conf.json", "benchmarks", os.path.join("src", "xferbench"))


@dataclass(frozen=True)
class SuiteCommit:
    """The commit a run's results are labelled with, and where it came from: "git" (the
    checkout's HEAD), "package" (the commit the installed package was built from), "given"
    (SUITE_COMMIT_VAR, in a tree without git) or "tree" (the tree's own hash: relabel it
    with the real commit, scripts/relabel)."""

    commit: str
    source: str
    date_ms: int | None = None  # the commit's date where git cannot say it (the package's)

    @property
    def needs_git(self) -> bool:
        return self.source == "git"


def git_checkout(repo: str) -> bool:
    """Whether ``repo`` is a git checkout with a commit that a git binary here can read."""
    return os.path.exists(os.path.join(repo, ".git")) and bool(_git(repo, "rev-parse", "HEAD"))


def tree_hash(repo: str) -> str:
    """A 40-character hash of the suite's files (TREE_PARTS): the same tree, the same hash."""
    digest = hashlib.sha1(b"xferbench tree\0")
    for part in TREE_PARTS:
        top = os.path.join(repo, part)
        paths = [top] if os.path.isfile(top) else sorted(
            os.path.join(d, f) for d, dirs, files in os.walk(top) for f in files
            if "__pycache__" not in d and not f.endswith(".pyc"))
        for path in paths:
            digest.update(os.path.relpath(path, repo).encode() + b"\0")
            with open(path, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()


def suite_commit(suite: Suite, environ: Mapping[str, str] | None = None) -> SuiteCommit:
    """What ``suite``'s results are labelled with: the package's own commit; a clone's git
    HEAD; in a tree without git (no .git, or no git binary), SUITE_COMMIT_VAR if set, else
    the tree's own hash."""
    if suite.source != CLONE and suite.identity is not None:
        return SuiteCommit(suite.identity.commit, PACKAGE_COMMIT, suite.identity.date_ms)
    env = os.environ if environ is None else environ
    repo = suite.root
    if git_checkout(repo):
        return SuiteCommit(git_head(repo), "git")
    given = env.get(SUITE_COMMIT_VAR, "").strip()
    if given:
        if not re.fullmatch(r"[0-9a-f]{40}", given):
            raise XferbenchError(f"{SUITE_COMMIT_VAR}={given!r} is not a commit: give the "
                                 "suite's full 40-character git hash")
        return SuiteCommit(given, "given")
    return SuiteCommit(tree_hash(repo), "tree")


def current_branch(repo: str) -> str | None:
    name = _git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    return name if name and name != "HEAD" else None


def git_branches(repo: str, wanted: list[str]) -> list[str]:
    """Configured branches that exist here; else HEAD (a detached CI checkout)."""
    found = []
    for b in wanted:
        try:
            ok = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{b}"],
                                cwd=repo, capture_output=True).returncode == 0
        except OSError:
            raise XferbenchError("publish needs git: asv orders results by the suite's "
                                 "history") from None
        if ok:
            found.append(b)
    return found or ["HEAD"]


def committed_unchanged(repo: str, path: str) -> bytes | None:
    """The bytes ``path`` has at ``repo``'s git HEAD, where it is a tracked file there and
    the working copy is the same; None otherwise (untracked, changed by its user, no git)."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(repo))
    if rel.startswith("..") or not os.path.isfile(path):
        return None
    try:
        out = subprocess.run(["git", "show", f"HEAD:{rel.replace(os.sep, '/')}"], cwd=repo,
                             capture_output=True, check=False)
        with open(path, "rb") as fh:
            return out.stdout if out.returncode == 0 and fh.read() == out.stdout else None
    except OSError:
        return None


def _git(repo: str, *args: str) -> str:
    """``git args`` in ``repo``: its output, "" where it fails or git is missing."""
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    except OSError:
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def own_remote(repo: str) -> str | None:
    """The URL of ``repo``'s own remote: the current branch's, else ``origin``, else the only
    one; None where there is none."""
    branch = current_branch(repo)
    name = _git(repo, "config", "--get", f"branch.{branch}.remote") if branch else ""
    if not name:
        names = _git(repo, "remote").split()
        name = "origin" if "origin" in names else names[0] if len(names) == 1 else ""
    return _git(repo, "config", "--get", f"remote.{name}.url") or None if name else None


#: Where a forge shows one commit, after the repository's web address.
_COMMIT_PAGES = (("gitlab", "/-/commit/"), ("bitbucket.org", "/commits/"))


def web_commit_url(remote: str | None) -> str | None:
    """The prefix a commit hash is appended to for its web page, from a git remote URL
    (https, ssh or scp-like ``git@host:owner/repo.git``); None for a local path or a file://
    remote, which has no web page. Credentials in the URL are never kept."""
    if not remote:
        return None
    m = (re.fullmatch(r"(?:https?|ssh|git)://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+?)(?:\.git)?/?",
                      remote)
         or re.fullmatch(r"[^@/:]+@([^/:]+):(?!/)(.+?)(?:\.git)?/?", remote))
    if not m:
        return None
    host, path = m.group(1).lower(), m.group(2)
    page = next((p for forge, p in _COMMIT_PAGES if forge in host), "/commit/")
    return f"https://{host}/{path}{page}"


def load_asv_config(repo: str) -> dict[str, Any]:
    """``repo``'s asv.conf.json (asv's own reader: it allows comments), or one sentence for
    a damaged one: run and publish read it before they write anything."""
    from asv import util as asv_util

    path = os.path.join(repo, "asv.conf.json")
    try:
        conf = asv_util.load_json(path, js_comments=True)
    except (ValueError, asv_util.UserError) as exc:  # json5 says "<string>:7 Unexpected..."
        why = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc).strip().splitlines()[0])
        raise XferbenchError(f"{path} is not valid asv configuration ({why}): it may be "
                             "truncated; restore it with 'git checkout asv.conf.json'") from None
    except OSError as exc:
        raise XferbenchError(f"{path} cannot be read: {exc.strerror}") from None
    if not isinstance(conf, dict):
        raise XferbenchError(f"{path} is not an asv configuration (not a JSON object): "
                             "restore it with 'git checkout asv.conf.json'")
    return conf


#: asv's name for the listing repository (``listedrepo.ListedCommits``), and the plugin asv
#: imports for it: the leading dot makes asv import it by name, not from asv.plugins.
LISTED_DVCS = "xferbench-listed"
LISTED_PLUGIN = ".xferbench.results.listedrepo"


def result_commits(results_dir: str) -> dict[str, int]:
    """{commit: its date (ms)} of every results file under ``results_dir``, as asv saved them."""
    out: dict[str, int] = {}
    if not os.path.isdir(results_dir):
        return out
    for _machine, path in iter_result_files(results_dir):
        data = load_json(path, "results file")
        commit, date = data.get("commit_hash"), data.get("date")
        if isinstance(commit, str) and isinstance(date, int):
            out.setdefault(commit, date)
    return out


def write_asv_config(suite: Suite, results_dir: str, workdir: str,
                     commit: SuiteCommit | None = None) -> str:
    """asv.conf.json of ``suite`` with absolute paths, the results folder and a private
    work folder (environments, html) filled in; written into ``workdir``; returns its path.

    A clone's commits are its git history. The package's suite, and a tree without git (a
    GPU machine's copy, an image with no git binary), have none: asv reads a listing instead
    (``listedrepo``), of the suite's commit (``commit``, else ``suite_commit``) and every
    commit the results folder holds, each with its date, so that a run is filed under the
    suite's commit and publish orders them as a clone would; asv then needs no git at all.

    The commit links (asv's ``show_commit_url``) come from the repository's own remote where
    asv.conf.json names none (a clone's links lead to its own commits, and one with no web
    remote has none), and for the package (or a real commit given to a tree without git) from
    the package metadata's repository address."""
    repo = suite.root
    conf = load_asv_config(repo)
    conf.pop("plugins", None)  # stock asv's labels (_asvplugin): xferbench labels its own files
    commit = commit or suite_commit(suite)
    if commit.needs_git:
        # asv resolves each configured branch before it runs: a branch checkout names its
        # own; a detached one (a CI job's checkout of a commit) the configured branches it
        # holds, else HEAD
        branch = current_branch(repo)
        conf["branches"] = [branch] if branch else git_branches(repo, conf.get("branches", []))
        conf["repo"] = repo
        url = web_commit_url(own_remote(repo))
    else:
        listing = os.path.join(workdir, "commits.json")
        dated = commit.date_ms if commit.date_ms is not None else int(time.time() * 1000)
        commits = {**result_commits(results_dir), commit.commit: dated}
        write_json_safely(listing, {"head": commit.commit, "commits": commits})
        conf.update({"repo": listing, "dvcs": LISTED_DVCS, "plugins": [LISTED_PLUGIN]})
        known = commit.source == "given" or (
            commit.source == PACKAGE_COMMIT and suite.identity is not None
            and suite.identity.commit_known)
        url = web_commit_url(repository_url()) if known else None  # a real commit's page
    if not conf.get("show_commit_url") and url:
        conf["show_commit_url"] = url
    conf.update({
        "benchmark_dir": suite.benchmark_dir,
        "results_dir": results_dir,
        "html_dir": os.path.join(workdir, "html"),
        "env_dir": os.path.join(workdir, "env"),
    })
    path = os.path.join(workdir, "asv.conf.json")
    write_json_safely(path, conf)
    return path
