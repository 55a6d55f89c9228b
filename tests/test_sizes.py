"""Every function of the package is short enough to read at once and takes few enough values to
call without looking each one up: at most MAX_FUNCTION_LINES lines (from its ``def`` to its
last line, docstring included) and MAX_PARAMETERS parameters (``self`` and ``cls`` not
counted; ``*args`` and ``**kwargs`` count one each). Beside ``test_layers.py``, which holds
the files to 400 lines.

``test_a_planted_problem_is_found`` shows that the check can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_layers import SRC, modules

MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 8

#: Functions allowed over the limits for now, each with what mends it. Empty it as they are
#: mended: ``test_the_allowlist_names_only_functions_still_over`` fails on an entry that no
#: longer needs to be here.
ALLOWED: set[str] = set()


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> int:
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if in_class and names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def functions(src: Path) -> list[tuple[str, int, int, int]]:
    """(qualified name, line, lines, parameters) of every function and method under ``src``."""
    out = []

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                out.append((name, child.lineno, lines, _parameters(child, in_class)))
                visit(child, name, False)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}", True)
            else:
                visit(child, prefix, in_class)

    for module, path in modules(src).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        visit(tree, f"xferbench.{module}".rstrip("."), False)
    return out


def size_problems(src: Path, allowed: set[str] = frozenset()) -> list[str]:
    problems = []
    for name, line, lines, params in functions(src):
        if name in allowed:
            continue
        if lines > MAX_FUNCTION_LINES:
            problems.append(f"{name} (line {line}) has {lines} lines (over "
                            f"{MAX_FUNCTION_LINES}): split it into steps that each say one thing")
        if params > MAX_PARAMETERS:
            problems.append(f"{name} (line {line}) takes {params} parameters (over "
                            f"{MAX_PARAMETERS}): pass a record that groups them")
    return problems


def test_no_function_is_over_the_limits():
    assert size_problems(SRC, ALLOWED) == []


def test_the_allowlist_names_only_functions_still_over():
    over = {p.split(" ")[0] for p in size_problems(SRC)}
    assert ALLOWED - over == set(), "mended: remove these from ALLOWED"


def test_a_planted_problem_is_found(tmp_path):
    pkg = tmp_path / "xferbench"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (pkg / "__init__.py").write_text("")
    (pkg / "long.py").write_text(
        f"def fits():\n{body}"  # exactly MAX_FUNCTION_LINES lines
        f"def too_long():\n{body}    return x0\n"
        "class Many:\n"
        "    def method(self, a, b, c, d, e, f, g, h):\n        pass\n"  # self is not counted
        "    def too_many(self, a, b, c, d, e, f, g, *args, **kwargs):\n"
        "        def inner(a, b, c, d, e, f, g, h, i):\n            pass\n")
    assert size_problems(pkg) == [
        f"xferbench.long.too_long (line {MAX_FUNCTION_LINES + 1}) has {MAX_FUNCTION_LINES + 1} "
        f"lines (over {MAX_FUNCTION_LINES}): split it into steps that each say one thing",
        f"xferbench.long.Many.too_many (line {2 * MAX_FUNCTION_LINES + 5}) takes 9 parameters "
        f"(over {MAX_PARAMETERS}): pass a record that groups them",
        f"xferbench.long.Many.too_many.inner (line {2 * MAX_FUNCTION_LINES + 6}) takes 9 "
        f"parameters (over {MAX_PARAMETERS}): pass a record that groups them",
    ]
    assert size_problems(pkg, {"xferbench.long.too_long"})[0].startswith(
        "xferbench.long.Many.too_many ")
