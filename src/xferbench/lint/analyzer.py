"""The analyser: the statement walker, the expressions, the calls and the moves in one
single-pass visitor, the state the sequential rules keep (synchronise, device work, clocks),
and the resolution of the candidates that needed the whole module (training loops, the
functions that run every step, loaders). Where a pass finds functions of the module called
with device values, the module is walked again with those parameters on the device (at most
``PASSES`` times), so a read inside a helper the training loop calls is seen."""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase

from .branches import Branches
from .calls import Calls
from .exprs import Exprs
from .facts import TIME, Val, purpose
from .implicit import Implicit
from .moves import Moves
from .reads import Reads
from .records import D2h, Fac
from .returns import Returns
from .rules import BY_CODE
from .steps import SOME_STEPS, Steps, lossy_names
from .syncs import Syncs
from .walker import Frame, Loop, Walker

#: (line, col, code, message, severity, fix)
Raw = tuple[int, int, str, str, str, "str | None"]
#: Walks of one module at most: the first, then with the parameters found on the device.
PASSES = 3


OPTIMISER = re.compile(r"optim|step\s*\(")


class Analyzer(Walker, Branches, Exprs, Reads, Calls, Moves, Steps, Returns, Syncs,
               Implicit):
    def __init__(self, hints: dict[str, set[int | str]] | None = None,
                 intended: tuple[str, ...] = (), source: str | None = None,
                 returns: dict[str, Val] | None = None) -> None:
        super().__init__()
        self.prior_summaries = returns or {}  # what the module's functions returned before
        self.sync_fns: set[str] = set()  # functions seen synchronising (or calling one)
        self.walked: set[str] = set()  # functions walked so far
        self.prior_quiet: frozenset[str] = frozenset()  # walked in the pass before, no sync
        self.forward_calls: set[str] = set()  # called before they were walked
        self.prior_sync: frozenset[str] = frozenset()  # seen synchronising in the pass before
        self.object_calls: set[str] = set()  # methods called on an object before walked
        self.sync_count = 0  # synchronisations seen, to tell a branch that synchronised
        self.clock_seen = False  # a clock was read in the module
        # backward() called on a name makes it a loss on the device; a file without the word
        # has none, and skips looking
        self.scan_backward = source is None or "backward" in source
        # a module that never names an optimiser nor steps one does not train: its
        # backward passes are for gradients as such (Grad-CAM, saliency, an attack)
        self.may_optimise = source is None or OPTIMISER.search(source) is not None
        self.source = source
        self.source_lines = source.splitlines() if source and "backward" in source else []
        self.expr_dispatch = self.expr_handlers()
        self.functions_seen: set[str] = set()
        self.hints = hints or {}  # function -> its parameters (index or name) on the device
        self.intended = intended  # functions whose host reads are meant (config)

    def run(self, tree: ast.Module) -> list[Raw]:
        self.walk(tree)
        hints, passes = self.hints, 1
        while passes < PASSES:
            found = {k: hints.get(k, set()) | v for k, v in self.found_hints.items()
                     if k in self.functions_seen}
            quiet = self.walked - self.sync_fns
            # helpers called before they were walked matter only to the timing rule
            late = self.clock_seen and ((self.forward_calls & quiet) - self.prior_quiet or (
                self.object_calls & self.sync_fns) - self.prior_sync)
            if not self.summaries_changed() and all(
                    v <= hints.get(k, set()) for k, v in found.items()) and not late:
                break
            hints, returns = {**hints, **found}, {**self.prior_summaries, **self.summaries}
            again = Analyzer(hints, self.intended, self.source, returns)
            again.prior_quiet = frozenset(quiet)
            again.prior_sync = frozenset(self.sync_fns)
            again.walk(tree)
            self.__dict__.update(again.__dict__)
            passes += 1
        return self.out

    def walk(self, tree: ast.Module) -> None:
        self.prepare(tree)
        if self.scan_backward:
            lossy = lossy_names(tree.body)  # module-level code: evidence before the backward
            first = min((lo or hi for spans in lossy.values() for lo, hi in spans), default=0)
            self.frame.lossy = lossy if lossy and self.device_evidence(1, first) else {}
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
                defs += [n for n in c.body if isinstance(n, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef))]
        self.functions_seen = {n.name for n in defs}  # and outer.inner, as they are walked
        self.block(tree.body)
        self.finish_defs(self.frame)
        self.resolve()

    # -- reporting -------------------------------------------------------------------------------

    def report(self, node: ast.AST, code: str, message: str, severity: str | None = None,
               fix: str | None = None) -> None:
        self.out.append((node.lineno, node.col_offset, code, message,  # type: ignore[attr-defined]
                         severity or BY_CODE[code].severity, fix))

    def candidate(self, code: str, node: ast.AST, message: str, extra: object = None,
                  later: str | None = None) -> None:
        frame = self.frame
        record = (code, node, message, tuple(frame.loops), tuple(frame.guards), extra,
                  self.function_name())
        if later is None:
            self.candidates.append(record)
            return
        for loop in frame.loops:  # decided when the loop that binds it ends
            if not loop.comprehension and later not in loop.assigned:
                loop.carried.append((later, record))
                return

    def sync_read(self, node: ast.AST, what: str, later: str | None = None) -> None:
        """XB101: ``what`` reads a device tensor here; a finding if it runs every training step
        (in a training loop, or in a function that runs once per step). ``later``: the name
        read holds no device tensor yet, but the loop may bind one to it for the next turn."""
        frame = self.frame
        if frame.fresh_sync or self.acting or self.once or self.is_intended():
            return  # right after a synchronise it waits for nothing; acting needs the value
        if frame.loops or self.function_name() is not None:
            self.candidate("XB101", node, what, self.target, later)

    def is_intended(self) -> bool:
        if not self.intended:
            return False
        fn = self.function_name()
        names = [n for n in (fn, fn and fn.rsplit(".", 1)[-1], self.qualified_function()) if n]
        return any(fnmatchcase(n, p) for n in names for p in self.intended)

    # -- state of the sequential rules ---------------------------------------------------------

    @staticmethod
    def step_loop(frame: Frame) -> Loop | None:
        for loop in reversed(frame.loops):
            if not loop.comprehension:
                return loop
        return None

    def bound(self, name: str, v: Val) -> None:
        """``name`` now holds ``v``."""
        frame = self.frame
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
            if rec.move is not None and rec.uses == 1:
                func = rec.move.func
                self.report(rec.node, "XB102", self.created_message(rec, func, False)
                            .replace(" (--fix leaves it: other arguments of the call need a "
                                     "look)", " (--fix leaves the two statements to you)"))
        frame.defs.clear()

    # -- the end of the module -------------------------------------------------------------------

    def resolve(self) -> None:
        trains, whole = self.training()
        steps = self.per_step(trains, whole)
        for code, node, message, loops, guards, extra, fn in self.candidates:
            if code == "XB105":
                flags = self.loaders.get(extra, [])  # type: ignore[arg-type]
                if flags and all(f is True for f in flags):
                    self.report(node, code, message)
                continue
            if code == "XB104":
                inner = self.any_step_loop(loops, trains)
                if inner is not None and not any(g > inner for g in guards) and not any(
                        extra in loop.assigned for loop in loops[inner:]):
                    self.report(node, code, message)
                continue
            if code == "XB109" and extra[0]:  # type: ignore[index]
                continue  # a timer reads right after it: the measurement needs it
            inner = self.batch_loop(loops, trains)
            if inner is not None:
                if code == "XB101" and extra is not None and extra in loops[inner].env_args:
                    continue  # the action an environment's step needs on the host
                self.report_step(code, node, message, any(g > inner for g in guards), None,
                                 whole)
            elif fn in steps and not any(loop.train for loop in loops) and not purpose(fn):
                self.report_step(code, node, message,
                                 bool(guards) or steps[fn] == SOME_STEPS, fn, whole)

    def any_step_loop(self, loops: tuple[Loop, ...], trains: set[str]) -> int | None:
        """The innermost loop running a forward or a training step (the model moves)."""
        for i in range(len(loops) - 1, -1, -1):
            loop = loops[i]
            if not loop.comprehension and (loop.step or loop.train or any(
                    c in trains or c in self.facts and self.facts[c].forward
                    for c in loop.calls)):
                return i
        return None

    def report_step(self, code: str, node: ast.AST, what: str, guarded: bool,
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
