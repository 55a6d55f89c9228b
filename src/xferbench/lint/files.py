"""Which files to lint, and their text: folders walked for ``*.py`` (``.gitignore`` files and
gitignore-style ``--exclude`` patterns respected, matched by pathspec as git matches them;
tool folders such as ``.venv`` skipped),
symbolic links followed once (a loop is one sentence), and each file read as UTF-8 (or the
encoding its coding cookie declares); a binary, undecodable or unreadable file is one
sentence, never a traceback."""

from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass, field

from pathspec import GitIgnoreSpec

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
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            return parse_patterns(fh.readlines(), os.path.abspath(folder))
    except OSError:
        return []


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
    """The Python files under ``paths`` in a stable order; paths named that are excluded
    are skipped, as are folders the walk finds excluded, git-ignored or tool folders."""
    found = Found()
    defaults = [Pattern(p + "/", "/") for p in DEFAULT_EXCLUDES]
    for path in paths:
        if not os.path.lexists(path):
            found.missing.append(f"{path}: no such file or folder")
        elif os.path.islink(path) and not os.path.exists(path):
            found.problems.append(_broken_link(path))
        elif ignored(excludes, os.path.abspath(path), os.path.isdir(path)):
            continue
        elif os.path.isdir(path):
            inherited = _repo_gitignores(path) if gitignore else []
            before = len(found.files)
            _walk(path, excludes, defaults, inherited, gitignore, found, set())
            if len(found.files) == before:
                found.problems.append(f"{path}: a folder with no Python files to lint")
        elif not os.path.isfile(path):  # a pipe would block the read; a device never ends
            found.problems.append(f"{path}: {path_kind(path)}, not a file of Python source; "
                                  "skipped")
        else:
            found.files.append(path)
    return found


def path_kind(path: str) -> str:
    """What a path that is neither a file nor a folder is, in words."""
    mode = os.stat(path).st_mode
    for test, words in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return "not a regular file"


def _broken_link(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return f"{path}: a symbolic link loop (skipped)"
    return f"{path}: a symbolic link to nothing (skipped)"


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
        if entry.is_symlink() and not (is_dir or is_file):
            if entry.name.endswith(".py"):
                found.problems.append(_broken_link(path))
            continue
        if ignored(excludes, full, is_dir) or (is_dir and ignored(defaults, "/" + entry.name,
                                                                    True)):
            continue
        if ignored(rules, full, is_dir):
            continue
        if is_dir:
            _walk(path, excludes, defaults, rules, gitignore, found, seen)
        elif is_file and entry.name.endswith(".py"):
            found.files.append(path)


class Unreadable(Exception):
    """One sentence: why a file's text could not be read."""


def read_source(path: str) -> tuple[str, bytes]:
    """(text, bytes) of a Python file; raises Unreadable with the sentence."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise Unreadable(f"{path}: cannot be read ({exc.strerror or exc}); skipped") from None
    if b"\0" in raw:
        raise Unreadable(f"{path}: a binary file (it holds NUL bytes), not Python source; "
                         "skipped")
    try:
        if raw.startswith(b"\xef\xbb\xbf") or b"coding" in raw[:400]:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        else:
            encoding = "utf-8"
        return raw.decode(encoding).removeprefix("\ufeff"), raw
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        where = f" (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else ""
        raise Unreadable(f"{path}: not UTF-8 text{where} and no coding cookie that decodes "
                         "it; skipped") from None
