"""Which files to lint, and their text: folders walked for ``*.py`` (``.gitignore`` files and
gitignore-style ``--exclude`` patterns respected, matched by pathspec as git matches them;
tool folders such as ``.venv`` skipped),
symbolic links followed once (a loop is one sentence), and each file read as UTF-8 (or the
encoding its coding cookie declares); a FIFO, a socket or a device is never opened, and it,
a binary, UTF-16, undecodable or unreadable file is one sentence, never a traceback or a
wait."""

from __future__ import annotations

import codecs
import io
import os
import tokenize
from dataclasses import dataclass, field

from pathspec import GitIgnoreSpec

from ..results.filesystem import NotReadable, path_kind, read_regular, text_problem

#: What lint reads when named: Python source and Jupyter notebooks (a file without a suffix,
#: a script, is read as Python too); what a folder's walk picks up.
SOURCES = (".py", ".pyw", ".pyi", ".ipynb")
WALKED = (".py", ".ipynb")
#: What follows a path's kind in the sentence that skips it.
NOT_SOURCE = {"special": ", not Python source", "dangling link": "", "link loop": "",
              "unreachable": "", "missing": "", "through a file": "", "no working folder": ""}

#: Folders never walked into (they may still be named on the command line).
DEFAULT_EXCLUDES = (".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox",
                    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules",
                    ".eggs", "__pypackages__", "site-packages", ".direnv", ".ipynb_checkpoints",
                    "*.egg-info", "build", "dist")


class Pattern:
    """One gitignore-style pattern, relative to ``base``, matched as git matches it (by
    pathspec, the library black uses: globs, ``**``, character classes, escapes, anchoring
    by a slash, directory-only patterns); a ``!`` pattern takes a path back."""

    def __init__(self, text: str, base: str) -> None:
        self.base = base
        self.negate = text.startswith("!")
        text = text[1:] if self.negate else text
        self.dir_only = text.rstrip(" ").endswith("/") and not text.rstrip(" ").endswith("\\/")
        self.spec = GitIgnoreSpec.from_lines([text])

    def matches(self, rel: str, is_dir: bool) -> bool:
        # a folder is given with its slash only to a folder-only pattern ("build/"): pathspec
        # takes "nested/**" to match the folder "nested/" itself, which git does not
        return self.spec.match_file(rel + "/" if is_dir and self.dir_only else rel)


def parse_patterns(lines: list[str], base: str) -> list[Pattern]:
    """The patterns of a .gitignore's lines (blank lines and comments skipped; a trailing
    space is kept only where escaped, as git does)."""
    out = []
    for line in lines:
        line = line.rstrip("\r\n")
        if line.strip() and not line.startswith("#"):
            out.append(Pattern(line, base))
    return out


def ignored(patterns: list[Pattern], path: str, is_dir: bool) -> bool:
    """The last pattern that matches decides (a ``!`` pattern takes a path back)."""
    verdict = False
    rels: dict[str, str] = {}
    for p in patterns:
        rel = rels.get(p.base)
        if rel is None:
            rel = rels[p.base] = os.path.relpath(path, p.base).replace(os.sep, "/")
        if rel.startswith("..") or rel == ".":
            continue
        if p.matches(rel, is_dir):
            verdict = not p.negate
    return verdict


@dataclass
class Found:
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one sentence each: not linted
    missing: list[str] = field(default_factory=list)  # paths that do not exist (bad input)


def _gitignore(folder: str) -> list[Pattern]:
    path = os.path.join(folder, ".gitignore")
    if not os.path.lexists(path):
        return []
    try:  # a .gitignore that is a FIFO is never opened
        text = read_regular(path, ".gitignore").decode("utf-8", "replace")
    except NotReadable:
        return []
    return parse_patterns(text.splitlines(keepends=True), os.path.abspath(folder))


def _repo_gitignores(folder: str) -> list[Pattern]:
    """The .gitignore files of ``folder``'s parents up to its repository's root."""
    chain, here = [], os.path.abspath(folder)
    while True:
        parent = os.path.dirname(here)
        if os.path.exists(os.path.join(here, ".git")) or parent == here:
            break
        here = parent
        chain.append(here)
    if not os.path.exists(os.path.join(here, ".git")):
        return []
    return [p for d in reversed(chain) for p in _gitignore(d)]


