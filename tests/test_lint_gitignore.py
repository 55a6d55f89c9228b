"""lint's gitignore matching (pathspec, as black uses) agrees with git's own ``git
check-ignore`` on tricky patterns: negation, anchoring, ``**``, directory-only patterns,
character classes, escapes, trailing spaces, patterns in a sub-folder's .gitignore."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from xferbench.lint.files import ignored, parse_patterns

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ROOT_IGNORE = "\n".join([
    "# a comment, then a blank line", "",
    "*.log", "!keep.log", "build/", "/anchored.py", "docs/**/*.md", "**/cache",
    "a?c.py", "[xy]z.py", "[!m]n.py", "\\#hash.py", "\\!bang.py", "space.py\\ ",
    "trail.py   ", "gen/*", "!gen/keep/", "**/deep/**", "*.py[co]", "/top/*/mid.py",
    "nested/**", "!nested/ok.py", "odd[.py",
]) + "\n"
SUB_IGNORE = "local.py\n/only_here.py\n!../keep_up.py\n*.tmp\n"
FILES = [
    "x.log", "keep.log", "sub/x.log", "build/a.py", "sub/build/b.py", "anchored.py",
    "sub/anchored.py", "docs/a.md", "docs/x/y/z.md", "docs/x/z.txt", "cache/c.py",
    "sub/cache/c.py", "abc.py", "ac.py", "xz.py", "mz.py", "nn.py", "mn.py", "#hash.py",
    "!bang.py", "space.py ", "space.py", "trail.py", "gen/g.py", "gen/keep/k.py",
    "a/deep/b/c.py", "deep.py", "m.pyc", "m.py", "top/a/mid.py", "top/a/b/mid.py",
    "nested/n.py", "nested/ok.py", "odd[.py", "sub/local.py", "sub/x/local.py",
    "sub/only_here.py", "sub/x/only_here.py", "keep_up.py", "sub/a.tmp", "a.tmp",
]


def git_ignored(repo: Path, paths: list[str]) -> set[str]:
    proc = subprocess.run(["git", "check-ignore", "--stdin"], cwd=repo, input="\n".join(paths),
                          capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return set(proc.stdout.splitlines())


def ours(repo: Path, path: str) -> bool:
    """As lint's walk decides: a path is ignored if it or a folder above it is, each by the
    .gitignore files from the repository down to its folder (the last match decides)."""
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        rel = "/".join(parts[:depth])
        patterns = parse_patterns(ROOT_IGNORE.splitlines(True), str(repo))
        if depth > 1 and parts[0] == "sub":
            patterns += parse_patterns(SUB_IGNORE.splitlines(True), str(repo / "sub"))
        if ignored(patterns, str(repo / rel), depth < len(parts)):
            return True
    return False


def test_ignored_paths_agree_with_git_check_ignore(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text(ROOT_IGNORE)
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitignore").write_text(SUB_IGNORE)
    for rel in FILES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x = 1\n")
    by_git = git_ignored(repo, FILES)
    mine = {p for p in FILES if ours(repo, p)}
    assert mine == by_git
    assert {"x.log", "build/a.py", "docs/x/y/z.md", "#hash.py", "space.py "} <= by_git
    assert not {"keep.log", "sub/anchored.py", "space.py", "mz.py"} & by_git
    assert os.listdir(repo / "sub")  # the tree is really there
