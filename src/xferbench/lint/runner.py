"""Lint many files: found (``files.discover``), read, linted in worker processes when there
are many (one per core), priced, and with ``--fix`` rewritten and linted again."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from .engine import FileResult, lint_text
from .files import Pattern, Unreadable, discover, read_source
from .fix import Changed, fix_source, parses, stamp, write_fixed
from .notebooks import lint_notebook
from .project import Project
from .rules import CODES, Finding

#: Below this many files one process is faster than starting workers.
PARALLEL_FROM = 64


@dataclass
class LintRun:
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files not linted, one sentence each
    warnings: list[str] = field(default_factory=list)  # linted, with a remark
    missing: list[str] = field(default_factory=list)  # paths that do not exist
    files: int = 0  # files found
    read: int = 0  # files linted
    lines: int = 0
    fixed: dict[str, int] = field(default_factory=dict)  # path -> findings fixed


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while one file is parsed and analysed: an ast of a few
    megabytes is millions of objects, and each collection walks them all again (parsing a
    2 MB file took three times as long with it on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def lint_file(path: str, codes: frozenset[str] = frozenset(CODES),
              intended: tuple[str, ...] = (), project: Project | None = None) -> FileResult:
    with collector_paused():
        return _lint_file(path, codes, intended, project)


def _lint_file(path: str, codes: frozenset[str], intended: tuple[str, ...],
               project: Project | None = None) -> FileResult:
    if path.endswith(".ipynb"):
        return lint_notebook(path, codes, intended)
    try:
        text, raw = read_source(path)
    except Unreadable as exc:
        return FileResult(path, problem=str(exc))
    result = lint_text(text, path, codes, raw, intended, project=project)
    result.digest = hashlib.sha256(raw).hexdigest()
    return result


def _chunk(args: tuple[list[str], frozenset[str], tuple[str, ...], Project | None]
           ) -> list[FileResult]:
    paths, codes, intended, project = args
    return [lint_file(p, codes, intended, project) for p in paths]


def jobs_default() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lint_files(paths: list[str], codes: frozenset[str], jobs: int,
               intended: tuple[str, ...] = (), project: Project | None = None
               ) -> Iterable[FileResult]:
    """Each file's result, in the order of ``paths`` (``project``: the files linted together,
    whose helpers a call in one may run)."""
    if jobs <= 1 or len(paths) < PARALLEL_FROM:
        yield from (lint_file(p, codes, intended, project) for p in paths)
        return
    # many small chunks, dealt round-robin: big and small files spread over the workers
    count = jobs * 8
    chunks = [(paths[i::count], codes, intended, project) for i in range(count)]
    order = {p: i for i, p in enumerate(paths)}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = [r for part in pool.map(_chunk, chunks) for r in part]
    yield from sorted(results, key=lambda r: order[r.path])


def run(paths: list[str], codes: frozenset[str], excludes: list[Pattern], *, jobs: int = 0,
        fix: bool = False, gitignore: bool = True, intended: tuple[str, ...] = ()) -> LintRun:
    """Lint the Python files under ``paths`` and return what was found and read.

    Args:
        paths: files and folders to lint.
        codes: the rule codes to report (XB101...).
        excludes: patterns of paths to leave out.
        jobs: worker processes; 0 picks a default from the CPUs.
        fix: rewrite the files with each finding's fix applied.
        gitignore: leave out what the repository's .gitignore files ignore.
        intended: ``intended`` as ``lint_text`` takes it, for every file.
    """
    found = discover(paths, excludes, gitignore)
    out = LintRun(problems=list(found.problems), missing=list(found.missing),
                  files=len(found.files))
    project = Project.of(found.files, intended)
    for result in lint_files(found.files, codes, jobs or jobs_default(), intended, project):
        if fix and any(f.fix for f in result.findings):
            if result.path.endswith(".ipynb"):
                out.warnings.append(f"{result.path}: --fix leaves notebooks as they are (a "
                                    "cell's code is a string inside JSON); make the rewrites "
                                    "the findings name in the notebook")
            else:
                with collector_paused():
                    result = _fix(result, codes, out, intended, project)
        if result.problem is not None:
            out.problems.append(result.problem)
            continue
        out.read += 1
        out.lines += result.lines
        out.findings.extend(result.findings)
        out.warnings.extend(result.warnings)
    out.findings.sort(key=Finding.sort_key)
    return out


def _fix(result: FileResult, codes: frozenset[str], out: LintRun,
         intended: tuple[str, ...] = (), project: Project | None = None) -> FileResult:
    """Rewrite one file's fixable findings; what it returns is the file linted again. The
    findings fixed are those of the bytes read here (linted again where they changed since),
    and the file is written only if it still holds them just before (an edit saved
    meanwhile is never lost)."""
    path = result.path
    seen = stamp(path)
    text, raw = read_source(path)
    current = result if hashlib.sha256(raw).hexdigest() == result.digest else \
        lint_text(text, path, codes, raw, intended, project=project)
    try:
        new = fix_source(raw, current.findings)
    except (RecursionError, MemoryError) as exc:  # LibCST's parser on very deep nesting
        out.warnings.append(f"{path}: --fix cannot rewrite it ({type(exc).__name__} in LibCST's "
                            "parser); left as it was")
        return result
    if new == raw:
        return result
    if not parses(new):  # never write a file that does not parse
        out.warnings.append(f"{path}: --fix would not leave a file that parses; left as it was")
        return result
    try:
        write_fixed(path, raw, seen, new)
    except Changed as exc:
        out.warnings.append(str(exc))
        return result
    again = lint_file(path, codes, intended, project)
    before = sum(1 for f in result.findings if f.fix)
    after = sum(1 for f in again.findings if f.fix)
    out.fixed[path] = max(before - after, 0)
    return again
