"""The suite in the wheel: ``benchmarks/`` (asv's ``benchmark_dir``, at the repository's top)
is packaged as ``xferbench/suite/benchmarks`` beside a copy of ``asv.conf.json`` and
``suite.json``, the suite's identity (its git commit and that commit's date, the package
version, whether the tree had uncommitted changes, a digest of the files), so that an
installed ``xferbench run`` files its results under the commit a clone's run at that commit
files them under. One source for both: the clone's files are the wheel's.

Everything else is in pyproject.toml. An sdist carries ``suite.json`` at its top (written
from git when the sdist is made), so a wheel built from the sdist, with no git, keeps the
identity.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = os.path.dirname(os.path.abspath(__file__))
IDENTITY = "suite.json"
#: What the suite's identity covers where no git commit is known: the files that decide
#: what is measured and how it is filed.
DIGEST_OF = ("asv.conf.json", "benchmarks", os.path.join("src", "xferbench"))


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _digest() -> str:
    h = hashlib.sha256()
    for top in DIGEST_OF:
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, _s, fs in os.walk(path) for f in fs if f.endswith(".py"))
        for name in files:
            h.update(os.path.relpath(name, ROOT).replace(os.sep, "/").encode() + b"\0")
            with open(name, "rb") as fh:
                h.update(fh.read() + b"\0")
    return h.hexdigest()


def _version() -> str:
    scope: dict[str, str] = {}
    with open(os.path.join(ROOT, "src", "xferbench", "version.py"), encoding="utf-8") as fh:
        exec(fh.read(), scope)
    return scope["__version__"]


def suite_identity() -> dict:
    """From git where this folder is a checkout's top (never an enclosing repository's),
    else from the sdist's ``suite.json``, else the files' digest alone (commit null)."""
    top = _git("rev-parse", "--show-toplevel")
    if top and os.path.realpath(top) == os.path.realpath(ROOT):
        commit = _git("rev-parse", "HEAD")
        author_s = _git("show", "-s", "--format=%at", "HEAD")  # the date asv files a run under
        if commit and author_s:
            dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--",
                              *DIGEST_OF))
            return {"commit": commit, "date_ms": int(author_s) * 1000, "dirty": dirty,
                    "version": _version(), "digest": _digest()}
    path = os.path.join(ROOT, IDENTITY)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    return {"commit": None, "date_ms": None, "dirty": None, "version": _version(),
            "digest": _digest()}


class BuildPy(build_py):
    """The wheel's suite: asv.conf.json and suite.json beside the packaged benchmarks/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs its clone's suite
        target = os.path.join(self.build_lib, "xferbench", "suite")
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, "asv.conf.json"), os.path.join(target, "asv.conf.json"))
        with open(os.path.join(target, IDENTITY), "w", encoding="utf-8") as fh:
            json.dump(suite_identity(), fh, indent=1)


class Sdist(sdist):
    """The suite's identity at the sdist's top, for a wheel built from it without git."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        path = os.path.join(base_dir, IDENTITY)
        if os.path.exists(path):
            os.remove(path)  # a hard link to the source tree's copy: never written through
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(suite_identity(), fh, indent=1)


setup(
    packages=[*find_namespace_packages("src", include=["xferbench", "xferbench.*"]),
              "xferbench.suite.benchmarks"],
    package_dir={"": "src", "xferbench.suite.benchmarks": "benchmarks"},
    cmdclass={"build_py": BuildPy, "sdist": Sdist},
)
