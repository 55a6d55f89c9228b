"""The analyser: the statement walker, the expressions, the calls and the moves in one
single-pass visitor, the state the sequential rules keep (synchronise, device work, clocks),
and the resolution of the candidates that needed the whole module (batch loops, loaders)."""

from __future__ import annotations

import ast

from .branches import Branches
from .calls import Calls
from .exprs import Exprs
from .facts import TIME, Val
from .moves import Moves
from .records import D2h, Fac
from .rules import BY_CODE
from .walker import Frame, Loop, Walker

#: (line, col, code, message, severity, fix)
Raw = tuple[int, int, str, str, str, "str | None"]


class Analyzer(Walker, Branches, Exprs, Calls, Moves):
    def __init__(self) -> None:
        super().__init__()
        self.expr_dispatch = self.expr_handlers()
        self.functions_seen: set[str] = set()

    def run(self, tree: ast.Module) -> list[Raw]:
        self.prepare(tree)
        self.functions_seen = {n.name for n in ast.iter_child_nodes(tree)
                               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
                self.functions_seen |= {n.name for n in c.body if isinstance(
                    n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.block(tree.body)
        self.finish_defs(self.frame)
        self.resolve()
        return self.out

    # -- reporting -------------------------------------------------------------------------------

    def report(self, node: ast.AST, code: str, message: str, severity: str | None = None,
               fix: str | None = None) -> None:
        self.out.append((node.lineno, node.col_offset, code, message,  # type: ignore[attr-defined]
                         severity or BY_CODE[code].severity, fix))

    def candidate(self, code: str, node: ast.AST, message: str, extra: object = None) -> None:
        frame = self.frame
        self.candidates.append((code, node, message, tuple(frame.loops), tuple(frame.guards),
                                extra))

    def sync_read(self, node: ast.AST, what: str) -> None:
        """XB101: ``what`` reads a device tensor here; a finding if a batch loop encloses it."""
        if self.frame.loops:
            self.candidate("XB101", node, what)

    # -- state of the sequential rules ---------------------------------------------------------

    def step_op(self) -> None:
        """A forward, a backward or an optimiser step runs here."""
        frame = self.frame
        loop = self.step_loop(frame)
        if loop is not None:
            loop.step = True
        else:
            frame.step = True

    def note_call(self, name: str) -> None:
        frame = self.frame
        loop = self.step_loop(frame)
        (loop.calls if loop is not None else frame.calls).add(name)

    @staticmethod
    def step_loop(frame: Frame) -> Loop | None:
        for loop in reversed(frame.loops):
            if not loop.comprehension:
                return loop
        return None

    def device_work(self) -> None:
        self.frame.work = True
        self.frame.devicey = True

    def synced(self) -> None:
        frame = self.frame
        frame.work = False
        for rec in frame.d2h.values():
            rec.live = False
        frame.d2h.clear()

    def maybe_synced(self) -> None:
        """A call of this module's own function: it may synchronise, so stay quiet."""
        self.synced()

    def clock_read(self, node: ast.AST) -> None:
        frame = self.frame
        if frame.clock and frame.work:
            self.report(node, "XB107", f"`{ast.unparse(node)}` ends an interval around device "
                        "work that nothing synchronised: it times the launch, not the work; "
                        "call torch.cuda.synchronize() (or torch.accelerator.synchronize()) "
                        "before reading the clock, or time with device events")
            frame.work = False

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
        steps = self.stepping_functions()

        def batch(loop: Loop) -> bool:
            return loop.step or any(c in steps for c in loop.calls)

        for code, node, message, loops, guards, extra in self.candidates:
            if code == "XB105":
                flags = self.loaders.get(extra, [])  # type: ignore[arg-type]
                if flags and all(f is True for f in flags):
                    self.report(node, code, message)
                continue
            inner = next((i for i in range(len(loops) - 1, -1, -1)
                          if not loops[i].comprehension and batch(loops[i])), None)
            if inner is None:
                continue
            guarded = any(g > inner for g in guards)
            if code == "XB104":  # the same model every step, not only on some steps
                if not guarded and not any(extra in loop.assigned for loop in loops[inner:]):
                    self.report(node, code, message)
            elif guarded:
                self.report(node, code, f"{message} reads a device tensor on the host on some "
                            "steps only (under a step guard: `if step % N == 0` or `if step == "
                            "K`): a synchronisation on those steps; fine for logging, cheaper "
                            "still accumulated on the device", severity="info")
            else:
                self.report(node, code, f"{message} reads a device tensor on the host inside "
                            "the batch loop: each read waits for the device to finish (a "
                            "synchronisation every step); keep it on the device (accumulate "
                            "with +=) and read it once per epoch, or every N steps")

    def stepping_functions(self) -> set[str]:
        """Functions of the module whose call runs a step (directly or through another)."""
        steps = {name for name, (step, _calls) in self.functions.items() if step}
        changed = True
        while changed:
            changed = False
            for name, (_step, calls) in self.functions.items():
                if name not in steps and calls & steps:
                    steps.add(name)
                    changed = True
        return steps
