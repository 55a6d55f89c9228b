"""The analyser's state, in one place: what a pass over a module starts from (``PassInput``,
frozen: the source, the configuration, what the pass before learnt) and what the pass learns
as it walks (``ModuleState``: the scope open now, the names imported, the candidates left for
the end of the module, the functions walked and what they do). Every part of the analyser
(``walker``, ``exprs``, ``calls``...) reads and writes this one state object."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .facts import Val
from .scopes import Frame
from .steps import Facts, LoopCall

if TYPE_CHECKING:
    from .helpers import HelperCall
    from .modules import Callee
    from .project import Project

#: Code that puts something on a device (tokens of the source, not of its comments alone).
DEVICE_TOKENS = (".to(", ".cuda(", "device=", "torch.device", "cuda:", "accelerator",
                 "fabric", ".device", "to_device", "non_blocking")
#: Code that runs a backward: backward(), or an optimiser wrapper's step handed the loss.
TRAINS = re.compile(r"backward|\.step\(\s*\w*loss")
#: A module that never names an optimiser nor steps one does not train.
OPTIMISER = re.compile(r"optim|step\s*\(")

#: (line, col, code, message, severity, fix)
Raw = tuple[int, int, str, str, str, "str | None"]
#: XB101...XB110's record of a finding the end of the module decides: (code, node, message,
#: loops, guards, extra, function)
Candidate = tuple[str, ast.expr, str, tuple[Any, ...], tuple[int, ...], Any, "str | None"]
#: A function -> its parameters (by index or name; ("module", i) for a model) on the device.
Hints = dict[str, set[Any]]


@dataclass(frozen=True)
class PassInput:
    """What one pass over a module starts from.

    Args:
        source: the module's text (None: unknown, every text test passes).
        intended: functions whose host reads are meant (``fnmatch`` patterns, from the config).
        hints: the functions a pass before saw called with device values, and which
            parameters those were.
        prior_summaries: what the module's functions returned in the pass before.
        prior_quiet: functions the pass before walked and saw synchronise nothing.
        prior_sync: functions the pass before saw synchronise.
        project: the modules linted with this one (None: the module alone).
        path: the module's file, as the project names it.
        helper: the module is analysed for what a caller in another module runs of it.
    """

    source: str | None = None
    intended: tuple[str, ...] = ()
    hints: Hints = field(default_factory=dict)
    prior_summaries: dict[str, Val] = field(default_factory=dict)
    prior_quiet: frozenset[str] = frozenset()
    prior_sync: frozenset[str] = frozenset()
    project: Project | None = None
    path: str = ""
    helper: bool = False

    @cached_property
    def scan_backward(self) -> bool:
        """backward() called on a name makes it a loss on the device; a file without the
        word has none, and skips looking."""
        return self.source is None or TRAINS.search(self.source) is not None

    @cached_property
    def may_optimise(self) -> bool:
        """Whether the module names an optimiser or steps one: one that does not runs its
        backward passes for the gradients as such (Grad-CAM, saliency, an attack)."""
        return self.source is None or OPTIMISER.search(self.source) is not None


@dataclass
class ModuleState:
    """What a pass has learnt of the module so far; one object shared by the analyser's
    parts."""

    source_lines: list[str]  # the module's lines, where it mentions backward (else none)
    frame: Frame = field(default_factory=lambda: Frame("module", None))  # the scope open
    imports: dict[str, str] = field(default_factory=dict)  # local name -> what it imports
    module_classes: set[str] = field(default_factory=set)  # the module's nn.Module classes
    classes: list[str] = field(default_factory=list)  # the class bodies open, outermost first
    class_spans: list[tuple[int, int]] = field(default_factory=list)  # their lines
    members: dict[tuple[str, str], Val] = field(default_factory=dict)  # (class, "self.x")
    candidates: list[Candidate] = field(default_factory=list)  # decided at the module's end
    out: list[Raw] = field(default_factory=list)  # the findings
    loaders: dict[str, list[int | None]] = field(default_factory=dict)  # key -> per
    # assignment, the line of a DataLoader built without pin_memory=True (else None)
    loader_calls: dict[int, ast.Call] = field(default_factory=dict)  # line -> such a DataLoader
    unpinned: dict[int, list[int]] = field(default_factory=dict)  # its line -> the lines of the
    # non_blocking copies of its batches
    evidence: dict[tuple[int, int], bool] = field(default_factory=dict)  # lines -> they move
    # anything to a device
    # -- the statement and expression being walked --
    line: int = 0  # the line of the statement being walked
    statement_call: ast.AST | None = None  # the call an Expr statement drops
    moved_back: str | None = None  # the name `x = x.to(dev)` binds again
    target: str | None = None  # the name the statement being walked assigns
    acting: bool = False  # walking the arguments of an environment's step()
    once: int = 0  # inside a branch that leaves (raise, return, break, exit)
    not_tensor_names: list[str] = field(default_factory=list)  # under isinstance(x, Graph)
    interval_from: str | None = None  # the start of `clock() - start` being walked
    clock_target: str | None = None  # the name `name = clock()` binds
    branch_devices: list[str | None] = field(default_factory=list)  # per open branch: the
    # device it runs on
    timing_scopes: int = 0  # measurements open: with timer(...):, if profiling:
    data_timer: bool = False  # walking the arguments of data_time.update(...)
    inlined: tuple[ast.Call, str] | None = None  # the call of a lambda whose body is walked,
    # and the name it was called by: a read in the body is reported at the call
    # -- the module's functions --
    functions_seen: set[str] = field(default_factory=set)  # defined in the module
    aliases: dict[str, str] = field(default_factory=dict)  # self.<attr> -> the method bound
    # to it (`self._grad = self.compute_grad`)
    passed: dict[tuple[str, str], str] = field(default_factory=dict)  # (method, parameter) ->
    # the method a call of it hands there (`self.run_epoch(step_fn=self.train_step)`)
    walked: set[str] = field(default_factory=set)  # walked so far
    facts: dict[str, Facts] = field(default_factory=dict)  # what each does outside its loops
    sites: list[LoopCall] = field(default_factory=list)  # the calls of them
    found_hints: Hints = field(default_factory=dict)  # callee -> its device parameters
    summaries: dict[str, Val] = field(default_factory=dict)  # what each returns
    sync_fns: set[str] = field(default_factory=set)  # seen synchronising (or calling one)
    forward_calls: set[str] = field(default_factory=set)  # called before they were walked
    object_calls: set[str] = field(default_factory=set)  # called on an object before walked
    sync_count: int = 0  # synchronisations seen, to tell a branch that synchronised
    clock_seen: bool = False  # a clock was read in the module
    # -- the project's other modules --
    project_imports: dict[str, str] = field(default_factory=dict)  # a relative import's
    # local name -> the module or function it names
    helper_sites: list[HelperCall] = field(default_factory=list)  # calls of their functions
    helpers_asked: set[tuple[Callee, frozenset[Any]]] = field(default_factory=set)  # what
    # those calls were followed into
