"""Which suite a command runs with: a clone's, or the one the package carries.

A clone holds ``asv.conf.json`` and ``benchmarks/`` at its top and files its results under its
git HEAD. The wheel carries the same files as ``xferbench/suite/`` (setup.py copies them: one
source for both) with ``suite.json``, the suite's identity: the commit the wheel was built from
and that commit's author date, which is what asv files a clone's run under. So a run of the
installed package and a run of a clone at that commit file their results under one commit and
date, with the same benchmark names and parameters, and every command reads them together.

The clone wins where there is one (the folder a command runs in or one above it, or the clone
an editable install points back at): the clone is the way to change the suite. Elsewhere the
package's suite runs, from any folder, into ``./results``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata

from ..errors import XferbenchError
from .safefiles import NotReadable, read_regular

#: The asv project name a clone's asv.conf.json carries: another project's suite (numpy's,
#: say, with its own asv.conf.json and benchmarks/) is never taken for this one.
PROJECT = "xferbench"
CLONE, PACKAGE = "clone", "package"
#: The package's suite, below the installed package's folder.
PACKAGED = "suite"
IDENTITY = "suite.json"


@dataclass(frozen=True)
class SuiteIdentity:
    """What the wheel records of the suite it was built from (setup.py's ``suite.json``)."""

    commit: str  # 40 hex digits: the git commit, or where none was known the files' digest
    date_ms: int  # the commit's author date (asv's), or the build's where none was known
    version: str  # xferbench's version
    dirty: bool | None  # built from a tree with uncommitted changes to the suite
    digest: str  # sha256 of asv.conf.json, benchmarks/ and src/xferbench/
    commit_known: bool = True

    @classmethod
    def from_dict(cls, data: dict) -> SuiteIdentity:
        commit, digest = data.get("commit"), str(data.get("digest") or "")
        if not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit)):
            commit = None
        date = data.get("date_ms")
        return cls(commit or digest[:40], int(date) if isinstance(date, int) else 0,
                   str(data.get("version") or ""), data.get("dirty"), digest, commit is not None)


@dataclass(frozen=True)
class Suite:
    """The suite a command runs with: its folder (asv.conf.json and benchmarks/), where it
    came from, and for the package's the identity it was built with."""

    root: str
    source: str  # CLONE or PACKAGE
    identity: SuiteIdentity | None = None  # the package's; a clone's commit is its git HEAD

    @property
    def benchmark_dir(self) -> str:
        return os.path.join(self.root, "benchmarks")

    def record(self) -> str:
        """What a run's record says of its suite: "clone", or "package 0.1.0"."""
        if self.source == CLONE or self.identity is None:
            return CLONE
        return f"{PACKAGE} {self.identity.version}"

    def describe(self) -> str:
        """For the run's first line and its record: "clone /path" or "package 0.1.0"."""
        if self.source == CLONE:
            return f"clone {self.root}"
        assert self.identity is not None
        return f"package xferbench {self.identity.version}"


def _parents(path: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        yield parent
        path = parent


def _is_suite(folder: str) -> bool:
    """``folder`` holds an asv.conf.json and this project's benchmarks/ (its ``_asv.py``),
    and the configuration names no other project. Known by its files, not by reading the
    configuration alone: a damaged asv.conf.json still marks its clone (whose reader then
    says what is wrong), never sends a run to another clone."""
    conf = os.path.join(folder, "asv.conf.json")
    if not (os.path.isfile(conf) and os.path.isfile(os.path.join(folder, "benchmarks",
                                                                   "_asv.py"))):
        return False
    try:
        text = read_regular(conf, "asv configuration").decode("utf-8", "replace")
    except NotReadable:
        return True  # unreadable: load_asv_config says so
    named = re.search(r'"project"\s*:\s*"([^"]*)"', text)
    return named is None or named.group(1) == PROJECT


def find_clone(start: str | None = None) -> str | None:
    """A clone's top: ``start`` (the working folder) or a folder above it, else the clone an
    editable install imports xferbench from; None where there is none. The package's own
    suite folder is no clone."""
    here = os.path.abspath(start or os.getcwd())
    own = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    for folder in (here, *_parents(here), own):
        if _is_suite(folder) and not os.path.isfile(os.path.join(folder, IDENTITY)):
            return folder
    return None


def packaged_suite() -> Suite | None:
    """The suite the installed package carries, None where it carries none (an editable
    install, a tree run from src/)."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PACKAGED)
    path = os.path.join(root, IDENTITY)
    if not (os.path.isfile(path) and _is_suite(root)):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        raise XferbenchError(f"the package's suite identity {path} does not read: reinstall "
                             "xferbench") from None
    return Suite(root, PACKAGE, SuiteIdentity.from_dict(data if isinstance(data, dict) else {}))


def find_suite(start: str | None = None) -> Suite:
    """The clone (``find_clone``), else the package's suite; one sentence where neither is."""
    clone = find_clone(start)
    if clone is not None:
        return Suite(clone, CLONE)
    packaged = packaged_suite()
    if packaged is not None:
        return packaged
    raise XferbenchError(
        "this xferbench has no suite: its benchmarks/ ship in the wheel (pip install "
        f"xferbench) or in a clone ({clone_hint()}); a tree imported from src/ needs its "
        "clone's top as the working folder")


def repository_url() -> str | None:
    """The repository's web address, from the installed package's metadata
    (``[project.urls] Repository``), None where it is not installed."""
    try:
        urls = metadata.metadata(PROJECT).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "repository":
            return url.strip()
    return None


def clone_hint() -> str:
    """How to get a clone, for messages: "git clone URL"."""
    url = repository_url()
    return f"git clone {url}" if url else "a clone of the xferbench repository"


def find_clone_or_refuse(what: str) -> str:
    """A clone's top for a command that needs one (``what``), or one sentence saying so."""
    clone = find_clone()
    if clone is None:
        raise XferbenchError(f"{what} needs a clone of the suite ({clone_hint()}): run it "
                             "inside the clone")
    return clone
