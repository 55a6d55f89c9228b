"""A class's members: what ``self.<name>`` holds in any of its methods (a model moved to the
device in ``__init__``, a device buffer), joined over the methods that bind it, and the calls
of a member that is a model (``self.model(batch)``, ``self.generator(z)``): a forward, whose
outputs are on the device where the model is, or where the class moves anything to one."""

from __future__ import annotations

import ast

from .facts import (
    HOST_OTHER,
    INSTANCE,
    LOADER,
    MODULE,
    NOTHING,
    NOWHERE,
    ON_DEVICE,
    OPTIM,
    SEQ,
    UNKNOWN,
    Val,
    model_name,
    optim_name,
)
from .part import Part
from .records import DictOf
from .scopes import Frame, joined


class Members(Part):
    """Class members."""

    def lookup(self, key: str) -> Val | None:
        """What ``key`` holds here: in this scope or an enclosing one, else, for
        ``self.<name>`` in a method, what the class's methods bound it to."""
        frame: Frame | None = self.st.frame
        while frame is not None:
            v = frame.env.get(key)
            if v is not None:
                return v
            frame = frame.parent
        if self.st.classes and key.startswith("self."):
            return self.st.members.get((self.st.classes[-1], key))
        return None

    def member_bound(self, key: str, v: Val) -> None:
        """``self.<name> = v`` in a method of the class being walked."""
        if not self.st.classes or key.count(".") != 1 or v.where == NOWHERE and not (
                v.kind in (MODULE, LOADER, OPTIM) or v.tag is INSTANCE):
            return  # what says nothing (a CPU-default device parameter) is not kept
        if optim_name(ast.Name(id=key[5:])):
            v = Val(OPTIM)  # self.opt = optimizers.get(params, ...): an optimiser, no tensor
        at = (self.st.classes[-1], key)
        old = self.st.members.get(at)
        self.st.members[at] = v if old is None else joined(old, v)

    def member_call(self, node: ast.Call, func: ast.Attribute, device: bool) -> Val | None:
        """``self.model(x)``: a forward of a member that is a model (held as one, moved to a
        device, or named as one); None where the member is no model."""
        held = self.lookup(f"self.{func.attr}")
        model = held is not None and (held.kind == MODULE or held.tag is INSTANCE or (
            held.kind == UNKNOWN and held.on_device and model_name(func)))
        if not model and not (held is None and model_name(func)):
            return None
        self.an.steps.step_op()
        if device or held is not None and held.on_device or held is None and \
                self.class_moves():
            self.an.syncs.device_work()
            return Val(UNKNOWN, ON_DEVICE)
        return NOTHING

    def class_moves(self) -> bool:
        """Whether the class being walked moves anything to a device."""
        span = self.st.class_spans[-1] if self.st.class_spans else None
        return span is not None and self.an.names.device_evidence(*span)


#: A mapping whose values are device tensors (``self.losses``, whose ``["total"]`` is
#: backpropagated).
DEVICE_DICT = Val(SEQ, ON_DEVICE, elem=HOST_OTHER, tag=DictOf(Val(UNKNOWN, ON_DEVICE)))


def scan_classes(classes: list[ast.ClassDef], functions: set[str]) -> tuple[
        dict[str, str], dict[tuple[str, str], Val]]:
    """What the statements of the classes' methods say before any is walked: the attributes
    bound to a method (``self._grad = self.compute_grad``, or wrapped, or under a condition),
    and the mappings whose values are backpropagated (``self.losses["total"].backward()``:
    the class keeps device losses in ``self.losses``), keyed as ``st.members`` is."""
    aliases: dict[str, str] = {}
    held: dict[tuple[str, str], Val] = {}
    for c in classes:
        for method in c.body:
            for stmt in method.body if isinstance(method, (ast.FunctionDef,
                                                            ast.AsyncFunctionDef)) else ():
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    key = self_attr(stmt.targets[0])
                    bound = bound_method(stmt.value, functions)
                    if key is not None and bound is not None and key not in functions:
                        aliases[key] = bound
                elif isinstance(stmt, ast.Expr):
                    key = backpropagated(stmt.value)
                    if key is not None:
                        held[(c.name, "self." + key)] = DEVICE_DICT
    return aliases, held


def backpropagated(node: ast.expr) -> str | None:
    """``<name>`` of ``self.<name>[key].backward()``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "backward" and isinstance(node.func.value, ast.Subscript):
        return self_attr(node.func.value.value)
    return None


def self_attr(node: ast.expr) -> str | None:
    """``<name>`` of ``self.<name>``, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "self":
        return node.attr
    return None


def bound_method(node: ast.expr, functions: set[str]) -> str | None:
    """The module's method that ``node`` gives: ``self.f``, ``wrap(self.f)``, or either
    branch of ``a if c else b``."""
    if isinstance(node, ast.IfExp):
        return bound_method(node.body, functions) or bound_method(node.orelse, functions)
    if isinstance(node, ast.Call) and node.args:
        return bound_method(node.args[0], functions)
    name = self_attr(node)
    return name if name in functions else None
