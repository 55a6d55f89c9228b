"""Scopes: a ``Frame`` per module, function, lambda or class body (what each name holds,
the loops and step guards open in it, the state of the sequential rules), a ``Loop`` per loop
(does it run a step, which functions it calls, which names it binds), and the join of what
two branches of an ``if`` left in a name."""

from __future__ import annotations

import ast

from .facts import NONE, NOTHING, ON_DEVICE, ON_HOST, TENSOR, UNKNOWN, Val
from .records import D2h, Fac


class Loop:
    __slots__ = ("step", "train", "calls", "assigned", "comprehension", "synced", "env_args",
                 "clocks", "data", "inner_train", "optimise", "carried")

    def __init__(self, comprehension: bool = False) -> None:
        self.comprehension = comprehension  # its steps count for the loop around it
        self.step = False  # runs a forward, backward or optimiser step itself
        self.train = False  # runs a backward or an optimiser step itself (a training loop)
        self.optimise = False  # runs an optimiser step itself (not only a backward)
        self.calls: set[str] = set()  # names of the functions it calls
        self.assigned: set[str] = set()  # names bound in it
        self.synced = False  # something in it synchronises, on some path at least
        self.env_args: set[str] = set()  # names handed to an environment's step()
        self.data = False  # it iterates over data (a loader, batches), not epochs or steps
        self.inner_train = False  # a loop nested in it trains (micro-batches, turns)
        self.carried: list[tuple[str, tuple]] = []  # reads of a name before the body binds
        # it: the last iteration's value (a candidate if that is a device tensor)
        self.clocks: list[tuple[ast.expr, str | None]] = []  # clock reads ending intervals begun
        # before it (and the interval's start), decided when the loop ends


class Frame:
    """One scope: the module, a function, a lambda or a class body."""

    __slots__ = ("env", "parent", "kind", "loops", "guards", "step", "calls", "d2h", "clock",
                 "work", "devicey", "defs", "module_class", "journals", "attrs", "name",
                 "backward", "optimise", "fresh_sync", "lossy", "node", "backward_any",
                 "pending_clocks", "epoch_calls", "nested", "returns", "heavy", "open_sync")

    def __init__(self, kind: str, parent: Frame | None, name: str | None = None) -> None:
        self.name = name  # the function's name (methods by their bare name)
        self.env: dict[str, Val] = {}
        self.parent, self.kind = parent, kind
        self.loops: list[Loop] = []
        self.guards: list[int] = []  # len(loops) when each `if x % n` guard was entered
        self.step = False  # a step op outside any loop: a call of this function runs it
        self.calls: set[str] = set()
        self.d2h: dict[str, D2h] = {}  # names holding an unsynchronised D2H copy
        self.clock = False  # a clock was read into a name: an interval may end
        self.work = False  # device work queued since the last synchronise
        self.devicey = False  # device work seen in this scope at all
        self.defs: list[Fac] = []  # factory results held in names (create-then-move)
        self.module_class = False  # a class body of an nn.Module subclass
        self.journals: list[dict[str, Val | None]] = []  # per open branch: values before it
        self.attrs: dict[str, set[str]] = {}  # name -> its attribute keys bound ("x.grad")
        self.backward = False  # a backward outside any loop
        self.backward_any = False  # a backward anywhere in it, its loops too
        self.pending_clocks: dict[str, ast.expr] = {}  # t1 = clock() with work queued before
        self.optimise = False  # an optimiser step outside any loop
        self.epoch_calls: set[str] | None = None  # a loop over data in it steps the optimiser
        # (set(): itself; else the functions such a loop calls, one of which may step it)
        self.fresh_sync = False  # an explicit synchronise, nothing queued since
        self.lossy: dict[str, list[tuple[int, int]]] = {}  # the losses backward() is called
        # on, with the lines where binding them binds that loss
        self.node: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # the function's def
        self.nested: set[str] = set()  # the functions defined in it (keyed outer.inner)
        self.returns: list[Val] | None = []  # what its returns gave (None: a generator)
        self.heavy = False  # computation queued since the last synchronise (not a setup's)
        self.open_sync: list[bool] | None = None  # XB109's record of the last synchronise,
        # while nothing was queued since it


def joined(a: Val, b: Val) -> Val:
    """What a name holds after two paths gave it ``a`` and ``b``: on a device where either
    path leaves a device value and the other leaves nothing known to be something else (a
    read then waits on the path that moved it)."""
    if a is b:
        return a
    if (a.kind, a.where, a.pin) == (b.kind, b.where, b.pin):
        return Val(a.kind, a.where, a.pin, a.tag if a.tag == b.tag else None)
    if a.tensorish and b.tensorish:
        return Val(UNKNOWN, ON_DEVICE)
    for this, other in ((a, b), (b, a)):
        if this.tensorish and (other is NONE or other.where != ON_HOST and other.kind in (
                UNKNOWN, TENSOR)):
            return Val(this.kind if this.kind == other.kind else UNKNOWN, ON_DEVICE)
    return NOTHING
