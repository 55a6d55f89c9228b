"""What a function of the module returns, summed over its ``return`` statements: a host value
(``loss.item()``, a tuple of them, a dict of floats), a device value, a model, or a tuple whose
positions differ (``return loss, n``: the count stays a host int where the tuple is unpacked).
A call of the function gives its summary; one called before it was walked takes the summary of
the pass before, and a summary that changed for such a call walks the module again."""

from __future__ import annotations

import ast

from .facts import (
    DEVICE_VAL,
    HOST_OTHER,
    LOADER,
    MODULE,
    NONE,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    ON_HOST,
    OPTIM,
    SEQ,
    TENSOR,
    UNKNOWN,
    Val,
)
from .part import Part
from .records import DictOf
from .scopes import Frame

#: Kinds a summary keeps as they are where every return agrees (a model built and moved).
KEPT = (MODULE, LOADER, OPTIM, DEVICE_VAL)


def is_host(v: Val) -> bool:
    """A value read on the host for free: a number, a string, None, a host tensor, or a
    tuple or dict of them."""
    if v is NONE or v.where == ON_HOST and v.kind not in (MODULE, LOADER, SEQ):
        return True
    if v.kind != SEQ:
        return False
    if v.items is not None:
        return bool(v.items) and all(is_host(i) for i in v.items)
    return isinstance(v.tag, DictOf) and v.tag.value is HOST_OTHER


def is_device(v: Val) -> bool:
    return v.tensorish and v.kind in (TENSOR, UNKNOWN, SEQ)


def summarise(vals: list[Val]) -> Val | None:
    """One value for what the returns ``vals`` give; None where nothing is known."""
    vals = [v for v in vals if v is not NONE] or vals
    if not vals:
        return None
    first = vals[0]
    if first.kind in KEPT and all((v.kind, v.where) == (first.kind, first.where) for v in vals):
        return Val(first.kind, first.where)
    tuples = [v.items if v.kind == SEQ else None for v in vals]
    sizes = {-1 if t is None else len(t) for t in tuples}
    items = None
    if len(sizes) == 1 and min(sizes) > 0:  # every return a tuple of one size
        parts = [summarise([t[p] for t in tuples if t is not None]) for p in range(min(sizes))]
        items = tuple(NOTHING if p is None else p for p in parts)
    if all(is_host(v) for v in vals):
        if items is not None:
            return Val(SEQ, ON_HOST, items=items)
        if all(v.kind == SEQ and isinstance(v.tag, DictOf) for v in vals):
            return Val(SEQ, ON_HOST, elem=HOST_OTHER, tag=DictOf(HOST_OTHER))
        return HOST_OTHER
    if any(is_device(v) for v in vals):
        if items is not None:
            return Val(SEQ, ON_DEVICE, items=items, elem=NOTHING)
        return Val(UNKNOWN, ON_DEVICE)
    if items is not None and any(is_host(i) or is_device(i) for i in items):
        return Val(SEQ, NOWHERE, items=items)
    return None


def given_device(v: Val) -> Val:
    """A summary of unknown places for a call handed device values: what it computes is on
    the device, where the summary does not say it is a host value."""
    if v.items is None:
        return v
    items = tuple(Val(UNKNOWN, ON_DEVICE) if i.kind in (UNKNOWN, TENSOR) and i.where == NOWHERE
                  else i for i in v.items)
    return Val(SEQ, ON_DEVICE if any(is_device(i) for i in items) else NOWHERE, items=items)


def signature(v: Val | None) -> tuple | None:
    """What a summary says, for telling whether it changed between two passes."""
    if v is None:
        return None
    items = tuple(signature(i) for i in v.items) if v.items is not None else None
    return (v.kind, v.where, items, isinstance(v.tag, DictOf))


class Returns(Part):
    """Return summaries."""

    def returned(self, node: ast.expr, v: Val) -> None:
        """``return <node>`` giving ``v``."""
        self.an.exprs.d2h_read(node, v, "returned")
        returns = self.st.frame.returns
        if returns is not None:
            returns.append(v)

    def yielded(self) -> None:
        """A generator: its calls give what it yields, not a summary of its returns."""
        frame: Frame | None = self.st.frame
        while frame is not None and frame.kind not in ("function", "lambda"):
            frame = frame.parent
        if frame is not None:
            frame.returns = None

    def record_returns(self, returns: list[Val] | None, name: str) -> None:
        summary = summarise(returns) if returns else None
        if summary is None:
            return
        old = self.st.summaries.get(name)  # two classes' methods of one name
        self.st.summaries[name] = summary if old is None else (
            summarise([old, summary]) or Val(UNKNOWN, ON_DEVICE if is_device(old) or
                                             is_device(summary) else NOWHERE))

    def summary_of(self, key: str) -> Val | None:
        if key in self.st.walked:
            return self.st.summaries.get(key)
        return self.inp.prior_summaries.get(key)

    def call_result(self, key: str, device: bool) -> Val | None:
        """What a call of the module's function ``key`` gives (``device``: it was handed
        device values), or None where its returns say nothing."""
        v = self.summary_of(key)
        if v is None:
            return None
        if device and v.where == NOWHERE:
            return given_device(v)
        return v

    def summaries_changed(self) -> bool:
        """Whether a function called before it was walked returns other than the pass
        before said."""
        return any(signature(self.st.summaries.get(k)) != signature(self.inp.prior_summaries.get(k))
                   for k in self.st.forward_calls)

