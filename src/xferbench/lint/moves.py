"""Moves: ``.to(...)``, ``.cuda()``, ``.cpu()``: where the target is (a device, the host, a
dtype), and the rules a move can break: create-then-move (XB102), discarded-to (XB103),
module-move-in-loop (XB104), non-blocking-from-pageable (XB105), read-before-sync's copies
(XB106) and pin-then-copy (XB108)."""

from __future__ import annotations

import ast
import copy
import re

from .facts import (
    DEVICE_VAL,
    INSTANCE,
    MODULE,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OTHER,
    PAGEABLE,
    PAGEABLE_IF,
    PINNED,
    RANDOM_FACTORIES,
    SEQ,
    TENSOR,
    UNKNOWN,
    Val,
    device_name,
    dotted,
    is_true,
    kwarg,
    model_name,
    terminal,
)
from .part import Part
from .records import D2h, DictOf, Fac, Fix, Pinned

ACCELERATORS = ("cuda", "mps", "xpu", "hpu", "npu", "xla", "privateuseone", "mtia", "hip",
                "ipu", "mkldnn", "vulkan", "ve", "lazy")
DTYPES = frozenset({"float", "float16", "float32", "float64", "half", "double", "bfloat16",
                    "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "bool",
                    "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn",
                    "float8_e5m2", "qint8", "quint8", "uint16", "uint32", "uint64",
                    "channels_last", "contiguous_format", "preserve_format"})
#: Names whose ``.device`` is the device a program runs on (not a tensor's).
SETTINGS = frozenset({"self", "args", "cfg", "config", "conf", "opt", "opts", "hparams",
                      "accelerator", "trainer", "fabric", "settings", "training_args", "options",
                      "FLAGS", "flags", "state", "runner", "engine", "env", "ctx", "context"})
#: Names only a tensor goes by (an unknown value called so, moved by a statement, is one):
#: not batch, data or inputs, which may be a BatchEncoding or a graph that moves in place.
TENSOR_NAME = re.compile(r"^(?:x|y|z|t|X|Y|img|imgs|image|images|label|labels|target|targets|"
                         r"mask|masks|input_ids|attention_mask|token_type_ids|logits|noise|"
                         r"latents|feats|features|tensor|src|tgt|xb|yb|x_\w+|y_\w+|"
                         r"\w+_(?:feats|features|embeds|embeddings|logits|imgs|images|labels|"
                         r"targets|masks))$")
#: Keywords of .to() / .cuda() that --fix can drop when the copy goes away.
DROPPABLE = frozenset({"non_blocking", "copy"})


