"""The suite's repository: a clone's git state and its own remote's commit pages, and the asv
configuration a command runs with, for a clone (git) or the package's suite (no git: asv
reads the commits from a listing, ``listedrepo.py``). Where the suite is: ``suite.py``.

Shared by ``run`` and ``publish``; no command imports another for these.
"""

from __future__ import annotations

import os
import re
import subprocess
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


def suite_commit(suite: Suite) -> str:
    """The commit ``suite``'s results are filed under: a clone's HEAD, or the commit the
    package was built from."""
    if suite.source == CLONE or suite.identity is None:
        return git_head(suite.root)
    return suite.identity.commit


def current_branch(repo: str) -> str | None:
    out = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=repo,
                         capture_output=True, text=True)
    name = out.stdout.strip()
    return name if out.returncode == 0 and name and name != "HEAD" else None


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


def write_asv_config(suite: Suite, results_dir: str, workdir: str) -> str:
    """asv.conf.json of ``suite`` with absolute paths, the results folder and a private
    work folder (environments, html) filled in; written into ``workdir``; returns its path.

    A clone's commits are its git history. The package's suite has no git: asv reads a
    listing instead (``listedrepo``), of the suite's commit and every commit the results
    folder holds, each with its date, so that publish orders them as a clone would.

    The commit links (asv's ``show_commit_url``) come from the repository's own remote where
    asv.conf.json names none (a clone's links lead to its own commits, and one with no web
    remote has none), and for the package from its metadata's repository address."""
    repo = suite.root
    conf = load_asv_config(repo)
    conf.pop("plugins", None)  # stock asv's labels (_asvplugin): xferbench labels its own files
    if suite.source == CLONE:
        branch = current_branch(repo)
        if branch:  # asv refuses a commit on a branch its configuration does not name
            conf["branches"] = [branch]
        conf["repo"] = repo
        url = web_commit_url(own_remote(repo))
    else:
        assert suite.identity is not None
        listing = os.path.join(workdir, "commits.json")
        commits = {**result_commits(results_dir), suite.identity.commit: suite.identity.date_ms}
        write_json_safely(listing, {"head": suite.identity.commit, "commits": commits})
        conf.update({"repo": listing, "dvcs": LISTED_DVCS, "plugins": [LISTED_PLUGIN]})
        url = web_commit_url(repository_url()) if suite.identity.commit_known else None
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
