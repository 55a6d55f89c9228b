"""Names of the module: its imports (``th.zeros`` is torch.zeros), its classes that are
modules (an nn.Module subclass, or a class of its own with a ``forward``, whatever its base),
and what a parameter's annotation or default says it holds."""

from __future__ import annotations

import ast
import re

from .facts import (
    DEVICE_VAL,
    LOADER,
    MODULE,
    MODULE_BASES,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    TENSOR,
    UNKNOWN,
    Val,
    dotted,
)
from .part import Part
from .state import DEVICE_TOKENS, TRAINS
from .steps import local_names

#: A device a function is handed: its own lines may then name it only.
DEVICE_WORD = re.compile(r"\b(?:device|cuda|gpu)\b")
COMMENT = re.compile(r"#[^\n]*")
#: Methods that make a class of the module a model whatever its base class.
MODEL_METHODS = frozenset({"forward", "training_step", "compute_loss"})


class Names(Part):
    """Imports, module classes and parameters."""

    def prepare(self, tree: ast.Module) -> None:
        """What must be known before the pass: the module's nn.Module subclasses, and its
        classes with a forward (a model, whatever base it was imported from)."""
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.s_import(node)
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        for c in classes:
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name in MODEL_METHODS for n in c.body):
                self.st.module_classes.add(c.name)
        changed = True
        while changed:
            changed = False
            for c in classes:
                if c.name not in self.st.module_classes and any(
                        self.qualname(b) in MODULE_BASES or dotted(b) in self.st.module_classes
                        for b in c.bases):
                    self.st.module_classes.add(c.name)
                    changed = True

    def s_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.st.imports[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    self.st.imports[top] = top
        elif node.module and not node.level:
            for a in node.names:
                self.st.imports[a.asname or a.name] = f"{node.module}.{a.name}"
        elif self.inp.project is not None:
            self.an.helpers.imported(node)

    def qualname(self, node: ast.expr) -> str | None:
        """``th.zeros`` -> "torch.zeros" through the imports; None for a local name."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.st.imports.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full

    def parameter(self, arg: ast.arg, default: ast.expr | None) -> Val:
        """A parameter: its annotation's type, or a device default (a caller may pass
        another device: a CPU default says nothing certain)."""
        v = self.annotation(arg.annotation)
        if v is NOTHING and default is not None and (
                isinstance(default, ast.Constant) and isinstance(default.value, str)
                or isinstance(default, ast.Call) and self.qualname(default.func) == "torch.device"):
            kind = self.an.moves.device_kind(default)
            if kind == "device":
                return Val(DEVICE_VAL, ON_DEVICE)
            if kind in ("host", "maybe"):
                return Val(DEVICE_VAL, NOWHERE)
        return v

    def hinted(self, name: str, positional: list[ast.arg], vals: dict[str, Val]) -> bool:
        """A previous pass saw ``name`` called with device values (or models on the device)
        for these parameters: they hold them now; whether any did."""
        hints = self.inp.hints.get(name)
        if not hints:
            return False
        for i, a in enumerate(positional):
            if vals[a.arg].where != NOWHERE:
                continue
            if ("module", i) in hints or ("module", a.arg) in hints:
                vals[a.arg] = Val(MODULE, ON_DEVICE)  # train_step(G, D, x): G moved there
            elif i in hints or a.arg in hints:
                vals[a.arg] = Val(vals[a.arg].kind if vals[a.arg].kind == TENSOR else UNKNOWN,
                                  ON_DEVICE)
        return True

    def annotation(self, node: ast.expr | None) -> Val:
        if node is None:
            return NOTHING
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.rsplit(".", 1)[-1]
        else:
            qual = self.qualname(node) or ""
            name = qual.rsplit(".", 1)[-1]
        if name == "Tensor":
            return Val(TENSOR)
        if name in ("Module", "LightningModule", "PreTrainedModel"):
            return Val(MODULE)
        if name == "DataLoader":
            return Val(LOADER)
        return NOTHING

    def device_evidence(self, first: int, last: int | None, named: bool = False) -> bool:
        """Whether lines ``first``..``last`` of the source move anything to a device (a
        loss backward() is called on is taken to be on the device only there: a script
        that trains on the CPU reads its loss for free), or, in a project, the module or one
        it imports from the project does; ``named``: a function's lines, where a ``device``
        it is handed counts too."""
        key = (first, last or first)
        if key not in self.st.evidence:
            lines = self.st.source_lines[first - 1:last] if self.st.source_lines else []
            text = "\n".join(lines)
            self.st.evidence[key] = self.inp.source is None or any(
                t in text for t in DEVICE_TOKENS) or named and DEVICE_WORD.search(
                COMMENT.sub("", text)) is not None or self.inp.project is not None and \
                self.inp.project.moves_near(self.inp.path)
        return self.st.evidence[key]

    def mentions_backward(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the function's lines hold the word (a backward needs it)."""
        lines = self.st.source_lines
        if not lines:
            return True
        first, last = node.lineno, node.end_lineno or node.lineno
        return any(TRAINS.search(line) for line in lines[first - 1:last])

    def rebinding_keeps_scope(self, name: str) -> bool:
        """Whether ``name = ...`` here binds the name this scope already reads as ``name``
        (a module's global, or a function's local): then ``t.to(d)`` -> ``t = t.to(d)``
        keeps every other use of ``t`` meaning what it meant. Inside a function whose ``t``
        is a global or a closure's variable, the assignment would make it a local (an
        UnboundLocalError above it), so --fix leaves it."""
        frame = self.st.frame
        if frame.kind == "module":
            return True
        if frame.kind != "function" or frame.node is None:
            return False
        return name in local_names(frame.node)

    def qualified_function(self) -> str | None:
        name = self.an.steps.function_name()
        return f"{self.st.classes[-1]}.{name}" if name and self.st.classes else name
