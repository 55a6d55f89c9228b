"""Calls: torch's functions (factories, ops, ``torch.device``, synchronise), the builtins that
read a tensor (``float``, ``print``), clocks, a model's forward, and the methods of a value
(``.to``, ``.cuda``, ``.cpu``, ``.item``, ``.pin_memory``, ``.backward``, ``.step``)."""

from __future__ import annotations

import ast

from .facts import (
    CLOCKS,
    COUNTER,
    DEVICE_VAL,
    FACTORIES,
    FROM_DATA,
    HOST_OTHER,
    HOST_READS,
    INERT_BUILTINS,
    LOADER,
    META_METHODS,
    MODULE,
    MODULE_SELF,
    NOT_OPS,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OPTIM,
    OTHER,
    PAGEABLE,
    PAGEABLE_IF,
    PASS_ITER,
    PIN_UNKNOWN,
    PINNED,
    SEQ,
    TENSOR,
    TIME,
    UNKNOWN,
    VALUE_BUILTINS,
    VIEWS,
    Val,
    has_star_kwargs,
    is_true,
    kwarg,
    loss_name,
    model_name,
    mover_name,
    optim_name,
)
from .records import DictOf, Fac, Pinned

#: torch submodules whose functions are tensor ops.
OP_MODULES = ("nn.functional.", "linalg.", "fft.", "special.", "nn.init.")