def chained(node: ast.expr, target: ast.AST) -> bool:
    """Whether ``target`` is the head of the method chain ``node`` (``target.a().b()``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
        if node is target:
            return True
    return False


class Moves(Part):
    """Move handlers."""

    def move(self, node: ast.Call, func: ast.Attribute, recv: Val, dropped: bool) -> Val:
        kind = self.target_kind(node, func.attr)
        nb = is_true(kwarg(node, "non_blocking"))
        module = self.an.methods.module_like(func.value, recv) or recv.tag is INSTANCE
        if dropped and not module and not self.discarded(node, func, recv) and \
                kind == "device" and recv.kind == UNKNOWN:
            key = dotted(func.value)  # ac.to(device): a module or a batch moved in place
            if key is not None:
                self.an.walker.bind_key(key, Val(UNKNOWN, ON_DEVICE))
        if kind == "host":
            return self.to_host(node, func, recv, nb)
        if kind not in ("device", "maybe"):
            return Val(recv.kind, recv.where) if recv.kind in (TENSOR, UNKNOWN) else recv
        if module:
            self.module_move(node, func)
            key = dotted(func.value)
            if dropped and kind == "device" and key and not self.st.frame.loops:
                self.an.walker.bind_key(key, Val(MODULE, ON_DEVICE))  # self.model.to(device): moved
            return Val(MODULE, ON_DEVICE if kind == "device" else NOWHERE)
        created = self.create_then_move(node, func, recv, dropped)
        if nb and not created:
            self.from_pageable(node, func, recv)
        if nb:
            self.pin_then_copy(node, func, recv)
        kind_out = recv.kind if recv.kind in (TENSOR, SEQ) else UNKNOWN
        if kind == "maybe":  # to another tensor's device, which may be the host
            return Val(kind_out, NOWHERE)
        if nb and recv.on_device:
            self.an.syncs.device_work(light=True)  # a copy between devices; from the host, queued
        elif not nb and recv.where == ON_HOST:
            self.an.syncs.synced()  # a blocking host-to-device copy waits for the stream
        tag = recv.tag if isinstance(recv.tag, DictOf) else None
        return Val(kind_out, ON_DEVICE, tag=tag, elem=Val(UNKNOWN, ON_DEVICE)
                   if recv.kind == SEQ else None)

    def to_host(self, node: ast.Call, func: ast.Attribute, recv: Val, nb: bool) -> Val:
        if self.an.methods.module_like(func.value, recv) or recv.tag is INSTANCE:
            return Val(MODULE, ON_HOST)  # model.eval().cpu(): a module moved, nothing read
        kind = TENSOR if recv.kind == TENSOR else UNKNOWN
        if nb:
            if recv.where == ON_HOST:
                return recv
            self.an.syncs.device_work()
            what = f"`{ast.unparse(func.value)}.{func.attr}(..., non_blocking=True)`"
            if len(what) > 60:
                what = f"the `.{func.attr}(..., non_blocking=True)` copy"
            return Val(kind, ON_HOST, PAGEABLE, D2h(node, what))
        call = "`.cpu()`" if func.attr == "cpu" else "`.to('cpu')`"
        self.an.exprs.host_read(node, recv, call, at=self.an.methods.method_at(func), strong=True)
        return Val(kind, ON_HOST, PAGEABLE if recv.on_device else recv.pin)

    # -- the target ------------------------------------------------------------------------------

    def target_kind(self, node: ast.Call, method: str) -> str:
        """"device", "host", "dtype" or "unknown": where ``x.to(...)`` sends x."""
        if method != "to":
            return "device"
        target = kwarg(node, "device")
        if target is None and node.args:
            target = node.args[0]
        if target is None:
            return "dtype" if kwarg(node, "dtype") is not None else "unknown"
        return self.device_kind(target)

    def device_kind(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            return self.constant_kind(node.value)
        if isinstance(node, ast.IfExp):
            kinds = {self.device_kind(node.body), self.device_kind(node.orelse)}
            for kind in ("device", "maybe"):
                if kind in kinds:
                    return kind
            return "host" if kinds == {"host"} else "unknown"
        if isinstance(node, ast.Call):
            qual = self.an.names.qualname(node.func) or ""
            if qual == "torch.device":
                return self.device_kind(node.args[0]) if node.args else (
                    "device" if kwarg(node, "type") is not None else "unknown")
            name = (dotted(node.func) or "").lower()
            return "device" if "device" in name or "accelerator" in name else "unknown"
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.named_device_kind(node)
        return "unknown"

    @staticmethod
    def constant_kind(value: object) -> str:
        if isinstance(value, bool):
            return "unknown"
        if isinstance(value, int):
            return "device"  # an accelerator's index
        if isinstance(value, str):
            head = value.lower().split(":")[0]
            if head == "cpu":
                return "host"
            return "device" if head in ACCELERATORS else "unknown"
        return "unknown"

    def named_device_kind(self, node: ast.Name | ast.Attribute) -> str:
        qual = self.an.names.qualname(node)
        if qual is not None and qual.startswith("torch."):
            return "dtype" if qual[6:] in DTYPES else "unknown"
        key = dotted(node)
        v = self.an.members.lookup(key) if key else None
        name = terminal(node) or ""
        if v is not None and v.kind == DEVICE_VAL:
            return {ON_DEVICE: "device", ON_HOST: "host"}.get(v.where, "maybe")
        if v is not None and v.kind == OTHER and isinstance(v.tag, str):
            return self.constant_kind(v.tag)
        if v is not None and (v.kind == TENSOR or v.tensorish):
            return "unknown"  # .to(other): that tensor's device and dtype
        if isinstance(node, ast.Attribute) and node.attr == "device":
            return self.attribute_device_kind(node.value)
        if "dtype" in name.lower():
            return "dtype"
        if "cpu" in name.lower():
            return "host"  # cpu_device
        return "device" if device_name(name) else "unknown"

    def attribute_device_kind(self, base: ast.expr) -> str:
        """``<base>.device``: a tensor's device is where that tensor is ("maybe" when that is
        not known); a settings object's (self, args, a model...) names the device to use."""
        head = base
        while isinstance(head, ast.Attribute):
            head = head.value
        key = dotted(base)
        v = self.an.members.lookup(key) if key else None
        if v is not None and v.where != NOWHERE:
            return "device" if v.where == ON_DEVICE else "host"
        if isinstance(head, ast.Name) and head.id in SETTINGS or (
                v is not None and v.kind == MODULE) or model_name(base):
            return "device"
        return "maybe"

    def where_of(self, node: ast.expr | None) -> int:
        """Where a factory's ``device=`` puts it (no ``device=``: the host)."""
        if node is None:
            return ON_HOST
        kind = self.device_kind(node)
        return ON_HOST if kind == "host" else ON_DEVICE if kind == "device" else NOWHERE

    # -- the rules -------------------------------------------------------------------------------

    def discarded(self, node: ast.Call, func: ast.Attribute, recv: Val) -> bool:
        """XB103 where the statement drops a tensor's move; whether it was reported."""
        named = isinstance(func.value, ast.Name) and recv.kind == UNKNOWN and \
            recv.where != ON_HOST and TENSOR_NAME.match(func.value.id) is not None and \
            func.value.id not in self.st.not_tensor_names
        if recv.kind != TENSOR and not named:  # a batch, a graph may move in place
            return False
        call = ast.unparse(node)
        fix = None
        if isinstance(func.value, ast.Name) and self.an.names.rebinding_keeps_scope(func.value.id):
            fix = Fix(f"{func.value.id} = {call}", node, (("tensor", func.value),))
        self.an.report(node, "XB103", f"`{call}` as a statement drops its result: a tensor is "
                       "not moved in place (a module is); assign it", fix=fix)
        return True

    def module_move(self, node: ast.Call, func: ast.Attribute) -> None:
        key = dotted(func.value)
        if key is None or not self.st.frame.loops:
            return
        what = f"`{key}.{func.attr}(...)`"
        self.an.candidate("XB104", self.an.methods.method_at(func),
                       f"{what} moves a module inside the batch loop: every step walks all "
                       "its parameters and buffers (a no-op that still costs once they are "
                       "there); move it once, before the loop", key)

    def create_then_move(self, node: ast.Call, func: ast.Attribute, recv: Val,
                         dropped: bool) -> bool:
        rec = recv.tag
        if not isinstance(rec, Fac):
            return False
        if func.value is rec.node:
            text = self.creation_fix(rec, node, func)
            target = self.fix_target(node, func)
            fix = None if text is None or target is None else \
                Fix(text, node, (("tensor", rec.node), ("device", target)))
            self.an.report(rec.node, "XB102", self.created_message(rec, func, fix is not None),
                        fix=fix)
            return True
        if chained(func.value, rec.node):  # torch.ones(n).triu(1).to(dev)
            self.an.report(rec.node, "XB102", self.created_message(rec, func, False))
            return True
        if isinstance(func.value, ast.Name) and rec.loop is self.an.walker.current_loop() and \
                not dropped:
            rec.move = node
        return False

    def created_message(self, rec: Fac, func: ast.Attribute, fixable: bool) -> str:
        if rec.factory.startswith("numpy."):  # torch.from_numpy(np.random.randn(...)).cuda()
            return self.an.implicit.noise_message(rec.factory, f".{func.attr}")
        text = (f"`torch.{rec.factory}(...)` fills host memory and `.{func.attr}(...)` then "
                "copies it to the device: pass `device=` to the factory and skip the copy")
        if rec.factory[:1].isupper():  # torch.Tensor(n, m): no device= in a legacy one
            text = text.replace("pass `device=` to the factory", "make it with "
                                "`torch.empty(..., device=...)`")
        elif rec.factory in RANDOM_FACTORIES:
            text += (" (the device's generator then draws the numbers, so a seeded run's "
                     "values change: --fix leaves it to you)")
        elif not fixable:
            text += " (--fix leaves it: other arguments of the call need a look)"
        return text

    def creation_fix(self, rec: Fac, move: ast.Call, func: ast.Attribute) -> str | None:
        """The factory call with ``device=``, where that rewrite keeps the meaning."""
        target = self.fix_target(move, func)
        factory = rec.node
        blocked = {"requires_grad", "pin_memory", "out", None}
        if (target is None or rec.factory in RANDOM_FACTORIES or rec.factory[:1].isupper()
                or rec.factory.startswith("numpy.")
                or any(k.arg in blocked for k in factory.keywords)):
            return None
        fixed = copy.copy(factory)
        keywords = [k for k in factory.keywords if k.arg != "device"]
        fixed.keywords = [*keywords, ast.keyword(arg="device", value=target)]
        return ast.unparse(fixed)

    @staticmethod
    def fix_target(move: ast.Call, func: ast.Attribute) -> ast.expr | None:
        if func.attr != "to":
            if move.args or any(k.arg not in DROPPABLE for k in move.keywords):
                return None
            return ast.Constant(func.attr)
        positional = move.args
        named = kwarg(move, "device")
        others = [k for k in move.keywords if k.arg not in DROPPABLE and k.arg != "device"]
        if others or (named is not None and positional) or len(positional) > 1:
            return None
        return named if named is not None else (positional[0] if positional else None)

    def from_pageable(self, node: ast.Call, func: ast.Attribute, recv: Val) -> None:
        """``.to(dev, non_blocking=True)`` of ``recv``: XB110 where a DataLoader without
        pin_memory made it (decided at the module's end where a name holds the loader),
        XB105 where a tensor made without pin_memory is."""
        at = self.an.methods.method_at(func)
        if recv.pin == PAGEABLE and isinstance(recv.tag, int):
            self.st.unpinned.setdefault(recv.tag, []).append(at.lineno)
        elif recv.pin == PAGEABLE:
            self.an.report(at, "XB105", "`non_blocking=True` from pageable memory (a tensor "
                           "made without pin_memory): the host first copies it into a pinned "
                           "staging buffer itself, so the transfer cannot overlap compute; pin "
                           "the source (`pin_memory=True`) for an asynchronous copy")
        elif recv.pin == PAGEABLE_IF and isinstance(recv.tag, str):
            self.an.candidate("XB110", at, "", recv.tag)

    def report_unpinned(self) -> None:
        """XB110, once per DataLoader built without pin_memory=True whose batches are copied
        with non_blocking=True, at the loader (where ``pin_memory=True`` goes)."""
        for line, copies in sorted(self.st.unpinned.items()):
            node = self.st.loader_calls.get(line)
            if node is None:
                continue
            where = sorted(set(copies))
            lines = ("line " if len(where) == 1 else "lines ") + ", ".join(
                map(str, where[:3])) + (" ..." if len(where) > 3 else "")
            self.an.report(node, "XB110", f"`{ast.unparse(node.func)}(...)` without "
                           f"`pin_memory=True` feeds `.to(..., non_blocking=True)` at {lines}: "
                           "from pageable memory that copy is not "
                           "asynchronous (CUDA stages it in a pinned buffer while the host "
                           "waits), so it cannot overlap compute; pass `pin_memory=True` (a "
                           "thread beside the workers pins each batch) and keep `non_blocking`")

    def pin_then_copy(self, node: ast.Call, func: ast.Attribute, recv: Val) -> None:
        if recv.pin != PINNED or not isinstance(recv.tag, Pinned):
            return
        pinned_here = isinstance(func.value, ast.Call) and isinstance(
            func.value.func, ast.Attribute) and func.value.func.attr == "pin_memory"
        loop = self.an.walker.current_loop()
        if loop is None or not (pinned_here or recv.tag.loop is loop):
            return
        self.an.report(self.an.methods.method_at(func), "XB108",
                    "`.pin_memory()` then `.to(dev, non_blocking=True)` for every batch pins on "
                    "the main thread: slower than a plain `.to(dev)` (the PyTorch tutorial "
                    "measures it); let the DataLoader pin in its worker thread "
                    "(pin_memory=True) or copy without pinning")
