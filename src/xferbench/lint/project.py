"""The modules linted together: which module each file is, what a call in one names in
another (a function imported, a method of a base class, a method by its name), and what such a
helper does when it runs: the host reads of device values in it and in what it calls, and
whether it runs a whole training step. A helper's module is analysed on demand, once per set
of parameters handed device values, and remembered for the run."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from .analyzer import ModulePass, analyse
from .modules import Callee, Read, absolute, imports_of, module_name, trivial
from .state import OPTIMISER

#: Helpers followed through helpers at most this deep (a logger's method calling its writer's).
DEPTH = 3
#: Parsed files kept at once.
TREES = 256
#: A method looked up by its name alone is followed where so many classes define it at most.
NAMED = 16
#: Methods never looked up by name alone: those of Python's containers and strings, and the
#: names libraries give their own (an optimiser's step, a module's forward, a logger's info).
_GENERIC = frozenset(dir(dict) + dir(list) + dir(set) + dir(str) + dir(object)) | {
    "step", "zero_grad", "forward", "backward", "to", "cuda", "cpu", "item", "train", "eval",
    "parameters", "state_dict", "load_state_dict", "log", "info", "debug", "warning", "error",
    "write", "flush", "close", "add_scalar", "add_scalars", "run", "fit", "predict", "call",
    "apply", "save", "load", "reset", "numpy", "detach", "float", "half", "mean", "sum"}
#: A test module: its mocks define methods whose bodies say nothing of the real ones.
_TEST = re.compile(r"(?:^|/)(?:tests?|testing)/|(?:^|/)test_[^/]*\.py$|_tests?\.py$|conftest\.py$")
_METHOD_DEF = re.compile(rb"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)


@dataclass
class Project:
    """The Python files linted together, named as modules (``pkg.sub.mod`` inside a package,
    the file's stem beside scripts), and what their functions do, learnt on demand.

    Args:
        root: the folder messages name files from.
        files: module name -> the files that are it (two script folders may each have one).
    """

    root: str
    files: dict[str, list[str]]
    names: dict[str, str] = field(default_factory=dict)  # path -> module name
    intended: tuple[str, ...] = ()  # functions whose host reads are meant (the config's)
    trees: dict[str, tuple[str, ast.Module] | None] = field(default_factory=dict, repr=False)
    passes: dict[tuple[str, tuple[tuple[str, frozenset[object]], ...]], ModulePass | None] = \
        field(default_factory=dict, repr=False)
    methods: dict[str, list[str]] | None = field(default=None, repr=False)
    helped: dict[tuple[str, str, frozenset[object]], tuple[Read, ...]] = field(
        default_factory=dict, repr=False)

    @classmethod
    def of(cls, paths: list[str], intended: tuple[str, ...] = ()) -> Project | None:
        """The project of ``paths`` (two files or more), else None: a file alone is linted
        alone."""
        paths = [os.path.abspath(p) for p in paths if p.endswith(".py")]
        if len(paths) < 2:
            return None
        files: dict[str, list[str]] = {}
        names, tops = {}, []
        for path in paths:
            name = module_name(path)
            files.setdefault(name, []).append(path)
            names[path] = name
            tops.append(os.path.dirname(path) if path.endswith("__init__.py") else path)
            for _ in name.split("."):  # the folder that holds the top package (or script)
                tops[-1] = os.path.dirname(tops[-1])
        return cls(os.path.commonpath(tops), files, names, intended)

    def __reduce__(self) -> tuple[type[Project], tuple[object, ...]]:
        """What a worker process is sent: the files and their names, no analysis."""
        return (Project, (self.root, self.files, self.names, self.intended))

    # -- files and names -------------------------------------------------------------------------

    def module_of(self, path: str) -> str | None:
        return self.names.get(os.path.abspath(path))

    def shown(self, path: str) -> str:
        """``path`` as a message names it: from the project's folder."""
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def tree(self, path: str) -> tuple[str, ast.Module] | None:
        """The text and tree of ``path`` (None: it cannot be read or parsed); the last
        ``TREES`` read are kept."""
        if path not in self.trees:
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                self.keep(path, text, ast.parse(text, filename=path))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
                self.trees[path] = None
        return self.trees[path]

    def keep(self, path: str, text: str, tree: ast.Module) -> None:
        """Remember ``path``'s text and tree (the file being linted: its classes' bases are
        looked up in it)."""
        if len(self.trees) >= TREES:
            self.trees.pop(next(iter(self.trees)))
        self.trees[path] = (text, tree)

    def module_file(self, name: str, near: str) -> str | None:
        """The file of module ``name``: the one beside ``near`` where two are."""
        found = self.files.get(name, [])
        if len(found) == 1:
            return found[0]
        here = os.path.dirname(os.path.abspath(near))
        beside = [p for p in found if os.path.dirname(p) == here]
        return beside[0] if len(beside) == 1 else None

    # -- what a call names -----------------------------------------------------------------------

    def function(self, qual: str, near: str, hops: int = 0) -> Callee | None:
        """The module-level function ``pkg.mod.fn`` names, following a package's re-export
        (``from .impl import fn`` in its ``__init__``) twice at most."""
        module, _, name = qual.rpartition(".")
        path = self.module_file(module, near) if module else None
        found = self.tree(path) if path else None
        if path is None or found is None:
            return None
        for node in found[1].body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return Callee(path, name, name)
            if isinstance(node, ast.ImportFrom) and hops < 2 and any(
                    (a.asname or a.name) == name for a in node.names):
                source = next(a.name for a in node.names if (a.asname or a.name) == name)
                base = absolute(module, path, node)
                return self.function(f"{base}.{source}", path, hops + 1) if base else None
        return None

    def inherited(self, path: str, cls: str, name: str) -> Callee | None:
        """Method ``name`` of class ``cls`` of ``path``'s module, from its bases in the
        project (``cls`` itself does not define it)."""
        seen: set[tuple[str, str]] = set()
        todo = [base for base in self.bases(path, cls)]
        while todo:
            where, klass = todo.pop(0)
            if (where, klass) in seen:
                continue
            seen.add((where, klass))
            node = self.class_def(where, klass)
            if node is None:
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
                   for n in node.body):
                return Callee(where, name, f"{klass}.{name}")
            todo += self.bases(where, klass)
        return None

    def class_def(self, path: str, cls: str) -> ast.ClassDef | None:
        found = self.tree(path)
        return next((n for n in found[1].body if isinstance(n, ast.ClassDef) and n.name == cls),
                    None) if found else None

    def bases(self, path: str, cls: str) -> list[tuple[str, str]]:
        """The bases of class ``cls`` of ``path`` found in the project: (file, class)."""
        node = self.class_def(path, cls)
        found = self.tree(path)
        if node is None or found is None:
            return []
        module = self.names.get(path, "")
        imported = imports_of(found[1], module, path)
        out = []
        for base in node.bases:
            dotted_name = ast.unparse(base)
            head, _, rest = dotted_name.partition(".")
            if not rest and self.class_def(path, head) is not None:
                out.append((path, head))
                continue
            full = imported.get(head)
            qual = f"{full}.{rest}" if full and rest else full
            if qual:
                where = self.module_file(qual.rpartition(".")[0], path)
                if where is not None:
                    out.append((where, qual.rpartition(".")[2]))
        return out

    def named(self, name: str) -> list[Callee] | None:
        """Every method of the project called ``name`` that does something (not ``pass``, a
        docstring or ``raise NotImplementedError``), outside tests; None where the name is
        too common to look up by itself."""
        if name in _GENERIC or name.startswith("__"):
            return None
        if self.methods is None:
            self.methods = self.method_index()
        out = []
        for path in self.methods.get(name, []):
            found = self.tree(path)
            for node in found[1].body if found else []:
                if isinstance(node, ast.ClassDef):
                    out += [Callee(path, name, f"{node.name}.{name}") for n in node.body
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and n.name == name and not trivial(n)]
        return out if len(out) <= NAMED else None

    def method_index(self) -> dict[str, list[str]]:
        """Method name -> the files that define one (a scan of their bytes, tests left out)."""
        index: dict[str, list[str]] = {}
        for paths in self.files.values():
            for path in paths:
                if _TEST.search(self.shown(path)):
                    continue
                try:
                    with open(path, "rb") as fh:
                        raw = fh.read()
                except OSError:
                    continue
                for found in {m.group(1).decode() for m in _METHOD_DEF.finditer(raw)}:
                    index.setdefault(found, []).append(path)
        return index

    # -- what a call does ------------------------------------------------------------------------

    def reads(self, target: Callee, hints: frozenset[object], depth: int) -> tuple[Read, ...]:
        """The host reads of device values a call of ``target`` makes, its parameters
        ``hints`` on the device, followed ``depth`` helpers deep (a helper that calls itself
        back says nothing of itself)."""
        key = (target.path, target.key, hints)
        if key in self.helped or depth >= DEPTH:
            return self.helped.get(key, ())
        self.helped[key] = ()  # while it is worked out
        done = self.analysed(target.path, {target.key: hints})
        if done is not None:
            self.helped[key] = tuple(done.helpers.reads_of(target.key, depth + 1))
        return self.helped[key]

    def trains(self, target: Callee, hints: frozenset[object]) -> bool:
        """Whether a call of ``target`` runs a whole training step (a backward and an
        optimiser step); a module that never says backward, or never names an optimiser, is
        not analysed for it."""
        found = self.tree(target.path)
        if found is None or "backward" not in found[0] or not OPTIMISER.search(found[0]):
            return False
        done = self.analysed(target.path, {target.key: hints})
        return done is not None and target.key in done.steps.training()[1]

    def analysed(self, path: str, hints: dict[str, frozenset[object]]) -> ModulePass | None:
        """The last pass of ``path``'s analysis with ``hints`` (None: it does not parse)."""
        key = (path, tuple(sorted(hints.items(), key=lambda kv: kv[0])))
        if key in self.passes:
            return self.passes[key]
        self.passes[key] = None
        found = self.tree(path)
        if found is not None:
            text, tree = found
            self.passes[key] = analyse(tree, text, self.intended, self, path,
                                       {k: set(v) for k, v in hints.items()}, helper=True)
        return self.passes[key]