def discover(paths: list[str], excludes: list[Pattern], gitignore: bool = True) -> Found:
    """The Python files and notebooks under ``paths`` in a stable order; paths named that
    are excluded are skipped, as are folders the walk finds excluded, git-ignored or tool
    folders. Anything that is not a file or a folder is one sentence, never opened."""
    found = Found()
    defaults = [Pattern(p + "/", "/") for p in DEFAULT_EXCLUDES]
    for path in paths:
        kind = path_kind(path)
        if kind.kind in ("missing", "through a file", "no working folder"):
            found.missing.append(f"{path}: {kind.noun}")
        elif kind.kind not in ("file", "folder"):
            found.problems.append(f"{path}: {kind.noun}{NOT_SOURCE[kind.kind]}; skipped")
        elif ignored(excludes, os.path.abspath(path), kind.is_folder):
            continue
        elif kind.is_folder:
            inherited = _repo_gitignores(path) if gitignore else []
            before = len(found.files)
            _walk(path, excludes, defaults, inherited, gitignore, found, set())
            if len(found.files) == before:
                found.problems.append(f"{path}: a folder with no Python files to lint")
        elif not path.endswith(SOURCES) and os.path.splitext(path)[1]:
            found.problems.append(f"{path}: a {os.path.splitext(path)[1]} file, not Python "
                                  "source or a notebook (lint reads .py files, notebooks and "
                                  "scripts without a suffix); skipped")
        else:
            found.files.append(path)
    return found


def _walk(folder: str, excludes: list[Pattern], defaults: list[Pattern],
          inherited: list[Pattern], gitignore: bool, found: Found, seen: set) -> None:
    try:
        st = os.stat(folder)
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        found.problems.append(f"{folder}: cannot be read ({exc.strerror or exc}); skipped")
        return
    if (st.st_dev, st.st_ino) in seen:
        found.problems.append(f"{folder}: a symbolic link loop back to a folder already "
                              "linted (skipped)")
        return
    seen = seen | {(st.st_dev, st.st_ino)}
    rules = inherited + (_gitignore(folder) if gitignore else [])
    for entry in entries:
        path = os.path.join(folder, entry.name)
        full = os.path.abspath(path)
        try:
            is_dir = entry.is_dir()
            is_file = entry.is_file()
        except OSError:
            is_dir = is_file = False
        if not (is_dir or is_file):  # a link to nothing, a FIFO, a socket: never opened
            kind = path_kind(path)
            if entry.name.endswith(SOURCES):
                found.problems.append(f"{path}: {kind.noun}{NOT_SOURCE[kind.kind]}; skipped")
            continue
        if ignored(excludes, full, is_dir) or (is_dir and ignored(defaults, "/" + entry.name,
                                                                    True)):
            continue
        if ignored(rules, full, is_dir):
            continue
        if is_dir:
            _walk(path, excludes, defaults, rules, gitignore, found, seen)
        elif is_file and entry.name.endswith(WALKED):
            found.files.append(path)


class Unreadable(Exception):
    """One sentence: why a file's text could not be read."""


def read_source(path: str) -> tuple[str, bytes]:
    """(text, bytes) of a Python file; raises Unreadable with the sentence."""
    try:
        raw = read_regular(path, "file")
    except NotReadable as exc:
        raise Unreadable(f"{path}: {str(exc).removeprefix(f'file {path} ')}; skipped") from None
    return decode_source(raw, path), raw


def decode_source(raw: bytes, path: str) -> str:
    """The text of Python source ``raw``, as Python decodes it (UTF-8, or the encoding its
    coding cookie names); raises Unreadable naming what it is instead."""
    if raw.startswith(codecs.BOM_UTF8) or b"coding" in raw[:400]:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:  # an unknown encoding, or a cookie beside a UTF-8 BOM
            raise Unreadable(f"{path}: its coding cookie cannot be used ({exc}); "
                             "skipped") from None
        try:
            return raw.decode(encoding).removeprefix("\ufeff")
        except (UnicodeDecodeError, LookupError) as exc:
            where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
            raise Unreadable(f"{path}: not {encoding} text{where}, the encoding its coding "
                             "cookie names; skipped") from None
    problem = text_problem(raw)
    if problem is not None and problem.startswith("a binary"):
        raise Unreadable(f"{path}: {problem}, not Python source; skipped")
    if problem is not None:
        raise Unreadable(f"{path}: {problem}, which Python cannot read as source (it reads "
                         "UTF-8 unless a coding cookie names another encoding); skipped")
    return raw.decode("utf-8")
