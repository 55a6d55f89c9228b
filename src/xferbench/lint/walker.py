"""The statements: one pass over a module that keeps, per function, what each name holds
(``Val``), the loops it is in, the step guards (``if step % N == 0``) and the sequential state
of the read-before-sync and timing rules. Whether a loop is a batch loop (it runs a forward, a
backward or an optimiser step, itself or through a function of the module it calls) is known
only at the end of the module, so the rules that need it leave candidates, resolved then."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .facts import (
    COUNTER,
    DEVICE_VAL,
    LOADER,
    MODULE,
    MODULE_BASES,
    NONE,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OTHER,
    PAGEABLE,
    PAGEABLE_IF,
    PIN_UNKNOWN,
    SEQ,
    TENSOR,
    UNKNOWN,
    Val,
    dotted,
)
from .scopes import Frame, Loop


class Walker:
    """Statement handlers; the expression side is ``exprs.Exprs`` and ``calls.Calls``."""

    def __init__(self) -> None:
        self.imports: dict[str, str] = {}
        self.frame = Frame("module", None)
        self.module_classes: set[str] = set()
        self.functions: dict[str, list] = {}  # name -> [runs a step, calls]
        self.candidates: list[tuple] = []  # (code, node, message, severity, loops, extra)
        self.out: list[tuple] = []  # (line, col, code, message, severity, fix)
        self.loaders: dict[str, list[bool | None]] = {}  # key -> pageable per assignment
        self.statement_call: ast.AST | None = None  # the call an Expr statement drops
        self.moved_back: str | None = None  # the name `x = x.to(dev)` binds again
        self.handlers: dict[type, Callable[[Any], None]] = {
            ast.FunctionDef: self.s_def, ast.AsyncFunctionDef: self.s_def,
            ast.ClassDef: self.s_class, ast.For: self.s_for, ast.AsyncFor: self.s_for,
            ast.While: self.s_while, ast.If: self.s_if, ast.With: self.s_with,
            ast.AsyncWith: self.s_with, ast.Try: self.s_try, ast.Assign: self.s_assign,
            ast.AugAssign: self.s_augassign, ast.AnnAssign: self.s_annassign,
            ast.Expr: self.s_expr, ast.Return: self.s_return, ast.Import: self.s_import,
            ast.ImportFrom: self.s_import, ast.Assert: self.s_assert, ast.Raise: self.s_raise,
        }
        if hasattr(ast, "TryStar"):
            self.handlers[ast.TryStar] = self.s_try  # type: ignore[attr-defined]
        if hasattr(ast, "Match"):
            self.handlers[ast.Match] = self.s_match

    # -- the module ------------------------------------------------------------------------------

    def prepare(self, tree: ast.Module) -> None:
        """What must be known before the pass: the module's nn.Module subclasses."""
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.s_import(node)
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        changed = True
        while changed:
            changed = False
            for c in classes:
                if c.name not in self.module_classes and any(
                        self.qualname(b) in MODULE_BASES or dotted(b) in self.module_classes
                        for b in c.bases):
                    self.module_classes.add(c.name)
                    changed = True

    def block(self, body: list[ast.stmt]) -> None:
        handlers = self.handlers
        for stmt in body:
            handler = handlers.get(type(stmt))
            if handler is not None:
                handler(stmt)
            elif not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue, ast.Global,
                                       ast.Nonlocal)):
                for child in ast.iter_child_nodes(stmt):
                    if isinstance(child, ast.expr):
                        self.ev(child)

    # -- scopes ----------------------------------------------------------------------------------

    def push(self, kind: str) -> Frame:
        parent = self.frame
        while parent.kind == "class":  # a class body's names are not a method's
            parent = parent.parent  # type: ignore[assignment]
        self.frame = Frame(kind, parent)
        return self.frame

    def enter_loop(self, comprehension: bool = False) -> Loop:
        loop = Loop(comprehension)
        self.frame.loops.append(loop)
        return loop

    def leave_loop(self, loop: Loop) -> None:
        loops = self.frame.loops
        if loops and loops[-1] is loop:
            loops.pop()

    def current_loop(self) -> Loop | None:
        loops = self.frame.loops
        return loops[-1] if loops else None

    def lookup(self, key: str) -> Val | None:
        frame: Frame | None = self.frame
        while frame is not None:
            v = frame.env.get(key)
            if v is not None:
                return v
            frame = frame.parent
        return None

    def bind_key(self, key: str, v: Val) -> None:
        frame = self.frame
        for journal in frame.journals:
            if key not in journal:
                journal[key] = frame.env.get(key)
        frame.env[key] = v
        head = key.split(".", 1)[0]
        if head != key:
            frame.attrs.setdefault(head, set()).add(key)
        elif key in frame.attrs:  # a new object: its attributes are not the old one's
            for old in frame.attrs.pop(key):
                for journal in frame.journals:
                    journal.setdefault(old, frame.env.get(old))
                frame.env.pop(old, None)
        if key != self.moved_back:
            for loop in frame.loops:
                loop.assigned.add(key)
        frame.d2h.pop(key, None)
        self.bound(key, v)
        if v is not NONE and (frame.parent is None or key.startswith("self.")):
            loader = None if v.kind != LOADER else v.pin == PAGEABLE
            self.loaders.setdefault(self.loader_key(key), []).append(loader)

    @staticmethod
    def loader_key(key: str) -> str:
        return "self." + key.rsplit(".", 1)[-1] if key.startswith("self.") else key

    def bind(self, target: ast.expr, v: Val) -> None:
        if isinstance(target, ast.Name):
            self.bind_key(target.id, v)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if v.items is not None and len(v.items) == len(elts) and not any(
                    isinstance(e, ast.Starred) for e in elts):
                for e, item in zip(elts, v.items):
                    self.bind(e, item)
            else:
                part = self.part(v)
                for e in elts:
                    self.bind(e.value if isinstance(e, ast.Starred) else e, part)
        elif isinstance(target, ast.Attribute):
            self.ev(target.value)
            key = dotted(target)
            if key is not None:
                self.bind_key(key, v)
        elif isinstance(target, ast.Subscript):
            self.ev(target.value)
            self.ev(target.slice)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, NOTHING)

    def element(self, v: Val) -> Val:
        """What iterating ``v`` gives."""
        if v.elem is not None:
            return v.elem
        if v.kind == LOADER or v.pin == PAGEABLE_IF:
            pin = {PAGEABLE: PAGEABLE, PAGEABLE_IF: PAGEABLE_IF}.get(v.pin, PIN_UNKNOWN)
            return Val(UNKNOWN, ON_HOST, pin, v.tag)
        if v.kind == UNKNOWN and v.where == ON_HOST and v.pin == PAGEABLE:
            return v  # a batch's parts come from the same loader
        if v.on_device and v.kind == TENSOR:
            return Val(TENSOR, ON_DEVICE)
        return NOTHING  # a mapping gives its keys

    def part(self, v: Val) -> Val:
        """What unpacking ``v`` (``a, b = v``) gives."""
        if v.on_device and v.kind == UNKNOWN and v.elem is None:
            return Val(UNKNOWN, ON_DEVICE)  # a model's outputs (logits, hidden)
        return self.element(v)

    # -- statements ------------------------------------------------------------------------------

    def s_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.ev(d)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]],
                            args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
        for default in defaults.values():
            self.ev(default)
        outer = self.frame
        self_val = Val(MODULE) if outer.module_class else NOTHING
        param_vals = {a.arg: self.parameter(a, defaults.get(a.arg))
                      for a in [*positional, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        frame = self.push("function")
        frame.env.update(param_vals)
        first = positional[0].arg if positional else None
        if first == "self" and outer.kind == "class":
            frame.env["self"] = self_val
        self.block(node.body)
        self.finish_frame(frame, node.name, outer)

    def parameter(self, arg: ast.arg, default: ast.expr | None) -> Val:
        """A parameter: its annotation's type, or a device default (a caller may pass
        another device: a CPU default says nothing certain)."""
        v = self.annotation(arg.annotation)
        if v is NOTHING and default is not None and (
                isinstance(default, ast.Constant) and isinstance(default.value, str)
                or isinstance(default, ast.Call) and self.qualname(default.func) == "torch.device"):
            kind = self.device_kind(default)
            if kind == "device":
                return Val(DEVICE_VAL, ON_DEVICE)
            if kind in ("host", "maybe"):
                return Val(DEVICE_VAL, NOWHERE)
        return v

    def finish_frame(self, frame: Frame, name: str | None, outer: Frame) -> None:
        self.finish_defs(frame)
        if name is not None:
            facts = self.functions.setdefault(name, [False, set()])
            facts[0] = facts[0] or frame.step
            facts[1] |= frame.calls
        self.frame = outer

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

    def s_class(self, node: ast.ClassDef) -> None:
        for e in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.ev(e)
        outer = self.frame
        frame = Frame("class", outer)
        frame.module_class = node.name in self.module_classes
        self.frame = frame
        self.block(node.body)
        self.finish_defs(frame)
        self.frame = outer

    def s_for(self, node: ast.For | ast.AsyncFor) -> None:
        it = self.ev(node.iter)
        loop = self.enter_loop()
        call = node.iter
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                call.func.id == "range" and isinstance(node.target, ast.Name):
            it = Val(SEQ, elem=COUNTER)
        self.bind(node.target, self.element(it))
        self.block(node.body)
        self.leave_loop(loop)
        self.block(node.orelse)

    def s_while(self, node: ast.While) -> None:
        loop = self.enter_loop()
        self.test(node.test)
        self.block(node.body)
        self.leave_loop(loop)
        self.block(node.orelse)

    def s_with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.ev(item.context_expr)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, NOTHING)
        self.block(node.body)

    def s_try(self, node: ast.Try) -> None:
        self.block(node.body)
        for h in node.handlers:
            if h.type is not None:
                self.ev(h.type)
            if h.name:
                self.bind_key(h.name, Val(OTHER))
            self.block(h.body)
        self.block(node.orelse)
        self.block(node.finalbody)

    def s_match(self, node: Any) -> None:
        self.ev(node.subject)
        for case in node.cases:
            if case.guard is not None:
                self.ev(case.guard)
            self.block(case.body)

    def s_assign(self, node: ast.Assign) -> None:
        v = self.ev(node.value)
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in ("to", "cuda") and len(node.targets) == 1:
            self.moved_back = dotted(value.func.value)  # x = x.to(dev): still the same x
        for target in node.targets:
            self.bind(target, v)
        self.moved_back = None

    def s_annassign(self, node: ast.AnnAssign) -> None:
        v = self.ev(node.value) if node.value is not None else self.annotation(node.annotation)
        if node.value is not None or isinstance(node.target, ast.Name):
            self.bind(node.target, v)

    def s_augassign(self, node: ast.AugAssign) -> None:
        old = self.ev(node.target) if not isinstance(node.target, ast.Subscript) else NOTHING
        v = self.ev(node.value)
        if isinstance(node.target, ast.Subscript):
            self.ev(node.target)
            return
        if isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant) and \
                node.value.value == 1:
            v = COUNTER  # step += 1
        else:
            v = self.combine(old, v)
        self.bind(node.target, v)

    def s_expr(self, node: ast.Expr) -> None:
        self.statement_call = node.value
        self.ev(node.value)
        self.statement_call = None

    def s_return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.returned(node.value, self.ev(node.value))

    def s_assert(self, node: ast.Assert) -> None:
        self.test(node.test)
        if node.msg is not None:
            self.ev(node.msg)

    def s_raise(self, node: ast.Raise) -> None:
        for e in (node.exc, node.cause):
            if e is not None:
                self.ev(e)

    def s_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.imports[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    self.imports[top] = top
        elif node.module and not node.level:
            for a in node.names:
                self.imports[a.asname or a.name] = f"{node.module}.{a.name}"

    def qualname(self, node: ast.expr) -> str | None:
        """``th.zeros`` -> "torch.zeros" through the imports; None for a local name."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.imports.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full
