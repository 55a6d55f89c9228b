"""Small records a ``Val`` carries in its tag, for the rules that follow one value."""

from __future__ import annotations

import ast
from typing import Any


class Fac:
    """A host factory's result (create-then-move): how often it was read, and the move."""

    __slots__ = ("node", "factory", "loop", "uses", "move", "bound")

    def __init__(self, node: ast.Call, factory: str, loop: Any) -> None:
        self.node, self.factory, self.loop = node, factory, loop
        self.uses = 0
        self.move: ast.Call | None = None
        self.bound = False


class D2h:
    """A device-to-host copy made with non_blocking=True, not yet synchronised."""

    __slots__ = ("node", "what", "live", "named")

    def __init__(self, node: ast.expr, what: str) -> None:
        self.node, self.what, self.live = node, what, True
        self.named = False  # held in a name: pending only while the scope says so


class Pinned:
    """A tensor pinned with .pin_memory() inside ``loop`` (None: outside any loop)."""

    __slots__ = ("loop",)

    def __init__(self, loop: Any) -> None:
        self.loop = loop


class DictOf:
    """A mapping whose values are ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class FnOf:
    """A function (a lambda, ``node``) whose calls give ``value``."""

    __slots__ = ("value", "node")

    def __init__(self, value: Any, node: Any = None) -> None:
        self.value, self.node = value, node


class Fix(str):
    """A rewrite's text, with the span of source it replaces (ast's 1-based lines and
    0-based UTF-8 byte columns, the end exclusive): SARIF's fixes[] need the region; and
    what it relies on, as ("tensor" or "device", the expression) pairs, which the engine
    proves before it offers the rewrite (``proof``)."""

    span: tuple[int, int, int, int]
    needs: tuple[tuple[str, ast.expr], ...]

    def __new__(cls, text: str, node: ast.expr,
                needs: tuple[tuple[str, ast.expr], ...] = ()) -> Fix:
        self = super().__new__(cls, text)
        self.needs = needs
        self.span = (node.lineno, node.col_offset, node.end_lineno or node.lineno,
                     node.end_col_offset or node.col_offset)
        return self
