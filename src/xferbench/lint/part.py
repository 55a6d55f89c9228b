"""The base of the analyser's parts: each holds the analyser (to reach the other parts),
the one state a pass shares (``state.ModuleState``) and what the pass started from
(``state.PassInput``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .analyzer import ModulePass
    from .state import ModuleState, PassInput


class Part:
    """One concern of the analyser (statements, expressions, calls, moves...)."""

    def __init__(self, an: ModulePass) -> None:
        self.an = an
        self.st: ModuleState = an.st
        self.inp: PassInput = an.inp
