"""One file's source to its findings: parse, skip a file none of the rules can match (it holds
no move, no device, no pinning), run the analyser, apply ``# noqa`` and the chosen codes."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from .analyzer import Analyzer
from .project import Project
from .proof import Proof
from .rules import CODES, Finding
from .state import OPTIMISER

#: A file without any of these cannot hold a finding of any rule: every rule needs a move
#: (.to/.cuda/.cpu), a device, non_blocking or pin_memory.
TRIGGERS = (b".to(", b".cuda(", b".cpu(", b"device=", b"device =", b"non_blocking",
            b"pin_memory", b".xpu(", b".mps(")
SPACED = re.compile(rb"\.\s*(?:to|cuda|cpu|xpu|mps)\s+\(|\.\s+(?:to|cuda|cpu|xpu|mps)\s*\(")


#: ... nor can a file without them, unless it runs a backward where something says a device
#: is in use though the moves live in another module (accelerate's prepare, LAVIS's
#: prepare_sample under torch.cuda.amp.autocast).
ELSEWHERE = (b"torch.cuda", b"accelerator", b"autocast", b"GradScaler")
#: ... or, linted with the rest of its project, one that steps an optimiser.
OPTIMISES = re.compile(OPTIMISER.pattern.encode())


def may_match(raw: bytes, project: bool = False) -> bool:
    """Whether any rule could find something in a file of these bytes (``project``: one of
    several linted together, whose helpers may move what it trains)."""
    return any(t in raw for t in TRIGGERS) or SPACED.search(raw) is not None or (
        b"backward" in raw and (project and OPTIMISES.search(raw) is not None or any(
            t in raw for t in ELSEWHERE)))
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
                  re.IGNORECASE)
#: Deeply nested generated code (long chains of +) needs more than Python's default depth.
RECURSION_LIMIT = 20000


@dataclass
class FileResult:
    """What linting one file gave: its findings, or the one sentence why it was not read."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    problem: str | None = None  # not read (a syntax error, binary, not UTF-8...)
    warnings: list[str] = field(default_factory=list)  # read, with a remark (a noqa code)
    lines: int = 0
    digest: str = ""  # SHA-256 of the bytes linted: --fix lints again only what changed


def noqa_lines(text: str, path: str, result: FileResult) -> dict[int, frozenset[str] | None]:
    """line -> the codes its ``# noqa: ...`` silences (None: a bare ``# noqa``, all)."""
    out: dict[int, frozenset[str] | None] = {}
    if "noqa" not in text and "NOQA" not in text:
        return out
    for i, line in enumerate(text.splitlines(), 1):
        if "#" not in line:
            continue
        m = NOQA.search(line)
        if m is None:
            continue
        if not m.group("codes"):
            out[i] = None
            continue
        codes = frozenset(c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c)
        for code in sorted(codes):
            if code.startswith("XB") and code not in CODES:
                result.warnings.append(
                    f"{path}:{i}: `# noqa: {code}` names no xferbench rule (the rules are "
                    f"{CODES[0]} to {CODES[-1]}): it silences nothing")
        out[i] = codes
    return out


def lint_text(text: str, path: str, codes: frozenset[str] = frozenset(CODES),
              raw: bytes | None = None, intended: tuple[str, ...] = (),
              editable: bool = True, project: Project | None = None) -> FileResult:
    """Lint one file's text; ``raw`` (its bytes), when given, lets a file that cannot match
    any rule skip the analysis after it parsed; ``intended``: the functions (names or
    ``Class.method``, fnmatch patterns) whose host reads are meant (no XB101 in them);
    ``editable``: False where --fix cannot write the file (a notebook's cells); ``project``:
    the files linted with it, whose helpers its calls may run."""
    result = FileResult(path, lines=text.count("\n") + (not text.endswith("\n") and bool(text)))
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno or 0}:{(exc.offset or 1) - 1}"
        result.problem = f"{where}: cannot parse: {exc.msg} (not linted)"
        return result
    except (ValueError, MemoryError) as exc:  # a NUL byte, or too big
        result.problem = f"{path}: cannot parse: {exc or type(exc).__name__} (not linted)"
        return result
    except RecursionError:  # Python's own parser gives up on deeply nested expressions
        result.problem = (f"{path}: cannot parse: nested too deeply for Python's parser "
                          "(RecursionError) (not linted)")
        return result
    if not may_match(raw if raw is not None else text.encode("utf-8", "replace"),
                     project is not None):
        noqa_lines(text, path, result)
        return result
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        raws = Analyzer(intended, text, project, path).run(tree)
    except RecursionError:
        result.problem = f"{path}: nested too deeply to analyse (not linted)"
        return result
    except Exception as exc:  # noqa: BLE001 - one file's bug must not end the run
        result.problem = (f"{path}: xferbench lint failed on this file ({type(exc).__name__}: "
                          f"{exc}); not linted - please report it")
        return result
    silenced = noqa_lines(text, path, result)
    lines = None if text.isascii() else text.splitlines()
    seen = set()
    proof = Proofs(tree, editable)
    for line, col, code, message, severity, fix in sorted(raws, key=lambda r: r[:3]):
        if code not in codes or (line, col, code) in seen:
            continue
        seen.add((line, col, code))
        quiet = silenced.get(line, frozenset())
        if quiet is None or code in quiet:
            continue
        col = characters(lines, line, col)
        fix, message = proof.settle(fix, message)
        region = None
        if fix is not None and hasattr(fix, "span"):
            first, start, last, end = fix.span
            region = (first, characters(lines, first, start), last, characters(lines, last, end))
        result.findings.append(Finding(path, line, col, code, message, severity,
                                       None if fix is None else str(fix), region))
    return result


def characters(lines: list[str] | None, line: int, col: int) -> int:
    """ast's byte column on ``line`` as a column in characters (``lines``: None if ASCII)."""
    if lines is not None and 0 < line <= len(lines):
        return len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", "ignore"))
    return col


class Proofs:
    """Offers a finding's rewrite only where ``proof`` proves what it relies on; the
    message says the rewrite, or why none is offered."""

    def __init__(self, tree: ast.Module, editable: bool = True) -> None:
        self.tree, self.editable = tree, editable
        self.proof: Proof | None = None  # built at the first rewrite: most files have none

    def settle(self, fix: Any, message: str) -> tuple[Any, str]:
        if fix is None:
            return None, message
        if self.proof is None:
            self.proof = Proof(self.tree)
        try:
            reason = self.proof.why_not(getattr(fix, "needs", ()))
        except RecursionError:
            reason = "the expression is nested too deeply to prove what it is"
        if reason is not None:
            return None, f"{message} (no --fix: {reason})"
        if not self.editable:
            return fix, f"{message} (--fix leaves notebooks as they are: write `{fix}`)"
        return fix, f"{message} (--fix: `{fix}`)"
