"""Jupyter notebooks for lint: the code cells as one module, in order (IPython's magics,
shell escapes and help lines made ``pass``, each cell's lines kept where they are, a cell that
does not parse left out with one sentence), and each line of that module back as (cell, line)
for the report. Cells count from 1, markdown cells included, as a notebook shows them top to
bottom."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field, replace

from ..results.filesystem import NotReadable, read_regular
from .engine import FileResult, lint_text

#: Cell magics whose body is Python (``%%time`` over a training loop); any other cell magic
#: (``%%bash``, ``%%writefile``) makes its cell something else.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})
#: A line IPython reads, not Python: a magic (``%pip``), a shell escape (``!nvidia-smi``), a
#: capture (``files = !ls``), help (``torch.zeros?``).
IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|[\w.]+\?{1,2}\s*$|[\w.,\s\[\]]+=\s*[%!])")
FUTURE = re.compile(r"^\s*from\s+__future__\s+import\b")


class NotANotebook(Exception):
    """One sentence: why a .ipynb file's cells could not be read."""


@dataclass
class Cells:
    """The code cells of one notebook as one module."""

    text: str = ""
    where: list[tuple[int, int]] = field(default_factory=list)  # module line - 1 -> (cell, line)
    skipped: list[str] = field(default_factory=list)  # one sentence per cell left out


def read_cells(raw: bytes, path: str) -> Cells:
    """The notebook ``raw`` (nbformat 4) as ``Cells``; raises NotANotebook."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotANotebook(f"{path}: not a Jupyter notebook (not valid JSON: {exc}); "
                           "skipped") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        old = isinstance(data, dict) and "worksheets" in data
        raise NotANotebook(f"{path}: " + ("an nbformat 3 notebook, which lint does not read "
                                          "(open and save it in Jupyter for nbformat 4)"
                                          if old else "not a Jupyter notebook (no cells)")
                           + "; skipped")
    language = _language(data)
    if language not in ("", "python"):
        raise NotANotebook(f"{path}: a notebook in {language}, not Python; skipped")
    out = Cells()
    lines: list[str] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        body, why = _python_of(text.splitlines())
        if why is not None:
            out.skipped.append(f"{path}:cell {number}:{why} (cell not linted)")
            body = [""] * len(body)
        lines += body
        out.where += [(number, i) for i in range(1, len(body) + 1)]
    out.text = "\n".join(lines) + "\n" if lines else ""
    return out


def _language(data: dict) -> str:
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        return ""
    for key, name in (("kernelspec", "language"), ("language_info", "name")):
        info = meta.get(key)
        if isinstance(info, dict) and isinstance(info.get(name), str):
            return info[name].lower()
    return ""


def _python_of(lines: list[str]) -> tuple[list[str], str | None]:
    """A cell's lines as Python (IPython's own lines made ``pass`` at their indentation),
    and why the cell is not Python where it is not ("1:0: cannot parse: ...")."""
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split(maxsplit=1)[0] if lines[0][2:].strip() else ""
        if magic not in PYTHON_CELL_MAGICS:
            return [""] * len(lines), None  # %%bash and the like: not Python, nothing to say
        lines = ["", *lines[1:]]
    out = [line[:len(line) - len(line.lstrip())] + "pass"
           if IPYTHON_LINE.match(line) or FUTURE.match(line) else line for line in lines]
    try:
        ast.parse("\n".join(out))
    except SyntaxError as exc:
        return out, f"{exc.lineno or 0}:{(exc.offset or 1) - 1}: cannot parse: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return out, f"1:0: cannot parse: {type(exc).__name__}"
    return out, None


def lint_notebook(path: str, codes: frozenset[str], intended: tuple[str, ...]) -> FileResult:
    """The findings of a notebook's code cells, each at its cell and line (a rewrite is named,
    never made: ``--fix`` leaves notebooks as they are)."""
    try:
        cells = read_cells(read_regular(path, "notebook"), path)
    except (NotReadable, NotANotebook) as exc:
        return FileResult(path, problem=str(exc))
    result = lint_text(cells.text, path, codes, None, intended, editable=False)
    result.warnings[:0] = cells.skipped
    result.findings = [replace(f, cell=cells.where[f.line - 1][0],
                               line=cells.where[f.line - 1][1], fix_region=None)
                       for f in result.findings]
    if result.problem is not None:
        result.problem = re.sub(rf"^{re.escape(path)}:(\d+):", lambda m: "{}:cell {}:{}:".format(
            path, *cells.where[int(m.group(1)) - 1]) if 0 < int(m.group(1)) <= len(
            cells.where) else m.group(0), result.problem)
    return result
