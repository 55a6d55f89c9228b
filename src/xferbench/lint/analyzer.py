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
from .facts import TIME, Val, dotted
from .moves import Moves
from .reads import Reads
from .returns import Returns
from .records import D2h, Fac
from .rules import BY_CODE
from .steps import SOME_STEPS, Steps, lossy_names
from .walker import Frame, Loop, Walker

#: (line, col, code, message, severity, fix)
Raw = tuple[int, int, str, str, str, "str | None"]
#: Walks of one module at most: the first, then with the parameters found on the device.
PASSES = 3


#: Functions whose host reads are their purpose, called from a training loop every N steps:
#: evaluation, prediction, sampling, checkpoints, plots.
_PURPOSE = re.compile(r"eval|valid|test|predict|infer|sampl|generat|save|checkpoint|export|"
                      r"plot|visual|summar|dump")


OPTIMISER = re.compile(r"optim|step\s*\(")


def purpose(fn: str) -> bool:
    return bool(_PURPOSE.search(fn.lower()))


class Analyzer(Walker, Branches, Exprs, Reads, Calls, Moves, Steps, Returns):
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

    def device_work(self) -> None:
        frame = self.frame
        frame.work = frame.devicey = True
        frame.fresh_sync = False

    def synced(self, explicit: bool = False) -> None:
        frame = self.frame
        self.sync_count += 1
        fn = self.function_name()
        if fn is not None:
            self.sync_fns.add(fn)
        frame.work = False
        frame.fresh_sync = explicit
        for loop in frame.loops:
            loop.synced = True
        for rec in frame.d2h.values():
            rec.live = False
        frame.d2h.clear()

    def maybe_synced(self, name: str) -> None:
        """A call of this module's own function ``name``: it may synchronise, so stay quiet,
        unless it was walked already (or in the pass before) and synchronised nothing."""
        if name == self.function_name():
            return  # a recursive call: what it does is being walked
        known = name in self.walked or name in self.prior_quiet
        if known and name not in self.sync_fns:
            return
        if not known:
            self.forward_calls.add(name)
        self.synced()
        self.frame.fresh_sync = False

    def clock_read(self, node: ast.AST) -> None:
        """A clock read with device work queued since the last synchronise: it ends an
        interval around that work, unless it starts one. Read into a name (``t1 = clock()``)
        it is decided where the name is used: ``t1 - t0`` ends an interval, ``t - t1``
        starts one."""
        frame = self.frame
        self.clock_seen = True
        if not (frame.clock and frame.work):
            return
        frame.work = False
        if self.clock_target is not None:
            frame.pending_clocks[self.clock_target] = node
            return
        self.interval_end(node, self.interval_from)

    def interval_end(self, node: ast.AST, start_key: str | None) -> None:
        frame = self.frame
        start = self.lookup(start_key) if start_key else None
        opened = start.tag if start is not None and isinstance(start.tag, tuple) else None
        if opened is not None and len(opened) < len(frame.loops):
            # the interval spans iterations of the loops opened since its start: decided when
            # the outermost of them ends (rebound in it: per iteration; else a sync bounds it)
            frame.loops[len(opened)].clocks.append((node, start_key))
            return
        self.report_clock(node)

    def interval(self, node: ast.BinOp) -> None:
        """``end - start`` of two names: a clock read into ``end`` ended an interval."""
        pending = self.frame.pending_clocks
        if isinstance(node.right, ast.Name):
            pending.pop(node.right.id, None)  # the start of an interval, not its end
        if isinstance(node.left, ast.Name) and node.left.id in pending:
            self.interval_end(pending.pop(node.left.id), dotted(node.right))

    def report_clock(self, node: ast.AST) -> None:
        self.report(node, "XB107", f"`{ast.unparse(node)}` ends an interval around device "
                    "work that nothing synchronised: it times the launch, not the work; "
                    "call torch.cuda.synchronize() (or torch.accelerator.synchronize()) "
                    "before reading the clock, or time with device events")

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
            inner = self.batch_loop(loops, trains)
            if inner is not None:
                if extra is not None and extra in loops[inner].env_args:
                    continue  # the action an environment's step needs on the host
                self.report_read(node, message, any(g > inner for g in guards), None, whole)
            elif fn in steps and not any(loop.train for loop in loops) and not purpose(fn):
                self.report_read(node, message, bool(guards) or steps[fn] == SOME_STEPS, fn,
                                 whole)

    def any_step_loop(self, loops: tuple[Loop, ...], trains: set[str]) -> int | None:
        """The innermost loop running a forward or a training step (the model moves)."""
        for i in range(len(loops) - 1, -1, -1):
            loop = loops[i]
            if not loop.comprehension and (loop.step or loop.train or any(
                    c in trains or c in self.facts and self.facts[c].forward
                    for c in loop.calls)):
                return i
        return None

    def report_read(self, node: ast.AST, what: str, guarded: bool, fn: str | None,
                    whole: set[str]) -> None:
        where = "inside the training loop"
        if fn is not None:
            where = (f"in `{fn}()`, which runs a whole training step (a backward and an "
                     "optimiser step)" if fn in whole else
                     f"in `{fn}()`, which the training loop calls")
        if guarded:
            self.report(node, "XB101", f"{what} reads a device tensor on the host {where}, "
                        "on some steps only (under a step guard: `if step % N == 0` or `if "
                        "step == K`): a synchronisation on those steps; fine for logging, "
                        "cheaper still accumulated on the device", severity="info")
        else:
            self.report(node, "XB101", f"{what} reads a device tensor on the host {where}: "
                        "each read waits for the device to finish (a synchronisation every "
                        "step); keep it on the device (accumulate with +=) and read it once "
                        "per epoch, or every N steps")
