"""The analyser: one pass (``ModulePass``) walks a module with its parts (statements,
expressions, calls, moves...) over one shared state (``state.ModuleState``), then resolves the
candidates that needed the whole module (training loops, the functions that run every step,
loaders). Where a pass finds functions of the module called with device values, the module is
walked again with those parameters on the device (at most ``PASSES`` times), so a read inside
a helper the training loop calls is seen."""

from __future__ import annotations

import ast
import os
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from .branches import Branches
from .calls import Calls
from .exprs import Exprs
from .facts import TIME, Val, purpose
from .helpers import Helpers
from .implicit import Implicit
from .members import Members, scan_classes
from .methods import Methods
from .moves import Moves
from .names import Names
from .reads import Reads
from .records import D2h, Fac
from .returns import Returns
from .rules import BY_CODE
from .scopes import Frame, Loop
from .state import TRAINS, Hints, ModuleState, PassInput, Raw
from .steps import SOME_STEPS, Steps, lossy_names
from .syncs import Syncs
from .walker import Walker

if TYPE_CHECKING:
    from .project import Project

#: Walks of one module at most: the first, then with the parameters found on the device.
PASSES = 3


class Analyzer:
    """The analysis of one module, alone or as one of a project's."""

    def __init__(self, intended: tuple[str, ...] = (), source: str | None = None,
                 project: Project | None = None, path: str = "") -> None:
        self.intended = intended  # functions whose host reads are meant (config)
        self.source = source
        self.project, self.path = project, path

    def run(self, tree: ast.Module) -> list[Raw]:
        """The findings of ``tree``."""
        return analyse(tree, self.source, self.intended, self.project, self.path).st.out


def analyse(tree: ast.Module, source: str | None, intended: tuple[str, ...] = (),
            project: Project | None = None, path: str = "", hints: Hints | None = None,
            helper: bool = False) -> ModulePass:
    """The last pass over ``tree``: walked once, then again while a pass finds functions
    called with device values it did not know of (at most ``PASSES`` walks).

    Args:
        project, path: the modules linted together and this one's file (a helper of another
            module is looked up there).
        hints: functions known to be called with device values, and which parameters.
        helper: the module is analysed for what a caller in another module runs of it.
    """
    if project is not None:
        path = os.path.abspath(path)  # the project names its files so
        if source is not None and not helper:
            project.remember(path, source, tree)
    now = ModulePass(PassInput(source, intended, hints or {}, project=project, path=path,
                               helper=helper))
    now.walk(tree)
    for _ in range(PASSES - 1):
        inp, st = now.inp, now.st
        hints = inp.hints
        found = {k: hints.get(k, set()) | v for k, v in st.found_hints.items()
                 if k in st.functions_seen}
        quiet = st.walked - st.sync_fns
        # helpers called before they were walked matter only to the timing rule
        late = st.clock_seen and ((st.forward_calls & quiet) - inp.prior_quiet or (
            st.object_calls & st.sync_fns) - inp.prior_sync)
        if not now.returns.summaries_changed() and all(
                v <= hints.get(k, set()) for k, v in found.items()) and not late:
            break
        now = ModulePass(PassInput(source, intended, {**hints, **found},
                                   {**inp.prior_summaries, **st.summaries},
                                   frozenset(quiet), frozenset(st.sync_fns), project, path,
                                   helper))
        now.walk(tree)
    return now


