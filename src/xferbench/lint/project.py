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
from .modules import Callee, Outline, Read, module_name, outline

#: Helpers followed through helpers at most this deep (a logger's method calling its writer's).
DEPTH = 3
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
    outlines: dict[str, Outline | None] = field(default_factory=dict, repr=False)
    passes: dict[tuple[str, tuple[tuple[str, frozenset[object]], ...]], ModulePass | None] = \
        field(default_factory=dict, repr=False)
    methods: dict[str, list[str]] | None = field(default=None, repr=False)
    near: dict[str, bool] = field(default_factory=dict, repr=False)  # path -> moves_near
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

    def outline(self, path: str) -> Outline | None:
        """What ``path`` defines and imports (None: it cannot be read or parsed)."""
        if path not in self.outlines:
            found = self.source(path)
            self.outlines[path] = None if found is None else outline(
                found[1], found[0], self.names.get(path, ""), path)
        return self.outlines[path]

    def remember(self, path: str, text: str, tree: ast.Module) -> None:
        """The outline of ``path``, being linted: its classes' bases are looked up in it."""
        if path not in self.outlines:
            self.outlines[path] = outline(tree, text, self.names.get(path, ""), path)

    @staticmethod
    def source(path: str) -> tuple[str, ast.Module] | None:
        """The text and tree of ``path`` (None: it cannot be read or parsed)."""
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            return text, ast.parse(text, filename=path)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            return None

    def module_file(self, name: str, near: str) -> str | None:
        """The file of module ``name``: the one beside ``near`` where two are."""
        found = self.files.get(name, [])
        if len(found) == 1:
            return found[0]
        here = os.path.dirname(os.path.abspath(near))
        beside = [p for p in found if os.path.dirname(p) == here]
        return beside[0] if len(beside) == 1 else None

    def moves_near(self, path: str) -> bool:
        """Whether ``path``'s module or a module of the project it imports puts anything on a
        device: a trainer whose model, batches or helpers move themselves elsewhere in the
        project trains on the device all the same."""
        if path not in self.near:
            found = self.outline(path)
            self.near[path] = found is not None and (found.moves or any(
                self.imported_moves(qual, path) for qual in set(found.imports.values())))
        return self.near[path]

    def imported_moves(self, qual: str, near: str) -> bool:
        """Whether the project's module ``qual`` (or the module of ``pkg.mod.name``) moves."""
        for module in (qual, qual.rpartition(".")[0]):
            where = self.module_file(module, near) if module else None
            found = self.outline(where) if where is not None else None
            if found is not None:
                return found.moves
        return False

    # -- what a call names -----------------------------------------------------------------------

    def function(self, qual: str, near: str, hops: int = 0) -> Callee | None:
        """The module-level function ``pkg.mod.fn`` names, following a package's re-export
        (``from .impl import fn`` in its ``__init__``) twice at most."""
        module, _, name = qual.rpartition(".")
        path = self.module_file(module, near) if module else None
        found = self.outline(path) if path else None
        if path is None or found is None:
            return None
        if name in found.functions:
            return Callee(path, name, name)
        if name in found.imports and hops < 2:
            return self.function(found.imports[name], path, hops + 1)
        return None

    def inherited(self, path: str, cls: str, name: str) -> Callee | None:
        """Method ``name`` of class ``cls`` of ``path``'s module, from its bases in the
        project (``cls`` itself does not define it)."""
        seen: set[tuple[str, str]] = set()
        todo = self.bases(path, cls)
        while todo:
            where, klass = todo.pop(0)
            found = self.outline(where)
            if (where, klass) in seen or found is None or klass not in found.classes:
                continue
            seen.add((where, klass))
            if name in found.classes[klass][1]:
                return Callee(where, name, f"{klass}.{name}")
            todo += self.bases(where, klass)
        return None

    def bases(self, path: str, cls: str) -> list[tuple[str, str]]:
        """The bases of class ``cls`` of ``path`` found in the project: (file, class)."""
        found = self.outline(path)
        if found is None or cls not in found.classes:
            return []
        out = []
        for base in found.classes[cls][0]:
            head, _, rest = base.split("[", 1)[0].partition(".")  # Base[T]: a generic's Base
            if not rest and head in found.classes:
                out.append((path, head))
                continue
            full = found.imports.get(head)
            qual = f"{full}.{rest}" if full and rest else full
            where = self.module_file(qual.rpartition(".")[0], path) if qual else None
            if qual and where is not None:
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
            found = self.outline(path)
            for klass, (_, methods) in found.classes.items() if found else ():
                if name in methods and not methods[name]:
                    out.append(Callee(path, name, f"{klass}.{name}"))
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

    def trains(self, target: Callee) -> bool:
        """Whether a call of ``target`` runs a whole training step (a backward and an
        optimiser step), as its module's own analysis says; a module that never says
        backward, or never names an optimiser, is not analysed for it."""
        found = self.outline(target.path)
        if found is None or not found.may_train:
            return False
        done = self.analysed(target.path, {})
        return done is not None and target.key in done.steps.training()[1]

    def analysed(self, path: str, hints: dict[str, frozenset[object]]) -> ModulePass | None:
        """The last pass of ``path``'s analysis with ``hints`` (None: it does not parse)."""
        key = (path, tuple(sorted(hints.items(), key=lambda kv: kv[0])))
        if key in self.passes:
            return self.passes[key]
        self.passes[key] = None
        found = self.source(path)
        if found is not None:
            text, tree = found
            self.passes[key] = analyse(tree, text, self.intended, self, path,
                                       {k: set(v) for k, v in hints.items()}, helper=True)
        return self.passes[key]


