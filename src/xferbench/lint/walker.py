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
    CLOCKS,
    COUNTER,
    GUARD_TAG,
    LOADER,
    MODULE,
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
from .members import Members
from .names import Names
from .scopes import Frame, Loop
from .steps import data_like, lossy_names


class Walker(Names, Members):
    """Statement handlers; the expression side is ``exprs.Exprs`` and ``calls.Calls``."""

    def __init__(self) -> None:
        super().__init__()
        self.imports: dict[str, str] = {}
        self.frame = Frame("module", None)
        self.module_classes: set[str] = set()
        self.candidates: list[tuple] = []  # (code, node, message, severity, loops, extra)
        self.out: list[tuple] = []  # (line, col, code, message, severity, fix)
        self.loaders: dict[str, list[bool | None]] = {}  # key -> pageable per assignment
        self.statement_call: ast.AST | None = None  # the call an Expr statement drops
        self.moved_back: str | None = None  # the name `x = x.to(dev)` binds again
        self.target: str | None = None  # the name the statement being walked assigns
        self.acting = False  # walking the arguments of an environment's step()
        self.once = 0  # inside a branch that leaves (raise, return, break, exit)
        self.line = 0  # the line of the statement being walked
        self.not_tensor_names: list[str] = []  # under if isinstance(x, Graph): x
        self.interval_from: str | None = None  # the start of `clock() - start` being walked
        self.clock_target: str | None = None  # the name `name = clock()` binds
        self.classes: list[str] = []  # the class bodies open, outermost first
        self.class_spans: list[tuple[int, int]] = []  # their lines
        self.evidence: dict[tuple[int, int], bool] = {}
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

    def block(self, body: list[ast.stmt]) -> None:
        handlers = self.handlers
        guards = self.frame.guards
        depth = len(guards)  # `if not should_log: return` guards the rest of this block
        for stmt in body:
            self.line = stmt.lineno
            handler = handlers.get(type(stmt))
            if handler is not None:
                handler(stmt)
            elif not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue, ast.Global,
                                       ast.Nonlocal)):
                for child in ast.iter_child_nodes(stmt):
                    if isinstance(child, ast.expr):
                        self.ev(child)
        del guards[depth:]

    # -- scopes ----------------------------------------------------------------------------------

    def push(self, kind: str, name: str | None = None) -> Frame:
        parent = self.frame
        while parent.kind == "class":  # a class body's names are not a method's
            parent = parent.parent  # type: ignore[assignment]
        self.frame = Frame(kind, parent, name)
        return self.frame

    def enter_loop(self, comprehension: bool = False) -> Loop:
        loop = Loop(comprehension)
        self.frame.loops.append(loop)
        return loop

    def leave_loop(self, loop: Loop) -> None:
        frame = self.frame
        loops = frame.loops
        if loops and loops[-1] is loop:
            loops.pop()
        if loop.comprehension:
            return
        for name, record in loop.carried:  # `f"{loss}"` before `loss = step(...)` binds it
            v = frame.env.get(name)
            if v is not None and v.tensorish and name in loop.assigned:
                self.candidates.append(record)
        if loop.train or loop.inner_train:
            for outer in loops:
                outer.inner_train = True
        if loop.data and (loop.optimise or loop.calls):  # an epoch, if it steps the optimiser
            known = frame.epoch_calls
            frame.epoch_calls = set() if loop.optimise or known == set() else (
                (known or set()) | loop.calls)
        for node, start in loop.clocks:  # intervals begun before the loop, ended inside it
            if start in loop.assigned or not loop.synced:
                self.report_clock(node)
        if loop.synced:  # a read every step: what is left queued is one step's work
            frame.work = False
            for outer in loops:
                outer.synced = True

    def current_loop(self) -> Loop | None:
        loops = self.frame.loops
        return loops[-1] if loops else None

    def bind_key(self, key: str, v: Val) -> None:
        frame = self.frame
        if key in frame.lossy and v.where == NOWHERE and v.kind in (UNKNOWN, TENSOR) and any(
                lo <= self.line <= hi for lo, hi in frame.lossy[key]):
            v = Val(TENSOR, ON_DEVICE)  # backward() is called on it (or on what it makes)
        for journal in frame.journals:
            if key not in journal:
                journal[key] = frame.env.get(key)
        frame.env[key] = v
        if key.startswith("self."):
            self.member_bound(key, v)
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
        if v.kind == MODULE:
            return NOTHING
        if v.kind == LOADER or v.pin == PAGEABLE_IF:
            pin = {PAGEABLE: PAGEABLE, PAGEABLE_IF: PAGEABLE_IF}.get(v.pin, PIN_UNKNOWN)
            return Val(UNKNOWN, ON_HOST, pin, v.tag)
        if v.kind == UNKNOWN and v.where == ON_HOST and v.pin == PAGEABLE:
            return v  # a batch's parts come from the same loader
        if v.on_device and v.kind == TENSOR:
            return Val(TENSOR, ON_DEVICE)
        return NOTHING  # a mapping gives its keys

    def part(self, v: Val) -> Val:
        """What unpacking ``v`` (``a, b = v``) gives: a loader's batch unpacks into tensors."""
        if v.on_device and v.kind == UNKNOWN and v.elem is None:
            return Val(UNKNOWN, ON_DEVICE)  # a model's outputs (logits, hidden)
        part = self.element(v)
        if part.kind == UNKNOWN and part.where == ON_HOST and part.pin in (PAGEABLE,
                                                                            PAGEABLE_IF):
            return Val(TENSOR, ON_HOST, part.pin, part.tag)  # for x, y in loader
        return part

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
        method = bool(positional) and positional[0].arg in ("self", "cls") and \
            outer.kind == "class"
        key = node.name
        if outer.kind == "function" and outer.name:  # two functions' `closure`s are two
            outer.nested.add(node.name)
            key = f"{outer.name}.{node.name}"
            self.functions_seen.add(key)  # the module's own: its returns, hints, syncs
        handed = self.hinted(key, positional[1:] if method else positional, param_vals)
        frame = self.push("function", key)
        frame.env.update(param_vals)
        frame.node = node
        if self.scan_backward and self.mentions_backward(node):
            lossy = getattr(node, "xb_lossy", None)  # the same tree is walked again: once
            if lossy is None:
                lossy = lossy_names(node.body)
                node.xb_lossy = lossy  # type: ignore[union-attr]
            span = self.class_spans[-1] if self.class_spans else (node.lineno, node.end_lineno)
            # a caller that hands it device values or models is evidence: the caller moved them
            frame.lossy = lossy if lossy and (handed or self.device_evidence(
                *span, named=True)) else {}
        if method and positional[0].arg == "self":
            frame.env["self"] = self_val
        self.block(node.body)
        self.finish_frame(frame, key, outer)

    def finish_frame(self, frame: Frame, name: str | None, outer: Frame) -> None:
        self.finish_defs(frame)
        if name is not None:
            self.record_function(frame, name)
            self.walked.add(name)
            self.record_returns(frame.returns, name)
        self.frame = outer

    def s_class(self, node: ast.ClassDef) -> None:
        for e in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.ev(e)
        outer = self.frame
        frame = Frame("class", outer)
        frame.module_class = node.name in self.module_classes
        self.frame = frame
        self.classes.append(node.name)
        self.class_spans.append((node.lineno, node.end_lineno or node.lineno))
        self.block(node.body)
        self.classes.pop()
        self.class_spans.pop()
        self.finish_defs(frame)
        self.frame = outer

    def s_for(self, node: ast.For | ast.AsyncFor) -> None:
        it = self.ev(node.iter)
        loop = self.enter_loop()
        loop.data = it.kind == LOADER or data_like(node.iter) and it.elem is not COUNTER
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
        timed = self.timing_scope(node.items)  # with timeit("train"): a measurement
        self.block(node.body)
        self.timing_scopes -= timed

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
        target = node.targets[0] if len(node.targets) == 1 else None
        self.target = target.id if isinstance(target, ast.Name) else None
        value = node.value
        if self.target and isinstance(value, ast.Call) and self.qualname(value.func) in CLOCKS:
            self.clock_target = self.target  # t1 = time.time(): an end or a start
        v = self.ev(node.value)
        self.target = self.clock_target = None
        if self.frame.loops and isinstance(target, ast.Name) and isinstance(
                value, (ast.Compare, ast.BoolOp, ast.UnaryOp)) and self.step_guard(value):
            v = Val(OTHER, ON_HOST, tag=GUARD_TAG)  # should_log = step % every == 0
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
