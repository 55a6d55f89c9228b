"""Calls: torch's functions (factories, ops, ``torch.device``, synchronise), the builtins that
read a tensor (``float``, ``print``), clocks, a model's forward, and the methods of a value
(``.to``, ``.cuda``, ``.cpu``, ``.item``, ``.pin_memory``, ``.backward``, ``.step``)."""

from __future__ import annotations

import ast
import re

from .facts import (
    BOOL_TAG,
    CLOCKS,
    COUNTER,
    CUDA_CTOR,
    CURRENT_STREAM,
    DEVICE_VAL,
    FACTORIES,
    FROM_DATA,
    HOST_OTHER,
    INERT_BUILTINS,
    INSTANCE,
    LEGACY,
    LOADER,
    MODULE,
    NOT_OPS,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OPTIM,
    OTHER,
    PAGEABLE,
    PASS_ITER,
    PIN_UNKNOWN,
    PINNED,
    SEQ,
    SYNC_FN,
    TENSOR,
    TIME,
    UNKNOWN,
    VALUE_BUILTINS,
    Val,
    dotted,
    has_star_kwargs,
    host_result_name,
    is_true,
    kwarg,
    loss_name,
    model_name,
    mover_name,
    purpose,
    terminal,
    to_host_name,
)
from .implicit import BOOLEAN, SIZED
from .part import Part
from .records import Fac, FnOf, Pinned
from .steps import BACKWARD
from .syncs import sync_name

#: Packages whose functions return host values whatever they are given.
HOST_PACKAGES = frozenset({"numpy", "math", "logging", "os", "sys", "json", "time", "random",
                           "pickle", "wandb", "mlflow", "tensorboardX", "warnings", "copy",
                           "itertools", "functools", "collections", "re", "pandas", "sklearn",
                           "scipy", "tqdm", "shutil", "pathlib", "typing", "inspect", "io",
                           "datetime", "gc", "operator", "statistics", "matplotlib", "PIL"})
#: Helpers handed a device that build or set something up rather than move data there.
_NOT_MOVER = re.compile(r"init|build|create|make|model|load|setup|seed|set_|get_device|"
                        r"device$|env|optim|sched|train|fit|step|loss|run|main")
_DEVICE_WORDS = frozenset({"device", "dev", "gpu", "cuda_device", "target_device"})
#: torch submodules whose functions are tensor ops.
OP_MODULES = ("nn.functional.", "linalg.", "fft.", "special.", "nn.init.")


