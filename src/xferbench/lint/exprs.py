"""Expressions: what each one holds (``Val``) and the host reads inside it (``.item()``,
``print(t)``, ``f"{t}"``, ``if t:``); calls are ``calls.Calls``'s."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .facts import (
    BOOL_TAG,
    CUDA_CTOR,
    DEVICE_VAL,
    HOST_OTHER,
    LEGACY,
    META_ATTRS,
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
    SYNC_FN,
    TENSOR,
    TEXT,
    TIME,
    UNKNOWN,
    Val,
    dotted,
    terminal,
)
from .part import Part
from .records import D2h, DictOf, Fac, FnOf
from .returns import is_host
from .scopes import joined

if TYPE_CHECKING:
    from .analyzer import ModulePass


class Exprs(Part):
    """Expression handlers."""

    def __init__(self, an: ModulePass) -> None:
        super().__init__(an)  # after calls, whose handler its dispatch names
        self.expr_dispatch = self.expr_handlers()

    def expr_handlers(self) -> dict[type, Any]:
        return {
            ast.Name: self.e_name, ast.Constant: self.e_constant,
            ast.Attribute: self.e_attribute, ast.Subscript: self.e_subscript,
            ast.Call: self.an.calls.ev_call, ast.BinOp: self.e_binop, ast.UnaryOp: self.e_unaryop,
            ast.BoolOp: self.e_boolop, ast.Compare: self.e_compare, ast.IfExp: self.e_ifexp,
            ast.JoinedStr: self.e_joinedstr, ast.Tuple: self.e_seq, ast.List: self.e_seq,
            ast.Set: self.e_seq, ast.Dict: self.e_dict, ast.ListComp: self.e_comp,
            ast.SetComp: self.e_comp, ast.GeneratorExp: self.e_comp, ast.DictComp: self.e_comp,
            ast.Lambda: self.e_lambda, ast.NamedExpr: self.e_namedexpr,
            ast.Await: self.e_await, ast.Starred: self.e_starred, ast.Slice: self.e_parts,
            ast.Yield: self.e_yield, ast.YieldFrom: self.e_yield,
        }

    def ev(self, node: ast.expr) -> Val:
        handler = self.expr_dispatch.get(type(node))
        if handler is not None:
            return handler(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child)
        return NOTHING

    # -- names -----------------------------------------------------------------------------------

    def e_name(self, node: ast.Name) -> Val:
        v = self.an.members.lookup(node.id)
        if v is None:
            # a free name, bound later in the module (or never): a loader only if every
            # assignment of it in the module is a DataLoader without pin_memory
            return Val(UNKNOWN, NOWHERE, PAGEABLE_IF, node.id)
        if isinstance(v.tag, Fac):
            v.tag.uses += 1
        return v

    def e_constant(self, node: ast.Constant) -> Val:
        if node.value is None:
            return NONE
        if isinstance(node.value, str):
            return Val(OTHER, ON_HOST, tag=node.value if len(node.value) < 24 else TEXT)
        return HOST_OTHER

    def e_attribute(self, node: ast.Attribute) -> Val:
        key = dotted(node)
        if key is not None:
            v = self.an.members.lookup(key)
            if v is not None:
                if isinstance(v.tag, Fac):
                    v.tag.uses += 1
                return v
        if node.attr == "synchronize" and (self.an.names.qualname(node) or "").startswith("torch."):
            return Val(OTHER, tag=SYNC_FN)  # sync = torch.cuda.synchronize
        if node.attr in LEGACY and (self.an.names.qualname(node) or "").startswith("torch.cuda."):
            return Val(OTHER, tag=CUDA_CTOR)  # Tensor = torch.cuda.FloatTensor
        base = self.ev(node.value)
        attr = node.attr
        if attr in META_ATTRS:
            if attr == "device":
                if base.where == NOWHERE and \
                        self.an.moves.attribute_device_kind(node.value) == "device":
                    return Val(DEVICE_VAL, ON_DEVICE)  # accelerator.device, self.device
                return Val(DEVICE_VAL, base.where)
            return HOST_OTHER
        if attr.startswith(("is_", "has_")):
            return HOST_OTHER  # param.is_tied, batch.has_labels: a flag, a Python bool
        if base.kind in (MODULE, DEVICE_VAL):
            return NOTHING if base.kind == MODULE else HOST_OTHER  # device.type, device.index
        if base.on_device:
            return Val(TENSOR if base.kind == TENSOR else UNKNOWN, ON_DEVICE)
        if base.kind == TENSOR:
            return Val(TENSOR, base.where, base.pin if attr in ("data", "T", "mT") else
                       PIN_UNKNOWN)
        if base.where == ON_HOST and base.pin in (PAGEABLE, PAGEABLE_IF) and base.kind == UNKNOWN:
            return base  # a batch's field (batch.input_ids)
        if key is not None and key.startswith("self.") and key.count(".") == 1:
            return Val(UNKNOWN, NOWHERE, PAGEABLE_IF, self.an.walker.loader_key(key))
        return NOTHING

    def e_subscript(self, node: ast.Subscript) -> Val:
        base = self.ev(node.value)
        index = self.ev(node.slice)
        legacy = self.an.implicit.legacy_read(node, base)
        if legacy is not None:
            return legacy  # loss.data[0]
        self.an.implicit.mask_index(node, index)
        self.d2h_read(node, base, "indexed")
        if base.items is not None and isinstance(node.slice, ast.Constant) and isinstance(
                node.slice.value, int) and -len(base.items) <= node.slice.value < len(base.items):
            return base.items[node.slice.value]
        if isinstance(base.tag, DictOf):
            return base.tag.value
        if base.on_device:
            return Val(TENSOR if base.kind == TENSOR else UNKNOWN, ON_DEVICE)
        if base.where == ON_HOST and base.kind in (TENSOR, UNKNOWN) and base.pin in (
                PAGEABLE, PAGEABLE_IF):
            return Val(base.kind, ON_HOST, base.pin, base.tag if base.pin == PAGEABLE_IF else None)
        return NOTHING

    # -- operators -------------------------------------------------------------------------------

    def e_binop(self, node: ast.BinOp) -> Val:
        if isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Call):
            right = self.ev(node.right)  # the interval's start, for the clock read in left
            self.st.interval_from = dotted(node.right) if right.kind == TIME else None
            left = self.ev(node.left)
            self.st.interval_from = None
        else:
            left = self.ev(node.left)
            right = self.ev(node.right)
            if isinstance(node.op, ast.Sub) and TIME in (left.kind, right.kind):
                self.an.syncs.interval(node)
        if isinstance(node.op, ast.Mod) and self.an.reads.is_text(node.left, left):
            self.an.reads.format_read(node, right)
            return self.an.reads.text()
        out = self.combine(left, right)
        if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and out.on_device and (
                left.tag is BOOL_TAG or right.tag is BOOL_TAG):
            return Val(out.kind, ON_DEVICE, tag=BOOL_TAG)  # mask & other
        return out

    @staticmethod
    def combine(a: Val, b: Val) -> Val:
        if a.on_device or b.on_device:
            tensor = TENSOR in (a.kind, b.kind) or (a.kind, b.kind) == (UNKNOWN, UNKNOWN)
            return Val(TENSOR if tensor else UNKNOWN, ON_DEVICE)
        tensors = [x for x in (a, b) if x.kind == TENSOR]
        if tensors and all(x.where == ON_HOST for x in tensors):
            return Val(TENSOR, ON_HOST, PAGEABLE)  # not grads * 0.5: its place is its own
        if tensors:
            return Val(TENSOR)
        if a.kind == OTHER and b.kind == OTHER:
            return HOST_OTHER
        if TIME in (a.kind, b.kind):
            return HOST_OTHER
        return NOTHING

    def e_unaryop(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.Not):
            self.test(node.operand)
            return HOST_OTHER
        v = self.ev(node.operand)
        if isinstance(node.op, ast.Invert) and v.tag is BOOL_TAG:
            return v  # ~mask
        return Val(v.kind, v.where) if v.kind in (TENSOR, UNKNOWN) else v

    def e_boolop(self, node: ast.BoolOp) -> Val:
        for value in node.values[:-1]:
            self.test(value)
        self.ev(node.values[-1])
        return NOTHING

    def e_compare(self, node: ast.Compare) -> Val:
        values = [self.ev(node.left)] + [self.ev(c) for c in node.comparators]
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return HOST_OTHER
        for sub, v in zip([node.left, *node.comparators], values):
            self.d2h_read(sub, v, "compared")
        if any(v.on_device and v.kind != DEVICE_VAL for v in values):
            return Val(TENSOR, ON_DEVICE, tag=BOOL_TAG)  # a mask
        if any(v.kind == TENSOR for v in values):
            return Val(TENSOR, ON_HOST, PAGEABLE)
        if all(v.kind == OTHER for v in values):
            return HOST_OTHER
        return NOTHING

    def e_ifexp(self, node: ast.IfExp) -> Val:
        self.test(node.test)
        body = self.ev(node.body)
        orelse = self.ev(node.orelse)
        if self.describes_device(body) and self.describes_device(orelse):
            kinds = {self.an.moves.device_kind(node.body), self.an.moves.device_kind(node.orelse)}
            where = ON_DEVICE if "device" in kinds else ON_HOST if kinds == {"host"} else NOWHERE
            return Val(DEVICE_VAL, where)
        if CUDA_CTOR in (body.tag, orelse.tag):
            return Val(OTHER, tag=CUDA_CTOR)  # torch.cuda.FloatTensor if cuda else ...: the
            # CUDA path is the one that copies
        if (body.kind, body.where) == (orelse.kind, orelse.where) and body.kind != UNKNOWN:
            return Val(body.kind, body.where)
        return joined(body, orelse)

    @staticmethod
    def describes_device(v: Val) -> bool:
        return v.kind == DEVICE_VAL or (v.kind == OTHER and isinstance(v.tag, str))

    def e_joinedstr(self, node: ast.JoinedStr) -> Val:
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                self.host_read(part.value, self.ev(part.value), "an f-string")
                if part.format_spec is not None:
                    self.ev(part.format_spec)
        return self.an.reads.text()

    # -- containers ------------------------------------------------------------------------------

    def e_seq(self, node: ast.Tuple | ast.List | ast.Set) -> Val:
        values = tuple(self.ev(e) for e in node.elts)
        if any(isinstance(e, ast.Starred) for e in node.elts):
            seq = self.sequence(values, None)  # (*mloss, n): device if mloss is
            return Val(SEQ, ON_DEVICE) if any(v.tensorish for v in values) else seq
        return self.sequence(values, values)

    @staticmethod
    def sequence(values: tuple[Val, ...], items: tuple[Val, ...] | None) -> Val:
        some = any(v.tensorish for v in values)
        every = bool(values) and all(v.tensorish for v in values)
        return Val(SEQ, ON_DEVICE if some else NOWHERE, items=items,
                   elem=Val(UNKNOWN, ON_DEVICE) if every else NOTHING)

    def e_dict(self, node: ast.Dict) -> Val:
        for k in node.keys:
            if k is not None:
                self.ev(k)
        values = tuple(self.ev(v) for v in node.values)
        some = any(v.tensorish for v in values)
        every = bool(values) and all(v.tensorish for v in values)
        host = bool(values) and all(is_host(v) for v in values)  # {"loss": loss.item()}
        return Val(SEQ, ON_DEVICE if some else NOWHERE, elem=HOST_OTHER,
                   tag=DictOf(Val(UNKNOWN, ON_DEVICE) if every else HOST_OTHER if host
                              else NOTHING))

    def e_comp(self, node: Any) -> Val:
        frame = self.st.frame
        names = {n.id for g in node.generators for n in ast.walk(g.target)
                 if isinstance(n, ast.Name)}
        saved = {n: frame.env.get(n) for n in names}
        loop = self.an.walker.enter_loop(comprehension=True)
        for gen in node.generators:
            self.an.walker.bind(gen.target, self.an.walker.element(self.ev(gen.iter)))
            for cond in gen.ifs:
                self.test(cond)
        if isinstance(node, ast.DictComp):
            self.ev(node.key)
            value = self.ev(node.value)
            out = Val(SEQ, value.where if value.tensorish else NOWHERE, elem=HOST_OTHER,
                      tag=DictOf(value if value.tensorish else NOTHING))
        else:
            value = self.ev(node.elt)
            out = Val(SEQ, ON_DEVICE if value.tensorish else NOWHERE,
                      elem=value if value.tensorish or value.kind == TENSOR else NOTHING)
        self.an.walker.leave_loop(loop)
        for n, old in saved.items():
            if old is None:
                frame.env.pop(n, None)
            else:
                frame.env[n] = old
        return out

    def e_lambda(self, node: ast.Lambda) -> Val:
        outer = self.st.frame
        frame = self.an.walker.push("lambda")
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            frame.env[a.arg] = NOTHING
        body = self.ev(node.body)
        self.an.walker.finish_frame(frame, None, outer)
        return Val(OTHER, tag=FnOf(body, node))  # lambda t: t.to(device): what its calls give

    def inline(self, node: ast.Call, lam: ast.Lambda, args: list[Val], kws: list[Val]) -> Val:
        """``transform(x, y, pred, loss)`` where the name holds a lambda: its body walked here,
        with the call's arguments bound to its parameters; a read in it is reported at the
        call."""
        frame, a = self.st.frame, lam.args
        bound: dict[str, Val] = dict.fromkeys(
            (p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)), NOTHING)
        bound.update(zip((p.arg for p in (*a.posonlyargs, *a.args)), args))
        bound.update({k.arg: v for k, v in zip(node.keywords, kws) if k.arg in bound})
        saved = {n: frame.env.get(n) for n in bound}
        frame.env.update(bound)
        self.st.inlined = (node, terminal(node.func) or "")
        try:
            return self.an.exprs.ev(lam.body)
        finally:
            self.st.inlined = None
            for n, old in saved.items():
                if old is None:
                    frame.env.pop(n, None)
                else:
                    frame.env[n] = old

    def e_namedexpr(self, node: ast.NamedExpr) -> Val:
        v = self.ev(node.value)
        self.an.walker.bind(node.target, v)
        return v

    def e_await(self, node: ast.Await) -> Val:
        return self.ev(node.value)

    def e_parts(self, node: ast.expr) -> Val:
        for part in (getattr(node, f, None) for f in ("lower", "upper", "step", "value")):
            if part is not None:
                self.ev(part)
        return NOTHING

    def e_yield(self, node: ast.Yield | ast.YieldFrom) -> Val:
        self.an.returns.yielded()
        return self.e_parts(node)

    def e_starred(self, node: ast.Starred) -> Val:
        v = self.ev(node.value)
        return Val(SEQ, ON_DEVICE) if v.tensorish else NOTHING

    # -- reads -----------------------------------------------------------------------------------

    def test(self, node: ast.expr) -> None:
        """A truth test (``if``, ``while``, ``assert``, ``not``, ``and``/``or``)."""
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self.test(value)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.test(node.operand)
            return
        v = self.ev(node)
        if v.tensorish and v.kind == TENSOR:  # a container's truth reads nothing
            self.host_read(node, v, "`if tensor:`")
        else:
            self.d2h_read(node, v, "truth-tested")
            if v.kind == TENSOR and v.where == NOWHERE:
                # if torch.isnan(x): a tensor's truth, maybe a device's
                self.an.syncs.maybe_synced("")

    def host_read(self, node: ast.expr, v: Val, what: str, at: ast.expr | None = None,
                  strong: bool = False) -> None:
        """``v``'s value is read on the host at ``node``: a synchronisation if it is on the
        device (a finding inside a batch loop), a hazard if it is an unsynchronised copy.
        ``strong``: a read that needs a tensor (.item(), float()); of a value whose place is
        not known it may synchronise, so the timing and copy rules stay quiet after it."""
        if v.tensorish:
            self.an.sync_read(at or node, what)
            self.an.syncs.synced()
            return
        if isinstance(node, ast.Name) and self.st.frame.loops and v.kind != TIME:
            self.an.sync_read(at or node, what, later=node.id)  # the last turn's loss, maybe
        self.d2h_read(node, v, "read")
        if strong and v.where != ON_HOST and v.kind in (UNKNOWN, TENSOR, SEQ):
            self.an.syncs.synced()

    def d2h_read(self, node: ast.expr, v: Val, how: str) -> None:
        rec = v.tag
        if isinstance(rec, D2h) and rec.live and (
                not rec.named or any(r is rec for r in self.st.frame.d2h.values())):
            rec.live = False
            self.an.report(node, "XB106", f"{rec.what} is {how} on the host before any "
                        "synchronise: the non_blocking copy may not have written it yet (read "
                        "stale or partial data); call torch.cuda.synchronize() (or "
                        "torch.accelerator.synchronize(), or an event's synchronize()) first")
