"""The suite's repository: where it is (asv.conf.json and benchmarks/), its git state, its
own remote's commit pages, and the asv configuration a command runs with.

Shared by ``run`` and ``publish``; no command imports another for these.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

from ..errors import XferbenchError
from .safefiles import write_json_safely

# asv loads inside the functions that need it: `import xferbench` stays free of it.


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


def write_asv_config(repo: str, results_dir: str, workdir: str) -> str:
    """asv.conf.json of ``repo`` with absolute paths, the results folder and a private
    work folder (environments, html) filled in; written into ``workdir``; returns its path.

    The commit links (asv's ``show_commit_url``) come from the repository's own remote where
    asv.conf.json names none: a clone's links lead to its own commits, and one with no web
    remote has none."""
    conf = load_asv_config(repo)
    branch = current_branch(repo)
    if branch:  # asv refuses a commit on a branch its configuration does not name
        conf["branches"] = [branch]
    if not conf.get("show_commit_url"):
        url = web_commit_url(own_remote(repo))
        if url:
            conf["show_commit_url"] = url
    conf.pop("plugins", None)  # stock asv's labels: xferbench labels its own files
    conf.update({
        "repo": repo,
        "benchmark_dir": os.path.join(repo, "benchmarks"),
        "results_dir": results_dir,
        "html_dir": os.path.join(workdir, "html"),
        "env_dir": os.path.join(workdir, "env"),
    })
    path = os.path.join(workdir, "asv.conf.json")
    write_json_safely(path, conf)
    return path