def sizes(node: ast.Call) -> bool:
    """Whether a legacy constructor's arguments are sizes, not data: two or more, a starred
    shape, an int, or a tensor's ``.size()`` (a single ``.shape`` may be a tuple: data)."""
    args = node.args
    if len(args) >= 2 or any(isinstance(a, ast.Starred) for a in args):
        return True
    if len(args) != 1:
        return False
    a = args[0]
    return isinstance(a, ast.Constant) and type(a.value) is int or isinstance(
        a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "size"


class Calls(Part):
    """Call handlers."""

    def ev_call(self, node: ast.Call) -> Val:
        dropped = self.st.statement_call is node
        self.st.statement_call = None
        v = self.call(node, dropped)
        first = node.args[0] if node.args else None
        if dropped and isinstance(first, ast.Name) and mover_name(node.func):
            # batch_to_device(batch, dev)
            self.an.walker.bind_key(first.id, Val(UNKNOWN, ON_DEVICE))
        return v

    def call(self, node: ast.Call, dropped: bool) -> Val:
        func = node.func
        qual = self.an.names.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if isinstance(func, ast.Attribute) and qual is None:
            v = self.an.methods.method_call(node, func, dropped)
            self.object_method(func)
            return v
        if isinstance(func, ast.Name) and qual is None:
            passed = self.st.passed.get((self.an.steps.function_name() or "", func.id))
            if passed is not None:  # step_fn(batch), handed step_fn=self.train_step
                return self.an.methods.method_call(*self_call(node, passed), dropped)
        fval = self.an.exprs.ev(func) if qual is None else NOTHING
        args = [self.an.exprs.ev(a) for a in node.args]
        kws = [self.an.exprs.ev(k.value) for k in node.keywords]
        self.an.steps.helped_step(node, [*args, *kws])
        if qual is not None:
            return self.library_call(node, qual, args, kws)
        if isinstance(func, ast.Name):
            found = self.builtin_call(node, func.id, args)
            if found is not None:
                return found
        return self.other_call(node, func, fval, args, kws)

    # -- functions -------------------------------------------------------------------------------

    def library_call(self, node: ast.Call, qual: str, args: list[Val], kws: list[Val]) -> Val:
        if qual in CLOCKS:
            self.an.syncs.clock_read(node)
            return Val(TIME, ON_HOST, tag=tuple(self.st.frame.loops))
        if qual in PASS_ITER or qual.endswith(".tqdm"):
            return args[0] if args else NOTHING
        if qual.endswith(".trange"):
            return Val(SEQ, elem=COUNTER)  # trange(epochs): counts, no data
        if not qual.startswith("torch."):
            return self.foreign_call(node, qual, [*args, *kws])
        short = qual[6:]
        if short in FACTORIES or short in LEGACY and sizes(node):
            return self.factory(node, short)
        if short in FROM_DATA:
            where = self.an.moves.where_of(kwarg(node, "device"))
            if short in ("as_tensor", "asarray") and args and args[0].on_device:
                where = ON_DEVICE
            pin = PINNED if is_true(kwarg(node, "pin_memory")) else (
                PAGEABLE if where == ON_HOST else PIN_UNKNOWN)
            # np.random noise
            made = self.an.implicit.noise_source(node) if where == ON_HOST else None
            return Val(TENSOR, where, pin, made)
        noise = self.an.implicit.noise_source(node) if short in LEGACY else None
        if noise is not None:  # torch.FloatTensor(np.random.normal(...)): host noise
            return Val(TENSOR, ON_HOST, PAGEABLE, noise)
        if short.startswith("cuda.") and short[5:] in LEGACY:
            # torch.cuda.FloatTensor(np.random.normal(...))
            return self.an.implicit.host_noise(node)
        return self.torch_call(node, short, args + kws)

    def foreign_call(self, node: ast.Call, qual: str, values: list[Val]) -> Val:
        """A function of another package: math's (a float conversion), a mover, this
        package's own (it may synchronise), a class (an instance), or a function handed
        device values (its result is taken to be on the device too)."""
        head, last = qual.split(".", 1)[0], qual.rsplit(".", 1)[-1]
        if head == "math":
            return self.an.reads.math_read(node, qual, values)
        if qual == "wandb.log" and node.args and isinstance(node.args[0], ast.Dict):
            self.an.exprs.host_read(node, values[0], "`wandb.log()`")  # each value read for the run
        if to_host_name(node.func) and node.args:
            return self.copied_to_host(node, values[0])  # mace's to_numpy(loss)
        if mover_name(node.func) and node.args or self.handed_device(node):
            return Val(UNKNOWN, ON_DEVICE)  # send_to_device(batch, device), to_torch(b, dev)
        if sync_name(last):
            self.an.syncs.synced(explicit=True)  # a helper of this package's that synchronises
            return NOTHING
        project = self.inp.project
        if project is not None and qual.rpartition(".")[0] in project.files and not \
                last[:1].isupper():
            self.an.helpers.function(node, qual, values)
        if last in self.st.functions_seen:
            self.an.syncs.maybe_synced(last)
        self.st.frame.fresh_sync = False
        if last[:1].isupper() and not last.isupper():
            return Val(UNKNOWN, tag=INSTANCE)  # Vgg16(): a model if it is moved to a device
        if host_result_name(node.func):
            return HOST_OTHER  # get_batch_size(batch), format_loss(loss): a number, a string
        if head not in HOST_PACKAGES and any(v.tensorish for v in values):
            self.an.syncs.device_work()
            return Val(UNKNOWN, ON_DEVICE)  # reduce_dict(loss_dict), training_losses(...)
        return NOTHING

    def torch_call(self, node: ast.Call, short: str, values: list[Val]) -> Val:
        last = short.rsplit(".", 1)[-1]
        if last in SIZED or last == "where" and len(node.args) == 1:
            self.an.implicit.sized(node, "nonzero" if last == "where" else last,
                       values[0] if values else NOTHING)
        if short == "device":
            return Val(DEVICE_VAL, self.an.moves.where_of(node))
        if last == "synchronize":
            self.an.syncs.drained(node)  # torch.cuda.synchronize(), torch.accelerator.synchronize()
            return NOTHING
        if last == "current_stream":
            return Val(OTHER, tag=CURRENT_STREAM)
        if last == "Variable":  # torch.autograd.Variable(t): t itself
            return values[0] if values else NOTHING
        if last in ("clip_grad_norm_", "clip_grad_norm", "get_total_norm"):
            return Val(TENSOR, ON_DEVICE)  # the norm lives where the parameters train
        if short.startswith("optim.") and last[:1].isupper():
            # a scheduler's step() is no training step
            return Val(OTHER) if "lr_scheduler" in short or "swa_utils" in short else Val(OPTIM)
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
            self.an.syncs.device_work()
            return Val(TENSOR, ON_DEVICE, tag=BOOL_TAG if last in BOOLEAN else None)
        if any(v.kind == TENSOR and v.where == ON_HOST for v in values):
            return Val(TENSOR, ON_HOST, PAGEABLE)
        return Val(TENSOR)

    def factory(self, node: ast.Call, short: str) -> Val:
        where = self.an.moves.where_of(kwarg(node, "device"))
        if where == ON_DEVICE:
            self.an.syncs.device_work(light=True)
            return Val(TENSOR, ON_DEVICE)
        pinned = is_true(kwarg(node, "pin_memory"))
        if where != ON_HOST:
            return Val(TENSOR, where, PINNED if pinned else PIN_UNKNOWN)
        if pinned:
            return Val(TENSOR, ON_HOST, PINNED, Pinned(self.an.walker.current_loop()))
        # out= writes into a given tensor; generator= draws from a host generator on purpose
        deliberate = kwarg(node, "out") is not None or kwarg(node, "generator") is not None
        tag = None if deliberate else Fac(node, short, self.an.walker.current_loop())
        return Val(TENSOR, ON_HOST, PAGEABLE, tag)

    def loader(self, node: ast.Call) -> Val:
        """A DataLoader: its batches pinned or pageable, as its ``pin_memory`` says (the
        eighth positional argument, or a keyword)."""
        pin = kwarg(node, "pin_memory")
        if has_star_kwargs(node) or len(node.args) > 7 or (
                pin is not None and not isinstance(pin, ast.Constant)):
            return Val(LOADER, ON_HOST, PIN_UNKNOWN)
        if pin is not None and pin.value:
            return Val(LOADER, ON_HOST, PINNED, node.lineno)
        self.st.loader_calls[node.lineno] = node
        return Val(LOADER, ON_HOST, PAGEABLE, node.lineno)

    def builtin_call(self, node: ast.Call, name: str, args: list[Val]) -> Val | None:
        if self.an.members.lookup(name) is not None:
            return None  # a local name that shadows the builtin
        if name == "print":
            for sub, v in zip(node.args, args):
                self.an.exprs.host_read(sub, v, "`print()`")
            return NOTHING
        if name in VALUE_BUILTINS:
            if args:
                self.an.exprs.host_read(node.args[0], args[0], f"`{name}()`", at=node,
                               strong=name in ("float", "int", "bool", "complex"))
            return HOST_OTHER
        if name in INERT_BUILTINS:
            return HOST_OTHER
        if name in ("sum", "max", "min"):
            parts = [self.an.walker.element(args[0])] if len(args) == 1 else args
            return Val(UNKNOWN, ON_DEVICE) if any(p.tensorish for p in parts) else NOTHING
        if name == "map" and len(args) >= 2:  # map(lambda t: t.to(device), batch)
            f = args[0]
            moved = f.tag.value.tensorish if isinstance(f.tag, FnOf) else mover_name(
                node.args[0])
            return Val(SEQ, ON_DEVICE, elem=Val(UNKNOWN, ON_DEVICE)) if moved else NOTHING
        if name in ("list", "tuple"):
            return self.sequence_of(args[0]) if args else Val(SEQ)
        if name == "enumerate":
            inner = self.an.walker.element(args[0]) if args else NOTHING
            return Val(SEQ, elem=Val(SEQ, items=(COUNTER, inner)))
        if name == "zip":
            return Val(SEQ, elem=Val(SEQ, items=tuple(self.an.walker.element(a) for a in args)))
        if name in PASS_ITER:
            return args[0] if args else NOTHING
        if name == "next":
            return self.an.walker.element(args[0]) if args else NOTHING
        if name in self.st.module_classes:
            return Val(MODULE)
        return None

    def handed_device(self, node: ast.Call) -> bool:
        """Whether the call hands data and the device to a helper that moves it there
        (``to_torch(batch, device)``, ``prepare(batch, device=dev)``): not a model, a loader,
        a builder, or a function named for evaluating, saving or sampling."""
        name = (terminal(node.func) or "").lower()
        if not node.args or name[:1].isupper() or _NOT_MOVER.search(name) or purpose(name):
            return False
        first = node.args[0]
        if not isinstance(first, (ast.Name, ast.Attribute, ast.Subscript)) or model_name(
                first) or "load" in (terminal(first) or "").lower():
            return False
        given = [*node.args[1:], *(k.value for k in node.keywords if k.arg == "device")]
        return any(self.names_the_device(a) for a in given)

    def names_the_device(self, node: ast.expr) -> bool:
        """``device``, ``self.device``, ``args.dev``, ``x.device``, a name holding one."""
        key = dotted(node)
        v = self.an.members.lookup(key) if key else None
        if v is not None and v.kind == DEVICE_VAL:
            return v.on_device
        return terminal(node) in _DEVICE_WORDS and self.an.moves.device_kind(node) == "device"

    def object_method(self, func: ast.Attribute) -> None:
        """``metrics.compute()``: a method of one of the module's classes, called on an object,
        synchronises where that method does (walked, or seen doing so in the pass before)."""
        name = func.attr
        if name not in self.st.functions_seen or name in ("forward", "__call__") or (
                isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")):
            return
        if name in self.st.sync_fns or name in self.inp.prior_sync:
            self.an.syncs.synced()
        elif name not in self.st.walked:
            self.st.object_calls.add(name)

    def copied_to_host(self, node: ast.Call, v: Val) -> Val:
        """A helper that copies its tensor to the host (``to_numpy(t)``): a read, which waits."""
        self.an.exprs.host_read(node, v, f"`{ast.unparse(node.func)}()`", strong=True)
        return HOST_OTHER

    def sequence_of(self, v: Val) -> Val:
        part = self.an.walker.element(v)
        return Val(SEQ, ON_DEVICE if part.tensorish else NOWHERE, elem=part)

    def other_call(self, node: ast.Call, func: ast.expr, fval: Val, args: list[Val],
                   kws: list[Val]) -> Val:
        """A call of a local name: a model's forward, a loss, a function of this module, or
        another function (handed device values, its result is taken to be on the device)."""
        device = any(v.tensorish for v in (*args, *kws))
        if mover_name(func) and node.args:
            return Val(UNKNOWN, ON_DEVICE)  # batch_to_device(batch, device)
        if to_host_name(func) and node.args and not isinstance(func, ast.Attribute):
            return self.copied_to_host(node, args[0])  # to_numpy(loss), tensor2numpy(x)
        if self.an.methods.module_like(func, fval):
            self.an.steps.step_op()
            if device or fval.on_device:
                self.an.syncs.device_work()
                return Val(UNKNOWN, ON_DEVICE)
            return NOTHING
        if fval.kind in (UNKNOWN, OTHER) and loss_name(func):
            if device:
                self.an.syncs.device_work()
                return Val(TENSOR, ON_DEVICE)
            return NOTHING
        local = func.id if isinstance(func, ast.Name) else ""
        imported = self.st.project_imports.get(local)
        if imported is not None and not local[:1].isupper():
            self.an.helpers.function(node, imported, [*args, *kws])  # from .utils import log
        self.st.frame.fresh_sync = False
        name = terminal(func) or ""
        if BACKWARD.match(name) and node.args:
            # backwards(loss, opt): a helper (or its alias) for it
            self.an.steps.step_op("backward")
        if isinstance(func, ast.Name) and isinstance(fval.tag, FnOf) and isinstance(
                fval.tag.node, ast.Lambda) and self.st.inlined is None:
            return self.an.exprs.inline(node, fval.tag.node, args, kws)
        if isinstance(func, ast.Name):
            key = self.an.steps.nested_key(name)
            self.an.steps.note_call(key, args, [(k.arg, v) for k, v in zip(node.keywords, kws)])
            if key in self.st.functions_seen or key != name:
                self.an.syncs.maybe_synced(key)
                found = self.an.returns.call_result(key, device)
                if found is not None:
                    return found  # what its returns give: a loss, a host float, a tuple
        if fval.tag is CUDA_CTOR:
            return self.an.implicit.host_noise(node)  # Tensor(np.random.normal(...))
        if fval.tag is SYNC_FN:
            self.an.syncs.drained(node)  # sync = torch.cuda.synchronize; sync()
            return NOTHING
        if sync_name(name):
            self.an.syncs.synced(explicit=True)  # synchronize_func(), sync(): a helper that does
            return NOTHING
        if name[:1].isupper() and not name.isupper():
            return Val(UNKNOWN, tag=INSTANCE)
        if self.handed_device(node):
            return Val(UNKNOWN, ON_DEVICE)  # to_torch(batch, device): a project's mover
        if host_result_name(func):
            return HOST_OTHER  # a size, a count, a name or text, whatever it was handed
        if device:
            self.an.syncs.device_work()  # a function handed device values computes with them there
            return Val(UNKNOWN, ON_DEVICE)
        return NOTHING


def self_call(node: ast.Call, method: str) -> tuple[ast.Call, ast.Attribute]:
    """``node`` as a call of ``self.<method>`` (its arguments and place kept), and its func."""
    func = ast.copy_location(ast.Attribute(ast.copy_location(ast.Name("self", ast.Load()),
                                                             node.func), method, ast.Load()),
                             node.func)
    return ast.copy_location(ast.Call(func, node.args, node.keywords), node), func
