"""The asv repository and its plumbing: where the suite is, its git state, the asv
configuration a command runs with, machine names, the results folder's lock, and the
interpreter wrapper that gives each PyTorch version its own results series.

Shared by ``run`` and ``publish``; no command imports another for these.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from .errors import XferbenchError
from .metadata import MachineMetadata

# asv loads inside the functions that need it: `import xferbench` stays free of it.

try:
    import fcntl
except ImportError:  # no fcntl (Windows): no concurrent-run protection
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".xferbench-run.lock"


# -- locating the suite ------------------------------------------------------------------------

def find_repo(start: str | None = None) -> str:
    """The folder holding asv.conf.json and benchmarks/, searched upwards from ``start``."""
    here = os.path.abspath(start or os.getcwd())
    candidates = [here, *_parents(here)]
    pkg_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
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


def write_asv_config(repo: str, results_dir: str, workdir: str) -> str:
    """asv.conf.json of ``repo`` with absolute paths, the results folder and a private
    work folder (environments, html) filled in; written into ``workdir``; returns its path.

    The commit links (asv's ``show_commit_url``) come from the repository's own remote where
    asv.conf.json names none: a clone's links lead to its own commits, and one with no web
    remote has none."""
    from asv import util as asv_util

    conf = asv_util.load_json(os.path.join(repo, "asv.conf.json"), js_comments=True)
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


# -- machines ----------------------------------------------------------------------------------

def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower() or "unknown"


MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_machine_name(name: str) -> str:
    """``name`` as given, or XferbenchError: it becomes a folder under the results folder, so
    it is letters, digits, '.', '_' and '-' and starts with a letter or digit (no '.' or '..',
    no path)."""
    if not MACHINE_NAME.fullmatch(name):
        raise XferbenchError(
            f"--machine {name!r} is not a machine name: use up to 100 letters, digits, '.', "
            "'_' and '-', starting with a letter or digit")
    return name


def default_machine_name(meta: MachineMetadata) -> str:
    """``node7-nvidia-h200``: host and GPU; an emulated device's name says "emulated"."""
    gpu = meta.gpu_name or meta.accelerator or "cpu"
    name = slug(f"{meta.hostname or 'host'}-{gpu}")
    if meta.emulated and "emulated" not in name:
        name += "-emulated"
    return name


def torch_label(meta: MachineMetadata) -> tuple[str, str]:
    """("2.13.0+cpu", "none") or ("2.14.1+cu128", "12.8"): the installed torch and its CUDA."""
    cuda = meta.cuda or (f"hip{meta.hip}" if meta.hip else "none")
    return str(meta.torch or "unknown"), str(cuda)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def write_machine_file(home: str, name: str, meta: MachineMetadata) -> None:
    """Register the machine without questions: asv reads ~/.asv-machine.json."""
    ram = ""
    try:
        ram = str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    cpu = str(meta.cpu_model or "unknown")
    if meta.gpu_name:
        cpu = f"{cpu}; GPU {meta.gpu_name}"
    record = {"arch": _text(meta.arch), "cpu": cpu, "machine": name,
              "num_cpu": _text(meta.cpu_count), "os": _text(meta.os), "ram": ram}
    with open(os.path.join(home, ".asv-machine.json"), "w") as fh:
        json.dump({name: record, "version": 1}, fh)


# -- the lock ----------------------------------------------------------------------------------

@contextlib.contextmanager
def results_lock(results_dir: str) -> Iterator[int]:
    """Hold an exclusive lock on ``results_dir``; a second run is refused, not queued. Yields
    the lock's file descriptor: a process it is handed to holds the lock until it exits too."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, LOCK_NAME)
    fh = open(path, "a+")
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise XferbenchError(
                    f"another xferbench run is writing to {results_dir}: wait for it to finish "
                    "or give another --results folder"
                ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield fh.fileno()
    finally:
        fh.close()


def lock_is_held(results_dir: str) -> bool:
    """Whether another run holds ``results_dir``'s lock now (checked without waiting)."""
    path = os.path.join(results_dir, LOCK_NAME)
    if fcntl is None or not os.path.exists(path):
        return False
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


# -- one series per PyTorch version ------------------------------------------------------------

def interpreter_wrapper(torch_version: str, cuda: str, series: str = "") -> str:
    """A stable path, naming torch and CUDA, that runs this interpreter and no other.

    asv names an existing environment after its interpreter's absolute path; this path makes
    each (torch, CUDA) pair a series of its own, and ``series`` ("-quick", "-threads2") each
    set of options that changes the numbers: a quick run never replaces a full run's figures.
    The folder is named after a hash of this
    interpreter's real path, so another checkout's or venv's run, even of the same torch
    version, gets a wrapper of its own and can never point this run at its interpreter; the
    content is checked (``check_wrapper``) before every asv call.
    """
    interpreter = os.path.abspath(sys.executable)  # a venv's own path: its python is a link
    key = hashlib.sha256(interpreter.encode()).hexdigest()[:10]
    folder = os.path.join(tempfile.gettempdir(), f"xferbench-{os.getuid()}", key,
                          slug(f"torch{torch_version}-cuda{cuda}{series}"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "python")
    if not _wrapper_ok(path):
        tmp = path + f".{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(_wrapper_body())
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    return path


def _wrapper_body() -> str:
    return f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'


def _wrapper_ok(path: str) -> bool:
    try:
        with open(path) as fh:
            return fh.read() == _wrapper_body() and os.access(path, os.X_OK)
    except OSError:
        return False


def check_wrapper(path: str) -> None:
    """Raise XferbenchError unless the wrapper at ``path`` still runs this interpreter."""
    if not _wrapper_ok(path):
        raise XferbenchError(
            f"the interpreter wrapper {path} no longer runs {sys.executable}: something "
            "rewrote it during the run; results of this run so far are kept")


def results_file(results_dir: str, machine: str, commit: str, wrapper: str) -> str:
    """The file asv writes for ``commit`` run through ``wrapper`` on ``machine``, named as asv
    names it (an environment name of 128 characters or more becomes "env-<md5>": a wrapper
    under a long temporary path, with a series suffix or two, reaches that)."""
    from asv.environment import get_env_name
    from asv.results import get_filename

    env_name = get_env_name("existing", wrapper.replace(os.path.sep, "_"), {}, {})
    return os.path.join(results_dir, get_filename(machine, commit, env_name))