class ModulePass:
    """One walk of a module: the shared state, the parts that walk it, and the end of the
    module (the candidates resolved, the findings kept in ``st.out``)."""

    def __init__(self, inp: PassInput) -> None:
        self.inp = inp
        source = inp.source
        self.st = ModuleState(source.splitlines() if source and TRAINS.search(source) else [])
        self.names = Names(self)
        self.members = Members(self)
        self.steps = Steps(self)
        self.returns = Returns(self)
        self.syncs = Syncs(self)
        self.reads = Reads(self)
        self.implicit = Implicit(self)
        self.moves = Moves(self)
        self.methods = Methods(self)
        self.calls = Calls(self)
        self.branches = Branches(self)
        self.exprs = Exprs(self)  # its dispatch names calls' handler
        self.walker = Walker(self)  # its dispatch names branches' and names' handlers
        self.helpers = Helpers(self)

    def walk(self, tree: ast.Module) -> None:
        self.names.prepare(tree)
        if self.inp.scan_backward:
            lossy = lossy_names(tree.body)  # module-level code: evidence before the backward
            first = min((lo or hi for spans in lossy.values() for lo, hi in spans), default=0)
            self.st.frame.lossy = lossy if lossy and self.names.device_evidence(1, first) else {}
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
        for c in classes:
            defs += [n for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.st.functions_seen = {n.name for n in defs}  # and outer.inner, as they are walked
        self.st.aliases, self.st.members = scan_classes(classes, self.st.functions_seen)
        self.walker.block(tree.body)
        self.finish_defs(self.st.frame)
        self.resolve()

    # -- reporting -------------------------------------------------------------------------------

    def report(self, node: ast.expr, code: str, message: str,
               severity: str | None = None, fix: str | None = None) -> None:
        self.st.out.append((node.lineno, node.col_offset, code, message,
                            severity or BY_CODE[code].severity, fix))

    def candidate(self, code: str, node: ast.expr, message: str, extra: object = None,
                  later: str | None = None) -> None:
        frame = self.st.frame
        record = (code, node, message, tuple(frame.loops), tuple(frame.guards), extra,
                  self.steps.function_name())
        if later is None:
            self.st.candidates.append(record)
            return
        for loop in frame.loops:  # decided when the loop that binds it ends
            if not loop.comprehension and later not in loop.assigned:
                loop.carried.append((later, record))
                return

    def sync_read(self, node: ast.expr, what: str, later: str | None = None) -> None:
        """XB101: ``what`` reads a device tensor here; a finding if it runs every training step
        (in a training loop, or in a function that runs once per step). ``later``: the name
        read holds no device tensor yet, but the loop may bind one to it for the next turn."""
        frame = self.st.frame
        if frame.fresh_sync or self.st.acting or self.st.once or self.is_intended():
            return  # right after a synchronise it waits for nothing; acting needs the value
        if self.st.inlined is not None:  # in a lambda's body, run by the call
            call, name = self.st.inlined
            what = f"`{name}()`, through {what} at line {node.lineno},"
            node = call
        if frame.loops or self.steps.function_name() is not None:
            self.candidate("XB101", node, what, self.st.target, later)

    def is_intended(self) -> bool:
        if not self.inp.intended:
            return False
        fn = self.steps.function_name()
        names = [n for n in (fn, fn and fn.rsplit(".", 1)[-1],
                             self.names.qualified_function()) if n]
        return any(fnmatchcase(n, p) for n in names for p in self.inp.intended)

    # -- state of the sequential rules ---------------------------------------------------------

    @staticmethod
    def step_loop(frame: Frame) -> Loop | None:
        for loop in reversed(frame.loops):
            if not loop.comprehension:
                return loop
        return None

    def bound(self, name: str, v: Val) -> None:
        """``name`` now holds ``v``."""
        frame = self.st.frame
        tag = v.tag
        if isinstance(tag, Fac) and not tag.bound:
            tag.bound = True
            frame.defs.append(tag)
        elif isinstance(tag, D2h) and tag.live:
            tag.named = True
            frame.d2h[name] = tag
        if v.kind == TIME:
            frame.clock = True
            frame.work = False

    def finish_defs(self, frame: Frame) -> None:
        """XB102 through a name: a factory's result read once, by the move."""
        for rec in frame.defs:
            func = rec.move.func if rec.move is not None else None
            if isinstance(func, ast.Attribute) and rec.uses == 1:  # the move is a method
                self.report(rec.node, "XB102", self.moves.created_message(rec, func, False)
                            .replace(" (--fix leaves it: other arguments of the call need a "
                                     "look)", " (--fix leaves the two statements to you)"))
        frame.defs.clear()

    # -- the end of the module -------------------------------------------------------------------

    def resolve(self) -> None:
        helping = not self.inp.helper and bool(self.st.helper_sites)  # a project's module
        if helping:
            self.helpers.mark_steps()
        trains, whole = self.steps.training()
        steps = self.steps.per_step(trains, whole)
        for code, node, message, loops, guards, extra, fn in self.st.candidates:
            if code == "XB110":  # a name every assignment binds to a loader without pinning
                lines = self.st.loaders.get(extra, [])
                found = [line for line in lines if line is not None]
                if lines and len(found) == len(lines):
                    for line in found:
                        self.st.unpinned.setdefault(line, []).append(node.lineno)
                continue
            if code == "XB104":
                inner = self.any_step_loop(loops, trains)
                if inner is not None and not any(g > inner for g in guards) and not any(
                        extra in loop.assigned for loop in loops[inner:]):
                    self.report(node, code, message)
                continue
            if code == "XB109" and extra[0]:
                continue  # a timer reads right after it: the measurement needs it
            inner = self.steps.batch_loop(loops, trains)
            if inner is not None:
                if code == "XB101" and extra is not None and extra in loops[inner].env_args:
                    continue  # the action an environment's step needs on the host
                self.report_step(code, node, message, any(g > inner for g in guards), None,
                                 whole)
            elif fn in steps and not any(loop.train for loop in loops) and not purpose(fn):
                self.report_step(code, node, message,
                                 bool(guards) or steps[fn] == SOME_STEPS, fn, whole)
        if helping:
            self.helpers.report_reads(trains, whole, steps)
        self.moves.report_unpinned()

    def any_step_loop(self, loops: tuple[Loop, ...], trains: set[str]) -> int | None:
        """The innermost loop running a forward or a training step (the model moves)."""
        for i in range(len(loops) - 1, -1, -1):
            loop = loops[i]
            if not loop.comprehension and (loop.step or loop.train or any(
                    c in trains or c in self.st.facts and self.st.facts[c].forward
                    for c in loop.calls)):
                return i
        return None

    def report_step(self, code: str, node: ast.expr, what: str, guarded: bool,
                    fn: str | None, whole: set[str]) -> None:
        """XB101 or XB109 where ``node`` runs every training step (``guarded``: on some)."""
        where = "inside the training loop"
        if fn is not None:
            where = (f"in `{fn}()`, which runs a whole training step (a backward and an "
                     "optimiser step)" if fn in whole else
                     f"in `{fn}()`, which the training loop calls")
        some = ("on some steps only (under a step guard: `if step % N == 0` or `if step == "
                "K`)")
        if code == "XB109":
            self.report(node, code, f"{what} drains the device {where}" + (
                f", {some}: fine for a measurement on those steps" if guarded else
                ": the host waits for every queued kernel, so the next step cannot be "
                "queued while this one runs; drop it (the reads and copies that need "
                "results already wait for them), or keep it only where a timer reads "
                "the clock"), severity="info" if guarded else None)
        elif guarded:
            self.report(node, code, f"{what} reads a device tensor on the host {where}, "
                        f"{some}: a synchronisation on those steps; fine for logging, "
                        "cheaper still accumulated on the device", severity="info")
        else:
            self.report(node, code, f"{what} reads a device tensor on the host {where}: "
                        "each read waits for the device to finish (a synchronisation every "
                        "step); keep it on the device (accumulate with +=) and read it once "
                        "per epoch, or every N steps")
