"""The statements: one pass over a module that keeps, per function, what each name holds
(``Val``), the loops it is in, the step guards (``if step % N == 0``) and the sequential state
of the read-before-sync and timing rules. Whether a loop is a batch loop (it runs a forward, a
backward or an optimiser step, itself or through a function of the module it calls) is known
only at the end of the module, so the rules that need it leave candidates, resolved then."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from .members import DEVICE_DICT
from .operands import CONTAINER
from .part import Part
from .records import DictOf, FnOf
from .scopes import Frame, Loop
from .steps import data_like, lossy_names

if TYPE_CHECKING:
    from .analyzer import ModulePass


class Walker(Part):
    """Statement handlers; the expression side is ``exprs.Exprs`` and ``calls.Calls``."""

    def __init__(self, an: ModulePass) -> None:
        super().__init__(an)  # after the parts its handlers name (branches, names)
        self.handlers: dict[type, Callable[[Any], None]] = {
            ast.FunctionDef: self.s_def, ast.AsyncFunctionDef: self.s_def,
            ast.ClassDef: self.s_class, ast.For: self.s_for, ast.AsyncFor: self.s_for,
            ast.While: self.s_while, ast.If: self.an.branches.s_if, ast.With: self.s_with,
            ast.AsyncWith: self.s_with, ast.Try: self.s_try, ast.Assign: self.s_assign,
            ast.AugAssign: self.s_augassign, ast.AnnAssign: self.s_annassign,
            ast.Expr: self.s_expr, ast.Return: self.s_return,
            ast.Import: self.an.names.s_import, ast.ImportFrom: self.an.names.s_import,
            ast.Assert: self.s_assert, ast.Raise: self.s_raise,
        }
        try_star = getattr(ast, "TryStar", None)  # Python 3.11+
        if try_star is not None:
            self.handlers[try_star] = self.s_try
        if hasattr(ast, "Match"):
            self.handlers[ast.Match] = self.s_match

    # -- the module ------------------------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> None:
        handlers = self.handlers
        guards = self.st.frame.guards
        depth = len(guards)  # `if not should_log: return` guards the rest of this block
        for stmt in body:
            self.st.line = stmt.lineno
            handler = handlers.get(type(stmt))
            if handler is not None:
                handler(stmt)
            elif not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue, ast.Global,
                                       ast.Nonlocal)):
                for child in ast.iter_child_nodes(stmt):
                    if isinstance(child, ast.expr):
                        self.an.exprs.ev(child)
        del guards[depth:]

    # -- scopes ----------------------------------------------------------------------------------

    def push(self, kind: str, name: str | None = None) -> Frame:
        parent: Frame | None = self.st.frame
        while parent is not None and parent.kind == "class":  # a class body's names are
            parent = parent.parent  # not a method's
        self.st.frame = Frame(kind, parent, name)
        return self.st.frame

    def enter_loop(self, comprehension: bool = False) -> Loop:
        loop = Loop(comprehension)
        self.st.frame.loops.append(loop)
        return loop

    def leave_loop(self, loop: Loop) -> None:
        frame = self.st.frame
        loops = frame.loops
        if loops and loops[-1] is loop:
            loops.pop()
        if loop.comprehension:
            return
        for name, record in loop.carried:  # `f"{loss}"` before `loss = step(...)` binds it
            v = frame.env.get(name)
            if v is not None and v.tensorish and name in loop.assigned:
                self.st.candidates.append(record)
        if loop.train or loop.inner_train:
            for outer in loops:
                outer.inner_train = True
        if loop.data and (loop.optimise or loop.calls):  # an epoch, if it steps the optimiser
            known = frame.epoch_calls
            frame.epoch_calls = set() if loop.optimise or known == set() else (
                (known or set()) | loop.calls)
        for node, start in loop.clocks:  # intervals begun before the loop, ended inside it
            if start in loop.assigned or not loop.synced:
                self.an.syncs.report_clock(node)
        if loop.synced:  # a read every step: what is left queued is one step's work
            frame.work = False
            for outer in loops:
                outer.synced = True

    def current_loop(self) -> Loop | None:
        loops = self.st.frame.loops
        return loops[-1] if loops else None

    def bind_key(self, key: str, v: Val) -> None:
        frame = self.st.frame
        for name, kind in ((key, TENSOR), (key + CONTAINER, UNKNOWN)):
            if name in frame.lossy and v.where == NOWHERE and (v.kind in (UNKNOWN, TENSOR) or (
                    kind == UNKNOWN and isinstance(v.tag, DictOf))) and \
                    any(lo <= self.st.line <= hi for lo, hi in frame.lossy[name]):
                # backward() is called on it (or on what it makes, or on one of its values)
                v = DEVICE_DICT if isinstance(v.tag, DictOf) else Val(kind, ON_DEVICE)
        for journal in frame.journals:
            if key not in journal:
                journal[key] = frame.env.get(key)
        frame.env[key] = v
        if key.startswith("self."):
            self.an.members.member_bound(key, v)
        head = key.split(".", 1)[0]
        if head != key:
            frame.attrs.setdefault(head, set()).add(key)
        elif key in frame.attrs:  # a new object: its attributes are not the old one's
            for old in frame.attrs.pop(key):
                for journal in frame.journals:
                    journal.setdefault(old, frame.env.get(old))
                frame.env.pop(old, None)
        if key != self.st.moved_back:
            for loop in frame.loops:
                loop.assigned.add(key)

        frame.d2h.pop(key, None)
        self.an.bound(key, v)
        if v is not NONE and (frame.parent is None or key.startswith("self.")):
            line = v.tag if v.kind == LOADER and v.pin == PAGEABLE and isinstance(
                v.tag, int) else None
            self.st.loaders.setdefault(self.loader_key(key), []).append(line)

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
            self.an.exprs.ev(target.value)
            key = dotted(target)
            if key is not None:
                self.bind_key(key, v)
        elif isinstance(target, ast.Subscript):
            held = self.an.exprs.ev(target.value)
            self.an.exprs.ev(target.slice)
            key = dotted(target.value)
            if key is not None and key.startswith("self.") and v.tensorish and not (
                    held.tensorish or held.where == ON_HOST):
                # self.losses["total"] = loss: the class keeps device values there for its
                # other methods (a local dict is left alone: what it is handed to may read it)
                self.bind_key(key, DEVICE_DICT)
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
            self.an.exprs.ev(d)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]],
                            args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
        made = {arg: self.an.exprs.ev(default) for arg, default in defaults.items()}
        outer = self.st.frame
        self_val = Val(MODULE) if outer.module_class else NOTHING
        param_vals = {a.arg: self.an.names.parameter(a, defaults.get(a.arg))
                      for a in [*positional, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        # output_transform=lambda x, y, pred, loss: loss.item(): what the function runs unless
        # its caller hands another
        param_vals.update({a: v for a, v in made.items() if isinstance(v.tag, FnOf)})
        method = bool(positional) and positional[0].arg in ("self", "cls") and \
            outer.kind == "class"
        key = node.name
        if outer.kind == "function" and outer.name:  # two functions' `closure`s are two
            outer.nested.add(node.name)
            key = f"{outer.name}.{node.name}"
            self.st.functions_seen.add(key)  # the module's own: its returns, hints, syncs
        handed = self.an.names.hinted(key, positional[1:] if method else positional, param_vals)
        frame = self.push("function", key)
        frame.env.update(param_vals)
        frame.node = node
        if self.inp.scan_backward and self.an.names.mentions_backward(node):
            lossy = getattr(node, "xb_lossy", None)  # the same tree is walked again: once
            if lossy is None:
                lossy = lossy_names(node.body)
                setattr(node, "xb_lossy", lossy)  # noqa: B010 - an attribute of our own
            span = self.st.class_spans[-1] if self.st.class_spans else (
                node.lineno, node.end_lineno or node.lineno)
            # a caller that hands it device values or models is evidence: the caller moved them
            frame.lossy = lossy if lossy and (handed or self.an.names.device_evidence(
                *span, named=True)) else {}
        if method and positional[0].arg == "self":
            frame.env["self"] = self_val
        self.block(node.body)
        self.finish_frame(frame, key, outer)

    def finish_frame(self, frame: Frame, name: str | None, outer: Frame) -> None:
        self.an.finish_defs(frame)
        if name is not None:
            self.an.steps.record_function(frame, name)
            self.st.walked.add(name)
            self.an.returns.record_returns(frame.returns, name)
        self.st.frame = outer

    def s_class(self, node: ast.ClassDef) -> None:
        for e in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.an.exprs.ev(e)
        outer = self.st.frame
        frame = Frame("class", outer)
        frame.module_class = node.name in self.st.module_classes
        self.st.frame = frame
        self.st.classes.append(node.name)
        self.st.class_spans.append((node.lineno, node.end_lineno or node.lineno))
        self.block(node.body)
        self.st.classes.pop()
        self.st.class_spans.pop()
        self.an.finish_defs(frame)
        self.st.frame = outer

    def s_for(self, node: ast.For | ast.AsyncFor) -> None:
        it = self.an.exprs.ev(node.iter)
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
        self.an.exprs.test(node.test)
        self.block(node.body)
        self.leave_loop(loop)
        self.block(node.orelse)

    def s_with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.an.exprs.ev(item.context_expr)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, NOTHING)
        timed = self.an.syncs.timing_scope(node.items)  # with timeit("train"): a measurement
        self.block(node.body)
        self.st.timing_scopes -= timed

    def s_try(self, node: ast.Try) -> None:
        self.block(node.body)
        for h in node.handlers:
            if h.type is not None:
                self.an.exprs.ev(h.type)
            if h.name:
                self.bind_key(h.name, Val(OTHER))
            self.block(h.body)
        self.block(node.orelse)
        self.block(node.finalbody)

    def s_match(self, node: Any) -> None:
        self.an.exprs.ev(node.subject)
        for case in node.cases:
            if case.guard is not None:
                self.an.exprs.ev(case.guard)
            self.block(case.body)

    def s_assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        self.st.target = target.id if isinstance(target, ast.Name) else None
        value = node.value
        if self.st.target and isinstance(value, ast.Call) and \
                self.an.names.qualname(value.func) in CLOCKS:
            self.st.clock_target = self.st.target  # t1 = time.time(): an end or a start
        v = self.an.exprs.ev(node.value)
        self.st.target = self.st.clock_target = None
        if self.st.frame.loops and isinstance(target, ast.Name) and isinstance(
                value, (ast.Compare, ast.BoolOp, ast.UnaryOp)) and \
                self.an.branches.step_guard(value):
            v = Val(OTHER, ON_HOST, tag=GUARD_TAG)  # should_log = step % every == 0
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in ("to", "cuda") and len(node.targets) == 1:
            self.st.moved_back = dotted(value.func.value)  # x = x.to(dev): still the same x
        for target in node.targets:
            self.bind(target, v)
        self.st.moved_back = None

    def s_annassign(self, node: ast.AnnAssign) -> None:
        v = self.an.exprs.ev(node.value) if node.value is not None else \
            self.an.names.annotation(node.annotation)
        if node.value is not None or isinstance(node.target, ast.Name):
            self.bind(node.target, v)

    def s_augassign(self, node: ast.AugAssign) -> None:
        old = NOTHING if isinstance(node.target, ast.Subscript) else \
            self.an.exprs.ev(node.target)
        v = self.an.exprs.ev(node.value)
        if isinstance(node.target, ast.Subscript):
            self.an.exprs.ev(node.target)
            return
        if isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant) and \
                node.value.value == 1:
            v = COUNTER  # step += 1
        else:
            v = self.an.exprs.combine(old, v)
        self.bind(node.target, v)

    def s_expr(self, node: ast.Expr) -> None:
        self.st.statement_call = node.value
        self.an.exprs.ev(node.value)
        self.st.statement_call = None

    def s_return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.an.returns.returned(node.value, self.an.exprs.ev(node.value))

    def s_assert(self, node: ast.Assert) -> None:
        self.an.exprs.test(node.test)
        if node.msg is not None:
            self.st.once += 1  # the message is formatted only when the assertion fails
            self.an.exprs.ev(node.msg)
            self.st.once -= 1

    def s_raise(self, node: ast.Raise) -> None:
        for e in (node.exc, node.cause):
            if e is not None:
                self.an.exprs.ev(e)
