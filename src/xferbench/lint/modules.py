"""What the files of a project are called as modules (``pkg.sub.mod``, or a script's stem),
what each defines and imports (``Outline``: enough to follow a call without keeping its tree),
and the records of a call into another module: the function it runs (``Callee``) and the host
reads in it (``Read``)."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from .state import DEVICE_TOKENS, OPTIMISER, TRAINS


@dataclass(frozen=True)
class Callee:
    """A function of the project a call runs: its module's file, its key in that module's
    analysis (``fn``, a method's bare name, ``outer.inner``), and how a message names it."""

    path: str
    key: str
    label: str  # "log_metrics", "Writer.add_info"


#: A host read of a device value in a helper: (its file, its line, what reads: "`.item()`").
Read = tuple[str, int, str]


def trivial(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that does nothing: ``pass``, ``...``, a docstring, ``raise
    NotImplementedError``, ``return`` or ``return None``."""
    for stmt in fn.body:
        if isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(
                stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Raise) and "NotImplemented" in ast.unparse(stmt):
            continue
        if isinstance(stmt, ast.Return) and (stmt.value is None or isinstance(
                stmt.value, ast.Constant) and stmt.value.value is None):
            continue
        return False
    return True


def module_name(path: str) -> str:
    """``pkg.sub.mod`` for a file inside packages (folders with ``__init__.py``), else the
    file's stem (a script beside others: ``import utils``)."""
    folder, file = os.path.split(path)
    parts = [] if file == "__init__.py" else [file[:-3]]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    return ".".join(parts) or file[:-3]


def absolute(module: str, path: str, node: ast.ImportFrom) -> str | None:
    """The module ``from ..x import y`` in ``module`` (the file ``path``) imports from."""
    if not node.level:
        return node.module
    parts = module.split(".")
    if not path.endswith("__init__.py"):
        parts = parts[:-1]  # a module's package
    if node.level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base) or None


def imports_of(tree: ast.Module, module: str, path: str) -> dict[str, str]:
    """A module's top-level imports: local name -> what it names (``pkg.mod.Class``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = absolute(module, path, node)
            if base:
                out.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            out.update({a.asname or a.name.split(".")[0]: a.name if a.asname else
                        a.name.split(".")[0] for a in node.names})
    return out


@dataclass(frozen=True)
class Outline:
    """What a module defines and imports, for following a call into it.

    Args:
        functions: its module-level functions.
        imports: its top-level imports, local name -> what it names (``pkg.mod.fn``).
        classes: class -> (its bases as written, method -> whether its body does nothing).
        may_train: it calls backward and names an optimiser (a helper of it may run a step).
        moves: its code puts something on a device (``.to(``, ``device=``...).
    """

    functions: frozenset[str]
    imports: dict[str, str]
    classes: dict[str, tuple[tuple[str, ...], dict[str, bool]]]
    may_train: bool
    moves: bool = False


def outline(tree: ast.Module, text: str, module: str, path: str) -> Outline:
    """The outline of ``tree``, the module ``module`` in ``path``."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    classes = {
        node.name: (tuple(ast.unparse(b) for b in node.bases),
                    {n.name: trivial(n) for n in node.body if isinstance(n, defs)})
        for node in tree.body if isinstance(node, ast.ClassDef)}
    return Outline(frozenset(n.name for n in tree.body if isinstance(n, defs)),
                   imports_of(tree, module, path), classes,
                   TRAINS.search(text) is not None and OPTIMISER.search(text) is not None,
                   any(t in text for t in DEVICE_TOKENS))
