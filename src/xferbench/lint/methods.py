"""Methods: the calls of a value's methods (``.to``, ``.cuda``, ``.cpu``, ``.item``,
``.pin_memory``, ``.backward``, ``.step``, a module's own methods, a string's ``.format``), and
what they give."""

from __future__ import annotations

import ast

from .facts import (
    BOOL_TAG,
    CURRENT_STREAM,
    DEVICE_VAL,
    HOST_OTHER,
    HOST_READS,
    META_METHODS,
    MODULE,
    MODULE_SELF,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OPTIM,
    PAGEABLE,
    PAGEABLE_IF,
    PIN_UNKNOWN,
    PINNED,
    SEQ,
    TENSOR,
    UNKNOWN,
    VIEWS,
    Val,
    device_parameters,
    dotted,
    is_true,
    kwarg,
    model_name,
    mover_name,
    optim_name,
    terminal,
)
from .implicit import BOOLEAN
from .members import self_attr
from .part import Part
from .records import DictOf, Fac, Pinned
from .steps import stepped_loss
from .syncs import data_timer_name, sync_name, timing_name


class Methods(Part):
    """Method-call handlers."""

    def method_call(self, node: ast.Call, func: ast.Attribute, dropped: bool) -> Val:
        bound = self.st.aliases.get(func.attr) if isinstance(func.value, ast.Name) and \
            func.value.id == "self" else None
        if bound is not None:  # self._grad(batch), with self._grad = self.compute_grad
            func = ast.copy_location(ast.Attribute(func.value, bound, ast.Load()), func)
            node = ast.copy_location(ast.Call(func, node.args, node.keywords), node)
        recv = self.an.exprs.ev(func.value)
        name = func.attr
        outer_data, self.st.data_timer = self.st.data_timer, self.st.data_timer or data_timer_name(
            func.value)  # data_time.update(time.time() - end): a data-loading timer
        acting = name == "step" and "env" in (terminal(func.value) or "").lower()
        outer, self.st.acting = self.st.acting, self.st.acting or acting
        args = [self.an.exprs.ev(a) for a in node.args]
        kws = [self.an.exprs.ev(k.value) for k in node.keywords]
        self.st.acting, self.st.data_timer = outer, outer_data
        self.an.steps.helped_step(node, [*args, *kws])
        if self.inp.project is not None:
            self.an.helpers.method(node, func, recv, [*args, *kws])
        if isinstance(func.value, ast.Name) and func.value.id == "self" and \
                name not in self.st.functions_seen:
            held = self.an.members.member_call(node, func, any(v.tensorish for v in (*args, *kws)))
            if held is not None:
                return held  # self.model(batch): a forward of the model the class holds
        if acting:  # env.step(actions): the actions are needed on the host
            names = {a.id for a in node.args if isinstance(a, ast.Name)}
            for loop in self.st.frame.loops:
                loop.env_args |= names
        if name in ("to", "cuda", "xpu", "mps"):
            return self.an.moves.move(node, func, recv, dropped)
        if name == "cpu":
            if dropped:
                self.an.moves.discarded(node, func, recv)
            return self.an.moves.to_host(node, func, recv, False)
        if self.module_like(func.value, recv):
            if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls") and \
                    name in self.st.functions_seen:  # a model's own helper: a call of it
                return self.own_method(node, name, args, kws, recv)
            return self.module_method(name, [*args, *kws], recv)
        if name in HOST_READS and recv.kind == UNKNOWN and recv.where == NOWHERE and \
                self.held_by_model(func.value):
            recv = Val(TENSOR, ON_DEVICE)  # net.diam_mean.item(): a parameter or a buffer
        if name in HOST_READS or (name == "numpy" and is_true(kwarg(node, "force"))):
            self.an.exprs.host_read(node, recv, f"`.{name}()`", at=self.method_at(func),
                                    strong=True)
            return HOST_OTHER
        if name == "pin_memory":
            return Val(recv.kind if recv.kind in (TENSOR, SEQ) else UNKNOWN, ON_HOST, PINNED,
                       Pinned(self.an.walker.current_loop()))
        if name.endswith("backward"):
            self.an.steps.step_op("backward")
            if recv.tensorish or any(a.tensorish for a in args) or self.st.frame.devicey:
                self.an.syncs.device_work()
            return NOTHING
        if self.an.reads.sink_call(node, func, recv, args, kws):
            return self.an.reads.text() if name == "format" else NOTHING
        return self.other_method(node, func, recv, args, kws)

    def own_method(self, node: ast.Call, name: str, args: list[Val], kws: list[Val],
                   recv: Val) -> Val:
        """``self.run_optimizer(loss)`` in a model's class (one with a forward or a
        compute_loss): what it computes, and a call of that method of the module."""
        self.an.steps.note_call(name, args, [(k.arg, v) for k, v in zip(node.keywords, kws)])
        self.an.syncs.maybe_synced(name)
        out = self.module_method(name, [*args, *kws], recv)
        found = self.an.returns.call_result(name, any(v.tensorish for v in (*args, *kws)))
        return out if found is None else found

    def other_method(self, node: ast.Call, func: ast.Attribute, recv: Val, args: list[Val],
                     kws: list[Val]) -> Val:
        name = func.attr
        if mover_name(func) and node.args and recv.kind != TENSOR:
            return Val(UNKNOWN, ON_DEVICE)  # utils.batch_to_device(batch, device)
        if name in ("step", "zero_grad") and (
                recv.kind == OPTIM or optim_name(func.value) or (
                    name == "step" and node.args and optim_name(node.args[0]))):
            if name == "step":  # zero_grad alone is no step: an epoch loop may hold it
                if args and args[0].tensorish or stepped_loss(node):
                    self.an.steps.step_op("backward")  # optim.step(loss): a wrapper's backward
                self.an.steps.step_op("optimise")
                if self.st.frame.devicey:
                    self.an.syncs.device_work()
            return NOTHING
        if sync_name(name):
            if name == "synchronize" and self.drains(func.value, recv):
                self.an.syncs.drained(node)  # the current stream's: the whole queue
            else:
                self.an.syncs.synced(explicit=True)  # an event's, a side stream's, a helper's
            return NOTHING
        if timing_name(func):
            self.an.syncs.timing_read()  # start.elapsed_time(end), timer.stop()
        if name not in META_METHODS:
            self.st.frame.fresh_sync = False
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            for k in node.keywords:  # step_fn=self.train_step: what step_fn(...) calls there
                handed = self_attr(k.value)
                if k.arg and handed in self.st.functions_seen:
                    self.st.passed.setdefault((name, k.arg), handed)
            self.an.steps.note_call(name, args, [(k.arg, v) for k, v in zip(node.keywords, kws)])
            device = any(v.tensorish for v in (*args, *kws))
            if name in self.st.functions_seen:
                self.an.syncs.maybe_synced(name)
                found = self.an.returns.call_result(name, device)
            else:  # a base class's, in another module of the project
                found = self.an.helpers.inherited_result(name, device, frozenset(device_parameters(
                    args, [(k.arg, v) for k, v in zip(node.keywords, kws)])))
            if found is not None:
                return found  # what this method returns: a loss, a host float
        if name not in META_METHODS and name not in ("to", "pin_memory", "cuda"):
            self.an.exprs.d2h_read(node, recv, "read")
        self.an.implicit.sized(node, name, recv)  # mask.nonzero()
        out = self.method_result(name, recv)
        if name in STORES and not recv.on_device and recv.kind != MODULE:
            return out  # meter.update(loss), losses.append(loss): kept, not computed
        if out is NOTHING and recv.where != ON_HOST and any(
                v.tensorish for v in (*args, *kws)):
            self.an.syncs.device_work()  # self.criterion(out, y): work queued on the device
            return Val(UNKNOWN, ON_DEVICE)  # diffusion.training_losses(model, x, t)
        return out

    def drains(self, node: ast.expr, recv: Val) -> bool:
        """Whether ``<node>.synchronize()`` waits for the whole device: the current stream
        (``torch.cuda.current_stream()``, a name holding it) or a device module
        (``getattr(torch, device_type)``, ``torch.get_device_module(...)``)."""
        if recv.tag is CURRENT_STREAM:
            return True
        if isinstance(node, ast.Call):
            name = terminal(node.func) or ""
            return name in ("current_stream", "get_device_module", "default_stream") or (
                name == "getattr" and bool(node.args) and terminal(node.args[0]) == "torch")
        return False

    @staticmethod
    def parameters_of(name: str, recv: Val) -> Val:
        """A model's parameters (and gradient norm) live where it trains: on the device, unless
        the model was moved to the host."""
        where = ON_HOST if recv.where == ON_HOST else ON_DEVICE
        if name.startswith("named_"):
            return Val(SEQ, elem=Val(SEQ, items=(HOST_OTHER, Val(TENSOR, where))))
        if name in ("clip_grad_norm_", "get_total_norm"):
            return Val(TENSOR, where)
        return Val(SEQ, elem=Val(TENSOR, where))

    def method_result(self, name: str, recv: Val) -> Val:
        if recv.kind == DEVICE_VAL:
            return HOST_OTHER  # self.device.split(":"): a device (or its name), not a tensor
        if name.startswith(("is_", "has_")) and name != "is_nonzero":
            return HOST_OTHER  # placement.is_replicate(): a Python bool
        if name in PARAMETERS and recv.where != ON_HOST and recv.kind not in (TENSOR, SEQ):
            return self.parameters_of(name, recv)  # self.modules.parameters()
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
            if name not in VIEWS:
                self.an.syncs.device_work()  # a view (detach, view, reshape) launches nothing
            mask = BOOL_TAG if name in BOOLEAN or name in VIEWS and recv.tag is BOOL_TAG \
                else None
            return Val(TENSOR if recv.kind == TENSOR else UNKNOWN, ON_DEVICE, tag=mask)
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

    def module_method(self, name: str, values: list[Val], recv: Val) -> Val:
        """A module's method: itself (``.eval()``), its parameters, or what it computes."""
        if name in MODULE_SELF:
            return Val(MODULE, recv.where)
        if name in PARAMETERS or name in ("clip_grad_norm_", "get_total_norm"):
            return self.parameters_of(name, recv)
        if name in MODULE_META:
            return NOTHING
        device = recv.on_device or any(v.tensorish for v in values)
        if name in ("forward", "generate") or device:
            self.an.steps.step_op()
        if device:
            self.an.syncs.device_work()
            return Val(UNKNOWN, ON_DEVICE)
        return NOTHING

    @staticmethod
    def method_at(func: ast.Attribute) -> ast.Name:
        """Where a finding about ``x.name(...)`` points: at ``name``."""
        at = ast.Name(id=func.attr)
        at.lineno = at.end_lineno = func.end_lineno or func.lineno
        at.col_offset = max((func.end_col_offset or func.col_offset) - len(func.attr), 0)
        return at

    def held_by_model(self, node: ast.expr) -> bool:
        """Whether ``node`` is an attribute of a model not on the host (``net.scale``): a
        tensor there is a parameter or a buffer, on the device the model trains on. Not one
        of ``self``: a trainer's step counter stays where the trainer is, often the host."""
        if not isinstance(node, ast.Attribute) or isinstance(node.value, ast.Name) and \
                node.value.id in ("self", "cls"):
            return False
        key = dotted(node.value)
        held = self.an.members.lookup(key) if key is not None else None
        if held is None or held.kind == UNKNOWN and held.where == NOWHERE:
            return model_name(node.value) and not optim_name(node.value)
        return held.kind == MODULE and held.where != ON_HOST

    def module_like(self, node: ast.expr, v: Val) -> bool:
        if v.kind == MODULE:
            return True
        return v.kind == UNKNOWN and not v.on_device and v.where != ON_HOST and (
            model_name(node)) and not optim_name(node)  # optimizer_discriminator: an optimiser


#: Methods that keep what they are handed (a meter, a list, a logger's buffer): no device work.
STORES = frozenset({"update", "append", "extend", "add", "put", "push", "record", "insert",
                    "add_scalar", "add_scalars", "log", "write", "observe", "accumulate",
                    "setdefault", "__setitem__", "store"})
#: A module's methods that hand out its parameters.
PARAMETERS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})
#: A module's methods that compute nothing on its device.
MODULE_META = frozenset({"state_dict", "load_state_dict", "children", "modules",
                         "named_modules", "named_children", "register_buffer",
                         "register_forward_hook", "register_full_backward_hook", "add_module",
                         "register_module", "get_submodule", "extra_repr", "__repr__",
                         "register_parameter", "requires_grad_", "zero_grad"})