class Calls:
    """Call handlers, mixed into the analyser."""

    def ev_call(self, node: ast.Call) -> Val:
        dropped = self.statement_call is node
        self.statement_call = None
        v = self.call(node, dropped)
        first = node.args[0] if node.args else None
        if dropped and isinstance(first, ast.Name) and mover_name(node.func):
            self.bind_key(first.id, Val(UNKNOWN, ON_DEVICE))  # batch_to_device(batch, dev)
        return v

    def call(self, node: ast.Call, dropped: bool) -> Val:
        func = node.func
        qual = self.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if isinstance(func, ast.Attribute) and qual is None:
            return self.method_call(node, func, dropped)
        fval = self.ev(func) if qual is None else NOTHING
        args = [self.ev(a) for a in node.args]
        kws = [self.ev(k.value) for k in node.keywords]
        if qual is not None:
            return self.library_call(node, qual, args, kws)
        if isinstance(func, ast.Name):
            found = self.builtin_call(node, func.id, args)
            if found is not None:
                return found
        return self.other_call(node, func, fval, args + kws)

    # -- functions -------------------------------------------------------------------------------

    def library_call(self, node: ast.Call, qual: str, args: list[Val], kws: list[Val]) -> Val:
        if qual in CLOCKS:
            self.clock_read(node)
            return Val(TIME, ON_HOST)
        if qual in PASS_ITER or qual.endswith(".tqdm"):
            return args[0] if args else NOTHING
        if not qual.startswith("torch."):
            if mover_name(node.func) and node.args:
                return Val(UNKNOWN, ON_DEVICE)  # accelerate's send_to_device(batch, device)
            if qual.rsplit(".", 1)[-1] in self.functions_seen:
                self.maybe_synced()
            return NOTHING
        short = qual[6:]
        if short in FACTORIES:
            return self.factory(node, short)
        if short in FROM_DATA:
            where = self.where_of(kwarg(node, "device"))
            if short in ("as_tensor", "asarray") and args and args[0].on_device:
                where = ON_DEVICE
            pin = PINNED if is_true(kwarg(node, "pin_memory")) else (
                PAGEABLE if where == ON_HOST else PIN_UNKNOWN)
            return Val(TENSOR, where, pin)
        return self.torch_call(node, short, args + kws)

    def torch_call(self, node: ast.Call, short: str, values: list[Val]) -> Val:
        last = short.rsplit(".", 1)[-1]
        if short == "device":
            return Val(DEVICE_VAL, self.where_of(node))
        if last == "synchronize":
            self.synced()
            return NOTHING
        if short.startswith("optim.") and last[:1].isupper():
            return Val(OPTIM)
        if last == "DataLoader" and short.startswith("utils.data"):
            return self.loader(node)
        if short in ("nn.Parameter", "nn.parameter.Parameter", "nn.Buffer"):
            return Val(TENSOR, values[0].where if values else NOWHERE)
        if short.startswith("nn.") and last[:1].isupper():
            return Val(MODULE)
        if short == "compile":
            return Val(MODULE) if values and values[0].kind == MODULE else NOTHING
        if short in NOT_OPS or ("." in short and not short.startswith(OP_MODULES)):
            return NOTHING
        if any(v.tensorish for v in values):
            self.device_work()
            return Val(TENSOR, ON_DEVICE)
        if any(v.kind == TENSOR and v.where == ON_HOST for v in values):
            return Val(TENSOR, ON_HOST, PAGEABLE)
        return Val(TENSOR)

    def factory(self, node: ast.Call, short: str) -> Val:
        where = self.where_of(kwarg(node, "device"))
        if where == ON_DEVICE:
            self.device_work()
            return Val(TENSOR, ON_DEVICE)
        pinned = is_true(kwarg(node, "pin_memory"))
        if where != ON_HOST:
            return Val(TENSOR, where, PINNED if pinned else PIN_UNKNOWN)
        if pinned:
            return Val(TENSOR, ON_HOST, PINNED, Pinned(self.current_loop()))
        # out= writes into a given tensor; generator= draws from a host generator on purpose
        deliberate = kwarg(node, "out") is not None or kwarg(node, "generator") is not None
        tag = None if deliberate else Fac(node, short, self.current_loop())
        return Val(TENSOR, ON_HOST, PAGEABLE, tag)

    def loader(self, node: ast.Call) -> Val:
        pin = kwarg(node, "pin_memory")
        if has_star_kwargs(node) or (pin is not None and not isinstance(pin, ast.Constant)):
            return Val(LOADER, ON_HOST, PIN_UNKNOWN)
        if pin is None or pin.value is False or pin.value is None:
            return Val(LOADER, ON_HOST, PAGEABLE, node.lineno)
        return Val(LOADER, ON_HOST, PINNED if pin.value else PAGEABLE, node.lineno)

    def builtin_call(self, node: ast.Call, name: str, args: list[Val]) -> Val | None:
        if self.lookup(name) is not None:
            return None  # a local name that shadows the builtin
        if name == "print":
            for sub, v in zip(node.args, args):
                self.host_read(sub, v, "`print()`")
            return NOTHING
        if name in VALUE_BUILTINS:
            if args:
                self.host_read(node.args[0], args[0], f"`{name}()`", at=node,
                               strong=name in ("float", "int", "bool", "complex"))
            return HOST_OTHER
        if name in INERT_BUILTINS:
            return HOST_OTHER
        if name in ("list", "tuple"):
            return self.sequence_of(args[0]) if args else Val(SEQ)
        if name == "enumerate":
            inner = self.element(args[0]) if args else NOTHING
            return Val(SEQ, elem=Val(SEQ, items=(COUNTER, inner)))
        if name == "zip":
            return Val(SEQ, elem=Val(SEQ, items=tuple(self.element(a) for a in args)))
        if name in PASS_ITER:
            return args[0] if args else NOTHING
        if name == "next":
            return self.element(args[0]) if args else NOTHING
        if name in self.module_classes:
            return Val(MODULE)
        return None

    def sequence_of(self, v: Val) -> Val:
        part = self.element(v)
        return Val(SEQ, ON_DEVICE if part.tensorish else NOWHERE, elem=part)

    def other_call(self, node: ast.Call, func: ast.expr, fval: Val, values: list[Val]) -> Val:
        """A call of a local name: a model's forward, a loss, a function of this module."""
        device = any(v.tensorish for v in values)
        if mover_name(func) and node.args:
            return Val(UNKNOWN, ON_DEVICE)  # batch_to_device(batch, device)
        if self.module_like(func, fval):
            self.step_op()
            if device:
                self.device_work()
                return Val(UNKNOWN, ON_DEVICE)
            return NOTHING
        if fval.kind in (UNKNOWN, OTHER) and loss_name(func):
            if device:
                self.device_work()
                return Val(TENSOR, ON_DEVICE)
            return NOTHING
        if isinstance(func, ast.Name):
            self.note_call(func.id)
            if func.id in self.functions_seen:
                self.maybe_synced()
        return NOTHING

    # -- methods ---------------------------------------------------------------------------------

    def method_call(self, node: ast.Call, func: ast.Attribute, dropped: bool) -> Val:
        recv = self.ev(func.value)
        args = [self.ev(a) for a in node.args]
        kws = [self.ev(k.value) for k in node.keywords]
        name = func.attr
        if name in ("to", "cuda", "xpu", "mps"):
            return self.move(node, func, recv, dropped)
        if name == "cpu":
            if dropped:
                self.discarded(node, func, recv)
            return self.to_host(node, func, recv, False)
        if self.module_like(func.value, recv):
            return self.module_method(name, args + kws)
        if name in HOST_READS or (name == "numpy" and is_true(kwarg(node, "force"))):
            self.host_read(node, recv, f"`.{name}()`", at=self.method_at(func), strong=True)
            return HOST_OTHER
        if name == "pin_memory":
            return Val(recv.kind if recv.kind in (TENSOR, SEQ) else UNKNOWN, ON_HOST, PINNED,
                       Pinned(self.current_loop()))
        if name.endswith("backward"):
            self.step_op()
            if recv.tensorish or any(a.tensorish for a in args):
                self.device_work()
            return NOTHING
        return self.other_method(node, func, recv, args)

    def other_method(self, node: ast.Call, func: ast.Attribute, recv: Val,
                     args: list[Val]) -> Val:
        name = func.attr
        if mover_name(func) and node.args and recv.kind != TENSOR:
            return Val(UNKNOWN, ON_DEVICE)  # utils.batch_to_device(batch, device)
        if name in ("step", "zero_grad") and (
                recv.kind == OPTIM or optim_name(func.value) or (
                    name == "step" and node.args and optim_name(node.args[0]))):
            self.step_op()
            if name == "step" and self.frame.devicey:
                self.device_work()
            return NOTHING
        if name == "synchronize":
            self.synced()
            return NOTHING
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            self.note_call(name)
            if name in self.functions_seen:
                self.maybe_synced()
        if name not in META_METHODS and name not in ("to", "pin_memory", "cuda"):
            self.d2h_read(node, recv, "read")
        return self.method_result(name, recv)

    def method_result(self, name: str, recv: Val) -> Val:
        if name in ("items", "values", "keys"):
            value = recv.tag.value if isinstance(recv.tag, DictOf) else (
                Val(UNKNOWN, ON_DEVICE) if recv.on_device else recv
                if recv.pin == PAGEABLE_IF else NOTHING)
            elem = {"keys": HOST_OTHER, "values": value}.get(name) or Val(
                SEQ, items=(HOST_OTHER, value))
            return Val(SEQ, NOWHERE, elem=elem)
        if name in ("get", "pop") and isinstance(recv.tag, DictOf):
            return recv.tag.value
        if recv.on_device:
            if name in META_METHODS:
                return HOST_OTHER
            self.device_work()
            return Val(TENSOR if recv.kind == TENSOR else UNKNOWN, ON_DEVICE)
        if recv.kind == TENSOR:
            if name in META_METHODS:
                return HOST_OTHER
            pin = recv.pin if name in VIEWS else (PAGEABLE if recv.where == ON_HOST else
                                                  PIN_UNKNOWN)
            # torch.ones(n, n).triu(1): still made on the host for the move that follows
            made = recv.tag if isinstance(recv.tag, Fac) and recv.where == ON_HOST else None
            return Val(TENSOR, recv.where, pin, made)
        if recv.where == ON_HOST and recv.pin in (PAGEABLE, PAGEABLE_IF) and recv.kind == UNKNOWN:
            if name in VIEWS:
                return recv
            return Val(UNKNOWN, ON_HOST, PAGEABLE if recv.pin == PAGEABLE else PIN_UNKNOWN)
        return NOTHING

    def module_method(self, name: str, values: list[Val]) -> Val:
        if name in ("forward", "generate"):
            self.step_op()
            if any(v.tensorish for v in values):
                self.device_work()
                return Val(UNKNOWN, ON_DEVICE)
            return NOTHING
        if name == "zero_grad":
            self.step_op()
        return Val(MODULE) if name in MODULE_SELF else NOTHING

    @staticmethod
    def method_at(func: ast.Attribute) -> ast.AST:
        """Where a finding about ``x.name(...)`` points: at ``name``."""
        at = ast.Name(id=func.attr)
        at.lineno, at.end_lineno = func.end_lineno, func.end_lineno  # type: ignore[assignment]
        at.col_offset = max(func.end_col_offset - len(func.attr), 0)  # type: ignore[operator]
        return at

    def module_like(self, node: ast.expr, v: Val) -> bool:
        if v.kind == MODULE:
            return True
        return v.kind == UNKNOWN and not v.on_device and v.where != ON_HOST and (
            model_name(node))
