"""The suite's repository: where it is (asv.conf.json and benchmarks/), its git state, its
own remote's commit pages, and the asv configuration a command runs with.

Shared by ``run`` and ``publish``; no command imports another for these.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import XferbenchError

# asv loads inside the functions that need it: `import xferbench` stays free of it.

#: The name asv knows the snapshot repository by (asv.conf.json's "dvcs"; asvsnapshot.py).
SNAPSHOT_DVCS = "xferbench-snapshot"


def find_repo(start: str | None = None) -> str:
    """The folder holding asv.conf.json and benchmarks/, searched upwards from ``start``."""
    here = os.path.abspath(start or os.getcwd())
    candidates = [here, *_parents(here)]
    pkg_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    candidates.append(pkg_root)  # an editable install points back at its clone
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "asv.conf.json")) and os.path.isdir(
            os.path.join(folder, "benchmarks")
        ):
            return folder
    raise XferbenchError(
        "xferbench run needs the suite (asv.conf.json and benchmarks/): "
        "run it inside a clone of the xferbench repository"
    )


def _parents(path: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        yield parent
        path = parent


def git_head(repo: str) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise XferbenchError(
            f"{repo} is not a git checkout with a commit: asv labels results by suite commit"
        ) from None
    return out.stdout.strip()


#: The suite commit a tree without git is labelled with (a GPU machine's copy of the tree):
#: ``xferbench run`` reads it where git cannot answer, and asv's snapshot repository
#: (``asvsnapshot.py``) answers every name with it.
SUITE_COMMIT_VAR = "XFERBENCH_SUITE_COMMIT"
#: The files whose content makes a tree's own hash, where neither git nor SUITE_COMMIT_VAR
#: says the commit: the suite and the package that measures it.
TREE_PARTS = ("asv.conf.json", "benchmarks", os.path.join("src", "xferbench"))


@dataclass(frozen=True)
class SuiteCommit:
    """The commit a run's results are labelled with, and where it came from: "git" (the
    checkout's HEAD), "given" (SUITE_COMMIT_VAR, in a tree without git) or "tree" (the
    tree's own hash: relabel it with the real commit, scripts/relabel)."""

    commit: str
    source: str

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


def suite_commit(repo: str, environ: dict[str, str] | None = None) -> SuiteCommit:
    """What ``repo``'s results are labelled with: its git HEAD; in a tree without git (no
    .git, or no git binary), SUITE_COMMIT_VAR if set, else the tree's own hash."""
    environ = os.environ if environ is None else environ
    if git_checkout(repo):
        return SuiteCommit(git_head(repo), "git")
    given = environ.get(SUITE_COMMIT_VAR, "").strip()
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


def write_asv_config(repo: str, results_dir: str, workdir: str, git: bool = True) -> str:
    """asv.conf.json of ``repo`` with absolute paths, the results folder and a private
    work folder (environments, html) filled in; written into ``workdir``; returns its path.

    The commit links (asv's ``show_commit_url``) come from the repository's own remote where
    asv.conf.json names none: a clone's links lead to its own commits, and one with no web
    remote has none. Without ``git`` (a tree without a git checkout, or no git binary), asv
    is handed the snapshot repository (``asvsnapshot.py``, loaded as an asv plugin), which
    answers every name with SUITE_COMMIT_VAR's commit: asv needs no git at all."""
    from asv import util as asv_util

    conf = asv_util.load_json(os.path.join(repo, "asv.conf.json"), js_comments=True)
    if not git:
        conf["dvcs"] = SNAPSHOT_DVCS
        conf["plugins"] = [*conf.get("plugins", []), ".xferbench.results.asvsnapshot"]
    branch = current_branch(repo)
    if branch:  # asv refuses a commit on a branch its configuration does not name
        conf["branches"] = [branch]
    if not conf.get("show_commit_url"):
        url = web_commit_url(own_remote(repo))
        if url:
            conf["show_commit_url"] = url
    conf.update({
        "repo": repo,
        "benchmark_dir": os.path.join(repo, "benchmarks"),
        "results_dir": results_dir,
        "html_dir": os.path.join(workdir, "html"),
        "env_dir": os.path.join(workdir, "env"),
    })
    path = os.path.join(workdir, "asv.conf.json")
    with open(path, "w") as fh:
        json.dump(conf, fh)
    return path
