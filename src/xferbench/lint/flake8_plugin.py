"""The flake8 plugin: ``flake8 --select XB`` runs ``xferbench lint``'s rules on the tree flake8
has parsed (flake8 applies ``# noqa`` and its own selection). Registered as the
``flake8.extension`` entry point ``XB``; each message ends with its practice's price, or says
there is no GPU price yet."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from typing import Any

from ..analysis.prices import PriceBook
from ..errors import XferbenchError
from ..version import __version__
from .analyzer import Analyzer
from .report import price_of
from .rules import BY_CODE


@functools.cache
def _book() -> PriceBook | None:
    try:
        return PriceBook.load()
    except XferbenchError:
        return None


class XferbenchChecker:
    name = "xferbench"
    version = __version__

    def __init__(self, tree: ast.AST, lines: list[str] | None = None) -> None:
        self.tree = tree
        self.lines = lines or []

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        if not isinstance(self.tree, ast.Module):
            return
        book = _book()
        seen = set()
        source = "".join(self.lines) or None  # the device evidence lint looks for in it
        for line, col, code, message, _severity, _fix in sorted(
                Analyzer(source=source).run(self.tree)):
            if (line, col, code) in seen:
                continue
            seen.add((line, col, code))
            key = BY_CODE[code].price_key
            if key is not None and book is not None:
                message = f"{message} [{price_of(book, key)['short']}]"
            yield line, col, f"{code} {message}", type(self)
